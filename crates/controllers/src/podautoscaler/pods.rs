//! What the HPA keeps of each pod its target's selector matches: a [`Member`] — the
//! facts the replica calculation reads (phase, deletion, readiness, start, the
//! containers' requests) in a few hundred bytes where the pod is kilobytes. The pods are
//! read one at a time and reduced at once.

use super::quantity;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

/// A pod's `Ready` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readiness {
    /// Its status is `False` (not `True`, nor `Unknown`).
    pub is_false: bool,
    /// Its last transition (the epoch when unset).
    pub since: Timestamp,
}

/// A container's (or restartable init container's) requests, in thousandths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requests {
    pub container: String,
    pub requests: Vec<(String, i64)>,
}

impl Requests {
    /// The request for `resource`, if the container makes one.
    pub fn get(&self, resource: &str) -> Option<i64> {
        self.requests
            .iter()
            .find(|(name, _)| name == resource)
            .map(|(_, milli)| *milli)
    }
}

/// One pod of the target, reduced.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    /// Being deleted, or Failed: left out of the calculation.
    pub ignored: bool,
    pub pending: bool,
    pub ready: Option<Readiness>,
    pub started: Option<Timestamp>,
    /// Per container, then per restartable init container (sidecar); `None` for a pod
    /// without a spec.
    pub containers: Option<Vec<Requests>>,
}

impl Member {
    pub fn of(pod: &Pod) -> Member {
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or_default();
        let ready = kyb_component_helpers::pod_readiness::ready_condition(pod).map(|c| Readiness {
            is_false: c.status == "False",
            since: c
                .last_transition_time
                .as_ref()
                .map_or(Timestamp::UNIX_EPOCH, |t| t.0),
        });
        let containers = pod.spec.as_ref().map(|spec| {
            kyb_component_helpers::pod_readiness::lasting_containers(spec)
                .map(|c| Requests {
                    container: c.name.clone(),
                    requests: c
                        .resources
                        .as_ref()
                        .and_then(|r| r.requests.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|(name, q)| (name.clone(), quantity::milli(q)))
                        .collect(),
                })
                .collect()
        });
        Member {
            name: pod.metadata.name.clone().unwrap_or_default(),
            ignored: pod.metadata.deletion_timestamp.is_some() || phase == "Failed",
            pending: phase == "Pending",
            ready,
            started: status.and_then(|s| s.start_time.as_ref()).map(|t| t.0),
            containers,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_keeps_what_the_calculation_reads() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "250m", "memory": "1Ki"}}}],
                "initContainers": [
                    {"name": "init", "resources": {"requests": {"cpu": "1"}}},
                    {"name": "sidecar", "restartPolicy": "Always"},
                ],
            },
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                       "conditions": [{"type": "Ready", "status": "Unknown"}]},
        }))
        .unwrap();
        let member = Member::of(&pod);
        assert!(!member.ignored && !member.pending);
        assert_eq!(
            member.ready,
            Some(Readiness {
                is_false: false,
                since: Timestamp::UNIX_EPOCH
            })
        );
        assert_eq!(
            member.started,
            Some("2026-01-01T00:00:00Z".parse().unwrap())
        );
        let containers = member.containers.unwrap();
        let names: Vec<&str> = containers.iter().map(|c| c.container.as_str()).collect();
        assert_eq!(names, ["app", "sidecar"]);
        assert_eq!(containers[0].get("cpu"), Some(250));
        assert_eq!(containers[0].get("memory"), Some(1_024_000));
        assert_eq!(containers[1].get("cpu"), None);
        let bare: Pod = serde_json::from_value(json!({"metadata": {"name": "b"},
            "status": {"phase": "Failed"}}))
        .unwrap();
        let bare = Member::of(&bare);
        assert!(bare.ignored && bare.containers.is_none() && bare.ready.is_none());
    }
}
