//! `pods/eviction` and PodDisruptionBudgets, as Kubernetes' eviction REST: concurrent
//! evictions never take more than a budget allows (the allowance is decremented and the
//! pod recorded in `disruptedPods` in one compare-and-swap before the pod is deleted);
//! a budget the disruption controller has not processed refuses with 429; two budgets
//! for one pod are a 500; terminal pods and unready pods under `AlwaysAllow` go freely;
//! a dry run changes nothing.

use crate::cluster::{Cluster, DEADLINE, Who};
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::within;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;
use serde_json::{Value, json};

fn eviction_request(namespace: &str, pod: &str) -> String {
    let body = json!({
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
        "deleteOptions": {"gracePeriodSeconds": 0},
    })
    .to_string();
    format!(
        "POST /api/v1/namespaces/{namespace}/pods/{pod}/eviction HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The response's status code and JSON body.
fn evict(cluster: &Cluster, namespace: &str, pod: &str, query: &str) -> (u16, Value) {
    let body = json!({
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
        "deleteOptions": {"gracePeriodSeconds": 0},
    });
    let (code, text) = cluster.http(
        "POST",
        &format!("/api/v1/namespaces/{namespace}/pods/{pod}/eviction{query}"),
        "application/json",
        body.to_string().as_bytes(),
    );
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn live_pods(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_evictions_never_exceed_the_budget() {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    cluster.wait_for_default_account("default");
    let replica_set = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 8,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "web"}]},
            },
        },
    });
    cluster.kubectl_stdin(&["apply", "-f", "-"], &replica_set.to_string());
    let budget = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 7, "selector": {"matchLabels": {"app": "web"}}},
    });
    cluster.kubectl_stdin(&["apply", "-f", "-"], &budget.to_string());
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let allows_one = || async {
        let status = budgets.get("web").await.ok()?.status?;
        (status.disruptions_allowed == 1 && status.current_healthy == 8).then_some(())
    };
    within("the budget to allow one disruption", DEADLINE, allows_one).await;

    // A dry run changes nothing.
    let victims = live_pods(&pods.list(&Default::default()).await.unwrap().items);
    assert_eq!(victims.len(), 8, "{victims:?}");
    let (code, body) = evict(&cluster, "default", &victims[0], "?dryRun=All");
    assert_eq!(code, 201, "{body}");
    let status = budgets.get("web").await.unwrap().status.unwrap();
    assert_eq!(status.disruptions_allowed, 1);
    assert!(status.disrupted_pods.unwrap_or_default().is_empty());
    assert!(pods.get_opt(&victims[0]).await.unwrap().is_some());

    // Eight evictions of eight different pods at once: exactly one goes.
    let connector = cluster.connector(Who::Admin);
    let handles: Vec<_> = victims
        .iter()
        .map(|pod| {
            let connector = connector.clone();
            let request = eviction_request("default", pod);
            std::thread::spawn(move || connector.send(request.as_bytes()))
        })
        .collect();
    let responses: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let evicted: Vec<usize> = (0..8)
        .filter(|i| responses[*i].starts_with("HTTP/1.1 201"))
        .collect();
    let refused = responses
        .iter()
        .filter(|r| r.starts_with("HTTP/1.1 429"))
        .count();
    assert_eq!(evicted.len(), 1, "{responses:#?}");
    assert_eq!(refused, 7, "{responses:#?}");
    let refusal = responses
        .iter()
        .find(|r| r.starts_with("HTTP/1.1 429"))
        .unwrap();
    assert!(
        refusal.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{refusal}"
    );
    assert!(
        refusal.contains("The disruption budget web needs 7 healthy pods and has"),
        "{refusal}"
    );
    let gone = &victims[evicted[0]];
    within("the evicted pod to go", DEADLINE, || async {
        pods.get_opt(gone).await.unwrap().is_none().then_some(())
    })
    .await;

    // The ReplicaSet replaces it; once the replacement is ready and the controller has
    // updated the budget, another eviction is allowed.
    within("the replacement and the budget", DEADLINE, allows_one).await;
    let now = live_pods(&pods.list(&Default::default()).await.unwrap().items);
    let next = now.iter().find(|p| *p != gone).unwrap();
    let (code, body) = evict(&cluster, "default", next, "");
    assert_eq!(code, 201, "{body}");
}

