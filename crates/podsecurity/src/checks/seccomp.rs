//! Seccomp: baseline forbids explicitly unconfined profiles (through the alpha annotations
//! before policy v1.19, the `seccompProfile` fields from v1.19); restricted requires every
//! container to run under `RuntimeDefault` or `Localhost` (from v1.19).

use std::collections::BTreeSet;

use kyb_apimachinery::gofmt;
use serde_json::{Map, Value};

use crate::checks::CheckFailure;
use crate::pod::{PodView, object, string};
use crate::text::{containers_phrase, join_quote, pluralize};

const POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

fn valid_annotation(v: &str) -> bool {
    v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/")
}

fn valid_type(t: &str) -> bool {
    matches!(t, "Localhost" | "RuntimeDefault")
}

/// `seccompProfile_baseline` v1.0: the alpha annotations must not name an unconfined or
/// unknown profile.
pub(crate) fn seccomp_profile_baseline_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut forbidden = BTreeSet::new();
    if let Some(v) = pod.annotation(POD_ANNOTATION)
        && !valid_annotation(v)
    {
        forbidden.insert(format!("{POD_ANNOTATION}={}", gofmt::quote(v)));
    }
    for container in pod.containers() {
        let key = format!("{CONTAINER_ANNOTATION_PREFIX}{}", container.name());
        if let Some(v) = pod.annotation(&key)
            && !valid_annotation(v)
        {
            forbidden.insert(format!("{key}={}", gofmt::quote(v)));
        }
    }
    if forbidden.is_empty() {
        return None;
    }
    let forbidden: Vec<String> = forbidden.into_iter().collect();
    Some(CheckFailure::new(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", forbidden.len()),
            forbidden.join(", ")
        ),
    ))
}

/// What explicitly set `seccompProfile.type` to a bad value, and the bad values.
struct Explicit<'a> {
    setters: Vec<String>,
    values: BTreeSet<&'a str>,
}

/// The type of a `seccompProfile`, when one is set.
fn profile_type(security_context: Option<&Map<String, Value>>) -> Option<&str> {
    object(security_context, "seccompProfile").map(|p| string(Some(p), "type"))
}

/// `seccompProfile_baseline` v1.19: neither the pod nor a container may set a
/// `seccompProfile.type` other than `RuntimeDefault` or `Localhost`.
pub(crate) fn seccomp_profile_baseline_1_19(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut found = Explicit {
        setters: Vec::new(),
        values: BTreeSet::new(),
    };
    if let Some(t) = profile_type(pod.security_context())
        && !valid_type(t)
    {
        found.setters.push("pod".to_string());
        found.values.insert(t);
    }
    let mut bad = Vec::new();
    for container in pod.containers() {
        if let Some(t) = profile_type(container.security_context())
            && !valid_type(t)
        {
            bad.push(container.name());
            found.values.insert(t);
        }
    }
    if !bad.is_empty() {
        found.setters.push(containers_phrase(&bad));
    }
    explicit_failure(found)
}

fn explicit_failure(found: Explicit<'_>) -> Option<CheckFailure> {
    if found.setters.is_empty() {
        return None;
    }
    let values: Vec<&str> = found.values.into_iter().collect();
    Some(CheckFailure::new(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            found.setters.join(" and "),
            join_quote(&values)
        ),
    ))
}

/// `seccompProfile_restricted` v1.19: the pod must set a valid `seccompProfile.type`, or
/// every container must; nothing may set an invalid one.
pub(crate) fn seccomp_profile_restricted_1_19(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut found = Explicit {
        setters: Vec::new(),
        values: BTreeSet::new(),
    };
    let mut pod_set = false;
    if let Some(t) = profile_type(pod.security_context()) {
        if valid_type(t) {
            pod_set = true;
        } else {
            found.setters.push("pod".to_string());
            found.values.insert(t);
        }
    }
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for container in pod.containers() {
        match profile_type(container.security_context()) {
            Some(t) if !valid_type(t) => {
                explicitly_bad.push(container.name());
                found.values.insert(t);
            }
            Some(_) => {}
            None if !pod_set => implicitly_bad.push(container.name()),
            None => {}
        }
    }
    if !explicitly_bad.is_empty() {
        found.setters.push(containers_phrase(&explicitly_bad));
    }
    if let Some(failure) = explicit_failure(found) {
        return Some(failure);
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_phrase(&implicitly_bad)
        ),
    ))
}

