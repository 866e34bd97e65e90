#![allow(clippy::unwrap_used)]

use super::*;
use crate::config::{PluginRef, PluginSet, ProfileConfig};
use crate::framework::testing::{self, Call, FixedLister, RecordingClient};
use crate::framework::{
    BindPlugin, FilterPlugin, Framework, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
    Registry, Snapshot,
};
use async_trait::async_trait;
use serde_json::json;
use std::collections::BTreeMap;

// ---- Filter plugins of the tests' own ----

/// Fits pods by CPU request against allocatable.
struct CpuFit;

impl Plugin for CpuFit {
    fn name(&self) -> &'static str {
        "CpuFit"
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for CpuFit {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.requested.milli_cpu + pod.requests.milli_cpu > node.allocatable.milli_cpu {
            return Status::unschedulable("Insufficient cpu");
        }
        Status::success()
    }
}

/// Refuses nodes labelled `zone=closed`, with no hope from preemption.
struct ZoneFit;

impl Plugin for ZoneFit {
    fn name(&self) -> &'static str {
        "ZoneFit"
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for ZoneFit {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        if node.label("zone") == Some("closed") {
            return Status::unresolvable("node(s) didn't match Pod's node affinity/selector");
        }
        Status::success()
    }
}

/// At most `limit` pods in the whole cluster: counted at PreFilter, kept up to date by
/// the PreFilter extensions (what preemption's what-ifs must call).
struct ClusterLimit {
    limit: usize,
}

#[derive(Clone)]
struct PodCount(usize);

impl Plugin for ClusterLimit {
    fn name(&self) -> &'static str {
        "ClusterLimit"
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for ClusterLimit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let count = snapshot.nodes.iter().map(|n| n.pods.len()).sum();
        state.write("ClusterLimit", PodCount(count));
        (None, Status::success())
    }
    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for ClusterLimit {
    fn add_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        _: &Arc<PodInfo>,
        _: &NodeInfo,
    ) -> Status {
        if let Some(count) = state.read_mut::<PodCount>("ClusterLimit") {
            count.0 += 1;
        }
        Status::success()
    }
    fn remove_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        _: &Arc<PodInfo>,
        _: &NodeInfo,
    ) -> Status {
        if let Some(count) = state.read_mut::<PodCount>("ClusterLimit") {
            count.0 -= 1;
        }
        Status::success()
    }
}

impl FilterPlugin for ClusterLimit {
    fn filter(&self, state: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        match state.read::<PodCount>("ClusterLimit") {
            Some(count) if count.0 >= self.limit => Status::unschedulable("cluster is full"),
            Some(_) => Status::success(),
            None => Status::error("no pod count"),
        }
    }
}

/// A PreFilter whose RemovePod extension fails.
struct BrokenRemove;

