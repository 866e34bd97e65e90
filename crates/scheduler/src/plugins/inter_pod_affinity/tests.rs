#![allow(clippy::unwrap_used)]

use super::*;
use crate::framework::testing::{self, FixedLister};
use crate::framework::{Code, NodeScore};
use serde_json::json;

const AFFINITY: &str = ERR_REASON_AFFINITY_RULES_NOT_MATCH;
const ANTI_AFFINITY: &str = ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH;
const EXISTING: &str = ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH;

/// The plugin with `args`, over a lister knowing these namespaces' labels.
fn plugin_with(args: Value, namespaces: &[(&str, Value)]) -> Arc<dyn Plugin> {
    let mut lister = FixedLister::default();
    for (name, labels) in namespaces {
        lister
            .namespaces
            .insert(name.to_string(), labels.as_object().unwrap().clone());
    }
    let (handle, _) = testing::handle_with(lister);
    factory(&args, &handle).unwrap()
}

fn plugin() -> Arc<dyn Plugin> {
    plugin_with(Value::Null, &[("default", json!({}))])
}

/// A pod named `name` with `labels`, bound to `node` (`""`: none), with `affinity`.
fn pod(name: &str, labels: Value, node: &str, affinity: Value) -> Arc<PodInfo> {
    pod_in("default", name, labels, node, affinity)
}

fn pod_in(namespace: &str, name: &str, labels: Value, node: &str, affinity: Value) -> Arc<PodInfo> {
    testing::pod(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node, "affinity": affinity},
    }))
}

fn node(name: &str, labels: Value, pods: &[Arc<PodInfo>]) -> Arc<NodeInfo> {
    Arc::new(testing::node(
        json!({"metadata": {"name": name, "labels": labels}}),
        pods,
    ))
}

/// A pod affinity term: pods with `key <operator> values`, per `topology`.
fn term(key: &str, operator: &str, values: &[&str], topology: &str) -> Value {
    json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": operator, "values": values}]},
        "topologyKey": topology,
    })
}

/// `{kind: {required…: required, preferred…: preferred}}` (`kind`: `podAffinity` or
/// `podAntiAffinity`).
fn rules(kind: &str, required: &[Value], preferred: &[(i32, Value)]) -> Value {
    let preferred: Vec<Value> = preferred
        .iter()
        .map(|(weight, term)| json!({"weight": weight, "podAffinityTerm": term}))
        .collect();
    let mut map = Map::new();
    map.insert(
        kind.to_string(),
        json!({
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }),
    );
    Value::Object(map)
}

fn affinity(required: &[Value]) -> Value {
    rules("podAffinity", required, &[])
}

fn anti_affinity(required: &[Value]) -> Value {
    rules("podAntiAffinity", required, &[])
}

/// Both objects' fields.
fn merge(a: Value, b: Value) -> Value {
    let mut map = a.as_object().cloned().unwrap_or_default();
    map.extend(b.as_object().cloned().unwrap_or_default());
    Value::Object(map)
}

