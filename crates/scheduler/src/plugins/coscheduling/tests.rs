#![allow(clippy::unwrap_used)]

use super::*;
use crate::config::{PluginRef, PluginSet, ProfileConfig};
use crate::framework::testing::{self, FixedLister};
use crate::framework::{BindPlugin, Framework, NodeStatuses, Registry};
use async_trait::async_trait;
use serde_json::json;

fn member(name: &str, group: &str) -> Arc<PodInfo> {
    testing::pod(json!({
        "metadata": {"name": name, "namespace": "ns",
                     "labels": {"scheduling.x-k8s.io/pod-group": group}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }))
}

fn bound_member(name: &str, group: &str, node: &str) -> Arc<PodInfo> {
    testing::pod(json!({
        "metadata": {"name": name, "namespace": "ns",
                     "labels": {"scheduling.x-k8s.io/pod-group": group}},
        "spec": {"nodeName": node,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }))
}

fn plain(name: &str) -> Arc<PodInfo> {
    testing::pod(json!({"metadata": {"name": name, "namespace": "ns"},
                        "spec": {"containers": [{"name": "c"}]}}))
}

fn group(name: &str, spec: Value) -> Arc<Value> {
    Arc::new(json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }))
}

fn lister(groups: Vec<Arc<Value>>, pods: Vec<Arc<PodInfo>>) -> FixedLister {
    let mut lister = FixedLister {
        pods,
        ..FixedLister::default()
    };
    lister
        .objects
        .insert((GROUP.to_string(), POD_GROUPS.to_string()), groups);
    lister
}