impl Plugin for BrokenRemove {
    fn name(&self) -> &'static str {
        "BrokenRemove"
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for BrokenRemove {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        (None, Status::success())
    }
    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for BrokenRemove {
    fn add_pod(&self, _: &mut CycleState, _: &PodInfo, _: &Arc<PodInfo>, _: &NodeInfo) -> Status {
        Status::success()
    }
    fn remove_pod(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &Arc<PodInfo>,
        _: &NodeInfo,
    ) -> Status {
        Status::error("boom")
    }
}

/// A profile needs a binder.
struct Binder;

impl Plugin for Binder {
    fn name(&self) -> &'static str {
        "Binder"
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

#[async_trait]
impl BindPlugin for Binder {
    async fn bind(&self, _: &CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
}

// ---- Fixtures ----

fn registry() -> Registry {
    let mut registry = crate::plugins::registry();
    registry
        .register("CpuFit", |_, _| Ok(Arc::new(CpuFit) as Arc<dyn Plugin>))
        .unwrap();
    registry
        .register("ZoneFit", |_, _| Ok(Arc::new(ZoneFit) as Arc<dyn Plugin>))
        .unwrap();
    registry
        .register("ClusterLimit", |args, _| {
            let limit = args["limit"].as_u64().unwrap_or(0) as usize;
            Ok(Arc::new(ClusterLimit { limit }) as Arc<dyn Plugin>)
        })
        .unwrap();
    registry
        .register("BrokenRemove", |_, _| {
            Ok(Arc::new(BrokenRemove) as Arc<dyn Plugin>)
        })
        .unwrap();
    registry
        .register("Binder", |_, _| Ok(Arc::new(Binder) as Arc<dyn Plugin>))
        .unwrap();
    registry
}

fn profile(plugins: &[&str], args: &[(&str, Value)]) -> ProfileConfig {
    ProfileConfig {
        scheduler_name: "default-scheduler".into(),
        percentage_of_nodes_to_score: None,
        multi_point: PluginSet {
            enabled: plugins
                .iter()
                .chain(&["Binder"])
                .map(|name| PluginRef {
                    name: name.to_string(),
                    weight: 0,
                })
                .collect(),
            disabled: Vec::new(),
        },
        points: BTreeMap::new(),
        plugin_args: args
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect(),
    }
}

/// A profile's framework over some nodes, with PodDisruptionBudgets in the lister.
struct Setup {
    framework: Framework,
    snapshot: Snapshot,
    client: Arc<RecordingClient>,
}

fn setup_with(
    plugins: &[&str],
    args: &[(&str, Value)],
    nodes: Vec<NodeInfo>,
    pdbs: Vec<Value>,
) -> Setup {
    let mut lister = FixedLister::default();
    lister.objects.insert(
        ("policy".into(), "poddisruptionbudgets".into()),
        pdbs.into_iter().map(Arc::new).collect(),
    );
    let (handle, client) = testing::handle_with(lister);
    let framework = Framework::new(&profile(plugins, args), &registry(), handle).unwrap();
    Setup {
        framework,
        snapshot: Snapshot::new(nodes.into_iter().map(Arc::new).collect()),
        client,
    }
}

fn setup(nodes: Vec<NodeInfo>, pdbs: Vec<Value>) -> Setup {
    setup_with(&["ZoneFit", "CpuFit"], &[], nodes, pdbs)
}

impl Setup {
    /// The plugin, searching from `offset`, on one thread.
    fn plugin(&self, args: DefaultPreemptionArgs, offset: usize) -> DefaultPreemption {
        DefaultPreemption {
            args,
            handle: self.framework.handle.clone(),
            fixed_offset: Some(offset),
            workers: 1,
        }
    }

    /// PreFilter and Filter on every node, as a scheduling cycle runs them.
    fn attempt(&self, pod: &PodInfo) -> (CycleState, NodeStatuses) {
        let mut state = CycleState::new();
        let (_, status) = self
            .framework
            .run_pre_filter(&mut state, pod, &self.snapshot);
        assert!(status.is_success(), "{status}");
        let mut statuses = NodeStatuses::new();
        for node in &self.snapshot.nodes {
            let status = self.framework.run_filter(&state, pod, node);
            if !status.is_success() {
                statuses.insert(node.name.clone(), status);
            }
        }
        assert_eq!(
            statuses.len(),
            self.snapshot.len(),
            "the pod fits somewhere"
        );
        (state, statuses)
    }

    fn preempt_with(
        &self,
        plugin: &DefaultPreemption,
        pod: &Arc<PodInfo>,
    ) -> (Option<PostFilterResult>, Status) {
        let (state, statuses) = self.attempt(pod);
        let context = PostFilterContext {
            framework: &self.framework,
            snapshot: &self.snapshot,
        };
        plugin.post_filter(&context, &state, pod, &statuses)
    }

    fn preempt(&self, pod: &Arc<PodInfo>) -> (Option<PostFilterResult>, Status) {
        self.preempt_with(&self.plugin(DefaultPreemptionArgs::default(), 0), pod)
    }

    /// The chosen node and victims' names.
    fn chosen(&self, pod: &Arc<PodInfo>) -> (String, Vec<String>) {
        let (result, status) = self.preempt(pod);
        assert!(status.is_success(), "{status}");
        let result = result.unwrap();
        (result.nominated_node, names(&result.victims))
    }
}

fn names(pods: &[Arc<PodInfo>]) -> Vec<String> {
    pods.iter().map(|p| p.name.clone()).collect()
}

fn pod_json(name: &str, priority: i32, cpu: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
        }
    })
}