/// PreFilter over the snapshot, then Filter on each node (`Skip`: every node passes).
fn filter_with(plugin: &Arc<dyn Plugin>, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Vec<Status> {
    let snapshot = Snapshot::new(nodes.to_vec());
    let mut state = CycleState::new();
    let (result, status) = plugin
        .as_pre_filter()
        .unwrap()
        .pre_filter(&mut state, pod, &snapshot);
    assert_eq!(result, None);
    if status.is_skip() {
        return nodes.iter().map(|_| Status::success()).collect();
    }
    assert!(status.is_success(), "{status}");
    nodes
        .iter()
        .map(|n| plugin.as_filter().unwrap().filter(&state, pod, n))
        .collect()
}

fn filter(pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Vec<Status> {
    filter_with(&plugin(), pod, nodes)
}

fn ok() -> Status {
    Status::success()
}

fn affinity_rejected() -> Status {
    Status::unresolvable(AFFINITY)
}

fn anti_rejected() -> Status {
    Status::unschedulable(ANTI_AFFINITY)
}

fn existing_rejected() -> Status {
    Status::unschedulable(EXISTING)
}

fn region(value: &str) -> Value {
    json!({"region": value})
}

fn scan() -> Value {
    json!({"service": "securityscan"})
}

#[test]
fn pods_without_terms_skip_filter() {
    let plugin = plugin();
    let incoming = pod("p", json!({}), "", Value::Null);
    let existing = pod("e", scan(), "n1", Value::Null);
    let nodes = [node("n1", region("r1"), &[existing])];
    let mut state = CycleState::new();
    let (_, status) = plugin.as_pre_filter().unwrap().pre_filter(
        &mut state,
        &incoming,
        &Snapshot::new(nodes.to_vec()),
    );
    assert!(status.is_skip());
    assert!(
        plugin
            .as_pre_filter()
            .unwrap()
            .pre_filter(&mut state, &incoming, &Snapshot::default())
            .1
            .is_skip()
    );
}

#[test]
fn affinity_to_an_existing_pod_in_the_domain() {
    let existing = pod("e", scan(), "n1", Value::Null);
    let nodes = [node(
        "n1",
        json!({"region": "r1", "zone": "z11"}),
        &[existing],
    )];
    for term in [
        term("service", "In", &["securityscan", "value2"], "region"),
        term("service", "NotIn", &["securityscan3", "value3"], "region"),
        term("service", "Exists", &[], "zone"),
    ] {
        let incoming = pod("p", json!({}), "", affinity(std::slice::from_ref(&term)));
        assert_eq!(filter(&incoming, &nodes), [ok()], "{term}");
    }
    // The selector does not match, or the pod is in another namespace.
    let unmatched = pod(
        "p",
        json!({}),
        "",
        affinity(&[term(
            "service",
            "In",
            &["antivirusscan", "value2"],
            "region",
        )]),
    );
    assert_eq!(filter(&unmatched, &nodes), [affinity_rejected()]);
    let mut other_namespace = term("service", "In", &["securityscan"], "region");
    other_namespace["namespaces"] = json!(["DiffNameSpace"]);
    let incoming = pod("p", json!({}), "", affinity(&[other_namespace]));
    let status = filter(&incoming, &nodes);
    assert_eq!(status, [affinity_rejected()]);
    assert_eq!(status[0].code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(
        status[0].reasons(),
        ["node(s) didn't match pod affinity rules"]
    );
}

#[test]
fn selector_requirements_are_anded_and_terms_all_required() {
    let existing = pod(
        "e",
        json!({"service": "securityscan", "tier": "web"}),
        "n1",
        Value::Null,
    );
    let nodes = [node(
        "n1",
        json!({"region": "r1", "zone": "z11"}),
        &[existing],
    )];
    let both = json!({"labelSelector": {"matchExpressions": [
        {"key": "service", "operator": "In", "values": ["securityscan"]},
        {"key": "tier", "operator": "In", "values": ["web"]}]}, "topologyKey": "region"});
    assert_eq!(
        filter(&pod("p", json!({}), "", affinity(&[both])), &nodes),
        [ok()]
    );
    let one_fails = json!({"labelSelector": {"matchExpressions": [
        {"key": "service", "operator": "In", "values": ["securityscan"]},
        {"key": "tier", "operator": "In", "values": ["db"]}]}, "topologyKey": "region"});
    assert_eq!(
        filter(&pod("p", json!({}), "", affinity(&[one_fails])), &nodes),
        [affinity_rejected()]
    );
    // Several terms: one pod must match them all.
    let terms = [
        term("service", "Exists", &[], "region"),
        term("tier", "In", &["web"], "zone"),
    ];
    assert_eq!(
        filter(&pod("p", json!({}), "", affinity(&terms)), &nodes),
        [ok()]
    );
    let terms = [
        term("service", "Exists", &[], "region"),
        term("tier", "In", &["db"], "zone"),
    ];
    assert_eq!(
        filter(&pod("p", json!({}), "", affinity(&terms)), &nodes),
        [affinity_rejected()]
    );
}

#[test]
fn affinity_holds_across_the_topology_domain() {
    let existing = pod("e", scan(), "a", Value::Null);
    let lost = pod("lost", scan(), "d", Value::Null);
    let nodes = [
        node("a", region("r1"), &[existing]),
        node("b", region("r1"), &[]),
        node("c", region("r2"), &[]),
        // Without the topology key a node is in no domain, even holding a matching pod.
        node("d", json!({"zone": "z"}), &[lost]),
    ];
    let incoming = pod(
        "p",
        json!({}),
        "",
        affinity(&[term("service", "In", &["securityscan"], "region")]),
    );
    assert_eq!(
        filter(&incoming, &nodes),
        [ok(), ok(), affinity_rejected(), affinity_rejected()]
    );
}

#[test]
fn every_affinity_term_needs_its_own_domain() {
    let existing = pod("e", json!({"security": "S1"}), "a", Value::Null);
    let nodes = [
        node("a", json!({"region": "r1", "zone": "z1"}), &[existing]),
        node("b", json!({"region": "r1", "zone": "z2"}), &[]),
        node("c", json!({"region": "r1"}), &[]),
    ];
    let incoming = pod(
        "p",
        json!({}),
        "",
        affinity(&[
            term("security", "In", &["S1"], "region"),
            term("security", "In", &["S1"], "zone"),
        ]),
    );
    assert_eq!(
        filter(&incoming, &nodes),
        [ok(), affinity_rejected(), affinity_rejected()]
    );
}

#[test]
fn first_pod_of_a_self_affine_group() {
    let own = term("service", "In", &["securityscan"], "zone");
    let incoming = pod("p", scan(), "", affinity(std::slice::from_ref(&own)));
    // No pod matches yet: any node with the topology key will do.
    let empty = [
        node("a", json!({"zone": "z1"}), &[]),
        node("b", json!({"zone": "z2"}), &[]),
        node("c", json!({"region": "r1"}), &[]),
    ];
    assert_eq!(filter(&incoming, &empty), [ok(), ok(), affinity_rejected()]);
    // Once one matches, the others must join its domain.
    let first = pod("first", scan(), "a", Value::Null);
    let nodes = [
        node("a", json!({"zone": "z1"}), &[first]),
        node("b", json!({"zone": "z2"}), &[]),
    ];
    assert_eq!(filter(&incoming, &nodes), [ok(), affinity_rejected()]);
    // A pod not matching its own terms gets no exception.
    let other = pod(
        "p",
        json!({"service": "other"}),
        "",
        affinity(std::slice::from_ref(&own)),
    );
    assert_eq!(
        filter(&other, &empty),
        [
            affinity_rejected(),
            affinity_rejected(),
            affinity_rejected()
        ]
    );
    // Nor does one whose terms look in another namespace.
    let mut elsewhere = own;
    elsewhere["namespaces"] = json!(["other"]);
    let incoming = pod("p", scan(), "", affinity(&[elsewhere]));
    assert_eq!(filter(&incoming, &empty[..1]), [affinity_rejected()]);
}

#[test]
fn incoming_anti_affinity() {
    let existing = pod("e", scan(), "a", Value::Null);
    let nodes = [
        node("a", json!({"zone": "z1", "hostname": "a"}), &[existing]),
        node("b", json!({"zone": "z1", "hostname": "b"}), &[]),
        node("c", json!({"zone": "z2", "hostname": "c"}), &[]),
        node("d", json!({"hostname": "d"}), &[]),
    ];
    let by_zone = pod(
        "p",
        json!({}),
        "",
        anti_affinity(&[term("service", "In", &["securityscan"], "zone")]),
    );
    let status = filter(&by_zone, &nodes);
    assert_eq!(status, [anti_rejected(), anti_rejected(), ok(), ok()]);
    assert_eq!(status[0].code(), Code::Unschedulable);
    assert_eq!(
        status[0].reasons(),
        ["node(s) didn't match pod anti-affinity rules"]
    );
    let by_host = pod(
        "p",
        json!({}),
        "",
        anti_affinity(&[term("service", "In", &["securityscan"], "hostname")]),
    );
    assert_eq!(
        filter(&by_host, &nodes),
        [anti_rejected(), ok(), ok(), ok()]
    );
    let unrelated = pod(
        "p",
        json!({}),
        "",
        anti_affinity(&[term("service", "In", &["antivirusscan"], "zone")]),
    );
    assert_eq!(filter(&unrelated, &nodes), [ok(), ok(), ok(), ok()]);
}

#[test]
fn existing_pods_anti_affinity_is_respected() {
    let existing = pod(
        "e",
        scan(),
        "a",
        anti_affinity(&[term("security", "In", &["S1"], "zone")]),
    );
    let nodes = [
        node("a", json!({"zone": "z1"}), &[existing]),
        node("b", json!({"zone": "z1"}), &[]),
        node("c", json!({"zone": "z2"}), &[]),
        node("d", json!({"region": "r1"}), &[]),
    ];
    // An incoming pod without terms of its own, selected by the existing pod's.
    let incoming = pod("p", json!({"security": "S1"}), "", Value::Null);
    let status = filter(&incoming, &nodes);
    assert_eq!(
        status,
        [existing_rejected(), existing_rejected(), ok(), ok()]
    );
    assert_eq!(status[0].code(), Code::Unschedulable);
    assert_eq!(
        status[0].reasons(),
        ["node(s) didn't satisfy existing pods anti-affinity rules"]
    );
    // Not selected: goes anywhere.
    let other = pod("p", json!({"security": "S2"}), "", Value::Null);
    assert_eq!(filter(&other, &nodes), [ok(), ok(), ok(), ok()]);
}

#[test]
fn affinity_and_anti_affinity_together() {
    let existing = pod("e", scan(), "n1", Value::Null);
    let nodes = [node(
        "n1",
        json!({"region": "r1", "zone": "z11"}),
        &[existing],
    )];
    let satisfied = merge(
        affinity(&[term("service", "In", &["securityscan"], "region")]),
        anti_affinity(&[term("service", "In", &["antivirusscan"], "zone")]),
    );
    assert_eq!(filter(&pod("p", json!({}), "", satisfied), &nodes), [ok()]);
    let violated = merge(
        affinity(&[term("service", "In", &["securityscan"], "region")]),
        anti_affinity(&[term("service", "In", &["securityscan"], "zone")]),
    );
    assert_eq!(
        filter(&pod("p", json!({}), "", violated), &nodes),
        [anti_rejected()]
    );
    // The existing pod's anti-affinity selects the incoming one: symmetry.
    let guarded = pod(
        "e",
        scan(),
        "n1",
        anti_affinity(&[term("security", "In", &["S1"], "zone")]),
    );
    let nodes = [node(
        "n1",
        json!({"region": "r1", "zone": "z11"}),
        &[guarded],
    )];
    let incoming = pod(
        "p",
        json!({"security": "S1"}),
        "",
        merge(
            affinity(&[term("service", "In", &["securityscan"], "region")]),
            anti_affinity(&[term("service", "In", &["antivirusscan"], "zone")]),
        ),
    );
    assert_eq!(filter(&incoming, &nodes), [existing_rejected()]);
    // Affinity is checked first.
    let incoming = pod(
        "p",
        json!({"security": "S1"}),
        "",
        merge(
            affinity(&[term("service", "In", &["nothing"], "region")]),
            anti_affinity(&[term("service", "In", &["securityscan"], "zone")]),
        ),
    );
    assert_eq!(filter(&incoming, &nodes), [affinity_rejected()]);
}

#[test]
fn namespace_selectors() {
    let plugin = plugin_with(
        Value::Null,
        &[
            ("default", json!({"team": "c"})),
            ("ns-a", json!({"team": "a"})),
            ("ns-b", json!({"team": "b"})),
        ],
    );
    let in_a = pod_in("ns-a", "e", scan(), "a", Value::Null);
    let in_b = pod_in("ns-b", "f", scan(), "b", Value::Null);
    let nodes = [
        node("a", json!({"zone": "z1"}), &[in_a]),
        node("b", json!({"zone": "z2"}), &[in_b]),
        node("c", json!({"zone": "z3"}), &[]),
    ];
    let mut team_a = term("service", "In", &["securityscan"], "zone");
    team_a["namespaceSelector"] = json!({"matchLabels": {"team": "a"}});
    let incoming = pod("p", json!({}), "", affinity(&[team_a.clone()]));
    assert_eq!(
        filter_with(&plugin, &incoming, &nodes),
        [ok(), affinity_rejected(), affinity_rejected()]
    );
    // Namespaces named and selected add up.
    let mut either = team_a.clone();
    either["namespaces"] = json!(["ns-b"]);
    let incoming = pod("p", json!({}), "", anti_affinity(&[either]));
    assert_eq!(
        filter_with(&plugin, &incoming, &nodes),
        [anti_rejected(), anti_rejected(), ok()]
    );
    // An empty selector selects every namespace.
    let mut all = term("service", "In", &["securityscan"], "zone");
    all["namespaceSelector"] = json!({});
    let incoming = pod("p", json!({}), "", anti_affinity(&[all]));
    assert_eq!(
        filter_with(&plugin, &incoming, &nodes),
        [anti_rejected(), anti_rejected(), ok()]
    );
    // An existing pod's selector is matched against the incoming pod's namespace.
    let mut team_c = term("security", "In", &["S1"], "zone");
    team_c["namespaceSelector"] = json!({"matchLabels": {"team": "c"}});
    let guard = pod_in("ns-a", "g", json!({}), "c", anti_affinity(&[team_c]));
    let nodes = [node("c", json!({"zone": "z3"}), &[guard])];
    let incoming = pod("p", json!({"security": "S1"}), "", Value::Null);
    assert_eq!(
        filter_with(&plugin, &incoming, &nodes),
        [existing_rejected()]
    );
    let elsewhere = pod_in("ns-b", "p", json!({"security": "S1"}), "", Value::Null);
    assert_eq!(filter_with(&plugin, &elsewhere, &nodes), [ok()]);
}

#[test]
fn pods_added_and_removed_update_the_counts() {
    let plugin = plugin();
    let nodes = [
        node("a", json!({"zone": "z1"}), &[]),
        node("b", json!({"zone": "z2"}), &[]),
    ];
    let snapshot = Snapshot::new(nodes.to_vec());
    let incoming = pod(
        "p",
        json!({"security": "S1"}),
        "",
        merge(
            affinity(&[term("service", "In", &["web"], "zone")]),
            anti_affinity(&[term("service", "In", &["securityscan"], "zone")]),
        ),
    );
    let mut state = CycleState::new();
    let (_, status) = plugin
        .as_pre_filter()
        .unwrap()
        .pre_filter(&mut state, &incoming, &snapshot);
    assert!(status.is_success());
    let run = |state: &CycleState| -> Vec<Status> {
        nodes
            .iter()
            .map(|n| plugin.as_filter().unwrap().filter(state, &incoming, n))
            .collect()
    };
    // No web pod anywhere and the pod does not match its own terms.
    assert_eq!(run(&state), [affinity_rejected(), affinity_rejected()]);
    let extensions = plugin.as_pre_filter().unwrap().extensions().unwrap();
    let web = pod("web", json!({"service": "web"}), "a", Value::Null);
    assert!(
        extensions
            .add_pod(&mut state, &incoming, &web, &nodes[0])
            .is_success()
    );
    assert_eq!(run(&state), [ok(), affinity_rejected()]);
    // A what-if copy changes alone.
    let mut what_if = state.clone();
    let scanner = pod("scan", scan(), "a", Value::Null);
    assert!(
        extensions
            .add_pod(&mut what_if, &incoming, &scanner, &nodes[0])
            .is_success()
    );
    assert_eq!(run(&what_if), [anti_rejected(), affinity_rejected()]);
    assert_eq!(run(&state), [ok(), affinity_rejected()]);
    assert!(
        extensions
            .remove_pod(&mut what_if, &incoming, &scanner, &nodes[0])
            .is_success()
    );
    assert_eq!(run(&what_if), [ok(), affinity_rejected()]);
    // An added pod whose anti-affinity selects the incoming one.
    let guard = pod(
        "guard",
        json!({"service": "web"}),
        "b",
        anti_affinity(&[term("security", "In", &["S1"], "zone")]),
    );
    assert!(
        extensions
            .add_pod(&mut what_if, &incoming, &guard, &nodes[1])
            .is_success()
    );
    assert_eq!(run(&what_if), [ok(), existing_rejected()]);
    assert!(
        extensions
            .remove_pod(&mut what_if, &incoming, &web, &nodes[0])
            .is_success()
    );
    assert_eq!(run(&what_if), [affinity_rejected(), existing_rejected()]);
    // Without PreFilter's state, the extensions and Filter report an error.
    let mut empty = CycleState::new();
    assert_eq!(
        extensions
            .add_pod(&mut empty, &incoming, &web, &nodes[0])
            .code(),
        Code::Error
    );
    assert_eq!(
        plugin
            .as_filter()
            .unwrap()
            .filter(&empty, &incoming, &nodes[0])
            .code(),
        Code::Error
    );
}

/// PreFilter over the snapshot of `nodes`, PreScore/Score/normalize over `scored` (indexes
/// into `nodes`): the final scores, `None` when skipped.
fn score_with(
    plugin: &Arc<dyn Plugin>,
    pod: &PodInfo,
    nodes: &[Arc<NodeInfo>],
    scored: &[usize],
) -> Option<Vec<i64>> {
    let snapshot = Snapshot::new(nodes.to_vec());
    let mut state = CycleState::new();
    let (_, status) = plugin
        .as_pre_filter()
        .unwrap()
        .pre_filter(&mut state, pod, &snapshot);
    assert!(status.is_success() || status.is_skip(), "{status}");
    let scored: Vec<Arc<NodeInfo>> = scored.iter().map(|i| nodes[*i].clone()).collect();
    let status = plugin
        .as_pre_score()
        .unwrap()
        .pre_score(&mut state, pod, &scored);
    if status.is_skip() {
        return None;
    }
    assert!(status.is_success(), "{status}");
    let score = plugin.as_score().unwrap();
    let mut scores: Vec<NodeScore> = scored
        .iter()
        .map(|n| {
            let (score, status) = score.score(&state, pod, n);
            assert!(status.is_success(), "{status}");
            NodeScore {
                name: &n.name,
                score,
            }
        })
        .collect();
    assert!(score.normalize(&state, pod, &mut scores).is_success());
    Some(scores.into_iter().map(|s| s.score).collect())
}

fn score(plugin: &Arc<dyn Plugin>, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Option<Vec<i64>> {
    let all: Vec<usize> = (0..nodes.len()).collect();
    score_with(plugin, pod, nodes, &all)
}

fn s1() -> Value {
    json!({"security": "S1"})
}

fn s2() -> Value {
    json!({"security": "S2"})
}

fn china() -> Value {
    json!({"region": "China"})
}

fn india() -> Value {
    json!({"region": "India"})
}

fn az(zone: &str) -> Value {
    json!({"az": zone})
}

fn preferred(kind: &str, weight: i32, value: &str, topology: &str) -> Value {
    rules(
        kind,
        &[],
        &[(weight, term("security", "In", &[value], topology))],
    )
}

/// Prefers pods with security=S1 in its region, weight 5.
fn stay_with_s1_in_region() -> Value {
    preferred("podAffinity", 5, "S1", "region")
}

/// Prefers pods with security=S2 in its region, weight 6.
fn stay_with_s2_in_region() -> Value {
    preferred("podAffinity", 6, "S2", "region")
}

/// Avoids pods with security=S1 in its az, weight 5.
fn away_from_s1_in_az() -> Value {
    preferred("podAntiAffinity", 5, "S1", "az")
}

#[test]
fn score_is_skipped_without_terms() {
    let plugin = plugin();
    let nodes = [
        node("m1", china(), &[pod("a", s1(), "m1", Value::Null)]),
        node("m2", india(), &[pod("b", s2(), "m2", Value::Null)]),
    ];
    assert_eq!(
        score(&plugin, &pod("p", s1(), "", Value::Null), &nodes),
        None
    );
    // No nodes to score.
    assert_eq!(
        score_with(
            &plugin,
            &pod("p", s1(), "", stay_with_s1_in_region()),
            &nodes,
            &[]
        ),
        None
    );
}

#[test]
fn preferred_affinity_favours_domains_with_matching_pods() {
    let plugin = plugin();
    let nodes = [
        node("m1", china(), &[pod("a", s1(), "m1", Value::Null)]),
        node("m2", india(), &[pod("b", s2(), "m2", Value::Null)]),
        // Without the topology key, its pod counts nowhere.
        node("m3", az("az1"), &[pod("c", s1(), "m3", Value::Null)]),
    ];
    let incoming = pod("p", s1(), "", stay_with_s1_in_region());
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![100, 0, 0]));
    // Every node of the domain shares its score.
    let nodes = [
        node("m1", china(), &[pod("a", s1(), "m1", Value::Null)]),
        node("m2", json!({"region": "China", "az": "az1"}), &[]),
        node("m3", india(), &[]),
    ];
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![100, 100, 0]));
    // Pods on nodes that did not pass Filter count all the same.
    assert_eq!(
        score_with(&plugin, &incoming, &nodes, &[1, 2]),
        Some(vec![100, 0])
    );
}

