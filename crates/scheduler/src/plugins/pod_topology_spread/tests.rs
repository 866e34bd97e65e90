#![allow(clippy::unwrap_used)]

use super::*;
use crate::framework::testing::{self, FixedLister};
use crate::framework::{Code, NodeScore};
use serde_json::json;
use std::collections::HashMap;

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn plugin_with(args: Value, lister: FixedLister) -> PodTopologySpread {
    let (handle, _) = testing::handle_with(lister);
    PodTopologySpread::new(Args::parse(&args).unwrap(), handle)
}

fn plugin() -> PodTopologySpread {
    plugin_with(Value::Null, FixedLister::default())
}

/// A pod in `default` with labels and a spec (merged with the name).
fn pod(name: &str, labels: Value, spec: Value) -> Arc<PodInfo> {
    let mut spec = spec;
    if spec.is_null() {
        spec = json!({});
    }
    spec["containers"] = json!([{"name": "c", "image": "i"}]);
    testing::pod(json!({"metadata": {"name": name, "labels": labels}, "spec": spec}))
}

/// A pod labelled `foo: <value>`.
fn foo_labelled(name: &str, value: &str) -> Arc<PodInfo> {
    pod(name, json!({"foo": value}), Value::Null)
}

/// A pod labelled `foo: bar`.
fn foo(name: &str) -> Arc<PodInfo> {
    pod(name, json!({"foo": "bar"}), Value::Null)
}

/// A node with a hostname label, an optional zone, and pods.
fn node(name: &str, zone: Option<&str>, pods: &[Arc<PodInfo>]) -> Arc<NodeInfo> {
    let mut labels = json!({HOST: name});
    if let Some(zone) = zone {
        labels[ZONE] = zone.into();
    }
    node_with(json!({"metadata": {"name": name, "labels": labels}}), pods)
}

fn node_with(json: Value, pods: &[Arc<PodInfo>]) -> Arc<NodeInfo> {
    Arc::new(testing::node(json, pods))
}

fn constraint(max_skew: i32, key: &str, action: &str) -> Value {
    json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action,
           "labelSelector": {"matchLabels": {"foo": "bar"}}})
}

/// The incoming pod: labelled `foo: bar`, with these constraints (and more spec).
fn incoming(constraints: Vec<Value>, more: Value) -> Arc<PodInfo> {
    let mut spec = if more.is_null() { json!({}) } else { more };
    spec["topologySpreadConstraints"] = Value::Array(constraints);
    pod("incoming", json!({"foo": "bar"}), spec)
}

/// PreFilter then Filter on every node: each node's code and reason.
fn filter(
    plugin: &PodTopologySpread,
    pod: &PodInfo,
    nodes: &[Arc<NodeInfo>],
) -> (Status, Vec<(String, Code, String)>) {
    let mut state = CycleState::new();
    let snapshot = Snapshot::new(nodes.to_vec());
    let (result, status) = plugin.pre_filter(&mut state, pod, &snapshot);
    assert_eq!(result, None);
    if !status.is_success() {
        return (status, Vec::new());
    }
    let verdicts = nodes
        .iter()
        .map(|n| {
            let s = plugin.filter(&state, pod, n);
            (n.name.clone(), s.code(), s.message())
        })
        .collect();
    (status, verdicts)
}

/// The names of the nodes that pass Filter.
fn feasible(plugin: &PodTopologySpread, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Vec<String> {
    let (status, verdicts) = filter(plugin, pod, nodes);
    assert!(status.is_success(), "{status}");
    verdicts
        .into_iter()
        .filter(|(_, code, _)| *code == Code::Success)
        .map(|(name, _, _)| name)
        .collect()
}

/// PreFilter, PreScore over `scored`, Score and normalize: the final scores by node.
fn scores(
    plugin: &PodTopologySpread,
    pod: &PodInfo,
    all: &[Arc<NodeInfo>],
    scored: &[Arc<NodeInfo>],
) -> Result<Vec<i64>, Status> {
    let mut state = CycleState::new();
    let snapshot = Snapshot::new(all.to_vec());
    let (_, status) = plugin.pre_filter(&mut state, pod, &snapshot);
    assert!(status.is_success() || status.is_skip(), "{status}");
    let status = plugin.pre_score(&mut state, pod, scored);
    if !status.is_success() {
        return Err(status);
    }
    let mut list: Vec<NodeScore> = scored
        .iter()
        .map(|n| {
            let (score, status) = plugin.score(&state, pod, n);
            assert!(status.is_success());
            NodeScore {
                name: &n.name,
                score,
            }
        })
        .collect();
    assert!(plugin.normalize(&state, pod, &mut list).is_success());
    Ok(list.into_iter().map(|s| s.score).collect())
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The cluster of Kubernetes' documentation: node1, node2 in zoneA, node3, node4 in
/// zoneB; a `foo: bar` pod on each of node1, node2, node3.
fn documented_cluster() -> Vec<Arc<NodeInfo>> {
    vec![
        node("node1", Some("zoneA"), &[foo("p1")]),
        node("node2", Some("zoneA"), &[foo("p2")]),
        node("node3", Some("zoneB"), &[foo("p3")]),
        node("node4", Some("zoneB"), &[]),
    ]
}

#[test]
fn one_zone_constraint_keeps_the_pod_out_of_the_fuller_zone() {
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    let (status, verdicts) = filter(&plugin(), &pod, &documented_cluster());
    assert!(status.is_success());
    assert_eq!(
        verdicts,
        vec![
            (
                "node1".to_string(),
                Code::Unschedulable,
                "node(s) didn't match pod topology spread constraints".to_string()
            ),
            (
                "node2".to_string(),
                Code::Unschedulable,
                "node(s) didn't match pod topology spread constraints".to_string()
            ),
            ("node3".to_string(), Code::Success, String::new()),
            ("node4".to_string(), Code::Success, String::new()),
        ]
    );
    // With maxSkew 2, zoneA (2 + 1 − 1) is fine too.
    let pod = incoming(vec![constraint(2, ZONE, "DoNotSchedule")], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod, &documented_cluster()),
        names(&["node1", "node2", "node3", "node4"])
    );
}

#[test]
fn zone_and_hostname_constraints_together() {
    // The documented example: only node4 satisfies both.
    let pod = incoming(
        vec![
            constraint(1, ZONE, "DoNotSchedule"),
            constraint(1, HOST, "DoNotSchedule"),
        ],
        Value::Null,
    );
    assert_eq!(
        feasible(&plugin(), &pod, &documented_cluster()),
        names(&["node4"])
    );
}

#[test]
fn conflicting_constraints_leave_the_pod_pending() {
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("a"), foo("b"), foo("c")]),
        node("node2", Some("zoneA"), &[foo("d"), foo("e")]),
        node("node3", Some("zoneB"), &[foo("f"), foo("g"), foo("h")]),
    ];
    // Zone: zoneA 5, zoneB 3 → only zoneB (node3) fits; hostname: the minimum is 2 (node2),
    // node3 would make 3 + 1 − 2 = 2 > 1. Nothing fits both.
    let pod = incoming(
        vec![
            constraint(1, ZONE, "DoNotSchedule"),
            constraint(1, HOST, "DoNotSchedule"),
        ],
        Value::Null,
    );
    assert!(feasible(&plugin(), &pod, &nodes).is_empty());
}