fn pod(name: &str, priority: i32, cpu: &str) -> Arc<PodInfo> {
    testing::pod(pod_json(name, priority, cpu))
}

/// A pod with labels and a start time.
fn pod_at(name: &str, priority: i32, cpu: &str, labels: Value, started: &str) -> Arc<PodInfo> {
    let mut json = pod_json(name, priority, cpu);
    json["metadata"]["labels"] = labels;
    json["status"]["startTime"] = started.into();
    testing::pod(json)
}

fn node(name: &str, cpu: &str, pods: &[Arc<PodInfo>]) -> NodeInfo {
    testing::node(
        json!({
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "pods": "110"}}
        }),
        pods,
    )
}

fn closed_node(name: &str, cpu: &str, pods: &[Arc<PodInfo>]) -> NodeInfo {
    testing::node(
        json!({
            "metadata": {"name": name, "labels": {"zone": "closed"}},
            "status": {"allocatable": {"cpu": cpu, "pods": "110"}}
        }),
        pods,
    )
}

fn pdb(name: &str, namespace: &str, selector: Value, allowed: i64) -> Value {
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
        "status": {"disruptionsAllowed": allowed}
    })
}

fn now_for_tests() -> i128 {
    super::now()
}

// ---- Arguments ----

#[test]
fn args_defaults_parsing_and_validation() {
    assert_eq!(
        DefaultPreemptionArgs::from_value(&Value::Null).unwrap(),
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100
        }
    );
    let args = DefaultPreemptionArgs::from_value(&json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DefaultPreemptionArgs",
        "minCandidateNodesPercentage": 0,
    }))
    .unwrap();
    assert_eq!(args.min_candidate_nodes_percentage, 0);
    assert_eq!(args.min_candidate_nodes_absolute, 100);

    let error = |value: Value| {
        DefaultPreemptionArgs::from_value(&value)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(json!({"minCandidateNodesPercentage": 101})),
        "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"
    );
    assert_eq!(
        error(json!({"minCandidateNodesAbsolute": -1})),
        "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"
    );
    assert_eq!(
        error(json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})),
        "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as \
         minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be zero \
         at the same time as minCandidateNodesPercentage]"
    );
    assert_eq!(
        error(json!({"minCandidateNodes": 3})),
        "strict decoding error: unknown field \"minCandidateNodes\""
    );
    assert!(matches!(
        DefaultPreemptionArgs::from_value(&json!({"minCandidateNodesAbsolute": "3"})),
        Err(ArgsError::NotAnInteger { .. })
    ));
    assert!(matches!(
        DefaultPreemptionArgs::from_value(&json!({"kind": "NodeResourcesFitArgs"})),
        Err(ArgsError::WrongKind(_))
    ));
}

#[test]
fn number_of_candidates() {
    let default = DefaultPreemptionArgs::default();
    // 10% of 5,000 nodes; at least 100; never more than the nodes.
    assert_eq!(default.num_candidates(5000), 500);
    assert_eq!(default.num_candidates(500), 100);
    assert_eq!(default.num_candidates(30), 30);
    let share = DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 50,
        min_candidate_nodes_absolute: 0,
    };
    assert_eq!(share.num_candidates(7), 3);
    assert_eq!(share.num_candidates(1), 0);
}

#[test]
fn registered_with_its_args() {
    let registry = crate::plugins::registry();
    let factory = registry.get(NAME).unwrap();
    let handle = testing::handle();
    assert_eq!(factory(&Value::Null, &handle).unwrap().name(), NAME);
    let error = factory(&json!({"minCandidateNodesPercentage": 200}), &handle)
        .err()
        .unwrap();
    assert!(error.contains("not in valid range [0, 100]"), "{error}");
}

// ---- Victims on a node ----

#[test]
fn evicts_the_fewest_pods_of_the_lowest_priorities() {
    let pods = [
        pod("p10", 10, "1"),
        pod("p40", 40, "1"),
        pod("p20", 20, "1"),
        pod("p30", 30, "1"),
    ];
    let setup = setup(vec![node("n1", "4", &pods)], vec![]);
    let (node, victims) = setup.chosen(&pod("preemptor", 100, "2"));
    assert_eq!(node, "n1");
    // The most important first.
    assert_eq!(victims, ["p20", "p10"]);
    // Nothing was written: the caller acts on the result.
    assert!(setup.client.calls.lock().unwrap().is_empty());
}

