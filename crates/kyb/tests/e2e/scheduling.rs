//! The scheduler inside `kyb server`, with Node objects created through the API (no kubelet):
//! resource fit, node affinity, taints and tolerations, pod anti-affinity, topology spread,
//! preemption, gangs that wait for room or time out, and the explanations `kubectl describe
//! pod` gives for pods that fit nowhere.

use crate::cluster::{Cluster, DEADLINE};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Creates a ready node, as a kubelet and the node lifecycle controller would leave it (the
/// `not-ready` taint admission adds to new nodes removed).
pub fn add_node(
    cluster: &Cluster,
    name: &str,
    cpu: &str,
    memory: &str,
    labels: Value,
    taints: Value,
) {
    let mut labels = labels;
    labels["kubernetes.io/hostname"] = name.into();
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    });
    cluster.kubectl_stdin(&["create", "-f", "-"], &node.to_string());
    let patch = json!({"spec": {"taints": taints}}).to_string();
    cluster.kubectl_ok(&["patch", "node", name, "--type=merge", "-p", &patch]);
}

pub fn pod(name: &str, cpu: &str, extra: Value) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]},
    });
    merge(&mut pod, extra);
    pod
}

fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (k, v) in patch {
                merge(target.entry(k).or_insert(Value::Null), v);
            }
        }
        (target, patch) => *target = patch,
    }
}

pub fn create(cluster: &Cluster, object: &Value) {
    cluster.kubectl_stdin(&["create", "-f", "-"], &object.to_string());
}

/// The node a pod is bound to, waiting for the binding.
pub fn bound(cluster: &Cluster, pod: &str) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let node = cluster.kubectl_ok(&["get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"]);
        if !node.is_empty() {
            return node;
        }
        assert!(Instant::now() < deadline, "pod {pod} was never bound");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for the scheduler to say why a pod fits nowhere; the message.