#[test]
fn a_node_without_the_topology_key_is_unresolvable() {
    let nodes = vec![
        node("node1", Some("zoneA"), &[]),
        node("no-zone", None, &[foo("p")]),
    ];
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    let (_, verdicts) = filter(&plugin(), &pod, &nodes);
    assert_eq!(verdicts[0].1, Code::Success);
    assert_eq!(
        verdicts[1],
        (
            "no-zone".to_string(),
            Code::UnschedulableAndUnresolvable,
            "node(s) didn't match pod topology spread constraints (missing required label)"
                .to_string()
        )
    );
    assert_eq!(
        REASON_NODE_LABEL_NOT_MATCH,
        "node(s) didn't match pod topology spread constraints (missing required label)"
    );
    // The node without a zone does not count: zoneA (0) is the only domain, the pod fits.
}

#[test]
fn nodes_missing_any_key_of_the_constraints_do_not_count() {
    // The hostname-less node holds pods in zoneB, but it lacks a key of another
    // constraint, so it is not counted: zoneB is empty, zoneA has 1 → zoneA is refused.
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("p1")]),
        node("node2", Some("zoneB"), &[]),
        node_with(
            json!({"metadata": {"name": "odd", "labels": {ZONE: "zoneB"}}}),
            &[foo("p2"), foo("p3")],
        ),
    ];
    let pod = incoming(
        vec![
            constraint(1, ZONE, "DoNotSchedule"),
            constraint(5, HOST, "DoNotSchedule"),
        ],
        Value::Null,
    );
    let (_, verdicts) = filter(&plugin(), &pod, &nodes);
    assert_eq!(verdicts[0].1, Code::Unschedulable);
    assert_eq!(verdicts[1].1, Code::Success);
    assert_eq!(verdicts[2].1, Code::UnschedulableAndUnresolvable);
}

#[test]
fn only_matching_pods_of_the_namespace_that_are_not_terminating_count() {
    let other_ns = testing::pod(json!({
        "metadata": {"name": "x", "namespace": "other", "labels": {"foo": "bar"}},
        "spec": {"containers": []}}));
    let terminating = testing::pod(json!({
        "metadata": {"name": "t", "labels": {"foo": "bar"},
                     "deletionTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"containers": []}}));
    let unrelated = pod("u", json!({"foo": "baz"}), Value::Null);
    let nodes = vec![
        node(
            "node1",
            Some("zoneA"),
            &[other_ns, terminating, unrelated, foo("p")],
        ),
        node("node2", Some("zoneB"), &[]),
    ];
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    // zoneA counts 1 (only `p`): 1 + 1 − 0 > 1.
    assert_eq!(feasible(&plugin(), &pod, &nodes), names(&["node2"]));
}

#[test]
fn an_incoming_pod_not_matching_its_selector_adds_nothing() {
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("p")]),
        node("node2", Some("zoneB"), &[]),
    ];
    let mut spec = json!({});
    spec["topologySpreadConstraints"] = json!([constraint(1, ZONE, "DoNotSchedule")]);
    let outsider = pod("incoming", json!({"other": "x"}), spec);
    // 1 + 0 − 0 ≤ 1 everywhere.
    assert_eq!(
        feasible(&plugin(), &outsider, &nodes),
        names(&["node1", "node2"])
    );
}

#[test]
fn a_constraint_without_selector_counts_nothing_and_an_empty_one_too() {
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("p"), foo("q")]),
        node("node2", Some("zoneB"), &[]),
    ];
    let no_selector =
        json!({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"});
    let pod1 = incoming(vec![no_selector], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod1, &nodes),
        names(&["node1", "node2"])
    );
    // An empty selector matches the incoming pod (1) but counts no existing pods.
    let empty = json!({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                       "labelSelector": {}});
    let pod2 = incoming(vec![empty], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod2, &nodes),
        names(&["node1", "node2"])
    );
}

#[test]
fn min_domains_takes_the_global_minimum_as_zero_until_enough_domains() {
    // Two zones with one matching pod each.
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("p1")]),
        node("node2", Some("zoneB"), &[foo("p2")]),
    ];
    let mut c = constraint(1, ZONE, "DoNotSchedule");
    let pod = incoming(vec![c.clone()], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod, &nodes),
        names(&["node1", "node2"])
    );
    // minDomains 3 > 2 domains: the global minimum is 0, 1 + 1 − 0 > 1 everywhere.
    c["minDomains"] = 3.into();
    let pod = incoming(vec![c.clone()], Value::Null);
    let (_, verdicts) = filter(&plugin(), &pod, &nodes);
    assert!(verdicts.iter().all(|v| v.1 == Code::Unschedulable
        && v.2 == "node(s) didn't match pod topology spread constraints"));
    // minDomains 2 is reached.
    c["minDomains"] = 2.into();
    let pod = incoming(vec![c.clone()], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod, &nodes),
        names(&["node1", "node2"])
    );
    // With maxSkew 2 and minDomains 3, a zone with one pod still takes a second.
    c["minDomains"] = 3.into();
    c["maxSkew"] = 2.into();
    let pod = incoming(vec![c], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod, &nodes),
        names(&["node1", "node2"])
    );
}

/// zoneA and zoneB with one pod each, zoneC empty.
fn three_zones(zone_c_node: Value) -> Vec<Arc<NodeInfo>> {
    vec![
        node("node1", Some("zoneA"), &[foo("p1")]),
        node("node2", Some("zoneB"), &[foo("p2")]),
        node_with(zone_c_node, &[]),
    ]
}