#[test]
fn preferred_affinity_weights_add_up_per_pod() {
    let plugin = plugin();
    let s2_pod = |name: &str, node: &str| pod(name, s2(), node, Value::Null);
    let nodes = [
        node("m1", china(), &[s2_pod("a", "m1"), s2_pod("b", "m1")]),
        node("m2", india(), &[s2_pod("c", "m2")]),
        node("m3", china(), &[]),
        node("m4", india(), &[]),
        node("m5", az("az1"), &[s2_pod("d", "m5")]),
    ];
    // China 12, India 6, no region 0.
    let incoming = pod("p", json!({}), "", stay_with_s2_in_region());
    assert_eq!(
        score(&plugin, &incoming, &nodes),
        Some(vec![100, 50, 100, 50, 0])
    );
}

#[test]
fn preferred_anti_affinity_avoids_domains_with_matching_pods() {
    let plugin = plugin();
    let incoming = pod("p", s1(), "", away_from_s1_in_az());
    let nodes = [
        node("m1", az("az1"), &[pod("a", s1(), "m1", Value::Null)]),
        node("m2", china(), &[pod("b", s2(), "m2", Value::Null)]),
    ];
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![0, 100]));
    let nodes = [
        node("m1", az("az1"), &[pod("a", s1(), "m1", Value::Null)]),
        node("m2", az("az1"), &[]),
        node("m3", az("az2"), &[]),
    ];
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![0, 0, 100]));
}

