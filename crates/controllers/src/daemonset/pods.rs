//! What a DaemonSet sync keeps of each of its pods: a [`Member`] — its node, lifecycle,
//! revision and age, a few hundred bytes where the pod is kilobytes. The set's pods are
//! read one at a time and reduced at once.

use super::placement;
use crate::history::POD_REVISION_LABEL;
use k8s_openapi::api::core::v1::Pod;
use kyb_component_helpers::pod_readiness::Lifecycle;

/// One pod of a DaemonSet, reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    /// The node it runs on or is pinned to ([`placement::node_of`]).
    pub node: Option<String>,
    pub lifecycle: Lifecycle,
    /// The revision it was made from (its `controller-revision-hash` label).
    pub revision: Option<String>,
    pub created: Option<jiff::Timestamp>,
}

impl Member {
    pub fn of(pod: &Pod) -> Member {
        Member {
            name: pod.metadata.name.clone().unwrap_or_default(),
            node: placement::node_of(pod).map(str::to_string),
            lifecycle: Lifecycle::of(pod),
            revision: pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(POD_REVISION_LABEL))
                .cloned(),
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        }
    }

    /// Whether it is of the revision `hash`.
    pub fn is_updated(&self, hash: &str) -> bool {
        self.revision.as_deref() == Some(hash)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_keeps_node_revision_and_age() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "ds-x", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {POD_REVISION_LABEL: "abc"}},
            "spec": {"containers": [], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}]}}}},
            "status": {"phase": "Running"},
        }))
        .unwrap();
        let member = Member::of(&pod);
        assert_eq!(member.name, "ds-x");
        assert_eq!(member.node.as_deref(), Some("n7"));
        assert!(member.is_updated("abc") && !member.is_updated("def"));
        assert_eq!(
            member.created,
            Some("2026-01-01T00:00:00Z".parse().unwrap())
        );
        assert!(!member.lifecycle.is_ready());
    }
}
