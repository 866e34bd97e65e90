//! NodePorts (PreFilter, Filter): a pod asking for host ports fits only on nodes where
//! none of them is taken. A port conflicts with one in use for the same protocol and port on
//! the same host IP, `0.0.0.0` conflicting with every address. The pod's host ports (those
//! of its containers and sidecars, with protocol and IP defaulted) are computed once in
//! [`PodInfo`]; PreFilter skips the Filter of pods asking for none; Filter checks them
//! against [`NodeInfo::port_conflicts`]. Reason `node(s) didn't have free ports for the
//! requested pod ports`, Unschedulable (evicting the pod holding the port frees it). No
//! arguments.

use crate::framework::{
    ClusterEvent, CycleState, FilterPlugin, Handle, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodePorts";

/// Why a node refuses the pod.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The plugin (stateless).
pub struct NodePorts;

pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodePorts))
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A pod going away frees its ports; a new node has all of them free.
    fn events(&self) -> &'static [ClusterEvent] {
        &[
            ClusterEvent::NodeAdd,
            ClusterEvent::NodeUpdate,
            ClusterEvent::PodDelete,
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        _state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        // The ports are already in the PodInfo; nothing to keep in the cycle state.
        if pod.host_ports.is_empty() {
            (None, Status::skip())
        } else {
            (None, Status::success())
        }
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.host_ports.iter().any(|p| node.port_conflicts(p)) {
            Status::unschedulable(ERR_REASON)
        } else {
            Status::success()
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

    /// A pod with one container holding `ports` (`(protocol, hostIP, hostPort)`).
    fn pod(name: &str, ports: &[(&str, &str, i32)]) -> Arc<PodInfo> {
        let ports: Vec<Value> = ports
            .iter()
            .map(|(protocol, ip, port)| {
                json!({"containerPort": 80, "protocol": protocol, "hostIP": ip, "hostPort": port})
            })
            .collect();
        testing::pod(json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "ports": ports}]}}))
    }

    fn node(pods: &[Arc<PodInfo>]) -> NodeInfo {
        testing::node(json!({"metadata": {"name": "n"}}), pods)
    }

    fn run(pod: &PodInfo, node: &NodeInfo) -> Status {
        let plugin = factory(&Value::Null, &testing::handle()).unwrap();
        let mut state = CycleState::new();
        let snapshot = Snapshot::new(vec![]);
        let (_, status) = plugin
            .as_pre_filter()
            .unwrap()
            .pre_filter(&mut state, pod, &snapshot);
        if status.is_skip() {
            return status;
        }
        plugin.as_filter().unwrap().filter(&state, pod, node)
    }

    fn refused(status: &Status) -> bool {
        status.code() == Code::Unschedulable
            && status.reasons() == ["node(s) didn't have free ports for the requested pod ports"]
    }

    #[test]
    fn pods_without_host_ports_skip_the_filter() {
        let p = testing::pod(json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}));
        assert!(run(&p, &node(&[])).is_skip());
    }

    #[test]
    fn free_ports_fit() {
        let existing = pod("old", &[("UDP", "127.0.0.1", 8080)]);
        // Another protocol, another port, another address.
        for wanted in [
            pod("p", &[("TCP", "127.0.0.1", 8080)]),
            pod("p", &[("UDP", "127.0.0.1", 8081)]),
            pod("p", &[("UDP", "127.0.0.2", 8080)]),
        ] {
            assert!(
                run(&wanted, &node(std::slice::from_ref(&existing))).is_success(),
                "{:?}",
                wanted.host_ports
            );
        }
        assert!(run(&pod("p", &[("TCP", "", 8080)]), &node(&[])).is_success());
    }

    #[test]
    fn taken_ports_conflict() {
        let existing = pod(
            "old",
            &[("UDP", "127.0.0.1", 8080), ("TCP", "127.0.0.1", 8001)],
        );
        let n = node(&[existing]);
        assert!(refused(&run(&pod("p", &[("UDP", "127.0.0.1", 8080)]), &n)));
        // One conflicting port among free ones is enough.
        assert!(refused(&run(
            &pod(
                "p",
                &[("UDP", "127.0.0.1", 9000), ("TCP", "127.0.0.1", 8001)]
            ),
            &n
        )));
    }

    #[test]
    fn all_addresses_conflict_with_every_address() {
        // The pod wants 0.0.0.0 (also the default when hostIP is empty); the node has
        // 127.0.0.1 taken.
        let n = node(&[pod("old", &[("TCP", "127.0.0.1", 8001)])]);
        assert!(refused(&run(&pod("p", &[("TCP", "0.0.0.0", 8001)]), &n)));
        assert!(refused(&run(&pod("p", &[("TCP", "", 8001)]), &n)));
        // The node has 0.0.0.0 taken; the pod wants one address.
        let n = node(&[pod("old", &[("TCP", "0.0.0.0", 8001)])]);
        assert!(refused(&run(&pod("p", &[("TCP", "127.0.0.1", 8001)]), &n)));
        assert!(run(&pod("p", &[("UDP", "127.0.0.1", 8001)]), &n).is_success());
    }

    #[test]
    fn sidecar_ports_count_ordinary_init_container_ports_do_not() {
        let with_init = |restart_policy: Option<&str>| {
            let mut init = json!({"name": "i",
                "ports": [{"containerPort": 9090, "hostPort": 9090}]});
            if let Some(policy) = restart_policy {
                init["restartPolicy"] = policy.into();
            }
            testing::pod(json!({"metadata": {"name": "old"},
                "spec": {"containers": [{"name": "c"}], "initContainers": [init]}}))
        };
        let wanted = pod("p", &[("TCP", "", 9090)]);
        assert!(refused(&run(&wanted, &node(&[with_init(Some("Always"))]))));
        assert!(run(&wanted, &node(&[with_init(None)])).is_success());
        // The incoming pod's own sidecar ports are checked too.
        let n = node(&[pod("old", &[("TCP", "", 9090)])]);
        assert!(refused(&run(&with_init(Some("Always")), &n)));
    }
}