#[test]
fn affinity_and_anti_affinity_scores_are_min_max_normalized() {
    let plugin = plugin();
    let incoming = pod(
        "p",
        json!({}),
        "",
        merge(
            preferred("podAffinity", 8, "S1", "region"),
            preferred("podAntiAffinity", 5, "S2", "az"),
        ),
    );
    let nodes = [
        node(
            "m1",
            json!({"region": "China", "az": "az1"}),
            &[pod("a", s1(), "m1", Value::Null)],
        ),
        node("m2", india(), &[pod("b", s2(), "m2", Value::Null)]),
        node("m3", az("az1"), &[pod("c", s2(), "m3", Value::Null)]),
    ];
    // m1: China 8 + az1 -5 = 3; m2: 0; m3: az1 -5. (x + 5) * 100 / 8, truncated.
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![100, 62, 0]));
}

#[test]
fn existing_pods_preferred_terms_count_symmetrically() {
    let plugin = plugin();
    let incoming = pod("p", s1(), "", Value::Null);
    let nodes = [
        node(
            "m1",
            china(),
            &[pod("a", s2(), "m1", stay_with_s1_in_region())],
        ),
        node(
            "m2",
            india(),
            &[pod("b", s1(), "m2", stay_with_s2_in_region())],
        ),
        node("m3", china(), &[]),
    ];
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![100, 0, 100]));
    let nodes = [
        node(
            "m1",
            az("az1"),
            &[pod("a", s2(), "m1", away_from_s1_in_az())],
        ),
        node("m2", az("az2"), &[pod("b", s1(), "m2", Value::Null)]),
    ];
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![0, 100]));
}

