//! What the Job controller keeps of each of its pods during a sync: a [`Member`], the
//! facts counting, replacing and deleting pods read (a few hundred bytes, where a pod is
//! kilobytes). A Job's pods are read one at a time and reduced at once, so a Job of
//! thousands of pods never has them all parsed at the same time.

use super::{indexes, pods};
use k8s_openapi::api::batch::v1::PodFailurePolicy;
use k8s_openapi::api::core::v1::Pod;

/// A pod's phase as the Job controller tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Succeeded,
    Failed,
    Other,
}

/// One pod of a Job, reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub phase: Phase,
    /// Being deleted.
    pub deleting: bool,
    /// Carries the tracking finalizer.
    pub has_finalizer: bool,
    pub ready: bool,
    /// Its completion index, as the pod says ([`indexes::of_pod`]).
    pub index: Option<i32>,
    pub created: Option<jiff::Timestamp>,
    /// When it finished ([`pods::finish_time`]).
    pub finished: Option<jiff::Timestamp>,
    /// For a Failed pod, the first `podFailurePolicy` rule it matches: (action, message).
    pub failure_policy: Option<(String, String)>,
}

impl Member {
    /// `pod` reduced; `policy` is the Job's `podFailurePolicy`.
    pub fn of(pod: &Pod, policy: Option<&PodFailurePolicy>) -> Member {
        let phase = match pods::phase(pod) {
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            _ => Phase::Other,
        };
        let failure_policy = if phase == Phase::Failed {
            policy.and_then(|p| pods::match_failure_policy(p, pod))
        } else {
            None
        };
        Member {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            phase,
            deleting: pod.metadata.deletion_timestamp.is_some(),
            has_finalizer: pods::has_finalizer(pod),
            ready: kyb_component_helpers::pod_readiness::is_ready(pod),
            index: indexes::of_pod(&pod.metadata),
            created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            finished: pods::finish_time(pod),
            failure_policy,
        }
    }

    /// Succeeded or Failed.
    pub fn is_finished(&self) -> bool {
        self.phase != Phase::Other
    }

    /// Being deleted without having finished.
    pub fn is_terminating(&self) -> bool {
        self.deleting && !self.is_finished()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, deleting: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "pi-1-x", "namespace": "ns", "uid": "p1",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionTimestamp": if deleting { Some("2026-01-01T00:02:00Z") } else { None },
                "finalizers": [pods::TRACKING_FINALIZER],
                "annotations": {indexes::COMPLETION_INDEX: "1"}},
            "status": {"phase": phase,
                "conditions": [{"type": "Ready", "status": "True",
                                "lastTransitionTime": "2026-01-01T00:01:00Z"}],
                "containerStatuses": [{"name": "main", "image": "x", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"terminated": {"exitCode": 42,
                        "finishedAt": "2026-01-01T00:03:00Z"}}}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_member_keeps_what_a_sync_reads() {
        let policy: PodFailurePolicy = serde_json::from_value(json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
        ]}))
        .unwrap();
        let failed = Member::of(&pod("Failed", false), Some(&policy));
        assert_eq!(failed.phase, Phase::Failed);
        assert_eq!(
            (
                failed.name.as_str(),
                failed.uid.as_str(),
                failed.namespace.as_str()
            ),
            ("pi-1-x", "p1", "ns")
        );
        assert!(failed.has_finalizer && failed.ready && failed.is_finished());
        assert!(!failed.is_terminating());
        assert_eq!(failed.index, Some(1));
        assert_eq!(
            failed.created,
            Some("2026-01-01T00:00:00Z".parse().unwrap())
        );
        assert_eq!(
            failed.finished,
            Some("2026-01-01T00:03:00Z".parse().unwrap())
        );
        assert_eq!(failed.failure_policy.as_ref().unwrap().0, "FailJob");
        // Only Failed pods are matched against the policy.
        let running = Member::of(&pod("Running", true), Some(&policy));
        assert_eq!(running.phase, Phase::Other);
        assert!(running.failure_policy.is_none());
        assert!(running.is_terminating());
        assert!(
            Member::of(&pod("Failed", false), None)
                .failure_policy
                .is_none()
        );
        assert!(Member::of(&pod("Succeeded", true), None).is_finished());
    }
}