fn plugin(args: Value, lister: FixedLister) -> (Coscheduling, Arc<Handle>) {
    let (handle, _) = testing::handle_with(lister);
    (
        Coscheduling::new(Args::parse(&args).unwrap(), handle.clone()),
        handle,
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Whether a held pod is still undecided.
fn still_waiting(handle: &Handle, waiting: &Arc<crate::framework::WaitingPod>) -> bool {
    runtime()
        .block_on(async {
            tokio::time::timeout(Duration::from_millis(10), handle.waiting_pods.wait(waiting)).await
        })
        .is_err()
}

fn no_nodes() -> Snapshot {
    Snapshot::new(Vec::new())
}

/// A binder that binds nothing (a profile needs one).
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

fn framework(handle: Arc<Handle>) -> Framework {
    let mut registry = Registry::new();
    registry.register(NAME, factory).unwrap();
    registry
        .register("NoBinder", |_: &Value, _: &Arc<Handle>| {
            Ok(Arc::new(NoBinder) as Arc<dyn Plugin>)
        })
        .unwrap();
    let mut profile = ProfileConfig::default_named("gang");
    profile.multi_point = PluginSet {
        enabled: [NAME, "NoBinder"]
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

#[test]
fn args_defaults_and_validation() {
    assert_eq!(Args::parse(&Value::Null).unwrap(), Args::default());
    let args = Args::parse(
        &json!({"permitWaitingTimeSeconds": 10, "podGroupBackoffSeconds": 5,
                                  "podGroupRejectPercentage": 0}),
    )
    .unwrap();
    assert_eq!(args.permit_waiting_time, Duration::from_secs(10));
    assert_eq!(args.pod_group_backoff, Some(Duration::from_secs(5)));
    assert_eq!(args.reject_percentage, 0);
    assert_eq!(
        Args::parse(&json!({"permitWaitingTimeSeconds": -1})).unwrap_err(),
        "permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0"
    );
    assert_eq!(
        Args::parse(&json!({"podGroupBackoffSeconds": -1, "podGroupRejectPercentage": 101}))
            .unwrap_err(),
        "[podGroupBackoffSeconds: Invalid value: -1: must be greater than 0, \
         podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100]"
    );
    assert_eq!(
        Args::parse(&json!({"permitWaitingTime": 1})).unwrap_err(),
        "strict decoding error: unknown field \"permitWaitingTime\""
    );
    // Zero waits fall back to the default.
    let args = Args::parse(&json!({"permitWaitingTimeSeconds": 0})).unwrap();
    assert_eq!(args.permit_waiting_time, Duration::from_secs(60));
}

#[test]
fn pods_without_the_label_pass_through() {
    let other = member("other", "pg1");
    let (cs, handle) = plugin(
        Value::Null,
        lister(
            vec![group("pg1", json!({"minMember": 3}))],
            vec![other.clone()],
        ),
    );
    let waiting = handle.waiting_pods.add(other, "n1", HashMap::new());
    let pod = plain("p");
    let mut state = CycleState::new();
    assert!(cs.pre_enqueue(&pod).is_success());
    assert!(cs.pre_filter(&mut state, &pod, &no_nodes()).1.is_skip());
    assert_eq!(
        cs.permit(&mut state, &pod, "n1"),
        (Status::success(), Duration::ZERO)
    );
    let fw = framework(handle.clone());
    let context = PostFilterContext {
        framework: &fw,
        snapshot: &no_nodes(),
    };
    let (result, status) = cs.post_filter(&context, &state, &pod, &NodeStatuses::new());
    assert!(result.is_none() && status.is_skip() && status.reasons().is_empty());
    cs.unreserve(&mut state, &pod, "n1");
    // The other group's waiting member is untouched.
    assert!(still_waiting(&handle, &waiting));
    assert!(lock(&cs.groups).assumed.is_empty());
}

#[test]
fn pre_enqueue_waits_for_the_group_and_its_members() {
    let pods = vec![member("p1", "pg1"), member("p2", "pg1")];
    let (cs, _) = plugin(Value::Null, lister(Vec::new(), pods.clone()));
    assert_eq!(
        cs.pre_enqueue(&pods[0]),
        Status::pending("PodGroup not found")
    );

    let (cs, _) = plugin(
        Value::Null,
        lister(vec![group("pg1", json!({"minMember": 3}))], pods.clone()),
    );
    assert_eq!(
        cs.pre_enqueue(&pods[0]),
        Status::pending(
            "pre-enqueue pod p1 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
        )
    );

    // A finished pod is not a member; a third live one completes the group.
    let finished = testing::pod(json!({"metadata": {"name": "p0", "namespace": "ns",
                          "labels": {"scheduling.x-k8s.io/pod-group": "pg1"}},
                          "spec": {"containers": [{"name": "c"}]},
                          "status": {"phase": "Succeeded"}}));
    let mut with_finished = pods.clone();
    with_finished.push(finished);
    let (cs, _) = plugin(
        Value::Null,
        lister(vec![group("pg1", json!({"minMember": 3}))], with_finished),
    );
    assert!(!cs.pre_enqueue(&pods[0]).is_success());

    let mut three = pods.clone();
    three.push(member("p3", "pg1"));
    let (cs, _) = plugin(
        Value::Null,
        lister(vec![group("pg1", json!({"minMember": 3}))], three),
    );
    assert!(cs.pre_enqueue(&pods[0]).is_success());
    // A group of another namespace with the same name does not count.
    let mut foreign = (*group("pg1", json!({"minMember": 1}))).clone();
    foreign["metadata"]["namespace"] = "other".into();
    let (cs, _) = plugin(Value::Null, lister(vec![Arc::new(foreign)], pods.clone()));
    assert_eq!(
        cs.pre_enqueue(&pods[0]),
        Status::pending("PodGroup not found")
    );
}

#[test]
fn pre_filter_rejects_incomplete_groups_unresolvably() {
    let pods = vec![member("p1", "pg1"), member("p2", "pg1")];
    let (cs, _) = plugin(
        Value::Null,
        lister(vec![group("pg1", json!({"minMember": 3}))], pods.clone()),
    );
    let (result, status) = cs.pre_filter(&mut CycleState::new(), &pods[0], &no_nodes());
    assert!(result.is_none());
    assert_eq!(
        status,
        Status::unresolvable(
            "pre-filter pod p1 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
        )
    );
    // Unknown group: nothing to check here (Permit refuses the pod).
    let stray = member("s", "missing");
    assert!(
        cs.pre_filter(&mut CycleState::new(), &stray, &no_nodes())
            .1
            .is_skip()
    );
    let (cs, _) = plugin(
        Value::Null,
        lister(vec![group("pg1", json!({"minMember": 2}))], pods.clone()),
    );
    assert!(
        cs.pre_filter(&mut CycleState::new(), &pods[0], &no_nodes())
            .1
            .is_success()
    );
}

#[test]
fn pre_filter_checks_min_resources_once_per_window() {
    let node = |name: &str, pods: &[Arc<PodInfo>]| {
        Arc::new(testing::node(
            json!({"metadata": {"name": name},
                   "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
            pods,
        ))
    };
    let busy = testing::pod(json!({"metadata": {"name": "busy", "namespace": "ns"},
        "spec": {"nodeName": "n2", "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}));
    // Three members, one already placed on n1 (its CPU counts as the group's own).
    let placed = bound_member("p0", "pg1", "n1");
    let pods = vec![placed.clone(), member("p1", "pg1"), member("p2", "pg1")];
    let snapshot = Snapshot::new(vec![node("n1", &[placed]), node("n2", &[busy])]);

    let fits = group("pg1", json!({"minMember": 3, "minResources": {"cpu": "5"}}));
    let (cs, _) = plugin(Value::Null, lister(vec![fits], pods.clone()));
    assert!(
        cs.pre_filter(&mut CycleState::new(), &pods[1], &snapshot)
            .1
            .is_success()
    );
    assert!(lock(&cs.groups).permitted.contains_key("ns/pg1"));

    let too_big = group(
        "pg1",
        json!({"minMember": 3, "minResources": {"cpu": "5500m", "memory": "20Gi"}}),
    );
    let (cs, _) = plugin(Value::Null, lister(vec![too_big], pods.clone()));
    assert_eq!(
        cs.pre_filter(&mut CycleState::new(), &pods[1], &snapshot).1,
        Status::unresolvable("resource gap: map[cpu:500m memory:4294967296]")
    );
    // Once permitted, the group is not checked again within the window.
    lock(&cs.groups)
        .permitted
        .insert("ns/pg1".into(), Instant::now() + Duration::from_secs(60));
    assert!(
        cs.pre_filter(&mut CycleState::new(), &pods[1], &snapshot)
            .1
            .is_success()
    );
}

#[test]
fn permit_waits_with_the_group_timeout_or_the_default() {
    let pods = vec![
        member("p1", "pg1"),
        member("p2", "pg1"),
        member("p3", "pg1"),
    ];
    let groups = vec![
        group("pg1", json!({"minMember": 3, "scheduleTimeoutSeconds": 10})),
        group("pg2", json!({"minMember": 2})),
    ];
    let (cs, _) = plugin(
        json!({"permitWaitingTimeSeconds": 30}),
        lister(groups, pods.clone()),
    );
    assert_eq!(
        cs.permit(&mut CycleState::new(), &pods[0], "n1"),
        (Status::wait(), Duration::from_secs(10))
    );
    let other = member("q1", "pg2");
    assert_eq!(
        cs.permit(&mut CycleState::new(), &other, "n1"),
        (Status::wait(), Duration::from_secs(30))
    );
    let stray = member("s", "missing");
    assert_eq!(
        cs.permit(&mut CycleState::new(), &stray, "n1"),
        (Status::unschedulable("PodGroup not found"), Duration::ZERO)
    );
}

#[test]
fn bound_members_count_toward_the_quorum() {
    let pods = vec![bound_member("p1", "pg1", "n1"), member("p2", "pg1")];
    let (cs, _) = plugin(
        Value::Null,
        lister(vec![group("pg1", json!({"minMember": 2}))], pods.clone()),
    );
    assert_eq!(
        cs.permit(&mut CycleState::new(), &pods[1], "n1"),
        (Status::success(), Duration::ZERO)
    );
}

#[tokio::test]
async fn a_gang_of_three_waits_until_three_are_placed() {
    let pods = vec![
        member("p1", "pg1"),
        member("p2", "pg1"),
        member("p3", "pg1"),
    ];
    let loner = plain("loner");
    let mut all = pods.clone();
    all.push(loner.clone());
    let (handle, _) =
        testing::handle_with(lister(vec![group("pg1", json!({"minMember": 3}))], all));
    let fw = framework(handle.clone());
    let mut state = CycleState::new();

    assert_eq!(fw.run_permit(&mut state, &pods[0], "n1"), Status::wait());
    assert_eq!(fw.run_permit(&mut state, &pods[1], "n2"), Status::wait());
    // A pod without a group is not held.
    assert!(fw.run_permit(&mut state, &loner, "n1").is_success());
    let first = handle.waiting_pods.get("p1").unwrap();
    let second = handle.waiting_pods.get("p2").unwrap();
    assert_eq!(first.pending_plugins(), vec![NAME]);

    // The third completes the quorum: it proceeds, and so do the two waiting.
    assert!(fw.run_permit(&mut state, &pods[2], "n3").is_success());
    assert!(handle.waiting_pods.wait(&first).await.is_success());
    assert!(handle.waiting_pods.wait(&second).await.is_success());
    assert!(handle.waiting_pods.all().is_empty());

    // All three are on their way to binding: a fourth member needs no wait.
    let fourth = member("p4", "pg1");
    let cs = fw.plugin(NAME).unwrap().as_permit().unwrap();
    assert_eq!(
        cs.permit(&mut state, &fourth, "n1"),
        (Status::success(), Duration::ZERO)
    );
}

#[tokio::test]
async fn a_timeout_rejects_the_whole_group() {
    let pods = vec![
        member("p1", "pg1"),
        member("p2", "pg1"),
        member("p3", "pg1"),
    ];
    let (handle, _) = testing::handle_with(lister(
        vec![group(
            "pg1",
            json!({"minMember": 3, "scheduleTimeoutSeconds": 5}),
        )],
        pods.clone(),
    ));
    let fw = framework(handle.clone());
    let mut state = CycleState::new();
    // p1 waits with a deadline about to pass (as the framework registers a wait), p2 with
    // the group's timeout.
    let first = handle.waiting_pods.add(
        pods[0].clone(),
        "n1",
        HashMap::from([(
            NAME,
            tokio::time::Instant::now() + Duration::from_millis(20),
        )]),
    );
    assert_eq!(fw.run_permit(&mut state, &pods[1], "n2"), Status::wait());
    let second = handle.waiting_pods.get("p2").unwrap();

    let timed_out = handle.waiting_pods.wait(&first).await;
    assert_eq!(
        timed_out,
        Status::unschedulable(
            "rejected due to timeout after waiting at permit (plugins Coscheduling)"
        )
    );
    // The scheduler unreserves the pod that timed out: the rest of the group is released.
    fw.run_unreserve(&mut state, &pods[0], "n1");
    assert_eq!(
        handle.waiting_pods.wait(&second).await,
        Status::unschedulable("rejection in Unreserve").with_plugin(NAME)
    );
    // Neither counts as placed any more.
    let cs = fw.plugin(NAME).unwrap().as_permit().unwrap();
    fw.run_unreserve(&mut state, &pods[1], "n2");
    assert_eq!(
        cs.permit(&mut state, &pods[2], "n3"),
        (Status::wait(), Duration::from_secs(5))
    );
}

#[test]
fn post_filter_rejects_the_waiting_members_and_backs_off() {
    let pods: Vec<_> = (1..=4).map(|i| member(&format!("p{i}"), "pg1")).collect();
    let (cs, handle) = plugin(
        json!({"podGroupBackoffSeconds": 30}),
        lister(vec![group("pg1", json!({"minMember": 4}))], pods.clone()),
    );
    let fw = framework(handle.clone());
    let snapshot = no_nodes();
    let context = PostFilterContext {
        framework: &fw,
        snapshot: &snapshot,
    };
    let mut state = CycleState::new();
    assert_eq!(cs.permit(&mut state, &pods[0], "n1").0, Status::wait());
    let waiting = handle.waiting_pods.add(
        pods[0].clone(),
        "n1",
        HashMap::from([(NAME, tokio::time::Instant::now() + Duration::from_secs(60))]),
    );
    lock(&cs.groups)
        .permitted
        .insert("ns/pg1".into(), Instant::now() + Duration::from_secs(60));

    let (result, status) = cs.post_filter(&context, &state, &pods[1], &NodeStatuses::new());
    assert!(result.is_none());
    assert_eq!(
        status,
        Status::unschedulable(
            "PodGroup ns/pg1 gets rejected due to Pod p2 is unschedulable even after PostFilter"
        )
    );
    assert_eq!(
        runtime().block_on(handle.waiting_pods.wait(&waiting)),
        Status::unschedulable("optimistic rejection in PostFilter").with_plugin(NAME)
    );
    assert!(!lock(&cs.groups).permitted.contains_key("ns/pg1"));
    // The group is backed off: its members are refused in PreFilter.
    assert_eq!(
        cs.pre_filter(&mut CycleState::new(), &pods[2], &snapshot).1,
        Status::unresolvable("podGroup ns/pg1 failed recently")
    );
}

#[test]
fn post_filter_spares_groups_at_or_near_their_quorum() {
    // 19 of 20 placed: 5% missing, within the 10% default.
    let mut pods: Vec<_> = (1..=19)
        .map(|i| bound_member(&format!("b{i}"), "big", "n1"))
        .collect();
    let last = member("b20", "big");
    pods.push(last.clone());
    let straggler = member("s", "small");
    pods.push(bound_member("s1", "small", "n1"));
    pods.push(bound_member("s2", "small", "n1"));
    pods.push(straggler.clone());
    let (cs, handle) = plugin(
        json!({"podGroupBackoffSeconds": 30}),
        lister(
            vec![
                group("big", json!({"minMember": 20})),
                group("small", json!({"minMember": 2})),
            ],
            pods,
        ),
    );
    let fw = framework(handle.clone());
    let snapshot = no_nodes();
    let context = PostFilterContext {
        framework: &fw,
        snapshot: &snapshot,
    };
    let state = CycleState::new();
    let (_, status) = cs.post_filter(&context, &state, &last, &NodeStatuses::new());
    assert_eq!(status, Status::new(Code::Unschedulable, Vec::new()));
    // Quorum already met by others: nothing to reject.
    let (_, status) = cs.post_filter(&context, &state, &straggler, &NodeStatuses::new());
    assert_eq!(status, Status::new(Code::Unschedulable, Vec::new()));
    assert!(lock(&cs.groups).backed_off.is_empty());
    // With a 0% threshold the big group is rejected.
    let (cs, _) = plugin(
        json!({"podGroupRejectPercentage": 0}),
        lister(
            vec![group("big", json!({"minMember": 20}))],
            (1..=19)
                .map(|i| bound_member(&format!("b{i}"), "big", "n1"))
                .chain([last.clone()])
                .collect(),
        ),
    );
    let (_, status) = cs.post_filter(&context, &state, &last, &NodeStatuses::new());
    assert_eq!(
        status.message(),
        "PodGroup ns/big gets rejected due to Pod b20 is unschedulable even after PostFilter"
    );
    // A labelled pod whose group is gone.
    let stray = member("x", "missing");
    assert_eq!(
        cs.post_filter(&context, &state, &stray, &NodeStatuses::new())
            .1,
        Status::unschedulable("can not find pod group")
    );
}

#[test]
fn registered_in_the_registry() {
    let registry = crate::plugins::registry();
    assert!(registry.get(NAME).is_some());
    let plugin = factory(&Value::Null, &testing::handle()).unwrap();
    assert_eq!(plugin.name(), NAME);
    assert!(plugin.as_queue_sort().is_none());
    assert!(plugin.as_filter().is_none());
}