#[test]
fn pods_of_equal_or_higher_priority_are_never_victims() {
    let pods = [pod("same", 100, "1"), pod("higher", 200, "1")];
    let setup = setup(vec![node("n1", "2", &pods)], vec![]);
    let (result, status) = setup.preempt(&pod("preemptor", 100, "1"));
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(
        status.reasons(),
        ["preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."]
    );
    assert_eq!(status.plugin(), Some(NAME));
    // An empty nomination: the pod's nominated node is to be cleared.
    let result = result.unwrap();
    assert_eq!(result.nominated_node, "");
    assert!(result.victims.is_empty());
}

#[test]
fn the_message_counts_each_reason_over_all_nodes() {
    let setup = setup(
        vec![
            // Only a higher-priority pod to evict.
            node("n1", "2", &[pod("high", 200, "2")]),
            // Too small even when empty.
            node("n2", "1", &[pod("low", 1, "1")]),
            // Filter found these unresolvable.
            closed_node("n3", "4", &[pod("low3", 1, "4")]),
            closed_node("n4", "4", &[]),
        ],
        vec![],
    );
    let (result, status) = setup.preempt(&pod("preemptor", 100, "2"));
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(
        status.message(),
        "preemption: 0/4 nodes are available: 1 Insufficient cpu, 1 No preemption victims \
         found for incoming pod, 2 Preemption is not helpful for scheduling."
    );
    assert_eq!(result.unwrap().nominated_node, "");
}

