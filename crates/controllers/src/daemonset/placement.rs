//! Where a DaemonSet's pods belong, as Kubernetes decides it: a node runs the daemon pod
//! when the template's `nodeName` (if any), `nodeSelector` and required node affinity
//! match it and its NoSchedule/NoExecute taints are tolerated (the template's tolerations
//! plus the ones Kubernetes adds to every daemon pod); a pod already there keeps running
//! while only NoSchedule taints stand in the way. Daemon pods are pinned to their node by
//! a required node affinity `metadata.name In [<node>]` and left to the scheduler.
//! Affinity and tolerations are matched by `kyb_component_helpers`, as the scheduler
//! matches them.

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, Toleration,
};
use kyb_component_helpers::nodeaffinity::RequiredNodeAffinity;
use kyb_component_helpers::tolerations::tolerations_tolerate;

/// What a node offers a daemon pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// A daemon pod should be created there.
    pub should_run: bool,
    /// A daemon pod there may stay.
    pub should_continue_running: bool,
}

/// The tolerations every daemon pod gets, on top of its template's.
pub fn automatic_tolerations(host_network: bool) -> Vec<Toleration> {
    let toleration = |key: &str, effect: &str| Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()),
        ..Default::default()
    };
    let mut tolerations = vec![
        toleration("node.kubernetes.io/not-ready", "NoExecute"),
        toleration("node.kubernetes.io/unreachable", "NoExecute"),
        toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host_network {
        tolerations.push(toleration(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
    }
    tolerations
}

/// Adds the automatic tolerations a spec lacks (same key and effect).
pub fn add_automatic_tolerations(spec: &mut PodSpec) {
    let host_network = spec.host_network.unwrap_or(false);
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for wanted in automatic_tolerations(host_network) {
        if !tolerations
            .iter()
            .any(|t| t.key == wanted.key && t.effect == wanted.effect)
        {
            tolerations.push(wanted);
        }
    }
}

/// Whether `node` satisfies the spec's node selector and required node affinity
/// (`GetRequiredNodeAffinity`).
pub fn affinity_matches(spec: &PodSpec, node: &Node) -> bool {
    RequiredNodeAffinity::from_spec(spec).matches(node)
}

/// What `node` offers the daemon pods of a DaemonSet with pod spec `spec`.
pub fn fit(spec: &PodSpec, node: &Node) -> Fit {
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    let name_fits = spec
        .node_name
        .as_deref()
        .is_none_or(|n| n.is_empty() || n == node_name);
    let placed = name_fits && affinity_matches(spec, node);
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    tolerations.extend(automatic_tolerations(spec.host_network.unwrap_or(false)));
    let untolerated = |effect: &str| {
        node.spec
            .iter()
            .flat_map(|s| s.taints.iter().flatten())
            .filter(|t| t.effect == effect)
            .any(|taint| !tolerations_tolerate(&tolerations, taint))
    };
    let no_execute = untolerated("NoExecute");
    let no_schedule = untolerated("NoSchedule");
    Fit {
        should_run: placed && !no_execute && !no_schedule,
        should_continue_running: placed && !no_execute,
    }
}

/// Pins `spec` to `node`: its required node affinity becomes `metadata.name In [node]`
/// (the node already satisfies the template's own terms).
pub fn pin_to_node(spec: &mut PodSpec, node: &str) {
    let term = NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".into(),
            operator: "In".into(),
            values: Some(vec![node.to_string()]),
        }]),
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![term],
    });
}

/// The node a daemon pod is on or pinned to.
pub fn node_of(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    if let Some(node) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(node);
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|r| r.key == "metadata.name" && r.operator == "In")
        .and_then(|r| r.values.as_ref())
        .filter(|v| v.len() == 1)
        .and_then(|v| v.first())
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn node(labels: serde_json::Value, taints: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": labels},
            "spec": {"taints": taints},
        }))
        .unwrap()
    }

    fn spec(value: serde_json::Value) -> PodSpec {
        let mut value = value;
        value["containers"] = json!([{"name": "c"}]);
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn selectors_and_affinity() {
        let n = node(json!({"disk": "ssd", "size": "5"}), json!([]));
        assert!(fit(&spec(json!({})), &n).should_run);
        assert!(fit(&spec(json!({"nodeSelector": {"disk": "ssd"}})), &n).should_run);
        let f = fit(&spec(json!({"nodeSelector": {"disk": "hdd"}})), &n);
        assert!(!f.should_run && !f.should_continue_running);
        let affinity = |op: &str, values: serde_json::Value| {
            spec(
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "size", "operator": op, "values": values}]}]}}}}),
            )
        };
        assert!(fit(&affinity("Gt", json!(["3"])), &n).should_run);
        assert!(!fit(&affinity("Lt", json!(["3"])), &n).should_run);
        assert!(fit(&affinity("In", json!(["5", "6"])), &n).should_run);
        assert!(!fit(&affinity("NotIn", json!(["5"])), &n).should_run);
        assert!(!fit(&spec(json!({"nodeName": "n2"})), &n).should_run);
    }

    #[test]
    fn taints_and_tolerations() {
        let no_schedule = node(
            json!({}),
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
        );
        let f = fit(&spec(json!({})), &no_schedule);
        assert!(!f.should_run && f.should_continue_running);
        let tolerant = spec(
            json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db"}]}),
        );
        assert!(fit(&tolerant, &no_schedule).should_run);
        let no_execute = node(json!({}), json!([{"key": "x", "effect": "NoExecute"}]));
        assert!(!fit(&spec(json!({})), &no_execute).should_continue_running);
        assert!(
            fit(
                &spec(json!({"tolerations": [{"operator": "Exists"}]})),
                &no_execute
            )
            .should_run
        );
        // Automatic tolerations: unschedulable and not-ready nodes still run daemons.
        let cordoned = node(
            json!({}),
            json!([
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
        );
        assert!(fit(&spec(json!({})), &cordoned).should_run);
        let network = node(
            json!({}),
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
        );
        assert!(!fit(&spec(json!({})), &network).should_run);
        assert!(fit(&spec(json!({"hostNetwork": true})), &network).should_run);
    }

    #[test]
    fn pinning() {
        let mut s = spec(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}}),
        );
        pin_to_node(&mut s, "n7");
        add_automatic_tolerations(&mut s);
        let pod = Pod {
            spec: Some(s.clone()),
            ..Default::default()
        };
        assert_eq!(node_of(&pod), Some("n7"));
        assert_eq!(s.tolerations.as_ref().unwrap().len(), 6);
        add_automatic_tolerations(&mut s);
        assert_eq!(s.tolerations.unwrap().len(), 6);
    }
}