#[test]
fn existing_pods_required_affinity_counts_hard_pod_affinity_weight() {
    let hard = affinity(&[term("security", "In", &["S1", "value2"], "region")]);
    let incoming = pod("p", s1(), "", Value::Null);
    let nodes = [
        node("m1", china(), &[pod("a", s2(), "m1", hard.clone())]),
        node("m2", india(), &[pod("b", s2(), "m2", hard.clone())]),
        node("m3", az("az1"), &[]),
    ];
    assert_eq!(score(&plugin(), &incoming, &nodes), Some(vec![100, 100, 0]));
    // Weight 0: required terms of existing pods do not count.
    let off = plugin_with(json!({"hardPodAffinityWeight": 0}), &[]);
    assert_eq!(score(&off, &incoming, &nodes), None);
    // Against a preferred term of weight 5 elsewhere.
    let nodes = [
        node("m1", china(), &[pod("a", s2(), "m1", hard)]),
        node(
            "m2",
            india(),
            &[pod("b", s2(), "m2", stay_with_s1_in_region())],
        ),
        node("m3", az("az1"), &[]),
    ];
    assert_eq!(score(&plugin(), &incoming, &nodes), Some(vec![20, 100, 0]));
    let heavy = plugin_with(json!({"hardPodAffinityWeight": 10}), &[]);
    assert_eq!(score(&heavy, &incoming, &nodes), Some(vec![100, 50, 0]));
}

