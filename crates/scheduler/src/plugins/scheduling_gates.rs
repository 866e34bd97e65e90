//! SchedulingGates (PreEnqueue): a pod that still carries `spec.schedulingGates` is not let
//! into the active queue. It stays `Pending` with the message Kubernetes gives, naming the
//! gates (`waiting for scheduling gates: [example.com/a example.com/b]`), until an update
//! removes the last gate. No arguments.

use crate::framework::{ClusterEvent, Handle, Plugin, PodInfo, PreEnqueuePlugin, Status};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "SchedulingGates";

/// The plugin (stateless).
pub struct SchedulingGates;

pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(SchedulingGates))
}

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }

    /// No cluster event lets a gated pod in: only an update of the pod itself that removes
    /// its gates does, and the queue runs PreEnqueue again on every update of a pending pod.
    fn events(&self) -> &'static [ClusterEvent] {
        &[]
    }

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_deref())
            .unwrap_or_default();
        if gates.is_empty() {
            return Status::success();
        }
        // Go prints a list of strings as `[a b c]`.
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        Status::pending(format!(
            "waiting for scheduling gates: [{}]",
            names.join(" ")
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use crate::framework::{Code, PreEnqueuePlugin};
    use serde_json::json;

    fn plugin() -> Arc<dyn Plugin> {
        factory(&Value::Null, &testing::handle()).unwrap()
    }

    #[test]
    fn an_ungated_pod_is_enqueued() {
        let plugin = plugin();
        let pod = testing::pod(json!({"metadata": {"name": "p"}, "spec": {"containers": []}}));
        assert!(
            plugin
                .as_pre_enqueue()
                .unwrap()
                .pre_enqueue(&pod)
                .is_success()
        );
        let empty = testing::pod(json!({"metadata": {"name": "p"},
            "spec": {"containers": [], "schedulingGates": []}}));
        assert!(
            plugin
                .as_pre_enqueue()
                .unwrap()
                .pre_enqueue(&empty)
                .is_success()
        );
    }

    #[test]
    fn a_gated_pod_waits_naming_its_gates() {
        let pod = testing::pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "schedulingGates": [{"name": "foo"}, {"name": "example.com/bar"}]}}));
        let status = SchedulingGates.pre_enqueue(&pod);
        assert_eq!(status.code(), Code::Pending);
        assert_eq!(
            status.message(),
            "waiting for scheduling gates: [foo example.com/bar]"
        );
    }
}
