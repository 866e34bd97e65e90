//! A node's health as the node lifecycle controller judges it (pure logic): when it was
//! last heard of (its Lease in `kube-node-lease`, its Ready condition's heartbeat, else its
//! creation), the conditions to write when it has gone quiet for longer than the grace
//! period (`Unknown`, reason `NodeStatusUnknown`, "Kubelet stopped posting node status."),
//! and the taints its conditions call for (TaintNodesByCondition's `NoSchedule` taints and
//! TaintBasedEvictions' `NoExecute` ones).

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
pub const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
pub const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
pub const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Every `NoSchedule` taint key this controller manages.
const MANAGED_NO_SCHEDULE: [&str; 7] = [
    NOT_READY,
    UNREACHABLE,
    MEMORY_PRESSURE,
    DISK_PRESSURE,
    PID_PRESSURE,
    NETWORK_UNAVAILABLE,
    UNSCHEDULABLE,
];

/// The conditions the kubelet reports that are set to `Unknown` when it goes quiet.
const KUBELET_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The status of a node's condition `kind`, if it has one.
pub fn condition<'a>(node: &'a Node, kind: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
}

/// The Ready condition's status (`True`, `False`, `Unknown`; `None` if never posted).
pub fn ready_status(node: &Node) -> Option<&str> {
    condition(node, "Ready").map(|c| c.status.as_str())
}

/// When the node was last heard of: the latest of its Lease's renewal, its Ready
/// heartbeat and (for a node that never reported) its creation.
pub fn last_heard(node: &Node, lease: Option<&Lease>) -> Option<Timestamp> {
    let renewed = lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.renew_time.as_ref())
        .map(|t| t.0);
    let heartbeat = condition(node, "Ready")
        .and_then(|c| c.last_heartbeat_time.as_ref())
        .map(|t| t.0);
    let created = node.metadata.creation_timestamp.as_ref().map(|t| t.0);
    [renewed, heartbeat, created].into_iter().flatten().max()
}

/// The conditions to write for a node not heard of within the grace period, or `None`
/// when they already say so. Missing kubelet conditions are added as never updated.
pub fn unknown_conditions(node: &Node, now: Timestamp) -> Option<Vec<NodeCondition>> {
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut changed = false;
    for kind in KUBELET_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == kind) {
            Some(c) if c.status == "Unknown" => {}
            Some(c) => {
                c.status = "Unknown".to_string();
                c.reason = Some("NodeStatusUnknown".to_string());
                c.message = Some("Kubelet stopped posting node status.".to_string());
                c.last_transition_time = Some(Time(now));
                changed = true;
            }
            None => {
                let created = node.metadata.creation_timestamp.clone();
                conditions.push(NodeCondition {
                    type_: kind.to_string(),
                    status: "Unknown".to_string(),
                    reason: Some("NodeStatusNeverUpdated".to_string()),
                    message: Some("Kubelet never posted node status.".to_string()),
                    last_heartbeat_time: created,
                    last_transition_time: Some(Time(now)),
                });
                changed = true;
            }
        }
    }
    changed.then_some(conditions)
}

/// The `NoSchedule` taints the node's conditions and `spec.unschedulable` call for.
pub fn no_schedule_keys(node: &Node) -> Vec<&'static str> {
    let mut keys = vec![];
    let status = |kind| condition(node, kind).map(|c| c.status.as_str());
    match status("Ready") {
        Some("False") => keys.push(NOT_READY),
        Some("Unknown") => keys.push(UNREACHABLE),
        Some(_) => {}
        // Never reported: admission's not-ready taint stays until the node says Ready.
        None => {
            if node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| {
                    t.iter()
                        .any(|t| t.key == NOT_READY && t.effect == "NoSchedule")
                })
            {
                keys.push(NOT_READY);
            }
        }
    }
    for (kind, key) in [
        ("MemoryPressure", MEMORY_PRESSURE),
        ("DiskPressure", DISK_PRESSURE),
        ("PIDPressure", PID_PRESSURE),
        ("NetworkUnavailable", NETWORK_UNAVAILABLE),
    ] {
        if status(kind) == Some("True") {
            keys.push(key);
        }
    }
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        keys.push(UNSCHEDULABLE);
    }
    keys
}

/// The `NoExecute` taint the Ready condition calls for (TaintBasedEvictions).
pub fn no_execute_key(node: &Node) -> Option<&'static str> {
    match ready_status(node) {
        Some("False") => Some(NOT_READY),
        Some("Unknown") => Some(UNREACHABLE),
        _ => None,
    }
}

