//! Nodes' lifecycle through the controller manager of `kyb server` with the fake kubelet:
//! a node that stops heartbeating goes `Unknown`, is tainted `unreachable` and loses the
//! pods that do not tolerate that for long; node IPAM hands out pod CIDRs; `kubectl
//! cordon`/`uncordon` taint and untaint; `kubectl drain` evicts through `pods/eviction`,
//! held back by a PodDisruptionBudget the disruption controller keeps current.

use crate::cluster::Cluster;
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::within as eventually;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use std::time::{Duration, Instant};

fn taints(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| {
            t.iter()
                .map(|t| format!("{}:{}", t.key, t.effect))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn condition(node: &Node, kind: &str) -> Option<(String, String, String)> {
    let c = node
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)?;
    Some((
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

fn pod_ready(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

/// A pod pinned to `node` (and so not scheduled), with `extra` spec fields.
async fn pinned_pod(client: &kube::Client, name: &str, node: &str, extra: serde_json::Value) {
    let mut spec = json!({"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}}, "spec": spec,
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

async fn wait_running(pods: &Api<Pod>, name: &str) {
    eventually(
        &format!("pod {name} ready"),
        Duration::from_secs(30),
        || async {
            let pod = pods.get(name).await.ok()?;
            (pod_ready(&pod).as_deref() == Some("True")).then_some(())
        },
    )
    .await;
}

/// Waits for the `default` service account pods need (made shortly after start).
async fn default_service_account(client: &kube::Client) {
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "default");
    eventually(
        "the default service account",
        Duration::from_secs(30),
        || async { accounts.get("default").await.ok().map(|_| ()) },
    )
    .await;
}

fn fast_monitor() -> Cluster {
    Cluster::start_with(
        kyb_testkit::temp_dir("nodes").unwrap(),
        &["--node-monitor-grace-period=4s", "--node-monitor-period=1s"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_node_goes_unknown_is_tainted_and_loses_its_pods() {
    let cluster = fast_monitor();
    let client = admin_client(&cluster).await;
    default_service_account(&client).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let tolerate = |seconds: i64| {
        json!({"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": seconds}]})
    };
    pinned_pod(&client, "brief", "node-a", tolerate(2)).await;
    pinned_pod(&client, "patient", "node-a", tolerate(3600)).await;
    pinned_pod(&client, "elsewhere", "node-b", json!({})).await;
    for name in ["brief", "patient", "elsewhere"] {
        wait_running(&pods, name).await;
    }

    kubelet.stop_node("node-a");
    let lost = eventually(
        "node-a Unknown and unreachable",
        Duration::from_secs(30),
        || async {
            let node = nodes.get("node-a").await.ok()?;
            let t = taints(&node);
            (t.contains(&"node.kubernetes.io/unreachable:NoExecute".to_string())
                && t.contains(&"node.kubernetes.io/unreachable:NoSchedule".to_string()))
            .then_some(node)
        },
    )
    .await;
    for kind in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        let (status, reason, message) = condition(&lost, kind).unwrap();
        assert_eq!(status, "Unknown", "{kind}");
        // The fake kubelet posts only Ready; the others it never posted.
        if kind == "Ready" {
            assert_eq!(reason, "NodeStatusUnknown");
            assert_eq!(message, "Kubelet stopped posting node status.");
        } else {
            assert_eq!(reason, "NodeStatusNeverUpdated", "{kind}");
            assert_eq!(message, "Kubelet never posted node status.", "{kind}");
        }
    }
    let added = lost
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .and_then(|t| t.iter().find(|t| t.effect == "NoExecute"))
        .and_then(|t| t.time_added.clone())
        .expect("timeAdded on the NoExecute taint");

    // The pod tolerating unreachable for 2 s is evicted once they pass.
    let evicted_at = eventually("pod brief evicted", Duration::from_secs(20), || async {
        match pods.get("brief").await {
            Err(_) => Some(Instant::now()),
            Ok(p) if p.metadata.deletion_timestamp.is_some() => Some(Instant::now()),
            Ok(_) => None,
        }
    })
    .await;
    let _ = evicted_at;
    let now = k8s_openapi::jiff::Timestamp::now();
    assert!(
        now.duration_since(added.0) >= k8s_openapi::jiff::SignedDuration::from_millis(1900),
        "evicted too early"
    );
    // The others stay; the lost node's pods are no longer Ready.
    let patient = pods.get("patient").await.unwrap();
    assert!(patient.metadata.deletion_timestamp.is_none());
    assert_eq!(pod_ready(&patient).as_deref(), Some("False"));
    let elsewhere = pods.get("elsewhere").await.unwrap();
    assert!(elsewhere.metadata.deletion_timestamp.is_none());
    assert_eq!(pod_ready(&elsewhere).as_deref(), Some("True"));
    let healthy = nodes.get("node-b").await.unwrap();
    assert!(taints(&healthy).is_empty(), "{:?}", taints(&healthy));

    let events = tokio::task::block_in_place(|| {
        cluster.kubectl_ok(&[
            "get",
            "events",
            "-A",
            "-o",
            "custom-columns=REASON:.reason,MESSAGE:.message,SOURCE:.source.component",
            "--no-headers",
        ])
    });
    assert!(
        events.contains("Marking for deletion Pod default/brief"),
        "{events}"
    );
    assert!(events.contains("TaintManagerEviction"), "{events}");
    assert!(
        events.contains("Node node-a status is now: NodeNotReady"),
        "{events}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_nodes_lose_the_not_ready_taint_and_get_pod_cidrs() {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let nodes: Api<Node> = Api::all(client.clone());
    // A node registered without status keeps admission's not-ready taint…
    let bare: Node = serde_json::from_value(json!({"metadata": {"name": "bare"}})).unwrap();
    nodes.create(&PostParams::default(), &bare).await.unwrap();
    let _kubelet = FakeKubelet::start(client.clone(), &["n1", "n2", "n3"]).await;
    let mut cidrs = vec![];
    for name in ["n1", "n2", "n3"] {
        let cidr = eventually(
            &format!("{name} pod CIDR"),
            Duration::from_secs(20),
            || async {
                let node = nodes.get(name).await.ok()?;
                let spec = node.spec?;
                let cidr = spec.pod_cidr?;
                assert_eq!(spec.pod_cidrs, Some(vec![cidr.clone()]));
                Some(cidr)
            },
        )
        .await;
        assert!(
            cidr.starts_with("10.42.") && cidr.ends_with(".0/24"),
            "{cidr}"
        );
        cidrs.push(cidr);
    }
    cidrs.sort();
    cidrs.dedup();
    assert_eq!(cidrs.len(), 3, "distinct CIDRs: {cidrs:?}");
    // …while Ready nodes have none.
    for name in ["n1", "n2", "n3"] {
        eventually(
            &format!("{name} untainted"),
            Duration::from_secs(20),
            || async {
                let node = nodes.get(name).await.ok()?;
                taints(&node).is_empty().then_some(())
            },
        )
        .await;
    }
    let bare = nodes.get("bare").await.unwrap();
    assert_eq!(taints(&bare), ["node.kubernetes.io/not-ready:NoSchedule"]);
    assert!(bare.spec.and_then(|s| s.pod_cidr).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_and_drain_respect_disruption_budgets() {
    // The ReplicaSet only makes `guarded-1` a managed pod; its controller stays off, or it
    // would manage the pod count itself.
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--controllers=*,-replicaset-controller"]);
    let client = admin_client(&cluster).await;
    default_service_account(&client).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let kubectl = |args: &[&str]| tokio::task::block_in_place(|| cluster.kubectl(args));

    // Cordon: spec.unschedulable and the unschedulable taint; uncordon lifts both.
    cluster.kubectl_ok(&["cordon", "node-b"]);
    eventually(
        "node-b tainted unschedulable",
        Duration::from_secs(20),
        || async {
            let node = nodes.get("node-b").await.ok()?;
            (node.spec.as_ref()?.unschedulable == Some(true)
                && taints(&node) == ["node.kubernetes.io/unschedulable:NoSchedule"])
            .then_some(())
        },
    )
    .await;
    cluster.kubectl_ok(&["uncordon", "node-b"]);
    eventually("node-b untainted", Duration::from_secs(20), || async {
        let node = nodes.get("node-b").await.ok()?;
        taints(&node).is_empty().then_some(())
    })
    .await;

    // A managed pod (its owner need not run: drain only asks that there be one) guarded
    // by a budget that allows no disruption.
    cluster.kubectl_stdin(&["create", "-f", "-"], &json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "guarded"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "guarded"}},
            "template": {"metadata": {"labels": {"app": "guarded"}},
                "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "busybox"}]}}},
    }).to_string());
    let rs_uid = cluster.kubectl_ok(&["get", "rs", "guarded", "-o", "jsonpath={.metadata.uid}"]);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "guarded-1", "labels": {"app": "guarded"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "guarded",
                "uid": rs_uid, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_running(&pods, "guarded-1").await;
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        &json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        })
        .to_string(),
    );
    let status = eventually("budget status", Duration::from_secs(20), || async {
        let budget = budgets.get("guard").await.ok()?;
        let status = budget.status?;
        (status.observed_generation == budget.metadata.generation && status.current_healthy == 1)
            .then_some(status)
    })
    .await;
    assert_eq!(status.desired_healthy, 1);
    assert_eq!(status.expected_pods, 1);
    assert_eq!(status.disruptions_allowed, 0);
    let condition = &status.conditions.unwrap()[0];
    assert_eq!(
        (
            condition.type_.as_str(),
            condition.status.as_str(),
            condition.reason.as_str()
        ),
        ("DisruptionAllowed", "False", "InsufficientPods")
    );

    // Drain is refused while the budget blocks…
    let refused = kubectl(&[
        "drain",
        "node-a",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=8s",
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    assert!(
        pods.get("guarded-1")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    let node = nodes.get("node-a").await.unwrap();
    assert_eq!(
        node.spec.as_ref().unwrap().unschedulable,
        Some(true),
        "drain cordons first"
    );

    // …and proceeds once it allows a disruption.
    cluster.kubectl_ok(&[
        "patch",
        "pdb",
        "guard",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":0}}"#,
    ]);
    eventually("budget allows one", Duration::from_secs(20), || async {
        let status = budgets.get("guard").await.ok()?.status?;
        (status.disruptions_allowed == 1
            && status.conditions.as_ref()?.first()?.reason == "SufficientPods")
            .then_some(())
    })
    .await;
    let drained = kubectl(&[
        "drain",
        "node-a",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=60s",
    ]);
    let out = String::from_utf8_lossy(&drained.stdout);
    assert!(
        drained.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&drained.stderr)
    );
    assert!(out.contains("pod/guarded-1 evicted"), "{out}");
    assert!(out.contains("node/node-a drained"), "{out}");
    assert!(pods.get("guarded-1").await.is_err(), "the pod is gone");
}

/// The ReplicaSet half of losing a node: its pods there are evicted and replaced on a
/// live node. Needs the ReplicaSet controller (another branch): enable once it is merged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_nodes_replicaset_pods_are_replaced_elsewhere() {
    let cluster = fast_monitor();
    let client = admin_client(&cluster).await;
    default_service_account(&client).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    cluster.kubectl_stdin(
        &["create", "-f", "-"],
        &json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": "node-a"},
                    "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                        "effect": "NoExecute", "tolerationSeconds": 2}],
                    "containers": [{"name": "c", "image": "busybox"}]}}},
        })
        .to_string(),
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let on_a = eventually(
        "two web pods running on node-a",
        Duration::from_secs(30),
        || async {
            let list = pods.list(&Default::default()).await.ok()?;
            let ready: Vec<String> = list
                .items
                .iter()
                .filter(|p| pod_ready(p).as_deref() == Some("True"))
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            (ready.len() == 2).then_some(ready)
        },
    )
    .await;
    // Let the replacements go anywhere: drop the node selector from the template.
    cluster.kubectl_ok(&[
        "patch",
        "rs",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]"#,
    ]);
    kubelet.stop_node("node-a");
    eventually(
        "replacements running on node-b",
        Duration::from_secs(40),
        || async {
            let list = pods.list(&Default::default()).await.ok()?;
            let replacements = list
                .items
                .iter()
                .filter(|p| p.metadata.name.as_ref().is_some_and(|n| !on_a.contains(n)))
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("node-b"))
                .filter(|p| pod_ready(p).as_deref() == Some("True"))
                .count();
            (replacements == 2).then_some(())
        },
    )
    .await;
}