#[test]
fn ignoring_preferred_terms_of_existing_pods() {
    let ignoring = plugin_with(json!({"ignorePreferredTermsOfExistingPods": true}), &[]);
    let nodes = [
        node(
            "m1",
            china(),
            &[pod("a", s2(), "m1", stay_with_s1_in_region())],
        ),
        node("m2", india(), &[]),
    ];
    // Without terms of its own, the pod is not scored.
    assert_eq!(
        score(&ignoring, &pod("p", s1(), "", Value::Null), &nodes),
        None
    );
    // With terms of its own, everything counts: China 6 (its term) + 5 (the existing
    // pod's).
    let incoming = pod("p", s1(), "", stay_with_s2_in_region());
    assert_eq!(score(&ignoring, &incoming, &nodes), Some(vec![100, 0]));
}

#[test]
fn preferred_terms_look_in_their_namespaces() {
    let plugin = plugin_with(
        Value::Null,
        &[("default", json!({})), ("other", json!({"env": "prod"}))],
    );
    let nodes = [
        node(
            "m1",
            china(),
            &[pod_in("other", "a", s1(), "m1", Value::Null)],
        ),
        node("m2", india(), &[pod("b", s1(), "m2", Value::Null)]),
    ];
    // By default, the pod's own namespace.
    let incoming = pod("p", json!({}), "", stay_with_s1_in_region());
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![0, 100]));
    let mut prod = term("security", "In", &["S1"], "region");
    prod["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    let incoming = pod("p", json!({}), "", rules("podAffinity", &[], &[(5, prod)]));
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![100, 0]));
}