#[test]
fn no_node_where_preemption_may_help() {
    let setup = setup(
        vec![
            closed_node("n1", "1", &[pod("a", 1, "1")]),
            closed_node("n2", "1", &[pod("b", 1, "1")]),
        ],
        vec![],
    );
    let (_, status) = setup.preempt(&pod("preemptor", 100, "1"));
    assert_eq!(
        status.message(),
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn the_what_if_keeps_prefilter_state_in_step() {
    // Two pods in the cluster, room for two: removing the victim (RemovePod) makes room,
    // putting it back (AddPod) takes it again.
    let setup = setup_with(
        &["CpuFit", "ClusterLimit"],
        &[("ClusterLimit", json!({"limit": 2}))],
        vec![
            node("n1", "4", &[pod("low", 1, "1")]),
            node("n2", "4", &[pod("high", 500, "1")]),
        ],
        vec![],
    );
    let preemptor = pod("preemptor", 100, "1");
    let (state, statuses) = setup.attempt(&preemptor);
    assert_eq!(statuses["n1"].reasons(), ["cluster is full"]);
    let context = PostFilterContext {
        framework: &setup.framework,
        snapshot: &setup.snapshot,
    };
    let plugin = setup.plugin(DefaultPreemptionArgs::default(), 0);
    let (result, status) = plugin.post_filter(&context, &state, &preemptor, &statuses);
    assert!(status.is_success(), "{status}");
    let result = result.unwrap();
    assert_eq!(result.nominated_node, "n1");
    assert_eq!(names(&result.victims), ["low"]);
    // The cycle's own state and nodes are untouched.
    assert_eq!(state.read::<PodCount>("ClusterLimit").unwrap().0, 2);
    assert_eq!(setup.snapshot.get("n1").unwrap().pods.len(), 1);
}

#[test]
fn a_failing_prefilter_extension_is_an_error() {
    let setup = setup_with(
        &["CpuFit", "BrokenRemove"],
        &[],
        vec![node("n1", "1", &[pod("low", 1, "1")])],
        vec![],
    );
    let (result, status) = setup.preempt(&pod("preemptor", 100, "1"));
    assert!(result.is_none());
    assert_eq!(status.code(), Code::Error);
    assert_eq!(
        status.message(),
        "preemption: running RemovePod on PreFilter plugin \"BrokenRemove\": boom"
    );
}

// ---- Disruption budgets ----

#[test]
fn pods_a_budget_protects_are_reprieved_first() {
    // Either pod may go; the protected one is put back first and stays.
    let pods = [
        pod_at(
            "guarded",
            10,
            "1",
            json!({"app": "db"}),
            "2024-05-01T00:00:00Z",
        ),
        pod_at(
            "free",
            10,
            "1",
            json!({"app": "web"}),
            "2024-01-01T00:00:00Z",
        ),
    ];
    let setup = setup(
        vec![node("n1", "3", &pods)],
        vec![pdb(
            "db",
            "default",
            json!({"matchLabels": {"app": "db"}}),
            0,
        )],
    );
    let (node, victims) = setup.chosen(&pod("preemptor", 100, "2"));
    assert_eq!(node, "n1");
    assert_eq!(victims, ["free"]);
}

#[test]
fn budget_violations_count_down_the_allowed_disruptions() {
    let web = json!({"app": "web"});
    let pods = [
        pod_at("a", 1, "1", web.clone(), "2024-01-01T00:00:00Z"),
        pod_at("b", 1, "1", web.clone(), "2024-02-01T00:00:00Z"),
        pod_at("c", 1, "1", web.clone(), "2024-03-01T00:00:00Z"),
    ];
    let node_info = node("n1", "3", &pods);
    let select = |pdbs: Vec<Value>| {
        let setup = setup(vec![node_info.clone()], pdbs.clone());
        let preemptor = pod("preemptor", 100, "3");
        let (state, _) = setup.attempt(&preemptor);
        let budgets = Budgets::from_objects(&pdbs.into_iter().map(Arc::new).collect::<Vec<_>>());
        victims::select_victims(
            &setup.framework,
            &state,
            &preemptor,
            &node_info,
            &budgets,
            now_for_tests(),
        )
        .unwrap()
    };
    let selector = json!({"matchLabels": {"app": "web"}});
    // One disruption allowed: the first (oldest) goes within budget, the two others not.
    let victims = select(vec![pdb("web", "default", selector.clone(), 1)]);
    assert_eq!(names(&victims.pods), ["a", "b", "c"]);
    assert_eq!(victims.pdb_violations, 2);
    // A pod already counted as disrupted does not take from the budget.
    let mut counted = pdb("web", "default", selector.clone(), 1);
    counted["status"]["disruptedPods"] = json!({"b": "2024-07-01T00:00:00Z"});
    assert_eq!(select(vec![counted]).pdb_violations, 1);
    // Budgets of another namespace, or selecting nothing, do not count.
    let others = vec![
        pdb("web", "other", selector.clone(), 0),
        pdb("empty", "default", json!({}), 0),
        json!({"metadata": {"name": "none", "namespace": "default"}, "status": {"disruptionsAllowed": 0}}),
    ];
    assert_eq!(select(others).pdb_violations, 0);
}

// ---- Choosing the node ----

#[test]
fn fewest_budget_violations_first() {
    let setup = setup(
        vec![
            node(
                "n1",
                "1",
                &[pod_at(
                    "v1",
                    5,
                    "1",
                    json!({"app": "db"}),
                    "2024-01-01T00:00:00Z",
                )],
            ),
            node("n2", "1", &[pod("v2", 50, "1")]),
        ],
        vec![pdb(
            "db",
            "default",
            json!({"matchLabels": {"app": "db"}}),
            0,
        )],
    );
    assert_eq!(setup.chosen(&pod("preemptor", 100, "1")).0, "n2");
}

#[test]
fn then_the_lowest_highest_victim_priority() {
    let setup = setup(
        vec![
            node("n1", "2", &[pod("v1", 20, "2")]),
            node("n2", "2", &[pod("v2", 10, "1"), pod("v3", 5, "1")]),
        ],
        vec![],
    );
    // n2 needs two victims, but its highest one is lower.
    assert_eq!(
        setup.chosen(&pod("preemptor", 100, "2")),
        ("n2".to_string(), vec!["v2".to_string(), "v3".to_string()])
    );
}

#[test]
fn then_the_smallest_sum_of_priorities() {
    let setup = setup(
        vec![
            node("n1", "1", &[pod("a1", 10, "500m"), pod("a2", 10, "500m")]),
            node("n2", "1", &[pod("b1", 10, "500m"), pod("b2", 5, "500m")]),
        ],
        vec![],
    );
    assert_eq!(setup.chosen(&pod("preemptor", 100, "1")).0, "n2");
    // Priorities count from the lowest possible: one victim of -5 costs less than two.
    let setup = setup_neg();
    assert_eq!(setup.chosen(&pod("preemptor", 100, "1")).0, "n2");
}

fn setup_neg() -> Setup {
    setup(
        vec![
            node("n1", "1", &[pod("a1", -5, "500m"), pod("a2", -5, "500m")]),
            node("n2", "1", &[pod("b1", -5, "1")]),
        ],
        vec![],
    )
}

#[test]
fn then_the_fewest_victims() {
    // Equal sums (10 + MIN + 2^32 = 10 + 2^31), equal highest priority: one victim beats two.
    let setup = setup(
        vec![
            node(
                "n1",
                "1",
                &[pod("a1", 10, "500m"), pod("a2", i32::MIN, "500m")],
            ),
            node("n2", "1", &[pod("b1", 10, "1")]),
        ],
        vec![],
    );
    assert_eq!(setup.chosen(&pod("preemptor", 100, "1")).0, "n2");
}

#[test]
fn then_the_latest_start_of_the_highest_priority_victims() {
    let none = json!({});
    let setup = setup(
        vec![
            node(
                "n1",
                "1",
                &[pod_at("old", 10, "1", none.clone(), "2024-01-01T00:00:00Z")],
            ),
            node(
                "n2",
                "1",
                &[pod_at("new", 10, "1", none.clone(), "2024-06-01T00:00:00Z")],
            ),
            node(
                "n3",
                "1",
                &[pod_at(
                    "older",
                    10,
                    "1",
                    none.clone(),
                    "2023-06-01T00:00:00Z",
                )],
            ),
        ],
        vec![],
    );
    assert_eq!(setup.chosen(&pod("preemptor", 100, "1")).0, "n2");
    // A pod not started yet counts as started now: the latest.
    let setup = setup_with(
        &["CpuFit"],
        &[],
        vec![
            node(
                "n1",
                "1",
                &[pod_at("old", 10, "1", none.clone(), "2024-01-01T00:00:00Z")],
            ),
            node("n2", "1", &[pod("pending", 10, "1")]),
        ],
        vec![],
    );
    assert_eq!(setup.chosen(&pod("preemptor", 100, "1")).0, "n2");
}

#[test]
fn then_the_first_in_search_order() {
    let setup = setup(
        vec![
            node("n1", "1", &[pod("a", 10, "1")]),
            node("n2", "1", &[pod("b", 10, "1")]),
        ],
        vec![],
    );
    let preemptor = pod("preemptor", 100, "1");
    let args = DefaultPreemptionArgs::default();
    let from = |offset| {
        let (result, _) = setup.preempt_with(&setup.plugin(args, offset), &preemptor);
        result.unwrap().nominated_node
    };
    assert_eq!(from(0), "n1");
    assert_eq!(from(1), "n2");
}

// ---- The bounded search ----

/// 20 nodes with one victim each; n07 and n09 have cheaper victims than the others.
fn twenty_nodes() -> Setup {
    let nodes = (0..20)
        .map(|i| {
            let priority = match i {
                7 => 10,
                9 => 5,
                _ => 50,
            };
            node(
                &format!("n{i:02}"),
                "1",
                &[pod(&format!("v{i:02}"), priority, "1")],
            )
        })
        .collect();
    setup(nodes, vec![])
}

#[test]
fn the_search_stops_once_enough_candidates_are_found() {
    let setup = twenty_nodes();
    let preemptor = pod("preemptor", 100, "1");
    let three = DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 0,
        min_candidate_nodes_absolute: 3,
    };
    for workers in [1, 4] {
        let mut plugin = setup.plugin(three, 5);
        plugin.workers = workers;
        // n05, n06, n07 are checked; n09 is never reached.
        let (result, _) = setup.preempt_with(&plugin, &preemptor);
        assert_eq!(result.unwrap().nominated_node, "n07", "{workers} workers");
        // By default, all 20 (at least 100) are wanted: n09 is found.
        let mut plugin = setup.plugin(DefaultPreemptionArgs::default(), 5);
        plugin.workers = workers;
        let (result, _) = setup.preempt_with(&plugin, &preemptor);
        assert_eq!(result.unwrap().nominated_node, "n09", "{workers} workers");
    }
}

#[test]
fn the_parallel_search_reports_like_the_sequential_one() {
    // 20 nodes where nothing helps: every node is checked and reported.
    let nodes = (0..20)
        .map(|i| {
            node(
                &format!("n{i:02}"),
                "1",
                &[pod(&format!("h{i:02}"), 500, "1")],
            )
        })
        .collect();
    let setup = setup(nodes, vec![]);
    let preemptor = pod("preemptor", 100, "1");
    for workers in [1, 4] {
        let mut plugin = setup.plugin(DefaultPreemptionArgs::default(), 3);
        plugin.workers = workers;
        let (_, status) = setup.preempt_with(&plugin, &preemptor);
        assert_eq!(
            status.message(),
            "preemption: 0/20 nodes are available: 20 No preemption victims found for incoming pod."
        );
    }
}

#[test]
fn candidates_violating_budgets_do_not_end_the_search() {
    let guarded = json!({"app": "db"});
    let setup = setup(
        vec![
            node(
                "n1",
                "1",
                &[pod_at("g", 1, "1", guarded, "2024-01-01T00:00:00Z")],
            ),
            node("n2", "1", &[pod("free", 90, "1")]),
        ],
        vec![pdb(
            "db",
            "default",
            json!({"matchLabels": {"app": "db"}}),
            0,
        )],
    );
    let one = DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 0,
        min_candidate_nodes_absolute: 1,
    };
    let (result, _) = setup.preempt_with(&setup.plugin(one, 0), &pod("preemptor", 100, "1"));
    assert_eq!(result.unwrap().nominated_node, "n2");
}