#[test]
fn node_affinity_policy_honor_and_ignore() {
    let nodes = three_zones(
        json!({"metadata": {"name": "node3", "labels": {HOST: "node3", ZONE: "zoneC"}}}),
    );
    let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["zoneC"]}]}]}}}});
    // Honor (default): zoneC does not count, the minimum is 1 → zoneA and zoneB fit.
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], affinity.clone());
    assert_eq!(
        feasible(&plugin(), &pod, &nodes),
        names(&["node1", "node2", "node3"])
    );
    // Ignore: zoneC counts with 0 → only zoneC fits (node affinity itself is another
    // plugin's business).
    let mut c = constraint(1, ZONE, "DoNotSchedule");
    c["nodeAffinityPolicy"] = "Ignore".into();
    let pod = incoming(vec![c], affinity);
    assert_eq!(feasible(&plugin(), &pod, &nodes), names(&["node3"]));
    // A nodeSelector is honored the same way.
    let pod = incoming(
        vec![constraint(1, ZONE, "DoNotSchedule")],
        json!({"nodeSelector": {"disk": "ssd"}}),
    );
    // No node has disk=ssd: no domain is eligible, nothing counts, the minimum is 0 and
    // 0 + 1 − 0 ≤ 1 everywhere.
    assert_eq!(
        feasible(&plugin(), &pod, &nodes),
        names(&["node1", "node2", "node3"])
    );
}

#[test]
fn node_taints_policy_honor_and_ignore() {
    let tainted = json!({"metadata": {"name": "node3", "labels": {HOST: "node3", ZONE: "zoneC"}},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}});
    let nodes = three_zones(tainted);
    // Ignore (default): zoneC counts with 0 → only zoneC.
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    assert_eq!(feasible(&plugin(), &pod, &nodes), names(&["node3"]));
    // Honor: the untolerated taint excludes zoneC → minimum 1.
    let mut c = constraint(1, ZONE, "DoNotSchedule");
    c["nodeTaintsPolicy"] = "Honor".into();
    let pod = incoming(vec![c.clone()], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod, &nodes),
        names(&["node1", "node2", "node3"])
    );
    // Honor, but the pod tolerates the taint: zoneC counts again.
    let pod = incoming(
        vec![c.clone()],
        json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]}),
    );
    assert_eq!(feasible(&plugin(), &pod, &nodes), names(&["node3"]));
    let pod = incoming(
        vec![c.clone()],
        json!({"tolerations": [{"operator": "Exists"}]}),
    );
    assert_eq!(feasible(&plugin(), &pod, &nodes), names(&["node3"]));
    // PreferNoSchedule taints do not exclude a node.
    let soft_taint = json!({"metadata": {"name": "node3", "labels": {HOST: "node3", ZONE: "zoneC"}},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "PreferNoSchedule"}]}});
    let pod = incoming(vec![c], Value::Null);
    assert_eq!(
        feasible(&plugin(), &pod, &three_zones(soft_taint)),
        names(&["node3"])
    );
}

#[test]
fn match_label_keys_narrow_the_selector_to_the_pods_revision() {
    let old = |name: &str| {
        pod(
            name,
            json!({"foo": "bar", "pod-template-hash": "old"}),
            Value::Null,
        )
    };
    let nodes = vec![
        node("node1", Some("zoneA"), &[old("o1"), old("o2")]),
        node("node2", Some("zoneB"), &[]),
    ];
    let mut c = constraint(1, ZONE, "DoNotSchedule");
    c["matchLabelKeys"] = json!(["pod-template-hash"]);
    let mut spec = json!({});
    spec["topologySpreadConstraints"] = json!([c]);
    let new = pod(
        "incoming",
        json!({"foo": "bar", "pod-template-hash": "new"}),
        spec.clone(),
    );
    // The old revision's pods do not count: both zones are empty.
    assert_eq!(
        feasible(&plugin(), &new, &nodes),
        names(&["node1", "node2"])
    );
    // A pod of the old revision counts them.
    let same = pod(
        "incoming",
        json!({"foo": "bar", "pod-template-hash": "old"}),
        spec.clone(),
    );
    assert_eq!(feasible(&plugin(), &same, &nodes), names(&["node2"]));
    // A key the pod does not have is ignored.
    let unlabelled = pod("incoming", json!({"foo": "bar"}), spec);
    assert_eq!(feasible(&plugin(), &unlabelled, &nodes), names(&["node2"]));
}

#[test]
fn pre_filter_skips_pods_without_hard_constraints() {
    let mut state = CycleState::new();
    let snapshot = Snapshot::new(documented_cluster());
    let plain = foo("plain");
    let (_, status) = plugin().pre_filter(&mut state, &plain, &snapshot);
    assert!(status.is_skip());
    let soft = incoming(vec![constraint(1, ZONE, "ScheduleAnyway")], Value::Null);
    let (_, status) = plugin().pre_filter(&mut state, &soft, &snapshot);
    assert!(status.is_skip());
    // Filter without PreFilter's state is an error.
    let status = plugin().filter(&CycleState::new(), &soft, &snapshot.nodes[0]);
    assert_eq!(status.code(), Code::Error);
}

