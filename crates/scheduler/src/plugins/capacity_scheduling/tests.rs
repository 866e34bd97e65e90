#![allow(clippy::unwrap_used)]

use super::*;
use crate::config::{PluginRef, PluginSet, ProfileConfig};
use crate::framework::testing::{self, FixedLister};
use crate::framework::{BindPlugin, Code, FilterPlugin, Framework, Registry};
use async_trait::async_trait;
use serde_json::json;

fn pod(name: &str, namespace: &str, cpu: &str, priority: i32, node: Option<&str>) -> Arc<PodInfo> {
    let mut spec = json!({"priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]});
    if let Some(node) = node {
        spec["nodeName"] = node.into();
    }
    testing::pod(json!({"metadata": {"name": name, "namespace": namespace}, "spec": spec}))
}

fn quota(namespace: &str, min: Value, max: Value) -> Arc<Value> {
    Arc::new(json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
        "metadata": {"name": "quota", "namespace": namespace},
        "spec": {"min": min, "max": max},
    }))
}

fn node(name: &str, cpu: &str, pods: &[Arc<PodInfo>]) -> Arc<NodeInfo> {
    Arc::new(testing::node(
        json!({"metadata": {"name": name},
               "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}),
        pods,
    ))
}

fn lister(quotas: Vec<Arc<Value>>, pods: Vec<Arc<PodInfo>>) -> FixedLister {
    let mut lister = FixedLister {
        pods,
        ..FixedLister::default()
    };
    lister
        .objects
        .insert((GROUP.to_string(), ELASTIC_QUOTAS.to_string()), quotas);
    lister
}

fn plugin(lister: FixedLister) -> CapacityScheduling {
    CapacityScheduling::new(testing::handle_with(lister).0)
}

fn pre_filter(cs: &CapacityScheduling, pod: &PodInfo, snapshot: &Snapshot) -> (CycleState, Status) {
    let mut state = CycleState::new();
    let (result, status) = cs.pre_filter(&mut state, pod, snapshot);
    assert!(result.is_none());
    (state, status)
}

/// A CPU fit of its own (the real NodeResourcesFit is not this crew's).
struct Fit;

impl Plugin for Fit {
    fn name(&self) -> &'static str {
        "Fit"
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for Fit {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.requested.milli_cpu + pod.requests.milli_cpu > node.allocatable.milli_cpu {
            Status::unschedulable("Insufficient cpu")
        } else {
            Status::success()
        }
    }
}

/// Stands for DefaultPreemption after this plugin: always "finds" room on `fallback`.
struct Fallback;

impl Plugin for Fallback {
    fn name(&self) -> &'static str {
        "Fallback"
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
}

impl PostFilterPlugin for Fallback {
    fn post_filter(
        &self,
        _context: &PostFilterContext<'_>,
        _state: &CycleState,
        _pod: &Arc<PodInfo>,
        _statuses: &NodeStatuses,
    ) -> (Option<PostFilterResult>, Status) {
        (
            Some(PostFilterResult {
                nominated_node: "fallback".into(),
                victims: Vec::new(),
            }),
            Status::success(),
        )
    }
}

struct NoBinder;

impl Plugin for NoBinder {
    fn name(&self) -> &'static str {
        "NoBinder"
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

#[async_trait]
impl BindPlugin for NoBinder {
    async fn bind(&self, _state: &CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }
}

fn framework(lister: FixedLister, with_fallback: bool) -> Framework {
    let (handle, _) = testing::handle_with(lister);
    let mut registry = Registry::new();
    registry.register(NAME, factory).unwrap();
    registry
        .register("Fit", |_: &Value, _: &Arc<Handle>| {
            Ok(Arc::new(Fit) as Arc<dyn Plugin>)
        })
        .unwrap();
    registry
        .register("Fallback", |_: &Value, _: &Arc<Handle>| {
            Ok(Arc::new(Fallback) as Arc<dyn Plugin>)
        })
        .unwrap();
    registry
        .register("NoBinder", |_: &Value, _: &Arc<Handle>| {
            Ok(Arc::new(NoBinder) as Arc<dyn Plugin>)
        })
        .unwrap();
    let mut names = vec![NAME, "Fit", "NoBinder"];
    if with_fallback {
        names.push("Fallback");
    }
    let mut profile = ProfileConfig::default_named("quota");
    profile.multi_point = PluginSet {
        enabled: names
            .into_iter()
            .map(|name| PluginRef {
                name: name.to_string(),
                weight: 0,
            })
            .collect(),
        disabled: Vec::new(),
    };
    Framework::new(&profile, &registry, handle).unwrap()
}

/// One scheduling attempt as the scheduler makes it: PreFilter, Filter on every node (or
/// every node marked with the PreFilter refusal), then PostFilter.
fn attempt(
    fw: &Framework,
    pod: &Arc<PodInfo>,
    snapshot: &Snapshot,
) -> (Status, Option<PostFilterResult>, Status) {
    let mut state = CycleState::new();
    let (_, pre_filter) = fw.run_pre_filter(&mut state, pod, snapshot);
    let mut statuses = NodeStatuses::new();
    for node in &snapshot.nodes {
        let status = if pre_filter.is_success() {
            fw.run_filter(&state, pod, node)
        } else {
            pre_filter.clone()
        };
        if !status.is_success() {
            statuses.insert(node.name.clone(), status);
        }
    }
    let context = PostFilterContext {
        framework: fw,
        snapshot,
    };
    let (result, status) = fw.run_post_filter(&context, &state, pod, &statuses);
    (pre_filter, result, status)
}

fn victims(result: &Option<PostFilterResult>) -> Vec<String> {
    let mut keys: Vec<String> = result
        .iter()
        .flat_map(|r| r.victims.iter().map(|v| v.key.clone()))
        .collect();
    keys.sort();
    keys
}

#[test]
fn args_and_registration() {
    assert!(factory(&Value::Null, &testing::handle()).is_ok());
    assert!(factory(&json!({}), &testing::handle()).is_ok());
    assert_eq!(
        factory(&json!({"kubeConfigPath": "x"}), &testing::handle())
            .err()
            .unwrap(),
        "strict decoding error: unknown field \"kubeConfigPath\""
    );
    assert!(crate::plugins::registry().get(NAME).is_some());
}

#[test]
fn quotas_are_read_with_scheduler_plugins_defaults() {
    let quotas = Quotas::from_objects(&[
        quota(
            "a",
            json!({"cpu": "1", "nvidia.com/gpu": 2}),
            json!({"cpu": "1500m"}),
        ),
        quota("b", json!({"memory": "1Gi"}), json!(null)),
        // A second quota in a namespace: the first one counts.
        quota("a", json!({"cpu": "100"}), json!({})),
    ]);
    assert_eq!(quotas.list.len(), 2);
    let a = &quotas.list[quotas.index_of("a").unwrap()];
    assert_eq!(a.min.milli_cpu, 1000);
    assert_eq!(a.min.memory, 0);
    assert_eq!(a.min.scalar["nvidia.com/gpu"], 2);
    assert_eq!(a.max.milli_cpu, 1500);
    assert_eq!(a.max.memory, i64::MAX);
    assert_eq!(a.max.ephemeral_storage, i64::MAX);
    assert_eq!(quotas.total_min.milli_cpu, 1000);
    assert_eq!(quotas.total_min.memory, 1 << 30);
    assert!(quotas.index_of("c").is_none());
}

#[test]
fn namespaces_without_quota_are_not_constrained() {
    let snapshot = Snapshot::new(vec![node("n1", "4", &[])]);
    // No quota anywhere: PreFilter and PostFilter step aside.
    let fw = framework(lister(Vec::new(), Vec::new()), true);
    let p = pod("p", "ns1", "100", 0, None);
    let (refusal, result, status) = attempt(&fw, &p, &snapshot);
    assert!(refusal.is_success());
    assert!(status.is_success(), "{status}");
    assert_eq!(result.unwrap().nominated_node, "fallback");

    // A quota elsewhere: this namespace's pods are not limited.
    let cs = plugin(lister(
        vec![quota("ns1", json!({"cpu": "1"}), json!({"cpu": "1"}))],
        Vec::new(),
    ));
    let free = pod("p", "free", "100", 0, None);
    let (state, status) = pre_filter(&cs, &free, &snapshot);
    assert!(status.is_skip());
    assert!(state.read::<QuotaState>(NAME).is_none());
}

#[test]
fn a_namespace_may_not_exceed_its_max() {
    let used = pod("u", "ns1", "3", 0, Some("n1"));
    let snapshot = Snapshot::new(vec![node("n1", "10", &[used])]);
    let cs = plugin(lister(
        vec![
            quota("ns1", json!({"cpu": "2"}), json!({"cpu": "4"})),
            quota("ns2", json!({"cpu": "4"}), json!({"cpu": "4"})),
        ],
        Vec::new(),
    ));
    let (state, status) = pre_filter(&cs, &pod("p", "ns1", "2", 0, None), &snapshot);
    assert_eq!(
        status,
        Status::unschedulable(
            "Pod ns1/p is rejected in PreFilter because ElasticQuota ns1 is more than Max"
        )
    );
    assert!(state.read::<QuotaState>(NAME).unwrap().rejected);
    let (state, status) = pre_filter(&cs, &pod("p", "ns1", "1", 0, None), &snapshot);
    assert!(status.is_success());
    let quota_state = state.read::<QuotaState>(NAME).unwrap();
    assert!(!quota_state.rejected);
    assert_eq!(quota_state.used[0].milli_cpu, 3000);
}

#[test]
fn a_namespace_borrows_the_unused_min_of_others() {
    let used = pod("u", "ns1", "2", 0, Some("n1"));
    let snapshot = Snapshot::new(vec![node("n1", "10", &[used])]);
    let cs = plugin(lister(
        vec![
            quota("ns1", json!({"cpu": "2"}), json!({"cpu": "8"})),
            quota("ns2", json!({"cpu": "4"}), json!({"cpu": "8"})),
        ],
        Vec::new(),
    ));
    // 2 used + 3 = 5: over ns1's min, within the sum of mins (6): borrowed from ns2.
    assert!(
        pre_filter(&cs, &pod("p", "ns1", "3", 0, None), &snapshot)
            .1
            .is_success()
    );
    // 2 used + 5 = 7 > 6.
    assert_eq!(
        pre_filter(&cs, &pod("p", "ns1", "5", 0, None), &snapshot).1,
        Status::unschedulable(
            "Pod ns1/p is rejected in PreFilter because total ElasticQuota used is more than min"
        )
    );
    // A resource no quota guarantees cannot be borrowed (an unspecified min is 0).
    let hungry = testing::pod(json!({"metadata": {"name": "m", "namespace": "ns1"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi"}}}]}}));
    assert_eq!(
        pre_filter(&cs, &hungry, &snapshot).1.message(),
        "Pod ns1/m is rejected in PreFilter because total ElasticQuota used is more than min"
    );
}

#[test]
fn nominated_pods_go_first() {
    let snapshot = Snapshot::new(vec![node("n1", "10", &[])]);
    let nominated = testing::pod(json!({
        "metadata": {"name": "first", "namespace": "ns1"},
        "spec": {"priority": 10,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]},
        "status": {"nominatedNodeName": "n1"},
    }));
    let cs = plugin(lister(
        vec![quota("ns1", json!({"cpu": "10"}), json!({"cpu": "4"}))],
        vec![nominated],
    ));
    // 3 nominated (more important) + 2 > 4.
    let (state, status) = pre_filter(&cs, &pod("p", "ns1", "2", 0, None), &snapshot);
    assert_eq!(status.code(), Code::Unschedulable);
    let quota_state = state.read::<QuotaState>(NAME).unwrap();
    assert_eq!(quota_state.nominated_in_quota_with_pod.milli_cpu, 5000);
    assert_eq!(quota_state.pod_request.milli_cpu, 2000);
    // A more important pod does not wait for it.
    assert!(
        pre_filter(&cs, &pod("p", "ns1", "2", 20, None), &snapshot)
            .1
            .is_success()
    );
}

#[test]
fn reserve_and_unreserve_track_use_until_the_snapshot_shows_the_pod() {
    let used = pod("u", "ns1", "2", 0, Some("n1"));
    let snapshot = Snapshot::new(vec![node("n1", "10", std::slice::from_ref(&used))]);
    let cs = plugin(lister(
        vec![quota("ns1", json!({"cpu": "10"}), json!({"cpu": "5"}))],
        Vec::new(),
    ));
    let reserved = pod("r", "ns1", "2", 0, None);
    let (mut state, _) = pre_filter(&cs, &reserved, &snapshot);
    assert!(cs.reserve(&mut state, &reserved, "n1").is_success());
    // 2 bound + 2 reserved + 2 > 5.
    let next = pod("p", "ns1", "2", 0, None);
    assert_eq!(
        pre_filter(&cs, &next, &snapshot).1.code(),
        Code::Unschedulable
    );
    cs.unreserve(&mut state, &reserved, "n1");
    assert!(pre_filter(&cs, &next, &snapshot).1.is_success());

    // Reserved again; once the snapshot shows it (assumed), it is counted once.
    assert!(cs.reserve(&mut state, &reserved, "n1").is_success());
    let assumed = pod("r", "ns1", "2", 0, Some("n1"));
    let snapshot = Snapshot::new(vec![node("n1", "10", &[used, assumed])]);
    let one = pod("p", "ns1", "1", 0, None);
    assert!(pre_filter(&cs, &one, &snapshot).1.is_success());
    assert!(lock(&cs.reserved).is_empty());
    // Pods of namespaces without quota are not tracked.
    let free = pod("f", "free", "1", 0, None);
    assert!(cs.reserve(&mut CycleState::new(), &free, "n1").is_success());
    assert!(lock(&cs.reserved).is_empty());
}

#[test]
fn use_follows_the_nodes_that_change() {
    let cs = plugin(lister(
        vec![quota("ns1", json!({"cpu": "10"}), json!({"cpu": "10"}))],
        Vec::new(),
    ));
    let a = pod("a", "ns1", "2", 0, Some("n1"));
    let b = pod("b", "ns1", "3", 0, Some("n2"));
    let done = testing::pod(json!({"metadata": {"name": "d", "namespace": "ns1"},
        "spec": {"nodeName": "n2", "containers": [{"name": "c", "resources": {"requests": {"cpu": "5"}}}]},
        "status": {"phase": "Succeeded"}}));
    let other = pod("o", "ns2", "4", 0, Some("n2"));
    let n1 = node("n1", "10", std::slice::from_ref(&a));
    let used = |snapshot: &Snapshot| {
        let (state, _) = pre_filter(&cs, &pod("p", "ns1", "0", 0, None), snapshot);
        state.read::<QuotaState>(NAME).unwrap().used[0].milli_cpu
    };
    assert_eq!(used(&Snapshot::new(vec![n1.clone()])), 2000);
    // A node comes, with a finished pod and another namespace's pod (neither counts).
    let n2 = node("n2", "10", &[b.clone(), done, other]);
    assert_eq!(used(&Snapshot::new(vec![n1.clone(), n2.clone()])), 5000);
    // n1 changes (a pod added), n2 does not.
    let n1b = node("n1", "10", &[a, pod("c", "ns1", "1", 0, Some("n1"))]);
    assert_eq!(used(&Snapshot::new(vec![n1b.clone(), n2])), 6000);
    // n2 goes.
    assert_eq!(used(&Snapshot::new(vec![n1b])), 3000);
}

#[test]
fn pre_filter_extensions_count_each_pod_once() {
    let a = pod("a", "ns1", "2", 0, Some("n1"));
    let n1 = node("n1", "10", std::slice::from_ref(&a));
    let snapshot = Snapshot::new(vec![n1.clone()]);
    let cs = plugin(lister(
        vec![quota("ns1", json!({"cpu": "10"}), json!({"cpu": "10"}))],
        Vec::new(),
    ));
    let p = pod("p", "ns1", "1", 0, None);
    let (mut state, _) = pre_filter(&cs, &p, &snapshot);
    let used = |state: &CycleState| state.read::<QuotaState>(NAME).unwrap().used[0].milli_cpu;
    let total = |state: &CycleState| state.read::<QuotaState>(NAME).unwrap().total_used.milli_cpu;
    assert_eq!(used(&state), 2000);
    assert!(cs.remove_pod(&mut state, &p, &a, &n1).is_success());
    assert!(cs.remove_pod(&mut state, &p, &a, &n1).is_success());
    assert_eq!((used(&state), total(&state)), (0, 0));
    assert!(cs.add_pod(&mut state, &p, &a, &n1).is_success());
    assert_eq!(used(&state), 2000);
    let nominated = pod("x", "ns1", "3", 0, None);
    assert!(cs.add_pod(&mut state, &p, &nominated, &n1).is_success());
    assert!(cs.add_pod(&mut state, &p, &nominated, &n1).is_success());
    assert_eq!((used(&state), total(&state)), (5000, 5000));
    // A copy of the state (one per what-if node) changes alone.
    let mut copy = state.clone();
    assert!(cs.remove_pod(&mut copy, &p, &nominated, &n1).is_success());
    assert_eq!((used(&copy), used(&state)), (2000, 5000));
    // Pods of namespaces without quota are not counted.
    let free = pod("f", "free", "3", 0, Some("n1"));
    assert!(cs.remove_pod(&mut state, &p, &free, &n1).is_success());
    assert_eq!(total(&state), 5000);
}

#[test]
fn preemption_reclaims_what_other_namespaces_borrow() {
    // ns2 uses 4 of its min 2: it borrows 2 of ns1's min 3.
    let own = pod("a1", "ns1", "1", -10, Some("n1"));
    let borrowed: Vec<_> = (1..=4)
        .map(|i| pod(&format!("b{i}"), "ns2", "1", 100, Some("n1")))
        .collect();
    let mut on_node = vec![own];
    on_node.extend(borrowed);
    let snapshot = Snapshot::new(vec![node("n1", "5", &on_node)]);
    let quotas = vec![
        quota("ns1", json!({"cpu": "3"}), json!({"cpu": "10"})),
        quota("ns2", json!({"cpu": "2"}), json!({"cpu": "10"})),
    ];
    let fw = framework(lister(quotas, on_node), true);
    // ns1's pod: 1 + 2 is within ns1's min, but all quotas use 5 + 2 > 5.
    let p = pod("p", "ns1", "2", 0, None);
    let (pre_filter, result, status) = attempt(&fw, &p, &snapshot);
    assert_eq!(
        pre_filter.message(),
        "Pod ns1/p is rejected in PreFilter because total ElasticQuota used is more than min"
    );
    assert!(status.is_success(), "{status}");
    let result = result.unwrap();
    assert_eq!(result.nominated_node, "n1");
    // Two of ns2's pods go (higher priority or not), until ns2 is back within its min;
    // ns1's own low-priority pod stays.
    assert_eq!(result.victims.len(), 2);
    assert!(result.victims.iter().all(|v| v.namespace == "ns2"));

    // Same, with the refusal reaching PostFilter as no node statuses at all.
    let mut state = CycleState::new();
    let (_, refused) = fw.run_pre_filter(&mut state, &p, &snapshot);
    assert!(!refused.is_success());
    let context = PostFilterContext {
        framework: &fw,
        snapshot: &snapshot,
    };
    let (result, status) = fw.run_post_filter(&context, &state, &p, &NodeStatuses::new());
    assert!(status.is_success());
    assert_eq!(result.unwrap().victims.len(), 2);
}

#[test]
fn over_its_min_a_namespace_preempts_only_its_own_lower_priority_pods() {
    let a1 = pod("a1", "ns1", "2", 10, Some("n1"));
    let a2 = pod("a2", "ns1", "2", -5, Some("n1"));
    let c1 = pod("c1", "ns2", "2", -100, Some("n1"));
    let on_node = vec![a1, a2, c1];
    let snapshot = Snapshot::new(vec![node("n1", "6", &on_node)]);
    let quotas = vec![
        quota("ns1", json!({"cpu": "1"}), json!({"cpu": "10"})),
        quota("ns2", json!({"cpu": "10"}), json!({"cpu": "10"})),
    ];
    let fw = framework(lister(quotas, on_node), true);
    let p = pod("p", "ns1", "2", 0, None);
    let (pre_filter, result, status) = attempt(&fw, &p, &snapshot);
    assert!(pre_filter.is_success());
    assert!(status.is_success(), "{status}");
    assert_eq!(victims(&result), vec!["ns1/a2"]);
}

#[test]
fn pods_without_quota_preempt_only_pods_without_quota() {
    let quotad = pod("q", "ns1", "2", -10, Some("n1"));
    let free = pod("f", "ns3", "2", 0, Some("n1"));
    let on_node = vec![quotad, free];
    let snapshot = Snapshot::new(vec![node("n1", "4", &on_node)]);
    let quotas = vec![quota("ns1", json!({"cpu": "4"}), json!({"cpu": "4"}))];
    let fw = framework(lister(quotas, on_node), true);
    let p = pod("p", "ns3", "2", 10, None);
    let (_, result, status) = attempt(&fw, &p, &snapshot);
    assert!(status.is_success(), "{status}");
    assert_eq!(victims(&result), vec!["ns3/f"]);
}

#[test]
fn refusals_are_final_and_worded_as_kubernetes_words_them() {
    // n1: only more important pods; n2 refused for a reason eviction cannot fix.
    let high = pod("h", "ns3", "4", 100, Some("n1"));
    let snapshot = Snapshot::new(vec![
        node("n1", "4", std::slice::from_ref(&high)),
        node("n2", "0", &[]),
    ]);
    let quotas = vec![quota("ns1", json!({"cpu": "4"}), json!({"cpu": "4"}))];
    let fw = framework(lister(quotas, vec![high]), true);
    let p = pod("p", "ns3", "2", 10, None);
    let mut state = CycleState::new();
    let _ = fw.run_pre_filter(&mut state, &p, &snapshot);
    let statuses = NodeStatuses::from([
        ("n1".to_string(), Status::unschedulable("Insufficient cpu")),
        (
            "n2".to_string(),
            Status::unresolvable("node(s) didn't match Pod's node affinity/selector"),
        ),
    ]);
    let context = PostFilterContext {
        framework: &fw,
        snapshot: &snapshot,
    };
    let (result, status) = fw.run_post_filter(&context, &state, &p, &statuses);
    // Fallback (the default preemption) is not asked.
    assert!(result.is_none());
    assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(status.plugin(), Some(NAME));
    assert_eq!(
        status.message(),
        "0/2 nodes are available: 1 No victims found on node n1 for preemptor pod p, \
         1 Preemption is not helpful for scheduling."
    );

    // Nowhere to try.
    let statuses = NodeStatuses::from([
        (
            "n1".to_string(),
            Status::unresolvable("node(s) had untolerated taint {a: b}"),
        ),
        (
            "n2".to_string(),
            Status::unresolvable("node(s) had untolerated taint {a: b}"),
        ),
    ]);
    let (_, status) = fw.run_post_filter(&context, &state, &p, &statuses);
    assert_eq!(
        status.message(),
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );

    // preemptionPolicy: Never.
    let never = testing::pod(json!({"metadata": {"name": "n", "namespace": "ns3"},
        "spec": {"preemptionPolicy": "Never", "priority": 1000,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}));
    let (_, status) = fw.run_post_filter(&context, &state, &never, &statuses);
    assert_eq!(
        status.message(),
        "not eligible due to preemptionPolicy=Never."
    );
}

#[test]
fn a_pod_waits_for_its_earlier_victims_to_go() {
    // p preempted before: it is nominated to n1, where a lower-priority pod of its
    // namespace is still terminating.
    let leaving = testing::pod(json!({
        "metadata": {"name": "old", "namespace": "ns1",
                     "deletionTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"nodeName": "n1", "priority": 0,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
    }));
    let stays = pod("s", "ns1", "2", 0, Some("n1"));
    let snapshot = Snapshot::new(vec![node("n1", "4", &[leaving.clone(), stays.clone()])]);
    let quotas = vec![
        quota("ns1", json!({"cpu": "1"}), json!({"cpu": "10"})),
        quota("ns9", json!({"cpu": "10"}), json!({"cpu": "10"})),
    ];
    let fw = framework(lister(quotas, vec![leaving, stays]), true);
    let p = testing::pod(json!({
        "metadata": {"name": "p", "namespace": "ns1"},
        "spec": {"priority": 10,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
        "status": {"nominatedNodeName": "n1"},
    }));
    let (_, result, status) = attempt(&fw, &p, &snapshot);
    assert!(result.is_none());
    assert_eq!(
        status.message(),
        "not eligible due to a terminating pod on the nominated node."
    );
    // Nominated elsewhere, it may preempt again.
    let q = pod("q", "ns1", "2", 10, None);
    let (_, result, status) = attempt(&fw, &q, &snapshot);
    assert!(status.is_success(), "{status}");
    assert_eq!(result.unwrap().victims.len(), 1);
}

#[test]
fn preemption_within_quota_rules_can_still_exceed_the_sum_of_min() {
    // ns2 borrows 1 (on n1), ns3 borrows 1 (on n2): reclaiming either alone does not make
    // room for ns1's pod within the sum of mins.
    let mut pods: Vec<_> = (1..=3)
        .map(|i| pod(&format!("b{i}"), "ns2", "1", 0, Some("n1")))
        .collect();
    let c1 = pod("c1", "ns3", "1", 0, Some("n2"));
    let snapshot = Snapshot::new(vec![
        node("n1", "100", &pods),
        node("n2", "100", std::slice::from_ref(&c1)),
    ]);
    pods.push(c1);
    let quotas = vec![
        quota("ns1", json!({"cpu": "2"}), json!({"cpu": "10"})),
        quota("ns2", json!({"cpu": "2"}), json!({"cpu": "10"})),
        quota("ns3", json!({}), json!({"cpu": "10"})),
    ];
    let fw = framework(lister(quotas, pods), true);
    let p = pod("p", "ns1", "2", 0, None);
    let (_, result, status) = attempt(&fw, &p, &snapshot);
    assert!(result.is_none());
    assert_eq!(
        status.message(),
        "0/2 nodes are available: 2 global quota max exceeded."
    );
    // Over its own min, a namespace takes nothing from the others.
    let big = pod("big", "ns1", "3", 0, None);
    let (_, _, status) = attempt(&fw, &big, &snapshot);
    assert_eq!(
        status.message(),
        "0/2 nodes are available: 1 No victims found on node n1 for preemptor pod big, \
         1 No victims found on node n2 for preemptor pod big."
    );
}

#[test]
fn the_node_is_chosen_as_kubernetes_chooses_it() {
    // Candidates: n1 evicts a priority-5 pod, n2 a priority-1 pod, n3 a priority-1 pod a
    // budget protects.
    let v1 = pod("v1", "free", "2", 5, Some("n1"));
    let v2 = pod("v2", "free", "2", 1, Some("n2"));
    let v3 = testing::pod(json!({"metadata": {"name": "v3", "namespace": "free",
                                             "labels": {"app": "db"}},
        "spec": {"nodeName": "n3", "priority": 1,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}));
    let snapshot = Snapshot::new(vec![
        node("n1", "2", std::slice::from_ref(&v1)),
        node("n2", "2", std::slice::from_ref(&v2)),
        node("n3", "2", std::slice::from_ref(&v3)),
    ]);
    let mut fixed = lister(
        vec![quota("ns1", json!({"cpu": "4"}), json!({"cpu": "4"}))],
        vec![v1, v2, v3],
    );
    fixed.objects.insert(
        ("policy".into(), "poddisruptionbudgets".into()),
        vec![Arc::new(json!({
            "metadata": {"name": "db", "namespace": "free"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}},
            "status": {"disruptionsAllowed": 0},
        }))],
    );
    let fw = framework(fixed, false);
    let p = pod("p", "free", "2", 10, None);
    let (_, result, status) = attempt(&fw, &p, &snapshot);
    assert!(status.is_success(), "{status}");
    let result = result.unwrap();
    assert_eq!(result.nominated_node, "n2");
    assert_eq!(victims(&Some(result)), vec!["free/v2"]);
}