// ---- Eligibility ----

#[test]
fn a_pod_that_never_preempts() {
    let mut json = pod_json("preemptor", 100, "1");
    json["spec"]["preemptionPolicy"] = "Never".into();
    let setup = setup(vec![node("n1", "1", &[pod("low", 1, "1")])], vec![]);
    let (result, status) = setup.preempt(&testing::pod(json));
    assert!(result.is_none());
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(
        status.message(),
        "preemption: not eligible due to preemptionPolicy=Never."
    );
}

/// A pod on its way out because the scheduler preempted it (or not).
fn terminating(name: &str, priority: i32, by_preemption: bool) -> Arc<PodInfo> {
    let mut json = pod_json(name, priority, "1");
    json["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z".into();
    if by_preemption {
        json["status"]["conditions"] = json!([{
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": disruption_message("default-scheduler"),
        }]);
    }
    testing::pod(json)
}

fn nominated(name: &str, priority: i32, node: &str) -> Arc<PodInfo> {
    let mut json = pod_json(name, priority, "1");
    json["status"]["nominatedNodeName"] = node.into();
    testing::pod(json)
}

#[test]
fn a_nominated_pod_waits_for_its_victims_to_terminate() {
    let setup = setup(
        vec![node("n1", "1", &[terminating("victim", 1, true)])],
        vec![],
    );
    let (result, status) = setup.preempt(&nominated("preemptor", 100, "n1"));
    assert!(result.is_none(), "the nomination is kept");
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(
        status.message(),
        "preemption: not eligible due to a terminating pod on the nominated node."
    );
}

#[test]
fn other_terminating_pods_do_not_hold_a_nominated_pod_back() {
    let preemptor = nominated("preemptor", 100, "n1");
    // Terminating for another reason than preemption.
    let setup1 = setup(
        vec![node("n1", "1", &[terminating("leaving", 1, false)])],
        vec![],
    );
    assert_eq!(setup1.chosen(&preemptor).0, "n1");
    // Of higher priority: not one of its victims.
    let setup2 = setup(
        vec![node(
            "n1",
            "2",
            &[terminating("high", 500, true), pod("low", 1, "1")],
        )],
        vec![],
    );
    assert_eq!(
        setup2.chosen(&preemptor),
        ("n1".to_string(), vec!["low".to_string()])
    );
    // Its nominated node became unresolvable: it may preempt elsewhere.
    let setup3 = setup(
        vec![
            closed_node("n1", "1", &[terminating("victim", 1, true)]),
            node("n2", "1", &[pod("low", 1, "1")]),
        ],
        vec![],
    );
    assert_eq!(setup3.chosen(&preemptor).0, "n2");
}

// ---- Through the profile ----

#[test]
fn run_by_the_framework_as_a_post_filter_plugin() {
    let setup = setup_with(
        &["CpuFit", NAME],
        &[(NAME, json!({"minCandidateNodesAbsolute": 1}))],
        vec![
            node("n1", "1", &[pod("a", 10, "1")]),
            node("n2", "1", &[pod("b", 10, "1")]),
        ],
        vec![],
    );
    let preemptor = pod("preemptor", 100, "1");
    let (state, statuses) = setup.attempt(&preemptor);
    let context = PostFilterContext {
        framework: &setup.framework,
        snapshot: &setup.snapshot,
    };
    let (result, status) = setup
        .framework
        .run_post_filter(&context, &state, &preemptor, &statuses);
    assert!(status.is_success(), "{status}");
    let result = result.unwrap();
    assert!(["n1", "n2"].contains(&result.nominated_node.as_str()));
    assert_eq!(result.victims.len(), 1);

    let (_, status) =
        setup
            .framework
            .run_post_filter(&context, &state, &pod("lowly", 1, "1"), &statuses);
    assert_eq!(status.code(), Code::Unschedulable);
    assert_eq!(
        status.message(),
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
}

// ---- Acting on the result ----

#[tokio::test]
async fn prepare_candidate_evicts_and_clears_lower_nominations() {
    let preemptor = pod("preemptor", 100, "2");
    let deleted = pod("deleted", 1, "1");
    let waiting = pod("waiting", 1, "1");
    let leaving = terminating("leaving", 1, true);
    let lister = FixedLister {
        pods: vec![
            preemptor.clone(),
            nominated("lower", 50, "n1"),
            nominated("higher", 200, "n1"),
            nominated("elsewhere", 50, "n2"),
        ],
        ..FixedLister::default()
    };
    let (handle, client) = testing::handle_with(lister);
    let held = handle.waiting_pods.add(
        waiting.clone(),
        "n1",
        HashMap::from([(
            "Gang",
            tokio::time::Instant::now() + std::time::Duration::from_secs(60),
        )]),
    );
    let result = PostFilterResult {
        nominated_node: "n1".into(),
        victims: vec![deleted, waiting, leaving],
    };
    prepare_candidate(&handle, &preemptor, &result)
        .await
        .unwrap();
    assert_eq!(
        *client.calls.lock().unwrap(),
        [
            Call::Delete {
                pod: "default/deleted".into()
            },
            Call::Nominate {
                pod: "default/lower".into(),
                node: String::new()
            },
        ]
    );
    let verdict = handle.waiting_pods.wait(&held).await;
    assert_eq!(verdict.code(), Code::Unschedulable);
    assert_eq!(verdict.message(), "preempted");
    assert_eq!(verdict.plugin(), Some(NAME));
}

// ---- Pieces ----

#[test]
fn reasons_are_sorted_as_text() {
    let statuses: Vec<(String, Status)> = (0..10)
        .map(|i| (format!("n{i}"), Status::unschedulable("Insufficient cpu")))
        .chain([(
            "x".to_string(),
            Status::new(
                Code::Unschedulable,
                vec!["Insufficient cpu".into(), "Too many pods".into()],
            ),
        )])
        .collect();
    // "11 …" sorts before "2 …", as Kubernetes' sort of the formatted strings does.
    assert_eq!(
        fit_error(13, &statuses),
        "0/13 nodes are available: 1 Too many pods, 11 Insufficient cpu, 2 Preemption is not \
         helpful for scheduling."
    );
    assert_eq!(fit_error(0, &[]), "0/0 nodes are available:");
}

#[test]
fn random_offsets_stay_in_range() {
    for n in 1..50 {
        assert!(random_below(n) < n);
    }
}
