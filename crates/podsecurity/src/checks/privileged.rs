//! Privilege controls: privileged containers (baseline) and privilege escalation
//! (restricted).

use crate::checks::CheckFailure;
use crate::pod::{PodView, boolean};
use crate::text::containers_phrase;

/// `privileged` v1.0: no container may set `securityContext.privileged=true`.
pub(crate) fn privileged_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let bad: Vec<&str> = pod
        .containers()
        .filter(|c| boolean(c.security_context(), "privileged") == Some(true))
        .map(|c| c.name())
        .collect();
    if bad.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    ))
}

/// `allowPrivilegeEscalation` v1.8: every container must set
/// `securityContext.allowPrivilegeEscalation=false`.
pub(crate) fn allow_privilege_escalation_1_8(pod: &PodView<'_>) -> Option<CheckFailure> {
    let bad: Vec<&str> = pod
        .containers()
        .filter(|c| boolean(c.security_context(), "allowPrivilegeEscalation") != Some(false))
        .map(|c| c.name())
        .collect();
    if bad.is_empty() {
        return None;
    }
    Some(CheckFailure::new(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    ))
}

/// `allowPrivilegeEscalation` v1.25: as v1.8, but pods with `spec.os.name=windows` are
/// exempt.
pub(crate) fn allow_privilege_escalation_1_25(pod: &PodView<'_>) -> Option<CheckFailure> {
    if pod.is_windows() {
        return None;
    }
    allow_privilege_escalation_1_8(pod)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn privileged() {
        let ok = json!({"containers": [{"name": "a", "securityContext": {"privileged": false}}, {"name": "b"}]});
        assert_eq!(privileged_1_0(&PodView::new(None, &ok)), None);
        let bad = json!({
            "initContainers": [{"name": "i", "securityContext": {"privileged": true}}],
            "containers": [{"name": "a", "securityContext": {"privileged": true}}, {"name": "b"}],
        });
        assert_eq!(
            privileged_1_0(&PodView::new(None, &bad)),
            Some(CheckFailure::new(
                "privileged",
                r#"containers "i", "a" must not set securityContext.privileged=true"#
            ))
        );
    }

    #[test]
    fn privilege_escalation() {
        let spec = json!({"containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"allowPrivilegeEscalation": true}},
            {"name": "d", "securityContext": {"allowPrivilegeEscalation": false}},
        ]});
        let expected = Some(CheckFailure::new(
            "allowPrivilegeEscalation != false",
            r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#,
        ));
        assert_eq!(
            allow_privilege_escalation_1_8(&PodView::new(None, &spec)),
            expected
        );
        assert_eq!(
            allow_privilege_escalation_1_25(&PodView::new(None, &spec)),
            expected
        );
        let ok = json!({"containers": [{"name": "d", "securityContext": {"allowPrivilegeEscalation": false}}]});
        assert_eq!(
            allow_privilege_escalation_1_8(&PodView::new(None, &ok)),
            None
        );
        let windows = json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]});
        assert_eq!(
            allow_privilege_escalation_1_25(&PodView::new(None, &windows)),
            None
        );
        assert!(allow_privilege_escalation_1_8(&PodView::new(None, &windows)).is_some());
    }
}