#[test]
fn invalid_selectors_are_errors() {
    let c = json!({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Near", "values": ["x"]}]}});
    let pod = incoming(vec![c], Value::Null);
    let (status, _) = filter(&plugin(), &pod, &documented_cluster());
    assert_eq!(status.code(), Code::Error);
    assert_eq!(
        status.message(),
        "get constraints from pod: \"Near\" is not a valid label selector operator"
    );
}

#[test]
fn add_and_remove_pod_update_the_counts_and_the_minimum() {
    // zoneA: 1, zoneB: 1 → maxSkew 1: both zones fit.
    let victim = foo("victim");
    let nodes = vec![
        node("node1", Some("zoneA"), std::slice::from_ref(&victim)),
        node("node2", Some("zoneB"), &[foo("p2")]),
    ];
    let plugin = plugin();
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    let mut state = CycleState::new();
    let snapshot = Snapshot::new(nodes.clone());
    assert!(
        plugin
            .pre_filter(&mut state, &pod, &snapshot)
            .1
            .is_success()
    );
    let fits = |state: &CycleState, node: &NodeInfo| plugin.filter(state, &pod, node).is_success();
    assert!(fits(&state, &nodes[0]) && fits(&state, &nodes[1]));

    // Adding a pod in zoneB makes zoneB 2: the minimum stays 1, zoneB is refused.
    let mut what_if = state.clone();
    let added = foo("added");
    assert!(
        plugin
            .add_pod(&mut what_if, &pod, &added, &nodes[1])
            .is_success()
    );
    assert!(fits(&what_if, &nodes[0]));
    assert!(!fits(&what_if, &nodes[1]));
    // The original state is untouched.
    assert!(fits(&state, &nodes[1]));

    // Removing the victim empties zoneA: the minimum drops to 0, zoneB (1 + 1) is refused.
    let mut what_if = state.clone();
    assert!(
        plugin
            .remove_pod(&mut what_if, &pod, &victim, &nodes[0])
            .is_success()
    );
    assert!(fits(&what_if, &nodes[0]));
    assert!(!fits(&what_if, &nodes[1]));
    // Putting it back restores the minimum exactly (zoneA is the only domain at 0).
    assert!(
        plugin
            .add_pod(&mut what_if, &pod, &victim, &nodes[0])
            .is_success()
    );
    assert!(fits(&what_if, &nodes[1]));

    // Pods of another namespace, not matching, or terminating change nothing.
    let mut what_if = state.clone();
    let other = testing::pod(
        json!({"metadata": {"name": "o", "namespace": "x", "labels": {"foo": "bar"}}}),
    );
    let unrelated = foo_labelled("u", "no");
    for p in [&other, &unrelated] {
        assert!(
            plugin
                .add_pod(&mut what_if, &pod, p, &nodes[1])
                .is_success()
        );
    }
    assert!(fits(&what_if, &nodes[1]));

    // Without PreFilter's state the extensions report an error.
    let status = plugin.add_pod(&mut CycleState::new(), &pod, &added, &nodes[0]);
    assert_eq!(status.code(), Code::Error);
}

#[test]
fn add_pod_on_a_node_outside_the_eligible_ones_changes_nothing() {
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("p1")]),
        node("node2", Some("zoneB"), &[]),
        node("no-zone", None, &[]),
    ];
    let plugin = plugin();
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    let mut state = CycleState::new();
    assert!(
        plugin
            .pre_filter(&mut state, &pod, &Snapshot::new(nodes.clone()))
            .1
            .is_success()
    );
    assert!(
        plugin
            .add_pod(&mut state, &pod, &foo("x"), &nodes[2])
            .is_success()
    );
    // zoneB still at 0: it fits.
    assert!(plugin.filter(&state, &pod, &nodes[1]).is_success());
}

#[test]
fn hostname_scores_follow_the_documented_formula() {
    // Raw: count × ln(4 + 2) + (maxSkew − 1), rounded: 4, 2, 0, 0 → reversed and scaled.
    let nodes = vec![
        node("node-a", Some("z"), &[foo("a1"), foo("a2")]),
        node("node-b", Some("z"), &[foo("b1")]),
        node("node-c", Some("z"), &[]),
        node("node-d", Some("z"), &[]),
    ];
    let pod = incoming(vec![constraint(1, HOST, "ScheduleAnyway")], Value::Null);
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &nodes).unwrap(),
        vec![0, 50, 100, 100]
    );
    // maxSkew 3 adds 2 to every raw score: 6, 4, 2, 2.
    let pod = incoming(vec![constraint(3, HOST, "ScheduleAnyway")], Value::Null);
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &nodes).unwrap(),
        vec![33, 66, 100, 100]
    );
    // No matching pods anywhere: all raw scores 0 → all 100.
    let empty: Vec<_> = (0..3)
        .map(|i| node(&format!("n{i}"), Some("z"), &[]))
        .collect();
    let pod = incoming(vec![constraint(1, HOST, "ScheduleAnyway")], Value::Null);
    assert_eq!(
        scores(&plugin(), &pod, &empty, &empty).unwrap(),
        vec![100, 100, 100]
    );
}

#[test]
fn zone_scores_count_every_node_and_ignore_nodes_missing_a_key() {
    // zone1 (a: 1, b: 2) = 3, zone2 (c: 1) = 1, d has no zone. Two domains among the nodes
    // scored → weight ln 4: raw a 4, b 4, c 1; d is not scored.
    let nodes = vec![
        node("a", Some("zone1"), &[foo("a1")]),
        node("b", Some("zone1"), &[foo("b1"), foo("b2")]),
        node("c", Some("zone2"), &[foo("c1")]),
        node("d", None, &[]),
    ];
    let pod = incoming(vec![constraint(1, ZONE, "ScheduleAnyway")], Value::Null);
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &nodes).unwrap(),
        vec![25, 25, 100, 0]
    );
    // Pods on nodes that are not scored (b filtered out) still count for their zone.
    let scored = vec![nodes[0].clone(), nodes[2].clone()];
    // Raw a 3 × ln 4 = 4.16 → 4, c 1.39 → 1: a 100 × (4 + 1 − 4) / 4 = 25.
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &scored).unwrap(),
        vec![25, 100]
    );
}

#[test]
fn zone_and_hostname_scores_add_up() {
    // zone1: a (1), b (0); zone2: c (2). Weights: zone ln 4, hostname ln 5.
    // a: 1 × 1.386 + 1 × 1.609 = 3.00 → 3; b: 1.386 → 1; c: 2 × 1.386 + 2 × 1.609 = 5.99 → 6.
    let nodes = vec![
        node("a", Some("zone1"), &[foo("a1")]),
        node("b", Some("zone1"), &[]),
        node("c", Some("zone2"), &[foo("c1"), foo("c2")]),
    ];
    let pod = incoming(
        vec![
            constraint(1, ZONE, "ScheduleAnyway"),
            constraint(1, HOST, "ScheduleAnyway"),
        ],
        Value::Null,
    );
    // max 6, min 1: a 100 × 4 / 6 = 66, b 100, c 100 × 1 / 6 = 16.
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &nodes).unwrap(),
        vec![66, 100, 16]
    );
}

#[test]
fn scoring_honors_node_inclusion_policies() {
    // zone1: a (2 pods, tainted), b (0); zone2: c (1). With nodeTaintsPolicy Honor, a's
    // pods do not count: zone1 0, zone2 1.
    let tainted = node_with(
        json!({"metadata": {"name": "a", "labels": {HOST: "a", ZONE: "zone1"}},
               "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}),
        &[foo("a1"), foo("a2")],
    );
    let nodes = vec![
        tainted,
        node("b", Some("zone1"), &[]),
        node("c", Some("zone2"), &[foo("c1")]),
    ];
    let scored = vec![nodes[1].clone(), nodes[2].clone()];
    let mut c = constraint(1, ZONE, "ScheduleAnyway");
    let pod = incoming(vec![c.clone()], Value::Null);
    // Ignore: zone1 2 × ln 4 = 2.77 → 3, zone2 1.39 → 1: b 100 × 1 / 3 = 33, c 100.
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &scored).unwrap(),
        vec![33, 100]
    );
    c["nodeTaintsPolicy"] = "Honor".into();
    let pod = incoming(vec![c], Value::Null);
    // Honor: zone1 0, zone2 1: b 100, c 100 × (1 + 0 − 1) / 1 = 0.
    assert_eq!(
        scores(&plugin(), &pod, &nodes, &scored).unwrap(),
        vec![100, 0]
    );
}