/// The node's taints with the managed ones brought in line: `no_schedule` and
/// `no_execute` (the managed `NoExecute` taint to keep, if any) present, the other managed
/// ones gone, everything else untouched. `None` when nothing changes.
pub fn reconcile_taints(
    node: &Node,
    no_schedule: &[&str],
    no_execute: Option<&str>,
    now: Timestamp,
) -> Option<Vec<Taint>> {
    let current = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let mut taints: Vec<Taint> = current
        .iter()
        .filter(|t| match t.effect.as_str() {
            "NoSchedule" => {
                !MANAGED_NO_SCHEDULE.contains(&t.key.as_str())
                    || no_schedule.contains(&t.key.as_str())
            }
            "NoExecute" => {
                !(t.key == NOT_READY || t.key == UNREACHABLE) || no_execute == Some(t.key.as_str())
            }
            _ => true,
        })
        .cloned()
        .collect();
    let has = |taints: &[Taint], key: &str, effect: &str| {
        taints.iter().any(|t| t.key == key && t.effect == effect)
    };
    for key in no_schedule {
        if !has(&taints, key, "NoSchedule") {
            taints.push(Taint {
                key: key.to_string(),
                effect: "NoSchedule".to_string(),
                value: None,
                time_added: None,
            });
        }
    }
    if let Some(key) = no_execute
        && !has(&taints, key, "NoExecute")
    {
        taints.push(Taint {
            key: key.to_string(),
            effect: "NoExecute".to_string(),
            value: None,
            time_added: Some(Time(now)),
        });
    }
    (taints != current).then_some(taints)
}

/// Whether the node carries either managed `NoExecute` taint.
pub fn has_no_execute(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| {
            t.iter()
                .any(|t| t.effect == "NoExecute" && (t.key == NOT_READY || t.key == UNREACHABLE))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn node(v: serde_json::Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn last_heard_is_the_latest_signal() {
        let n = node(json!({
            "metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                "lastHeartbeatTime": "2026-01-01T00:01:00Z"}]},
        }));
        let lease: Lease = serde_json::from_value(json!({
            "metadata": {"name": "n"}, "spec": {"renewTime": "2026-01-01T00:02:00.000000Z"},
        }))
        .unwrap();
        assert_eq!(last_heard(&n, None), Some(ts("2026-01-01T00:01:00Z")));
        assert_eq!(
            last_heard(&n, Some(&lease)),
            Some(ts("2026-01-01T00:02:00Z"))
        );
    }

    #[test]
    fn quiet_nodes_go_unknown_once() {
        let n = node(json!({
            "metadata": {"name": "n"},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                {"type": "MemoryPressure", "status": "False"},
            ]},
        }));
        let now = ts("2026-01-01T00:00:00Z");
        let conditions = unknown_conditions(&n, now).unwrap();
        assert_eq!(conditions.len(), 4);
        assert!(conditions.iter().all(|c| c.status == "Unknown"));
        assert_eq!(conditions[0].reason.as_deref(), Some("NodeStatusUnknown"));
        assert_eq!(
            conditions[0].message.as_deref(),
            Some("Kubelet stopped posting node status.")
        );
        assert_eq!(
            conditions[2].reason.as_deref(),
            Some("NodeStatusNeverUpdated")
        );
        let mut again = n.clone();
        again.status.as_mut().unwrap().conditions = Some(conditions);
        assert!(unknown_conditions(&again, now).is_none());
    }

    #[test]
    fn taints_follow_conditions() {
        let now = ts("2026-01-01T00:00:00Z");
        let n = node(json!({
            "metadata": {"name": "n"},
            "spec": {"unschedulable": true, "taints": [
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            ]},
            "status": {"conditions": [
                {"type": "Ready", "status": "Unknown"},
                {"type": "DiskPressure", "status": "True"},
            ]},
        }));
        let keys = no_schedule_keys(&n);
        assert_eq!(keys, [UNREACHABLE, DISK_PRESSURE, UNSCHEDULABLE]);
        let taints = reconcile_taints(&n, &keys, no_execute_key(&n), now).unwrap();
        let shown: Vec<String> = taints
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect();
        assert_eq!(
            shown,
            [
                "dedicated:NoSchedule",
                "node.kubernetes.io/unreachable:NoSchedule",
                "node.kubernetes.io/disk-pressure:NoSchedule",
                "node.kubernetes.io/unschedulable:NoSchedule",
                "node.kubernetes.io/unreachable:NoExecute",
            ]
        );
        assert_eq!(taints[4].time_added, Some(Time(now)));
        // A Ready node loses the not-ready taint admission gave it.
        let ready = node(json!({
            "metadata": {"name": "n"},
            "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }));
        assert_eq!(
            reconcile_taints(&ready, &no_schedule_keys(&ready), None, now),
            Some(vec![])
        );
        // One that never reported keeps it.
        let mut silent = ready.clone();
        silent.status = None;
        assert_eq!(no_schedule_keys(&silent), [NOT_READY]);
    }
}
