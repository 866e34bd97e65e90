//! NodeUnschedulable (Filter): a node with `spec.unschedulable` (cordoned) refuses pods,
//! except those that tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint.
//! Reason `node(s) were unschedulable` (`node(s) had unknown conditions` for a node whose
//! object is not known), both UnschedulableAndUnresolvable: evicting pods does not uncordon
//! a node. No arguments.

use crate::framework::{
    ClusterEvent, CycleState, FilterPlugin, Handle, NodeInfo, Plugin, PodInfo, Status,
};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use kyb_component_helpers::tolerations;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodeUnschedulable";

/// Why a cordoned node refuses the pod.
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// Why a node without an object refuses the pod.
pub const ERR_REASON_UNKNOWN_CONDITION: &str = "node(s) had unknown conditions";

/// The taint a cordoned node is treated as having.
const TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
const TAINT_EFFECT: &str = "NoSchedule";

/// The plugin (stateless).
pub struct NodeUnschedulable;

pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeUnschedulable))
}

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A node added, or one uncordoned.
    fn events(&self) -> &'static [ClusterEvent] {
        &[ClusterEvent::NodeAdd, ClusterEvent::NodeUpdate]
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

/// Whether a toleration tolerates the unschedulable taint (no value, effect NoSchedule),
/// by Kubernetes' matching (`kyb_component_helpers::tolerations`).
fn tolerates_unschedulable(toleration: &Toleration) -> bool {
    let taint = Taint {
        key: TAINT_KEY.to_string(),
        value: None,
        effect: TAINT_EFFECT.to_string(),
        time_added: None,
    };
    tolerations::tolerates(toleration, &taint)
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.node.is_none() {
            return Status::unresolvable(ERR_REASON_UNKNOWN_CONDITION);
        }
        if !node.unschedulable {
            return Status::success();
        }
        let tolerated = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_ref())
            .is_some_and(|t| t.iter().any(tolerates_unschedulable));
        if tolerated {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_UNSCHEDULABLE)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use crate::framework::{Code, NodeInfo};
    use serde_json::{Value, json};

    fn pod(tolerations: Value) -> Arc<PodInfo> {
        testing::pod(json!({"metadata": {"name": "p"},
            "spec": {"containers": [], "tolerations": tolerations}}))
    }

    fn node(unschedulable: Option<bool>) -> NodeInfo {
        let mut spec = json!({});
        if let Some(u) = unschedulable {
            spec["unschedulable"] = u.into();
        }
        testing::node(json!({"metadata": {"name": "n"}, "spec": spec}), &[])
    }

    fn run(pod: &PodInfo, node: &NodeInfo) -> Status {
        let plugin = factory(&Value::Null, &testing::handle()).unwrap();
        plugin
            .as_filter()
            .unwrap()
            .filter(&CycleState::new(), pod, node)
    }

    #[test]
    fn schedulable_nodes_accept_every_pod() {
        let p = pod(json!([]));
        assert!(run(&p, &node(None)).is_success());
        assert!(run(&p, &node(Some(false))).is_success());
    }

    #[test]
    fn cordoned_nodes_refuse_pods_that_do_not_tolerate_it() {
        let status = run(&pod(json!([])), &node(Some(true)));
        assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(status.reasons(), ["node(s) were unschedulable"]);
        // Tolerating another taint, or the right key with another effect, is not enough.
        for tolerations in [
            json!([{"key": "other", "operator": "Exists"}]),
            json!([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}]),
            json!([{"key": TAINT_KEY, "operator": "Equal", "value": "true"}]),
        ] {
            let status = run(&pod(tolerations.clone()), &node(Some(true)));
            assert_eq!(
                status.reasons(),
                ["node(s) were unschedulable"],
                "{tolerations}"
            );
        }
    }

    #[test]
    fn cordoned_nodes_accept_pods_tolerating_the_unschedulable_taint() {
        for tolerations in [
            json!([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]),
            json!([{"key": TAINT_KEY, "operator": "Exists"}]),
            json!([{"key": TAINT_KEY}]),
            json!([{"operator": "Exists"}]),
            json!([{"key": "other", "operator": "Exists"}, {"key": TAINT_KEY, "operator": "Exists"}]),
        ] {
            assert!(
                run(&pod(tolerations.clone()), &node(Some(true))).is_success(),
                "{tolerations}"
            );
        }
    }

    #[test]
    fn a_node_without_its_object_has_unknown_conditions() {
        let status = run(&pod(json!([])), &NodeInfo::new("n"));
        assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(status.reasons(), ["node(s) had unknown conditions"]);
    }
}