/// A pod made Running (and Ready or not) by writing its status, without a kubelet.
async fn running_pod(cluster: &Cluster, pods: &Api<Pod>, name: &str, app: &str, ready: bool) {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    });
    cluster.kubectl_stdin(&["apply", "-f", "-"], &pod.to_string());
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }},
    ]}});
    pods.patch_status(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&status),
    )
    .await
    .unwrap();
}

/// Sets a budget's status by hand (the disruption controller is off in this test).
async fn budget_status(budgets: &Api<PodDisruptionBudget>, name: &str, status: Value) {
    budgets
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&json!({"status": status})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_follow_the_budget_rules() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start_with(dir, &["--controllers=*,-disruption-controller"]);
    let client = admin_client(&cluster).await;
    cluster.wait_for_default_account("default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    for (name, app, ready) in [
        ("a1", "a", true),
        ("a2", "a", false),
        ("b1", "b", true),
        ("c1", "c", true),
    ] {
        running_pod(&cluster, &pods, name, app, ready).await;
    }
    let budget = |name: &str, app: &str, extra: Value| {
        let mut spec = json!({"minAvailable": 1, "selector": {"matchLabels": {"app": app}}});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name}, "spec": spec})
        .to_string()
    };
    cluster.kubectl_stdin(&["apply", "-f", "-"], &budget("a", "a", json!({})));
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &budget(
            "b",
            "b",
            json!({"unhealthyPodEvictionPolicy": "AlwaysAllow"}),
        ),
    );
    cluster.kubectl_stdin(&["apply", "-f", "-"], &budget("c", "c", json!({})));
    cluster.kubectl_stdin(&["apply", "-f", "-"], &budget("c-too", "c", json!({})));

    // Not processed yet (observedGeneration behind): 429, nothing deleted.
    let (code, body) = evict(&cluster, "default", "a1", "");
    assert_eq!(code, 429, "{body}");
    assert_eq!(
        body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget a is still being processed by the server.",
        "{body}"
    );
    assert_eq!(body["details"]["causes"][0]["reason"], "DisruptionBudget");

    // Processed, with no disruption allowed: the ready pod stays; the unready one goes
    // (IfHealthyBudget: the budget has its desired healthy pods).
    budget_status(
        &budgets,
        "a",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1,
               "desiredHealthy": 1, "expectedPods": 2}),
    )
    .await;
    let (code, body) = evict(&cluster, "default", "a1", "");
    assert_eq!(code, 429, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "The disruption budget a needs 1 healthy pods and has 1 currently"
    );
    let (code, body) = evict(&cluster, "default", "a2", "");
    assert_eq!(code, 201, "{body}");
    assert!(pods.get_opt("a2").await.unwrap().is_none());

    // Allowed: the allowance goes down and the pod is recorded, then it is deleted.
    budget_status(
        &budgets,
        "a",
        json!({"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 2,
               "desiredHealthy": 1, "expectedPods": 2}),
    )
    .await;
    let (code, body) = evict(&cluster, "default", "a1", "");
    assert_eq!(code, 201, "{body}");
    let status = budgets.get("a").await.unwrap().status.unwrap();
    assert_eq!(status.disruptions_allowed, 0);
    assert!(
        status.disrupted_pods.unwrap_or_default().contains_key("a1"),
        "the eviction records the pod"
    );
    let condition = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "DisruptionAllowed")
        .unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "InsufficientPods")
    );
    assert!(pods.get_opt("a1").await.unwrap().is_none());

    // AlwaysAllow: an unready pod goes even with no disruption allowed.
    budget_status(
        &budgets,
        "b",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 0,
               "desiredHealthy": 1, "expectedPods": 1}),
    )
    .await;
    pods.patch_status(
        "b1",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        ),
    )
    .await
    .unwrap();
    let (code, body) = evict(&cluster, "default", "b1", "");
    assert_eq!(code, 201, "{body}");

    // Two budgets for one pod.
    let (code, body) = evict(&cluster, "default", "c1", "");
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    assert!(pods.get_opt("c1").await.unwrap().is_some());

    // A terminal pod goes without a budget check.
    pods.patch_status(
        "c1",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    let (code, body) = evict(&cluster, "default", "c1", "");
    assert_eq!(code, 201, "{body}");
}