#[test]
fn pre_score_skips_pods_without_soft_constraints() {
    let nodes = documented_cluster();
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    assert!(
        scores(&plugin(), &pod, &nodes, &nodes)
            .unwrap_err()
            .is_skip()
    );
    // A pod without constraints and without owners gets no system defaults.
    assert!(
        scores(&plugin(), &foo("plain"), &nodes, &nodes)
            .unwrap_err()
            .is_skip()
    );
    // Nothing to score.
    let mut state = CycleState::new();
    let soft = incoming(vec![constraint(1, ZONE, "ScheduleAnyway")], Value::Null);
    assert!(plugin().pre_score(&mut state, &soft, &[]).is_skip());
}

#[test]
fn pre_score_without_pre_filter_counts_the_nodes_scored() {
    let nodes = vec![
        node("a", Some("zone1"), &[foo("a1")]),
        node("b", Some("zone1"), &[foo("b1"), foo("b2")]),
        node("c", Some("zone2"), &[foo("c1")]),
        node("d", None, &[]),
    ];
    let plugin = plugin();
    let pod = incoming(vec![constraint(1, ZONE, "ScheduleAnyway")], Value::Null);
    let mut state = CycleState::new();
    assert!(plugin.pre_score(&mut state, &pod, &nodes).is_success());
    let mut list: Vec<NodeScore> = nodes
        .iter()
        .map(|n| NodeScore {
            name: &n.name,
            score: plugin.score(&state, &pod, n).0,
        })
        .collect();
    assert!(plugin.normalize(&state, &pod, &mut list).is_success());
    assert_eq!(
        list.iter().map(|s| s.score).collect::<Vec<_>>(),
        vec![25, 25, 100, 0]
    );
    // Score without PreScore is an error.
    assert_eq!(
        plugin.score(&CycleState::new(), &pod, &nodes[0]).1.code(),
        Code::Error
    );
}

/// A lister with a ReplicaSet `web` (selector `app: web`) and a Service `front`
/// (selector `tier: front`) in `default`.
fn owners_lister() -> FixedLister {
    let mut objects = HashMap::new();
    objects.insert(
        ("apps".to_string(), "replicasets".to_string()),
        vec![Arc::new(
            json!({"metadata": {"name": "web", "namespace": "default"},
                             "spec": {"selector": {"matchLabels": {"app": "web"}}}}),
        )],
    );
    objects.insert(
        (String::new(), "services".to_string()),
        vec![
            Arc::new(
                json!({"metadata": {"name": "front", "namespace": "default"},
                            "spec": {"selector": {"tier": "front"}}}),
            ),
            Arc::new(
                json!({"metadata": {"name": "elsewhere", "namespace": "other"},
                            "spec": {"selector": {"app": "web"}}}),
            ),
            Arc::new(
                json!({"metadata": {"name": "headless", "namespace": "default"},
                            "spec": {}}),
            ),
        ],
    );
    FixedLister {
        objects,
        ..FixedLister::default()
    }
}

