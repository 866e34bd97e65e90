//! SELinux (baseline): `seLinuxOptions` may only name a container type, and may not set a
//! user or a role.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::checks::CheckFailure;
use crate::pod::{PodView, object, string};
use crate::text::{containers_phrase, join_quote, pluralize};

const TYPES_1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
const TYPES_1_31: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// `seLinuxOptions` v1.0.
pub(crate) fn se_linux_options_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    se_linux_options(pod, TYPES_1_0)
}

/// `seLinuxOptions` v1.31: also allows `container_engine_t`.
pub(crate) fn se_linux_options_1_31(pod: &PodView<'_>) -> Option<CheckFailure> {
    se_linux_options(pod, TYPES_1_31)
}

#[derive(Default)]
struct Findings<'a> {
    bad_types: BTreeSet<&'a str>,
    set_user: bool,
    set_role: bool,
}

impl<'a> Findings<'a> {
    /// Records what is wrong with one `seLinuxOptions`; true when nothing is.
    fn inspect(&mut self, options: &'a Map<String, Value>, allowed: &[&str]) -> bool {
        let mut valid = true;
        let t = string(Some(options), "type");
        if !allowed.contains(&t) {
            valid = false;
            self.bad_types.insert(t);
        }
        if !string(Some(options), "user").is_empty() {
            valid = false;
            self.set_user = true;
        }
        if !string(Some(options), "role").is_empty() {
            valid = false;
            self.set_role = true;
        }
        valid
    }
}

fn se_linux_options(pod: &PodView<'_>, allowed: &[&str]) -> Option<CheckFailure> {
    let mut findings = Findings::default();
    let mut setters = Vec::new();
    if let Some(options) = object(pod.security_context(), "seLinuxOptions")
        && !findings.inspect(options, allowed)
    {
        setters.push("pod".to_string());
    }
    let mut bad = Vec::new();
    for container in pod.containers() {
        if let Some(options) = object(container.security_context(), "seLinuxOptions")
            && !findings.inspect(options, allowed)
        {
            bad.push(container.name());
        }
    }
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !findings.bad_types.is_empty() {
        let types: Vec<&str> = findings.bad_types.iter().copied().collect();
        data.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if findings.set_user {
        data.push("user may not be set".to_string());
    }
    if findings.set_role {
        data.push("role may not be set".to_string());
    }
    Some(CheckFailure::new(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            data.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn detail(f: fn(&PodView<'_>) -> Option<CheckFailure>, spec: Value) -> Option<String> {
        f(&PodView::new(None, &spec)).map(|c| {
            assert_eq!(c.reason, "seLinuxOptions");
            c.detail
        })
    }

    #[test]
    fn pod_and_containers() {
        let spec = json!({
            "securityContext": {"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}},
            "containers": [
                {"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_t"}}},
                {"name": "b", "securityContext": {"seLinuxOptions": {"type": "container_init_t"}}},
                {"name": "c", "securityContext": {"seLinuxOptions": {"type": "container_kvm_t"}}},
                {"name": "d", "securityContext": {"seLinuxOptions": {"type": "bar"}}},
                {"name": "e", "securityContext": {"seLinuxOptions": {"user": "bar"}}},
                {"name": "f", "securityContext": {"seLinuxOptions": {"role": "baz"}}},
            ],
        });
        assert_eq!(
            detail(se_linux_options_1_0, spec).as_deref(),
            Some(
                r#"pod and containers "d", "e", "f" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#
            )
        );
    }

    #[test]
    fn single_findings() {
        assert_eq!(
            detail(
                se_linux_options_1_0,
                json!({"securityContext": {"seLinuxOptions": {"type": "bad"}}})
            )
            .as_deref(),
            Some(r#"pod set forbidden securityContext.seLinuxOptions: type "bad""#)
        );
        assert_eq!(
            detail(
                se_linux_options_1_0,
                json!({"securityContext": {"seLinuxOptions": {"user": "bad"}}})
            )
            .as_deref(),
            Some("pod set forbidden securityContext.seLinuxOptions: user may not be set")
        );
        assert_eq!(
            detail(
                se_linux_options_1_0,
                json!({"securityContext": {"seLinuxOptions": {"role": "bad"}}})
            )
            .as_deref(),
            Some("pod set forbidden securityContext.seLinuxOptions: role may not be set")
        );
        assert_eq!(
            detail(
                se_linux_options_1_0,
                json!({"securityContext": {"seLinuxOptions": {"level": "s0:c1,c2", "type": ""}}})
            ),
            None
        );
    }

    #[test]
    fn container_engine_t_allowed_from_1_31() {
        let spec = json!({"containers": [{"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}]});
        assert_eq!(
            detail(se_linux_options_1_0, spec.clone()).as_deref(),
            Some(
                r#"container "a" set forbidden securityContext.seLinuxOptions: type "container_engine_t""#
            )
        );
        assert_eq!(detail(se_linux_options_1_31, spec), None);
    }
}