/// `seccompProfile_restricted` v1.25: as v1.19, but pods with `spec.os.name=windows` are
/// exempt.
pub(crate) fn seccomp_profile_restricted_1_25(pod: &PodView<'_>) -> Option<CheckFailure> {
    if pod.is_windows() {
        return None;
    }
    seccomp_profile_restricted_1_19(pod)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(
        f: fn(&PodView<'_>) -> Option<CheckFailure>,
        meta: Value,
        spec: Value,
    ) -> Option<String> {
        f(&PodView::new(Some(&meta), &spec)).map(|c| {
            assert_eq!(c.reason, "seccompProfile");
            c.detail
        })
    }

    #[test]
    fn baseline_annotations() {
        let spec = json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
        let ok = json!({"annotations": {
            "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
            "container.seccomp.security.alpha.kubernetes.io/a": "docker/default",
            "container.seccomp.security.alpha.kubernetes.io/b": "localhost/x",
            "container.seccomp.security.alpha.kubernetes.io/zzz": "unconfined",
        }});
        assert_eq!(run(seccomp_profile_baseline_1_0, ok, spec.clone()), None);
        let bad = json!({"annotations": {
            "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/b": "",
        }});
        assert_eq!(
            run(seccomp_profile_baseline_1_0, bad, spec.clone()).as_deref(),
            Some(
                r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/b="", seccomp.security.alpha.kubernetes.io/pod="unconfined""#
            )
        );
        let one = json!({"annotations": {"container.seccomp.security.alpha.kubernetes.io/c": "unconfined"}});
        assert_eq!(
            run(seccomp_profile_baseline_1_0, one, spec).as_deref(),
            Some(
                r#"forbidden annotation container.seccomp.security.alpha.kubernetes.io/c="unconfined""#
            )
        );
    }

    #[test]
    fn baseline_fields() {
        assert_eq!(
            run(
                seccomp_profile_baseline_1_19,
                json!({}),
                json!({"containers": [{"name": "a"}]})
            ),
            None
        );
        let spec = json!({
            "securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [
                {"name": "a", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
                {"name": "b", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                {"name": "c", "securityContext": {"seccompProfile": {}}},
            ],
        });
        assert_eq!(
            run(seccomp_profile_baseline_1_19, json!({}), spec).as_deref(),
            Some(
                r#"pod and containers "b", "c" must not set securityContext.seccompProfile.type to "", "Unconfined""#
            )
        );
    }

    #[test]
    fn restricted() {
        let pod_level = json!({
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Localhost"}}}],
        });
        assert_eq!(
            run(seccomp_profile_restricted_1_19, json!({}), pod_level),
            None
        );
        let implicit = json!({"containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
            {"name": "c", "securityContext": {}},
        ]});
        assert_eq!(
            run(seccomp_profile_restricted_1_19, json!({}), implicit).as_deref(),
            Some(
                r#"pod or containers "a", "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#
            )
        );
        let explicit = json!({
            "securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}],
        });
        assert_eq!(
            run(seccomp_profile_restricted_1_19, json!({}), explicit).as_deref(),
            Some(
                r#"pod and container "b" must not set securityContext.seccompProfile.type to "Unconfined""#
            )
        );
        let windows = json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]});
        assert_eq!(
            run(seccomp_profile_restricted_1_25, json!({}), windows.clone()),
            None
        );
        assert!(run(seccomp_profile_restricted_1_19, json!({}), windows).is_some());
    }
}