/// A pod of the ReplicaSet `web`, also selected by the Service `front`.
fn web(name: &str) -> Arc<PodInfo> {
    testing::pod(
        json!({"metadata": {"name": name, "labels": {"app": "web", "tier": "front"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                             "uid": "u1", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
}

#[test]
fn default_selector_comes_from_services_and_the_controller() {
    let lister = owners_lister();
    let selector = constraints::Owners::default().default_selector(&web("w"), &lister);
    let text: Vec<String> = selector
        .requirements
        .iter()
        .map(|r| format!("{}={:?}", r.key, r.values))
        .collect();
    assert_eq!(text, vec!["tier={\"front\"}", "app={\"web\"}"]);
    // Without owners or services, nothing.
    assert!(
        constraints::Owners::default()
            .default_selector(&foo("x"), &lister)
            .is_empty()
    );
    // A ReplicationController's selector merges like a Service's.
    let mut objects = HashMap::new();
    objects.insert(
        (String::new(), "replicationcontrollers".to_string()),
        vec![Arc::new(
            json!({"metadata": {"name": "rc", "namespace": "default"},
                             "spec": {"selector": {"app": "legacy"}}}),
        )],
    );
    let lister = FixedLister {
        objects,
        ..FixedLister::default()
    };
    let pod = testing::pod(
        json!({"metadata": {"name": "l", "labels": {"app": "legacy"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc",
                             "uid": "u", "controller": true}]}}),
    );
    let selector = constraints::Owners::default().default_selector(&pod, &lister);
    assert_eq!(selector.requirements.len(), 1);
    assert_eq!(selector.requirements[0].key, "app");
}

#[test]
fn system_defaults_score_by_hostname_and_zone_even_without_a_zone() {
    // n1 (zone z1) has a pod of the ReplicaSet; n4 has no zone label.
    // Hostname: 4 nodes → ln 6, maxSkew 3; zone: z1, z2 and "" → ln 5, maxSkew 5.
    // n1: 1.79 + 2 + 1.61 + 4 = 9.40 → 9; n2: 2 + 1.61 + 4 = 7.61 → 8; n3: 2 + 4 = 6;
    // n4: 2 (no zone term) → normalized with max 9, min 2.
    let nodes = vec![
        node("n1", Some("z1"), &[web("w1")]),
        node("n2", Some("z1"), &[]),
        node("n3", Some("z2"), &[]),
        node("n4", None, &[]),
    ];
    let plugin = plugin_with(Value::Null, owners_lister());
    let pod = web("incoming");
    assert_eq!(
        scores(&plugin, &pod, &nodes, &nodes).unwrap(),
        vec![22, 33, 55, 100]
    );
    // System defaults are all ScheduleAnyway: Filter is skipped.
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod, &Snapshot::new(nodes.clone()));
    assert!(status.is_skip());
}

#[test]
fn list_defaults_apply_to_pods_without_constraints() {
    let args = json!({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"}]});
    let plugin = plugin_with(args.clone(), owners_lister());
    let nodes = vec![
        node("n1", Some("z1"), &[web("w1")]),
        node("n2", Some("z2"), &[]),
        node("n3", None, &[]),
    ];
    let (_, verdicts) = filter(&plugin, &web("incoming"), &nodes);
    assert_eq!(
        verdicts
            .iter()
            .map(|v| (v.0.as_str(), v.1))
            .collect::<Vec<_>>(),
        vec![
            ("n1", Code::Unschedulable),
            ("n2", Code::Success),
            ("n3", Code::UnschedulableAndUnresolvable)
        ]
    );
    // The soft default (hostname, weight ln(3 + 2)): n1 1.61 → 2, n2 and n3 0.
    assert_eq!(
        scores(&plugin, &web("incoming"), &nodes, &nodes).unwrap(),
        vec![0, 100, 100]
    );
    // A pod's own constraints replace the defaults.
    let own = incoming(vec![constraint(5, ZONE, "DoNotSchedule")], Value::Null);
    assert_eq!(feasible(&plugin, &own, &nodes[..2]), names(&["n1", "n2"]));
    // An empty List turns default spreading off.
    let off = plugin_with(json!({"defaultingType": "List"}), owners_lister());
    let mut state = CycleState::new();
    let (_, status) = off.pre_filter(&mut state, &web("incoming"), &Snapshot::new(nodes.clone()));
    assert!(status.is_skip());
    assert!(
        off.pre_score(&mut state, &web("incoming"), &nodes)
            .is_skip()
    );
}

#[test]
fn args_defaults_and_validation() {
    assert_eq!(Args::parse(&Value::Null).unwrap(), Args::default());
    assert_eq!(
        Args::parse(&json!({})).unwrap().defaulting_type,
        DefaultingType::System
    );
    let list = Args::parse(&json!({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]}))
    .unwrap();
    assert_eq!(list.defaulting_type, DefaultingType::List);
    assert_eq!(list.default_constraints[0].max_skew, 2);
    let err = |args: Value| Args::parse(&args).unwrap_err();
    assert_eq!(
        err(json!({"defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]})),
        "defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty"
    );
    assert_eq!(
        err(json!({"defaultingType": "Custom"})),
        "defaultingType: Unsupported value: \"Custom\": supported values: \"List\", \"System\""
    );
    assert_eq!(
        err(json!({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]})),
        "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"
    );
    assert_eq!(
        err(json!({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"a": "b"}}}]})),
        "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
    );
    assert_eq!(
        err(json!({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]})),
        "defaultConstraints[1]: Duplicate value: \"{topology.kubernetes.io/zone, ScheduleAnyway}\""
    );
    assert_eq!(
        err(json!({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "Sometimes"}]})),
        "[defaultConstraints[0].topologyKey: Required value: can not be empty, \
         defaultConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"]"
    );
    // The factory refuses bad args.
    assert!(factory(&json!({"defaultingType": "Custom"}), &testing::handle()).is_err());
    let plugin = factory(&Value::Null, &testing::handle()).unwrap();
    assert_eq!(plugin.name(), NAME);
    assert!(
        plugin
            .as_pre_filter()
            .is_some_and(|p| p.extensions().is_some())
    );
    assert!(plugin.as_filter().is_some() && plugin.as_score().is_some());
    assert!(!plugin.events().contains(&ClusterEvent::Other));
}

#[test]
fn registered_by_name() {
    assert!(crate::plugins::registry().get(NAME).is_some());
}

#[test]
fn node_affinity_terms_match_as_kubernetes_matches_them() {
    use node_inclusion::NodeAffinity;
    let n = node_with(
        json!({"metadata": {"name": "n1", "labels": {"cpu": "8", "disk": "ssd"}}}),
        &[],
    );
    let matches = |affinity: Value| {
        let p = pod("p", json!({}), affinity);
        NodeAffinity::new(&p.pod).matches(&n)
    };
    let terms = |terms: Value| {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}})
    };
    assert!(matches(json!({})));
    assert!(matches(json!({"nodeSelector": {"disk": "ssd"}})));
    assert!(!matches(json!({"nodeSelector": {"disk": "hdd"}})));
    assert!(matches(terms(
        json!([{"matchExpressions": [{"key": "cpu", "operator": "Gt", "values": ["4"]}]}])
    )));
    assert!(!matches(terms(
        json!([{"matchExpressions": [{"key": "cpu", "operator": "Lt", "values": ["4"]}]}])
    )));
    assert!(matches(terms(
        json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}])
    )));
    assert!(!matches(terms(
        json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}])
    )));
    // Terms are ORed; an empty term or an invalid one selects nothing.
    assert!(matches(terms(
        json!([{}, {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}])
    )));
    assert!(!matches(terms(json!([{}]))));
    assert!(!matches(terms(json!([]))));
    assert!(!matches(terms(
        json!([{"matchExpressions": [{"key": "disk", "operator": "In", "values": []}]}])
    )));
    assert!(matches(terms(
        json!([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}])
    )));
}

#[test]
fn counts_follow_the_nodes_that_change_between_cycles() {
    // One plugin across cycles: its node table must notice every change.
    let plugin = plugin();
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    let a = node("a", Some("zoneA"), &[foo("a1")]);
    let b = node("b", Some("zoneB"), &[]);
    assert_eq!(
        feasible(&plugin, &pod, &[a.clone(), b.clone()]),
        names(&["b"])
    );
    // b gets two pods (a new node info): zoneB 2, zoneA 1.
    let b = node("b", Some("zoneB"), &[foo("b1"), foo("b2")]);
    assert_eq!(
        feasible(&plugin, &pod, &[a.clone(), b.clone()]),
        names(&["a"])
    );
    // a moves to zoneB: one domain with 3 pods.
    let a = node("a", Some("zoneB"), &[foo("a1")]);
    assert_eq!(
        feasible(&plugin, &pod, &[a.clone(), b.clone()]),
        names(&["a", "b"])
    );
    // A new node first (every position shifts): zoneC with 0 is the minimum.
    let c = node("c", Some("zoneC"), &[]);
    assert_eq!(
        feasible(&plugin, &pod, &[c.clone(), a.clone(), b.clone()]),
        names(&["c"])
    );
    // It goes away again.
    assert_eq!(
        feasible(&plugin, &pod, &[a.clone(), b.clone()]),
        names(&["a", "b"])
    );
    // The same nodes, unchanged: the same answer.
    assert_eq!(feasible(&plugin, &pod, &[a, b]), names(&["a", "b"]));
}