pub fn unschedulable(cluster: &Cluster, pod: &str) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let message = cluster.kubectl_ok(&[
            "get",
            "pod",
            pod,
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ]);
        if !message.is_empty() {
            return message;
        }
        assert!(
            Instant::now() < deadline,
            "pod {pod} was never marked unschedulable"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn pods_land_where_they_fit_and_unfit_ones_say_why() {
    let cluster = Cluster::start();
    add_node(
        &cluster,
        "small",
        "1",
        "2Gi",
        json!({"disk": "hdd"}),
        json!([]),
    );
    add_node(
        &cluster,
        "big",
        "8",
        "16Gi",
        json!({"disk": "ssd"}),
        json!([]),
    );
    add_node(
        &cluster,
        "gpu",
        "8",
        "16Gi",
        json!({"disk": "ssd"}),
        json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
    );

    // Resource fit: 4 CPUs only fit on the big nodes, and the gpu node is tainted.
    create(&cluster, &pod("large", "4", json!({})));
    assert_eq!(bound(&cluster, "large"), "big");
    // Node affinity by selector.
    create(
        &cluster,
        &pod(
            "on-hdd",
            "100m",
            json!({"spec": {"nodeSelector": {"disk": "hdd"}}}),
        ),
    );
    assert_eq!(bound(&cluster, "on-hdd"), "small");
    // A toleration opens the tainted node; required node affinity steers there.
    create(
        &cluster,
        &pod(
            "gpu-job",
            "1",
            json!({"spec": {
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu"]}]}]}}},
            }}),
        ),
    );
    assert_eq!(bound(&cluster, "gpu-job"), "gpu");

    // Too big for anything: the reasons per node, as kube-scheduler words them.
    create(&cluster, &pod("huge", "64", json!({})));
    let message = unschedulable(&cluster, "huge");
    assert!(
        message.starts_with("0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."),
        "{message}"
    );
    let describe = cluster.kubectl_ok(&["describe", "pod", "huge"]);
    assert!(describe.contains("FailedScheduling"), "{describe}");
    assert!(describe.contains("Insufficient cpu"), "{describe}");

    // A node joining with room lets it in, without a timer.
    add_node(&cluster, "huge-node", "128", "256Gi", json!({}), json!([]));
    assert_eq!(bound(&cluster, "huge"), "huge-node");
}

#[test]
fn anti_affinity_and_topology_spread() {
    let cluster = Cluster::start();
    for (name, zone) in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")] {
        add_node(
            &cluster,
            name,
            "4",
            "8Gi",
            json!({"topology.kubernetes.io/zone": zone}),
            json!([]),
        );
    }
    // Required anti-affinity per host: four replicas on four hosts, the fifth nowhere.
    let anti = |name: &str| {
        pod(
            name,
            "100m",
            json!({"metadata": {"labels": {"app": "db"}}, "spec": {"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname"}]}}}}),
        )
    };
    let mut hosts = Vec::new();
    for i in 0..4 {
        create(&cluster, &anti(&format!("db-{i}")));
        hosts.push(bound(&cluster, &format!("db-{i}")));
    }
    hosts.sort();
    assert_eq!(hosts, ["a1", "a2", "b1", "b2"]);
    create(&cluster, &anti("db-4"));
    let message = unschedulable(&cluster, "db-4");
    assert!(
        message.contains("4 node(s) didn't match pod anti-affinity rules"),
        "{message}"
    );
    // Topology spread across zones, maxSkew 1: six replicas split three and three.
    let mut zones = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..6 {
        let name = format!("web-{i}");
        create(
            &cluster,
            &pod(
                &name,
                "100m",
                json!({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
            ),
        );
        let node = bound(&cluster, &name);
        let zone = if node.starts_with('a') { "a" } else { "b" };
        *zones.entry(zone.to_string()).or_default() += 1;
        let counts: Vec<usize> = zones.values().copied().collect();
        let spread = counts.iter().max().unwrap_or(&0) - counts.iter().min().unwrap_or(&0);
        assert!(zones.len() < 2 || spread <= 1, "{zones:?}");
    }
    assert_eq!(zones.values().copied().collect::<Vec<_>>(), vec![3, 3]);
}

#[test]
fn a_higher_priority_pod_preempts_a_lower_one() {
    let cluster = Cluster::start();
    add_node(&cluster, "only", "2", "4Gi", json!({}), json!([]));
    cluster.kubectl_ok(&["create", "priorityclass", "low", "--value=10"]);
    cluster.kubectl_ok(&["create", "priorityclass", "high", "--value=1000"]);
    cluster.kubectl_ok(&[
        "create",
        "priorityclass",
        "high-polite",
        "--value=1000",
        "--preemption-policy=Never",
    ]);
    create(
        &cluster,
        &pod(
            "filler",
            "1500m",
            json!({"spec": {"priorityClassName": "low"}}),
        ),
    );
    assert_eq!(bound(&cluster, "filler"), "only");
    // A high-priority pod that never preempts waits.
    create(
        &cluster,
        &pod(
            "polite",
            "1500m",
            json!({"spec": {"priorityClassName": "high-polite"}}),
        ),
    );
    let message = unschedulable(&cluster, "polite");
    assert!(
        message.starts_with("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."),
        "{message}"
    );
    assert!(cluster.kubectl(&["get", "pod", "filler"]).status.success());
    cluster.kubectl_ok(&["delete", "pod", "polite", "--grace-period=0", "--force"]);
    // One that may preempt evicts the low-priority pod and takes its place.
    create(
        &cluster,
        &pod(
            "urgent",
            "1500m",
            json!({"spec": {"priorityClassName": "high"}}),
        ),
    );
    let deadline = Instant::now() + DEADLINE;
    loop {
        let filler = cluster.kubectl(&[
            "get",
            "pod",
            "filler",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        if !filler.status.success() || !String::from_utf8_lossy(&filler.stdout).is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the low-priority pod was never evicted"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let nominated = cluster.kubectl_ok(&[
        "get",
        "pod",
        "urgent",
        "-o",
        "jsonpath={.status.nominatedNodeName}",
    ]);
    assert_eq!(nominated, "only");
    // The victim says why it goes.
    let why = cluster.kubectl_ok(&[
        "get",
        "pod",
        "filler",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"DisruptionTarget\")].reason}",
    ]);
    assert_eq!(why, "PreemptionByScheduler");
    // Without a kubelet the victim only goes once its grace period is cut short.
    cluster.kubectl_ok(&[
        "delete",
        "pod",
        "filler",
        "--grace-period=0",
        "--force",
        "--ignore-not-found",
    ]);
    assert_eq!(bound(&cluster, "urgent"), "only");
}

#[test]
fn a_gang_waits_for_room_then_lands_together() {
    let cluster = Cluster::start();
    add_node(&cluster, "n1", "2", "4Gi", json!({}), json!([]));
    create(
        &cluster,
        &json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "trio"}, "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30}}),
    );
    let member = |i: usize| {
        pod(
            &format!("trio-{i}"),
            "1",
            json!({"metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "trio"}}}),
        )
    };
    for i in 0..3 {
        create(&cluster, &member(i));
    }
    // Two fit, three are needed: the third says why, and nobody is bound.
    let message = unschedulable(&cluster, "trio-2");
    assert!(message.contains("Insufficient cpu"), "{message}");
    for i in 0..3 {
        let node = cluster.kubectl_ok(&[
            "get",
            "pod",
            &format!("trio-{i}"),
            "-o",
            "jsonpath={.spec.nodeName}",
        ]);
        assert_eq!(
            node, "",
            "trio-{i} was bound before the gang could be placed"
        );
    }
    // Room for all three: they land together.
    add_node(&cluster, "n2", "2", "4Gi", json!({}), json!([]));
    for i in 0..3 {
        bound(&cluster, &format!("trio-{i}"));
    }
}

#[test]
fn a_gang_that_times_out_releases_everything() {
    let cluster = Cluster::start();
    add_node(&cluster, "n1", "4", "8Gi", json!({}), json!([]));
    create(
        &cluster,
        &json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "quorum"}, "spec": {"minMember": 3, "scheduleTimeoutSeconds": 2}}),
    );
    // Three members exist, but the third is held back by a scheduling gate: the two others
    // are placed and wait at Permit for the quorum, then time out and let go.
    for i in 0..3 {
        let mut member = pod(
            &format!("q-{i}"),
            "2",
            json!({"metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "quorum"}}}),
        );
        if i == 2 {
            member["spec"]["schedulingGates"] = json!([{"name": "example.com/hold"}]);
        }
        create(&cluster, &member);
    }
    // The first to time out takes its sibling along (Unreserve rejects the group's other
    // waiting pods), so each says one or the other, and one of them timed out.
    let messages: Vec<String> = (0..2)
        .map(|i| unschedulable(&cluster, &format!("q-{i}")))
        .collect();
    for message in &messages {
        assert!(
            message.contains("timeout") || message.contains("rejection in Unreserve"),
            "{message}"
        );
    }
    assert!(
        messages.iter().any(|m| m.contains("timeout")),
        "{messages:?}"
    );
    for i in 0..3 {
        let node = cluster.kubectl_ok(&[
            "get",
            "pod",
            &format!("q-{i}"),
            "-o",
            "jsonpath={.spec.nodeName}",
        ]);
        assert_eq!(node, "", "q-{i} was bound without its quorum");
    }
    // Taken out of the way, the room they held is free again.
    for i in 0..3 {
        cluster.kubectl_ok(&[
            "delete",
            "pod",
            &format!("q-{i}"),
            "--grace-period=0",
            "--force",
        ]);
    }
    // The room they held is free: an ordinary pod takes all of it.
    create(&cluster, &pod("after", "4", json!({})));
    assert_eq!(bound(&cluster, "after"), "n1");
}

/// The lease's holder (empty when nobody holds it).
fn lease_holder(cluster: &Cluster) -> String {
    let out = cluster.kubectl(&[
        "get",
        "lease",
        "-n",
        "kube-system",
        "ha-scheduler",
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_standby_scheduler_takes_over_when_the_leader_dies() {
    let cluster = Cluster::start();
    add_node(&cluster, "n1", "8", "16Gi", json!({}), json!([]));
    // Two `kyb scheduler` processes, as the scheduler component, competing for their own
    // lease (`kube-system/ha-scheduler`: the in-process scheduler holds `kube-scheduler`);
    // their profile is not the in-process scheduler's.
    let config = cluster.write_file(
        "ha-scheduler.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\n\
         kind: KubeSchedulerConfiguration\n\
         leaderElection:\n  leaderElect: true\n  resourceName: ha-scheduler\n  leaseDuration: 3s\n  renewDeadline: 2s\n  retryPeriod: 250ms\n\
         profiles:\n- schedulerName: ha-scheduler\n",
    );
    // As the admin: system:kube-scheduler may read and renew only the `kube-scheduler` lease.
    let kubeconfig = cluster.kubeconfig();
    let spawn = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kyb"));
        command
            .env("RUST_LOG", "info")
            .arg("scheduler")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--config")
            .arg(&config);
        kyb_testkit::Process::spawn(&mut command).unwrap()
    };
    let mut first = spawn();
    first.wait_for_line("became the leader", DEADLINE).unwrap();
    let leader = lease_holder(&cluster);
    assert!(!leader.is_empty());
    let mut second = spawn();
    second
        .wait_for_line("scheduler caches synced", DEADLINE)
        .unwrap();

    let ha_pod = |name: &str| {
        pod(
            name,
            "100m",
            json!({"spec": {"schedulerName": "ha-scheduler"}}),
        )
    };
    create(&cluster, &ha_pod("before"));
    assert_eq!(bound(&cluster, "before"), "n1");
    // The standby only watches: it never took the lease.
    assert_eq!(lease_holder(&cluster), leader);
    assert!(!second.output().contains("became the leader"));

    // The leader dies without letting go (SIGKILL); the standby takes over once the lease
    // runs out, and schedules.
    drop(first);
    let died = Instant::now();
    create(&cluster, &ha_pod("after"));
    second.wait_for_line("became the leader", DEADLINE).unwrap();
    let took = died.elapsed();
    assert!(
        took < Duration::from_secs(3) + Duration::from_secs(2),
        "took over after {took:?}"
    );
    let new_leader = lease_holder(&cluster);
    assert!(
        !new_leader.is_empty() && new_leader != leader,
        "{new_leader}"
    );
    assert_eq!(bound(&cluster, "after"), "n1");
}

/// An out-of-tree plugin: a Filter that admits only nodes labelled `tier=gold`, and a Score
/// preferring the highest `rank` label. Nothing in the scheduler knows it; it is registered
/// by name and enabled in a profile.
mod gold {
    use kyb_scheduler::framework::{
        CycleState, FilterPlugin, NodeInfo, NodeScore, Plugin, PodInfo, ScorePlugin, Status,
    };

    pub const NAME: &str = "GoldNodesOnly";

    pub struct GoldNodesOnly;

    fn label<'a>(node: &'a NodeInfo, key: &str) -> Option<&'a str> {
        node.labels().and_then(|l| l.get(key)).map(String::as_str)
    }

    impl Plugin for GoldNodesOnly {
        fn name(&self) -> &'static str {
            NAME
        }
        fn as_filter(&self) -> Option<&dyn FilterPlugin> {
            Some(self)
        }
        fn as_score(&self) -> Option<&dyn ScorePlugin> {
            Some(self)
        }
    }

    impl FilterPlugin for GoldNodesOnly {
        fn filter(&self, _state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
            if label(node, "tier") == Some("gold") {
                Status::success()
            } else {
                Status::unresolvable("node(s) were not gold")
            }
        }
    }

    impl ScorePlugin for GoldNodesOnly {
        fn score(&self, _state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
            let rank = label(node, "rank")
                .and_then(|r| r.parse().ok())
                .unwrap_or(0);
            (rank, Status::success())
        }

        fn normalize(
            &self,
            _state: &CycleState,
            _pod: &PodInfo,
            scores: &mut [NodeScore],
        ) -> Status {
            let top = scores.iter().map(|s| s.score).max().unwrap_or(0).max(1);
            for s in scores {
                s.score = s.score * 100 / top;
            }
            Status::success()
        }
    }
}

#[test]
fn an_out_of_tree_plugin_is_registered_and_enabled_by_name() {
    let cluster = Cluster::start();
    for (name, cpu, tier, rank) in [
        ("n1", "2", "gold", "1"),
        ("n2", "2", "gold", "5"),
        ("n3", "16", "silver", "9"),
        ("n4", "2", "gold", "3"),
    ] {
        add_node(
            &cluster,
            name,
            cpu,
            "8Gi",
            json!({"tier": tier, "rank": rank}),
            json!([]),
        );
    }
    let mut registry = kyb_scheduler::plugins::registry();
    registry
        .register(gold::NAME, |_args, _handle| {
            Ok(std::sync::Arc::new(gold::GoldNodesOnly))
        })
        .unwrap();
    let config = kyb_scheduler::config::SchedulerConfig::from_value(&json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": false},
        "profiles": [{"schedulerName": "gold-scheduler", "plugins": {
            "filter": {"enabled": [{"name": gold::NAME}]},
            "score": {"enabled": [{"name": gold::NAME, "weight": 10}]},
        }}],
    }))
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let kubeconfig = cluster.kubeconfig();
    runtime.spawn(async move {
        let file = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let kube_config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(kube_config).unwrap();
        kyb_scheduler::run(
            client,
            config,
            registry,
            "gold-test",
            std::future::pending(),
        )
        .await
        .unwrap();
    });

    let gold_pod = |name: &str, cpu: &str| {
        pod(
            name,
            cpu,
            json!({"spec": {"schedulerName": "gold-scheduler"}}),
        )
    };
    // The best-ranked gold node, though the silver one is roomier and ranked higher.
    create(&cluster, &gold_pod("shiny", "500m"));
    assert_eq!(bound(&cluster, "shiny"), "n2");
    // Only silver has room for 8 CPUs; the plugin's reason is counted like any other.
    create(&cluster, &gold_pod("heavy", "8"));
    let message = unschedulable(&cluster, "heavy");
    assert!(
        message
            .starts_with("0/4 nodes are available: 1 node(s) were not gold, 3 Insufficient cpu."),
        "{message}"
    );
    // Pods of other profiles are not its business: the default scheduler puts this one on
    // silver.
    create(&cluster, &pod("plain", "8", json!({})));
    assert_eq!(bound(&cluster, "plain"), "n3");
}
