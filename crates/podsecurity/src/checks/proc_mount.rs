//! /proc mount type (baseline): containers must keep the default /proc masks.

use std::collections::BTreeSet;

use crate::checks::CheckFailure;
use crate::pod::{PodView, present};
use crate::text::{containers_phrase, join_quote};

/// `procMount` v1.0: `securityContext.procMount` must be unset or `Default`.
pub(crate) fn proc_mount_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for container in pod.containers() {
        // Unset, null or mistyped: the default.
        let Some(value) =
            present(container.security_context(), "procMount").and_then(|v| v.as_str())
        else {
            continue;
        };
        if value != "Default" {
            bad.push(container.name());
            types.insert(value);
        }
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<&str> = types.into_iter().collect();
    Some(CheckFailure::new(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad),
            join_quote(&types)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn proc_mount() {
        let ok = json!({"containers": [
            {"name": "a", "securityContext": {"procMount": "Default"}},
            {"name": "b", "securityContext": {"procMount": null}},
            {"name": "c"},
        ]});
        assert_eq!(proc_mount_1_0(&PodView::new(None, &ok)), None);
        let bad = json!({
            "containers": [
                {"name": "a", "securityContext": {"procMount": "Unmasked"}},
                {"name": "b", "securityContext": {"procMount": "Default"}},
            ],
            "initContainers": [{"name": "i", "securityContext": {"procMount": "Other"}}],
        });
        assert_eq!(
            proc_mount_1_0(&PodView::new(None, &bad)),
            Some(CheckFailure::new(
                "procMount",
                r#"containers "i", "a" must not set securityContext.procMount to "Other", "Unmasked""#
            ))
        );
    }
}