#[test]
fn one_table_serves_many_selectors_and_policies() {
    // More distinct selectors than the table keeps columns for: each answer must be what
    // a fresh plugin gives.
    let shared = plugin();
    let nodes: Vec<_> = (0..6)
        .map(|n| {
            let pods: Vec<_> = (0..n)
                .map(|i| {
                    pod(
                        &format!("p{n}-{i}"),
                        json!({"app": format!("a{}", i % 4)}),
                        Value::Null,
                    )
                })
                .collect();
            node(&format!("n{n}"), Some(&format!("z{}", n % 3)), &pods)
        })
        .collect();
    for round in 0..3 {
        for app in 0..40 {
            let mut c = json!({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                               "labelSelector": {"matchLabels": {"app": format!("a{}", app % 37)}}});
            if app % 3 == 0 {
                c["nodeTaintsPolicy"] = "Honor".into();
            }
            let mut spec = json!({"topologySpreadConstraints": [c]});
            if app % 2 == 0 {
                spec["nodeSelector"] = json!({HOST: format!("n{}", app % 6)});
            }
            let p = pod("incoming", json!({"app": format!("a{}", app % 37)}), spec);
            assert_eq!(
                filter(&shared, &p, &nodes).1,
                filter(&plugin(), &p, &nodes).1,
                "round {round}, app {app}"
            );
        }
    }
}

#[test]
fn filter_reads_the_labels_of_nodes_outside_the_snapshot() {
    let nodes = vec![
        node("node1", Some("zoneA"), &[foo("p1")]),
        node("node2", Some("zoneB"), &[]),
    ];
    let plugin = plugin();
    let pod = incoming(vec![constraint(1, ZONE, "DoNotSchedule")], Value::Null);
    let mut state = CycleState::new();
    assert!(
        plugin
            .pre_filter(&mut state, &pod, &Snapshot::new(nodes))
            .1
            .is_success()
    );
    // A known zone (1 + 1 − 0 > 1), an unknown one (0 + 1 − 0), no zone.
    let code = |n: &NodeInfo| plugin.filter(&state, &pod, n).code();
    assert_eq!(code(&node("x", Some("zoneA"), &[])), Code::Unschedulable);
    assert_eq!(code(&node("y", Some("zoneQ"), &[])), Code::Success);
    assert_eq!(
        code(&node("z", None, &[])),
        Code::UnschedulableAndUnresolvable
    );
}

