//! Users (restricted): containers must run as non-root (`runAsNonRoot=true`, from the pod
//! or the container) and must not set `runAsUser=0`.

use crate::checks::CheckFailure;
use crate::pod::{PodView, boolean, integer, present};
use crate::text::containers_phrase;

/// `runAsNonRoot` v1.0.
pub(crate) fn run_as_non_root_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    const REASON: &str = "runAsNonRoot != true";
    let mut setters = Vec::new();
    let mut pod_non_root = false;
    match boolean(pod.security_context(), "runAsNonRoot") {
        Some(false) => setters.push("pod".to_string()),
        Some(true) => pod_non_root = true,
        None => {}
    }
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for container in pod.containers() {
        match boolean(container.security_context(), "runAsNonRoot") {
            Some(false) => explicitly_bad.push(container.name()),
            Some(true) => {}
            None if !pod_non_root => implicitly_bad.push(container.name()),
            None => {}
        }
    }
    if !explicitly_bad.is_empty() {
        setters.push(containers_phrase(&explicitly_bad));
    }
    if !setters.is_empty() {
        return Some(CheckFailure::new(
            REASON,
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        ));
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        REASON,
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_phrase(&implicitly_bad)
        ),
    ))
}

/// `runAsUser` v1.23: neither the pod nor a container may set `runAsUser=0`.
pub(crate) fn run_as_user_1_23(pod: &PodView<'_>) -> Option<CheckFailure> {
    let root = |sc: Option<&serde_json::Map<String, serde_json::Value>>| {
        present(sc, "runAsUser").and_then(integer) == Some(0)
    };
    let mut setters = Vec::new();
    if root(pod.security_context()) {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = pod
        .containers()
        .filter(|c| root(c.security_context()))
        .map(|c| c.name())
        .collect();
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn detail(f: fn(&PodView<'_>) -> Option<CheckFailure>, spec: Value) -> Option<String> {
        f(&PodView::new(None, &spec)).map(|c| c.detail)
    }

    #[test]
    fn run_as_non_root() {
        let ok = json!({"securityContext": {"runAsNonRoot": true}, "containers": [{"name": "a"}, {"name": "b", "securityContext": {"runAsNonRoot": true}}]});
        assert_eq!(detail(run_as_non_root_1_0, ok), None);
        let ok = json!({"containers": [{"name": "a", "securityContext": {"runAsNonRoot": true}}]});
        assert_eq!(detail(run_as_non_root_1_0, ok), None);

        let explicit = json!({
            "securityContext": {"runAsNonRoot": false},
            "containers": [
                {"name": "a", "securityContext": {"runAsNonRoot": false}},
                {"name": "b", "securityContext": {"runAsNonRoot": false}},
                {"name": "c"},
            ],
        });
        let f = run_as_non_root_1_0(&PodView::new(None, &explicit));
        assert_eq!(
            f,
            Some(CheckFailure::new(
                "runAsNonRoot != true",
                r#"pod and containers "a", "b" must not set securityContext.runAsNonRoot=false"#
            ))
        );
        let pod_true_container_false = json!({
            "securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "a", "securityContext": {"runAsNonRoot": false}}],
        });
        assert_eq!(
            detail(run_as_non_root_1_0, pod_true_container_false).as_deref(),
            Some(r#"container "a" must not set securityContext.runAsNonRoot=false"#)
        );
        let implicit = json!({"containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "d", "securityContext": {"runAsNonRoot": true}},
        ]});
        assert_eq!(
            detail(run_as_non_root_1_0, implicit).as_deref(),
            Some(r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#)
        );
    }

    #[test]
    fn run_as_user() {
        let ok = json!({"securityContext": {"runAsUser": 1000}, "containers": [{"name": "a", "securityContext": {"runAsUser": 1}}, {"name": "b"}]});
        assert_eq!(detail(run_as_user_1_23, ok), None);
        let bad = json!({
            "securityContext": {"runAsUser": 0},
            "containers": [
                {"name": "a", "securityContext": {"runAsUser": 0}},
                {"name": "b", "securityContext": {"runAsUser": 1000}},
            ],
            "ephemeralContainers": [{"name": "e", "securityContext": {"runAsUser": 0}}],
        });
        assert_eq!(
            run_as_user_1_23(&PodView::new(None, &bad)),
            Some(CheckFailure::new(
                "runAsUser=0",
                r#"pod and containers "a", "e" must not set runAsUser=0"#
            ))
        );
        let pod_only = json!({"securityContext": {"runAsUser": 0}});
        assert_eq!(
            detail(run_as_user_1_23, pod_only).as_deref(),
            Some("pod must not set runAsUser=0")
        );
    }
}
