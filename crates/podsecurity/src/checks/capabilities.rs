//! Linux capabilities: the baseline allow-list for `capabilities.add`, and the restricted
//! rule (drop `ALL`, add at most `NET_BIND_SERVICE`).

use std::collections::BTreeSet;

use crate::checks::CheckFailure;
use crate::pod::{PodView, array, object, present};
use crate::text::{containers_phrase, join_quote};

/// The capabilities baseline lets a container add (Docker's default set).
const BASELINE_ALLOWED: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The string entries of a capability list (`add` or `drop`).
fn entries<'a>(
    caps: Option<&'a serde_json::Map<String, serde_json::Value>>,
    key: &str,
) -> impl Iterator<Item = &'a str> {
    array(present(caps, key)).iter().filter_map(|c| c.as_str())
}

/// `capabilities_baseline` v1.0: containers may only add capabilities from the default set.
pub(crate) fn capabilities_baseline_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut bad = Vec::new();
    let mut forbidden = BTreeSet::new();
    for container in pod.containers() {
        let caps = object(container.security_context(), "capabilities");
        let mut valid = true;
        for cap in entries(caps, "add") {
            if !BASELINE_ALLOWED.contains(&cap) {
                valid = false;
                forbidden.insert(cap);
            }
        }
        if !valid {
            bad.push(container.name());
        }
    }
    if bad.is_empty() {
        return None;
    }
    let forbidden: Vec<&str> = forbidden.into_iter().collect();
    Some(CheckFailure::new(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad),
            join_quote(&forbidden)
        ),
    ))
}

/// `capabilities_restricted` v1.22: every container must drop `ALL` and may add only
/// `NET_BIND_SERVICE`.
pub(crate) fn capabilities_restricted_1_22(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden = BTreeSet::new();
    for container in pod.containers() {
        let Some(caps) = object(container.security_context(), "capabilities") else {
            missing_drop_all.push(container.name());
            continue;
        };
        let caps = Some(caps);
        if !entries(caps, "drop").any(|c| c == "ALL") {
            missing_drop_all.push(container.name());
        }
        let mut added_forbidden = false;
        for cap in entries(caps, "add") {
            if cap != "NET_BIND_SERVICE" {
                added_forbidden = true;
                forbidden.insert(cap);
            }
        }
        if added_forbidden {
            adding_forbidden.push(container.name());
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        let forbidden: Vec<&str> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "unrestricted capabilities",
        details.join("; "),
    ))
}

/// `capabilities_restricted` v1.25: as v1.22, but pods with `spec.os.name=windows` are
/// exempt.
pub(crate) fn capabilities_restricted_1_25(pod: &PodView<'_>) -> Option<CheckFailure> {
    if pod.is_windows() {
        return None;
    }
    capabilities_restricted_1_22(pod)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn run(f: fn(&PodView<'_>) -> Option<CheckFailure>, spec: Value) -> Option<String> {
        f(&PodView::new(None, &spec)).map(|c| format!("{}: {}", c.reason, c.detail))
    }

    #[test]
    fn baseline() {
        let ok = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["CHOWN", "NET_BIND_SERVICE"], "drop": ["ALL"]}}},
            {"name": "b"},
        ]});
        assert_eq!(run(capabilities_baseline_1_0, ok), None);
        let bad = json!({
            "containers": [
                {"name": "a", "securityContext": {"capabilities": {"add": ["NET_RAW", "CHOWN"]}}},
                {"name": "b", "securityContext": {"capabilities": {"add": ["SYS_ADMIN", "NET_RAW"]}}},
            ],
            "ephemeralContainers": [{"name": "e", "securityContext": {"capabilities": {"add": ["BPF"]}}}],
        });
        assert_eq!(
            run(capabilities_baseline_1_0, bad).as_deref(),
            Some(
                r#"non-default capabilities: containers "a", "b", "e" must not include "BPF", "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add"#
            )
        );
    }

    #[test]
    fn restricted() {
        let ok = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}},
        ]});
        assert_eq!(run(capabilities_restricted_1_22, ok), None);
        let bad = json!({"containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"capabilities": {}}},
            {"name": "d", "securityContext": {"capabilities": {"drop": ["all"]}}},
            {"name": "e", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["CHOWN", "NET_BIND_SERVICE"]}}},
            {"name": "f", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["BPF"]}}},
        ]});
        assert_eq!(
            run(capabilities_restricted_1_22, bad).as_deref(),
            Some(
                r#"unrestricted capabilities: containers "a", "b", "c", "d" must set securityContext.capabilities.drop=["ALL"]; containers "e", "f" must not include "BPF", "CHOWN" in securityContext.capabilities.add"#
            )
        );
        let one = json!({"containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["SYS_TIME"]}}}]});
        assert_eq!(
            run(capabilities_restricted_1_22, one).as_deref(),
            Some(
                r#"unrestricted capabilities: container "a" must set securityContext.capabilities.drop=["ALL"]; container "a" must not include "SYS_TIME" in securityContext.capabilities.add"#
            )
        );
        let windows = json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]});
        assert_eq!(run(capabilities_restricted_1_25, windows.clone()), None);
        assert!(run(capabilities_restricted_1_22, windows).is_some());
    }
}