#[test]
fn the_owner_index_follows_the_lister() {
    let owners = constraints::Owners::default();
    let pod = web("w");
    assert_eq!(
        owners
            .default_selector(&pod, &owners_lister())
            .requirements
            .len(),
        2
    );
    // The Service is gone and the ReplicaSet selects by another label.
    let mut objects = HashMap::new();
    objects.insert(
        ("apps".to_string(), "replicasets".to_string()),
        vec![Arc::new(
            json!({"metadata": {"name": "web", "namespace": "default"},
                             "spec": {"selector": {"matchExpressions": [
                                 {"key": "tier", "operator": "Exists"}]}}}),
        )],
    );
    let lister = FixedLister {
        objects,
        ..FixedLister::default()
    };
    let selector = owners.default_selector(&pod, &lister);
    assert_eq!(selector.requirements.len(), 1);
    assert_eq!(selector.requirements[0].key, "tier");
    // A StatefulSet owner.
    let mut objects = HashMap::new();
    objects.insert(
        ("apps".to_string(), "statefulsets".to_string()),
        vec![Arc::new(
            json!({"metadata": {"name": "db", "namespace": "default"},
                             "spec": {"selector": {"matchLabels": {"app": "db"}}}}),
        )],
    );
    let lister = FixedLister {
        objects,
        ..FixedLister::default()
    };
    let db = testing::pod(json!({"metadata": {"name": "db-0", "labels": {"app": "db"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
                             "uid": "u", "controller": true}]}}));
    assert_eq!(
        owners.default_selector(&db, &lister).requirements[0].key,
        "app"
    );
    // An owner that is not the controller, or of another API version, does not count.
    let not_controller = testing::pod(json!({"metadata": {"name": "x", "labels": {"app": "db"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u"}]}}));
    assert!(owners.default_selector(&not_controller, &lister).is_empty());
    let old_version = testing::pod(json!({"metadata": {"name": "y", "labels": {"app": "db"},
        "ownerReferences": [{"apiVersion": "apps/v1beta2", "kind": "StatefulSet", "name": "db",
                             "uid": "u", "controller": true}]}}));
    assert!(owners.default_selector(&old_version, &lister).is_empty());
}

/// A binder that binds nothing (a profile needs one).
struct NoBinder;

impl Plugin for NoBinder {
    fn name(&self) -> &'static str {
        "NoBinder"
    }

    fn as_bind(&self) -> Option<&dyn crate::framework::BindPlugin> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl crate::framework::BindPlugin for NoBinder {
    async fn bind(&self, _: &CycleState, _: &PodInfo, _: &str) -> Status {
        Status::skip()
    }
}

#[test]
fn through_the_framework_runner() {
    use crate::config::{PluginRef, PluginSet, ProfileConfig};
    let mut registry = crate::plugins::registry();
    registry
        .register("NoBinder", |_, _| Ok(Arc::new(NoBinder) as Arc<dyn Plugin>))
        .unwrap();
    let mut profile = ProfileConfig::default_named("spread");
    profile.multi_point = PluginSet {
        enabled: vec![
            PluginRef {
                name: NAME.to_string(),
                weight: 2,
            },
            PluginRef {
                name: "NoBinder".to_string(),
                weight: 0,
            },
        ],
        disabled: Vec::new(),
    };
    let framework =
        crate::framework::Framework::new(&profile, &registry, testing::handle()).unwrap();
    let nodes = documented_cluster();
    let snapshot = Snapshot::new(nodes.clone());

    // A pod without constraints (nor owners): Filter and Score are skipped.
    let plain = foo("plain");
    let mut state = CycleState::new();
    assert!(
        framework
            .run_pre_filter(&mut state, &plain, &snapshot)
            .1
            .is_success()
    );
    assert!(state.skip_filter.contains(NAME));
    assert!(framework.run_filter(&state, &plain, &nodes[0]).is_success());
    assert!(
        framework
            .run_pre_score(&mut state, &plain, &nodes)
            .is_success()
    );
    assert!(state.skip_score.contains(NAME));
    assert_eq!(
        framework.run_score(&state, &plain, &nodes).unwrap(),
        vec![0, 0, 0, 0]
    );

    // Hard and soft constraints.
    let pod = incoming(
        vec![
            constraint(1, ZONE, "DoNotSchedule"),
            constraint(1, HOST, "ScheduleAnyway"),
        ],
        Value::Null,
    );
    let mut state = CycleState::new();
    assert!(
        framework
            .run_pre_filter(&mut state, &pod, &snapshot)
            .1
            .is_success()
    );
    let status = framework.run_filter(&state, &pod, &nodes[0]);
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(status.plugin(), Some(NAME));
    assert_eq!(
        status.message(),
        "node(s) didn't match pod topology spread constraints"
    );
    let feasible = vec![nodes[2].clone(), nodes[3].clone()];
    assert!(
        framework
            .run_pre_score(&mut state, &pod, &feasible)
            .is_success()
    );
    // node3 has one pod, node4 none (weight ln 4): raw 1 and 0 → 0 and 100, weighted × 2.
    assert_eq!(
        framework.run_score(&state, &pod, &feasible).unwrap(),
        vec![0, 200]
    );

    // A what-if removing node1's pod: zoneA drops to 1, node1 fits.
    let mut what_if = state.clone();
    let victim = nodes[0].pods[0].clone();
    assert!(
        framework
            .run_remove_pod(&mut what_if, &pod, &victim, &nodes[0])
            .is_success()
    );
    assert!(framework.run_filter(&what_if, &pod, &nodes[0]).is_success());
    assert!(!framework.run_filter(&state, &pod, &nodes[0]).is_success());
}

/// 5,000 nodes (3 zones, 16 labels each) and 10,000 pods in 50 namespaces; prints the time
/// of each point per cycle. `cargo test --release -p kyb-scheduler -- --ignored
/// --nocapture spread_cost`.
#[test]
#[ignore]
fn spread_cost_on_a_large_cluster() {
    use std::time::Instant;
    let pods: Vec<Arc<PodInfo>> = (0..10_000)
        .map(|i| {
            testing::pod(json!({"metadata": {
                "name": format!("p{i}"), "namespace": format!("ns-{}", i % 50),
                "labels": {"app": format!("app-{}", i % 500), "pod-template-hash": "abc",
                           "tier": "backend", "version": "v1"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": format!("app-{}", i % 500), "uid": "u", "controller": true}]},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        })
        .collect();
    let nodes: Vec<Arc<NodeInfo>> = (0..5_000)
        .map(|n| {
            let mut labels = serde_json::Map::new();
            labels.insert(HOST.into(), format!("node-{n}").into());
            labels.insert(ZONE.into(), format!("zone-{}", n % 3).into());
            labels.insert("topology.kubernetes.io/region".into(), "region-1".into());
            labels.insert("kubernetes.io/os".into(), "linux".into());
            labels.insert("kubernetes.io/arch".into(), "amd64".into());
            labels.insert("node.kubernetes.io/instance-type".into(), "m5.large".into());
            for k in 0..10 {
                labels.insert(format!("example.com/label-{k}"), "x".into());
            }
            let on_node: Vec<_> = pods.iter().skip(n).step_by(5_000).cloned().collect();
            node_with(
                json!({"metadata": {"name": format!("node-{n}"), "labels": labels}}),
                &on_node,
            )
        })
        .collect();
    let snapshot = Snapshot::new(nodes.clone());
    let mut objects = HashMap::new();
    objects.insert(
        ("apps".to_string(), "replicasets".to_string()),
        (0..500)
            .map(|i| Arc::new(json!({"metadata": {"name": format!("app-{i}"), "namespace": format!("ns-{}", i % 50)},
                "spec": {"selector": {"matchLabels": {"app": format!("app-{i}")}}}})))
            .collect(),
    );
    objects.insert(
        (String::new(), "services".to_string()),
        (0..500)
            .map(|i| Arc::new(json!({"metadata": {"name": format!("svc-{i}"), "namespace": format!("ns-{}", i % 50)},
                "spec": {"selector": {"app": format!("app-{i}")}}})))
            .collect(),
    );
    let plugin = plugin_with(
        Value::Null,
        FixedLister {
            objects,
            ..FixedLister::default()
        },
    );
    let selector = json!({"matchLabels": {"app": "app-7"}});
    let own = testing::pod(json!({"metadata": {"name": "in", "namespace": "ns-7",
        "labels": {"app": "app-7", "pod-template-hash": "abc"}},
        "spec": {"containers": [], "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector,
             "matchLabelKeys": ["pod-template-hash"]}]}}));
    let defaulted = pods[7].clone();
    for (what, pod) in [("own constraints", own), ("system defaults", defaulted)] {
        let cold = Instant::now();
        let mut state = CycleState::new();
        plugin.pre_filter(&mut state, &pod, &snapshot);
        let cold = cold.elapsed();
        let rounds = 200u32;
        let mut nodes = nodes.clone();
        let (mut pre_filter, mut filter, mut pre_score, mut score) = <(
            std::time::Duration,
            std::time::Duration,
            std::time::Duration,
            std::time::Duration,
        )>::default();
        for round in 0..rounds {
            // The pod bound in the previous cycle changed one node.
            let changed = (round as usize * 37) % nodes.len();
            let mut info = (*nodes[changed]).clone();
            info.add_pod(pods[round as usize].clone());
            nodes[changed] = Arc::new(info);
            let snapshot = Snapshot::new(nodes.clone());
            let mut state = CycleState::new();
            let t = Instant::now();
            let (_, status) = plugin.pre_filter(&mut state, &pod, &snapshot);
            pre_filter += t.elapsed();
            let t = Instant::now();
            if status.is_success() {
                for n in &nodes {
                    std::hint::black_box(plugin.filter(&state, &pod, n));
                }
            }
            filter += t.elapsed();
            let scored = &nodes[..250];
            let t = Instant::now();
            assert!(plugin.pre_score(&mut state, &pod, scored).is_success());
            pre_score += t.elapsed();
            let t = Instant::now();
            let mut list: Vec<NodeScore> = scored
                .iter()
                .map(|n| NodeScore {
                    name: &n.name,
                    score: plugin.score(&state, &pod, n).0,
                })
                .collect();
            plugin.normalize(&state, &pod, &mut list);
            score += t.elapsed();
        }
        println!(
            "{what} ({} cores): first PreFilter {cold:?}; then per cycle PreFilter {:?}, Filter (5000 nodes) {:?}, PreScore (250 nodes) {:?}, Score (250 nodes) {:?}",
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            pre_filter / rounds,
            filter / rounds,
            pre_score / rounds,
            score / rounds
        );
    }
}