#[test]
fn equal_scores_normalize_to_zero() {
    let plugin = plugin();
    let incoming = pod("p", json!({}), "", stay_with_s1_in_region());
    let nodes = [
        node("m1", china(), &[pod("a", s1(), "m1", Value::Null)]),
        node("m2", china(), &[]),
    ];
    assert_eq!(score(&plugin, &incoming, &nodes), Some(vec![0, 0]));
}

#[test]
fn arguments() {
    let handle = testing::handle();
    assert!(factory(&Value::Null, &handle).is_ok());
    assert!(
        factory(
            &json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs",
                    "hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": false}),
            &handle
        )
        .is_ok()
    );
    for weight in [-1, 101] {
        assert_eq!(
            factory(&json!({"hardPodAffinityWeight": weight}), &handle).err(),
            Some(format!(
                "hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]"
            ))
        );
    }
    let unknown = factory(&json!({"hardPodAffinityWeigh": 2}), &handle)
        .err()
        .unwrap();
    assert!(unknown.contains("unknown field"), "{unknown}");
}

#[test]
fn registered_by_name() {
    let registry = crate::plugins::registry();
    let plugin = registry.get(NAME).unwrap()(&Value::Null, &testing::handle()).unwrap();
    assert_eq!(plugin.name(), "InterPodAffinity");
    assert!(plugin.as_pre_filter().unwrap().extensions().is_some());
    assert!(plugin.as_filter().is_some());
    assert!(plugin.as_pre_score().is_some() && plugin.as_score().is_some());
}
