//! NodeName (PreFilter, Filter): a pod naming a node in `spec.nodeName` may only go there.
//! PreFilter narrows the search to that node (and skips the Filter of pods naming none);
//! Filter refuses any other node with `node(s) didn't match the requested node name`,
//! UnschedulableAndUnresolvable. No arguments.

use crate::framework::{
    ClusterEvent, CycleState, FilterPlugin, Handle, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

pub const NAME: &str = "NodeName";

/// Why a node other than the requested one refuses the pod.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The plugin (stateless).
pub struct NodeName;

pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeName))
}

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    /// The requested node appearing (or changing).
    fn events(&self) -> &'static [ClusterEvent] {
        &[ClusterEvent::NodeAdd, ClusterEvent::NodeUpdate]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodeName {
    fn pre_filter(
        &self,
        _state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match pod.node_name() {
            Some(name) => (
                Some(PreFilterResult {
                    node_names: Some(BTreeSet::from([name.to_string()])),
                }),
                Status::success(),
            ),
            None => (None, Status::skip()),
        }
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(object) = node.node.as_ref() else {
            return Status::error("node not found");
        };
        match pod.node_name() {
            Some(wanted) if object.metadata.name.as_deref() != Some(wanted) => {
                Status::unresolvable(ERR_REASON)
            }
            _ => Status::success(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use crate::framework::{Code, NodeInfo};
    use serde_json::json;

    fn pod(node_name: Option<&str>) -> Arc<PodInfo> {
        let mut spec = json!({"containers": []});
        if let Some(n) = node_name {
            spec["nodeName"] = n.into();
        }
        testing::pod(json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn node(name: &str) -> NodeInfo {
        testing::node(json!({"metadata": {"name": name}}), &[])
    }

    #[test]
    fn pre_filter_narrows_to_the_requested_node_or_skips() {
        let plugin = factory(&Value::Null, &testing::handle()).unwrap();
        let pre = plugin.as_pre_filter().unwrap();
        let snapshot = Snapshot::new(vec![Arc::new(node("a")), Arc::new(node("b"))]);
        let (result, status) = pre.pre_filter(&mut CycleState::new(), &pod(Some("b")), &snapshot);
        assert!(status.is_success());
        assert_eq!(
            result.unwrap().node_names,
            Some(BTreeSet::from(["b".to_string()]))
        );
        let (result, status) = pre.pre_filter(&mut CycleState::new(), &pod(None), &snapshot);
        assert!(status.is_skip());
        assert_eq!(result, None);
    }

    #[test]
    fn filter_accepts_only_the_requested_node() {
        let state = CycleState::new();
        assert!(NodeName.filter(&state, &pod(None), &node("a")).is_success());
        assert!(
            NodeName
                .filter(&state, &pod(Some("a")), &node("a"))
                .is_success()
        );
        let status = NodeName.filter(&state, &pod(Some("b")), &node("a"));
        assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(
            status.reasons(),
            ["node(s) didn't match the requested node name"]
        );
        let status = NodeName.filter(&state, &pod(Some("a")), &NodeInfo::new("a"));
        assert_eq!(status.code(), Code::Error);
        assert_eq!(status.message(), "node not found");
    }
}
