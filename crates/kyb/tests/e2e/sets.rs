//! StatefulSets and DaemonSets end to end: a `kyb server` with its controller manager and
//! scheduler, the fake kubelet playing the nodes, kubectl and kube-rs as clients.

use crate::cluster::Cluster;
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::wait_for as until;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod, ServiceAccount};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

/// A cluster with nodes played by the fake kubelet and the `default` service account
/// (which admission wants before pods are created).
async fn start(nodes: &[&str]) -> (Cluster, kube::Client, FakeKubelet) {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client.clone(), nodes).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    match accounts.create(&PostParams::default(), &account).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("creating the default service account: {e}"),
    }
    (cluster, client, kubelet)
}

async fn pod_names(pods: &Api<Pod>, selector: &str) -> Vec<String> {
    let mut names: Vec<String> = pods
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    names
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label(pod: &Pod, key: &str) -> String {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .cloned()
        .unwrap_or_default()
}

async fn events_of(client: &kube::Client, name: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| {
            format!(
                "{} {}",
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            )
        })
        .collect()
}

fn statefulset(name: &str, replicas: i32, extra: serde_json::Value) -> StatefulSet {
    let mut value = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": "nginx",
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "nginx", "image": "nginx:1.27"}]},
            },
        },
    });
    merge(&mut value, extra);
    serde_json::from_value(value).unwrap()
}

fn merge(target: &mut serde_json::Value, patch: serde_json::Value) {
    match (target, patch) {
        (serde_json::Value::Object(t), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_starts_in_order_and_keeps_claims_after_scale_down() {
    let (cluster, client, kubelet) = start(&["node-1", "node-2"]).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let set = statefulset(
        "web",
        3,
        json!({"spec": {
            "template": {"metadata": {"annotations": {"kyb.test/ready": "false"}}},
            "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}],
        }}),
    );
    sets.create(&PostParams::default(), &set).await.unwrap();

    // web-0 first, with its claim; it runs but is not Ready, so web-1 must wait.
    let web0 = until("web-0 running", || async {
        let pod = pods.get_opt("web-0").await.unwrap()?;
        let phase = pod.status.as_ref()?.phase.clone()?;
        (phase == "Running").then_some(pod)
    })
    .await;
    assert!(claims.get_opt("www-web-0").await.unwrap().is_some());
    assert_eq!(label(&web0, "statefulset.kubernetes.io/pod-name"), "web-0");
    assert_eq!(label(&web0, "apps.kubernetes.io/pod-index"), "0");
    assert!(label(&web0, "controller-revision-hash").starts_with("web-"));
    let spec = web0.spec.clone().unwrap();
    assert_eq!(spec.hostname.as_deref(), Some("web-0"));
    assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
    let volume = spec
        .volumes
        .unwrap()
        .into_iter()
        .find(|v| v.name == "www")
        .unwrap();
    assert_eq!(
        volume.persistent_volume_claim.unwrap().claim_name,
        "www-web-0"
    );
    // The controller has seen web-0 running (status says so) and still made no web-1.
    until("status of one unready replica", || async {
        let status = sets.get("web").await.unwrap().status?;
        (status.replicas == 1 && status.ready_replicas.unwrap_or(0) == 0).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(pod_names(&pods, "app=web").await, vec!["web-0"]);

    kubelet.set_ready("default", "web-0", true);
    until("web-1 created", || async {
        pods.get_opt("web-1").await.unwrap()
    })
    .await;
    assert!(pods.get_opt("web-2").await.unwrap().is_none());
    kubelet.set_ready("default", "web-1", true);
    kubelet.set_ready("default", "web-2", true);
    until("three ready replicas", || async {
        let status = sets.get("web").await.unwrap().status?;
        (status.ready_replicas == Some(3) && status.available_replicas == Some(3)).then_some(())
    })
    .await;
    let status = sets.get("web").await.unwrap().status.unwrap();
    assert_eq!(status.current_revision, status.update_revision);
    assert_eq!(status.current_replicas, Some(3));
    assert_eq!(status.updated_replicas, Some(3));
    let events = events_of(&client, "web").await;
    for wanted in [
        "SuccessfulCreate create Pod web-0 in StatefulSet web successful",
        "SuccessfulCreate create Claim www-web-0 Pod web-0 in StatefulSet web success",
    ] {
        assert!(
            events.iter().any(|e| e == wanted),
            "{wanted} not in {events:?}"
        );
    }
    cluster.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=30s"]);

    // Scale down: highest ordinal first; the claims stay.
    cluster.kubectl_ok(&["scale", "statefulset", "web", "--replicas=1"]);
    until("scaled down to web-0", || async {
        (pod_names(&pods, "app=web").await == vec!["web-0"]).then_some(())
    })
    .await;
    for claim in ["www-web-0", "www-web-1", "www-web-2"] {
        assert!(
            claims.get_opt(claim).await.unwrap().is_some(),
            "{claim} gone"
        );
    }
    let events = events_of(&client, "web").await;
    assert!(
        events
            .iter()
            .any(|e| e == "SuccessfulDelete delete Pod web-2 in StatefulSet web successful"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_parallel_rolling_update_with_partition_and_undo() {
    let (cluster, client, _kubelet) = start(&["node-1", "node-2"]).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // Parallel: every pod at once, even while none is Ready.
    let set = statefulset(
        "db",
        3,
        json!({"spec": {
            "podManagementPolicy": "Parallel",
            "template": {"metadata": {"annotations": {"kyb.test/ready": "false"}}},
        }}),
    );
    sets.create(&PostParams::default(), &set).await.unwrap();
    until("three pods in parallel", || async {
        (pod_names(&pods, "app=db").await == vec!["db-0", "db-1", "db-2"]).then_some(())
    })
    .await;
    // Now make them Ready (a template change would be a rollout: use the kubelet override).
    let patch =
        json!({"spec": {"template": {"metadata": {"annotations": {"kyb.test/ready": "true"}}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    until("rolled to ready pods", || async {
        let status = sets.get("db").await.unwrap().status?;
        (status.ready_replicas == Some(3)
            && status.updated_replicas == Some(3)
            && status.current_revision == status.update_revision)
            .then_some(())
    })
    .await;
    let first = sets
        .get("db")
        .await
        .unwrap()
        .status
        .unwrap()
        .update_revision
        .unwrap();

    // Partition 2: only db-2 moves to the new template.
    let patch = json!({"spec": {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
        "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.28"}]}},
    }});
    sets.patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let update = until("db-2 updated", || async {
        let status = sets.get("db").await.unwrap().status?;
        let update = status.update_revision.clone()?;
        let pod = pods.get_opt("db-2").await.unwrap()?;
        (update != first
            && label(&pod, "controller-revision-hash") == update
            && is_ready(&pod)
            && status.updated_replicas == Some(1)
            && status.ready_replicas == Some(3))
        .then_some(update)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    for name in ["db-0", "db-1"] {
        let pod = pods.get(name).await.unwrap();
        assert_eq!(label(&pod, "controller-revision-hash"), first, "{name}");
        assert_eq!(
            pod.spec.unwrap().containers[0].image.as_deref(),
            Some("nginx:1.27")
        );
    }
    let status = sets.get("db").await.unwrap().status.unwrap();
    assert_eq!(status.current_revision.as_deref(), Some(first.as_str()));
    assert_eq!(status.current_replicas, Some(2));

    // Partition 0: the rest follows, and the update revision becomes current.
    let patch = json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    until("all updated", || async {
        let status = sets.get("db").await.unwrap().status?;
        (status.updated_replicas == Some(3)
            && status.ready_replicas == Some(3)
            && status.current_revision.as_deref() == Some(update.as_str()))
        .then_some(())
    })
    .await;
    for name in ["db-0", "db-1", "db-2"] {
        let pod = pods.get(name).await.unwrap();
        assert_eq!(
            pod.spec.unwrap().containers[0].image.as_deref(),
            Some("nginx:1.28")
        );
    }

    // History: three revisions (not ready, ready, 1.28); undo goes back to 1.27.
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    let listed = revisions
        .list(&ListParams::default().labels("app=db"))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 3, "{listed:?}");
    let newest = listed.iter().max_by_key(|r| r.revision).unwrap();
    assert_eq!(newest.metadata.name.as_deref(), Some(update.as_str()));
    assert_eq!(newest.revision, 3);
    let history = cluster.kubectl_ok(&["rollout", "history", "statefulset/db"]);
    assert!(history.contains('3'), "{history}");
    cluster.kubectl_ok(&["rollout", "undo", "statefulset/db"]);
    until("undone", || async {
        let set = sets.get("db").await.unwrap();
        let image = set.spec?.template.spec?.containers[0].image.clone()?;
        let status = set.status?;
        (image == "nginx:1.27"
            && status.updated_replicas == Some(3)
            && status.ready_replicas == Some(3)
            && status.update_revision.as_deref() == Some(first.as_str()))
        .then_some(())
    })
    .await;
    // The old revision was re-used and bumped, not copied.
    let listed = revisions
        .list(&ListParams::default().labels("app=db"))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 3);
    let bumped = listed
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(first.as_str()))
        .unwrap();
    assert_eq!(bumped.revision, 4);
}

fn daemonset(name: &str, extra: serde_json::Value) -> DaemonSet {
    let mut value = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "agent", "image": "agent:1"}]},
            },
        },
    });
    merge(&mut value, extra);
    serde_json::from_value(value).unwrap()
}

/// The nodes the set's live pods are bound to, sorted.
async fn bound_nodes(pods: &Api<Pod>, selector: &str) -> Vec<String> {
    let mut nodes: Vec<String> = pods
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.spec?.node_name)
        .collect();
    nodes.sort();
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemonset_runs_on_every_node_including_new_ones() {
    let (cluster, client, mut kubelet) = start(&["node-1", "node-2", "node-3"]).await;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    sets.create(&PostParams::default(), &daemonset("agent", json!({})))
        .await
        .unwrap();
    until("a pod on each of 3 nodes", || async {
        (bound_nodes(&pods, "app=agent").await == vec!["node-1", "node-2", "node-3"]).then_some(())
    })
    .await;
    let pod = pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .unwrap()
        .items
        .remove(0);
    assert!(pod.metadata.name.as_deref().unwrap().starts_with("agent-"));
    assert!(!label(&pod, "controller-revision-hash").is_empty());
    assert_eq!(label(&pod, "pod-template-generation"), "1");
    let spec = pod.spec.unwrap();
    let term = &spec
        .affinity
        .unwrap()
        .node_affinity
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .unwrap()
        .node_selector_terms[0];
    let field = &term.match_fields.as_ref().unwrap()[0];
    assert_eq!(field.key, "metadata.name");
    assert_eq!(
        field.values.as_ref().unwrap(),
        &vec![spec.node_name.clone().unwrap()]
    );
    let tolerations: Vec<String> = spec
        .tolerations
        .unwrap()
        .into_iter()
        .filter_map(|t| t.key)
        .collect();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        assert!(
            tolerations.iter().any(|t| t == key),
            "{key} in {tolerations:?}"
        );
    }
    cluster.kubectl_ok(&["rollout", "status", "daemonset/agent", "--timeout=30s"]);

    kubelet.add_node("node-4").await;
    until("a pod on the new node", || async {
        (bound_nodes(&pods, "app=agent").await.len() == 4).then_some(())
    })
    .await;
    let status = until("status of 4", || async {
        let status = sets.get("agent").await.unwrap().status?;
        (status.number_ready == 4 && status.number_available == Some(4)).then_some(status)
    })
    .await;
    assert_eq!(status.desired_number_scheduled, 4);
    assert_eq!(status.current_number_scheduled, 4);
    assert_eq!(status.updated_number_scheduled, Some(4));
    assert_eq!(status.number_misscheduled, 0);
    assert_eq!(status.number_unavailable, Some(0));
    assert_eq!(status.observed_generation, Some(1));
    let events = events_of(&client, "agent").await;
    assert!(
        events
            .iter()
            .filter(|e| e.starts_with("SuccessfulCreate Created pod: agent-"))
            .count()
            >= 1,
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemonset_node_selector_excludes_nodes() {
    let (cluster, client, _kubelet) = start(&["node-1", "node-2", "node-3"]).await;
    cluster.kubectl_ok(&["label", "node", "node-1", "node-2", "disk=ssd"]);
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let set = daemonset(
        "ssd",
        json!({"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}}),
    );
    sets.create(&PostParams::default(), &set).await.unwrap();
    until("pods on the ssd nodes", || async {
        (bound_nodes(&pods, "app=ssd").await == vec!["node-1", "node-2"]).then_some(())
    })
    .await;
    let status = until("status", || async {
        let status = sets.get("ssd").await.unwrap().status?;
        (status.number_ready == 2).then_some(status)
    })
    .await;
    assert_eq!(status.desired_number_scheduled, 2);
    // A node that gains the label gets a pod; one that loses it loses its pod.
    cluster.kubectl_ok(&["label", "node", "node-3", "disk=ssd"]);
    cluster.kubectl_ok(&["label", "node", "node-1", "disk-"]);
    until("pods follow the labels", || async {
        (bound_nodes(&pods, "app=ssd").await == vec!["node-2", "node-3"]).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemonset_rolling_update_respects_max_unavailable() {
    let (cluster, client, _kubelet) = start(&["node-1", "node-2", "node-3", "node-4"]).await;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let set = daemonset(
        "roll",
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1}}}}),
    );
    sets.create(&PostParams::default(), &set).await.unwrap();
    until("four available", || async {
        let status = sets.get("roll").await.unwrap().status?;
        (status.number_available == Some(4)).then_some(())
    })
    .await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}});
    sets.patch("roll", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // Watch the rollout: never fewer than 3 Ready pods, until all 4 run agent:2.
    let deadline = Instant::now() + WAIT;
    let mut lowest = usize::MAX;
    loop {
        let listed = pods
            .list(&ListParams::default().labels("app=roll"))
            .await
            .unwrap()
            .items;
        let live: Vec<&Pod> = listed
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        let ready = live.iter().filter(|p| is_ready(p)).count();
        lowest = lowest.min(ready);
        assert!(ready >= 3, "{ready} ready pods during the rollout");
        let updated = live
            .iter()
            .filter(|p| {
                is_ready(p)
                    && p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("agent:2")
            })
            .count();
        if updated == 4 && live.len() == 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rollout stuck: {updated} updated"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = until("rolled status", || async {
        let status = sets.get("roll").await.unwrap().status?;
        (status.updated_number_scheduled == Some(4) && status.number_available == Some(4))
            .then_some(status)
    })
    .await;
    assert_eq!(status.observed_generation, Some(2));
    cluster.kubectl_ok(&["rollout", "status", "daemonset/roll", "--timeout=30s"]);
    let history = cluster.kubectl_ok(&["rollout", "history", "daemonset/roll"]);
    assert!(history.contains('2'), "{history}");
    cluster.kubectl_ok(&["rollout", "undo", "daemonset/roll"]);
    until("undone to agent:1", || async {
        let listed = pods
            .list(&ListParams::default().labels("app=roll"))
            .await
            .unwrap()
            .items;
        let back = listed
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("agent:1"))
            .count();
        (back == 4 && listed.len() == 4).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_claim_retention_policy_sets_owners() {
    let (cluster, client, _kubelet) = start(&["node-1"]).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let set = statefulset(
        "kv",
        2,
        json!({"spec": {
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}],
        }}),
    );
    let created = sets.create(&PostParams::default(), &set).await.unwrap();
    let set_uid = created.metadata.uid.unwrap();
    until("two ready replicas", || async {
        let status = sets.get("kv").await.unwrap().status?;
        (status.ready_replicas == Some(2)).then_some(())
    })
    .await;
    // whenDeleted: Delete — the set owns its claims (not as their controller).
    for name in ["data-kv-0", "data-kv-1"] {
        let claim = claims.get(name).await.unwrap();
        let owner = claim.metadata.owner_references.unwrap();
        assert!(
            owner
                .iter()
                .any(|r| r.uid == set_uid && r.kind == "StatefulSet" && r.controller != Some(true)),
            "{name}: {owner:?}"
        );
    }
    // whenScaled: Delete — a condemned pod's claim is handed to the pod before it goes.
    let kv1_uid = pods.get("kv-1").await.unwrap().metadata.uid.unwrap();
    cluster.kubectl_ok(&["scale", "statefulset", "kv", "--replicas=1"]);
    until("kv-1 gone", || async {
        (pod_names(&pods, "app=kv").await == vec!["kv-0"]).then_some(())
    })
    .await;
    // Owned by the pod alone, the claim goes with it (the garbage collector deletes it once
    // the pod is gone); until then it names the pod and not the set.
    until("data-kv-1 collected", || async {
        match claims.get_opt("data-kv-1").await.unwrap() {
            None => Some(()),
            Some(claim) => {
                let owners = claim.metadata.owner_references.unwrap_or_default();
                assert!(
                    owners.iter().any(|r| r.kind == "Pod" && r.uid == kv1_uid),
                    "{owners:?}"
                );
                assert!(!owners.iter().any(|r| r.uid == set_uid), "{owners:?}");
                None
            }
        }
    })
    .await;
    assert!(claims.get_opt("data-kv-0").await.unwrap().is_some(), "kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemonset_rolling_update_with_max_surge_keeps_every_node_served() {
    let (_cluster, client, _kubelet) = start(&["node-1", "node-2", "node-3"]).await;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let set = daemonset(
        "surge",
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}}),
    );
    sets.create(&PostParams::default(), &set).await.unwrap();
    until("three available", || async {
        let status = sets.get("surge").await.unwrap().status?;
        (status.number_available == Some(3)).then_some(())
    })
    .await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}});
    sets.patch("surge", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    // Every node keeps a Ready pod throughout, and at most one node runs two.
    let deadline = Instant::now() + WAIT;
    loop {
        let listed = pods
            .list(&ListParams::default().labels("app=surge"))
            .await
            .unwrap()
            .items;
        let live: Vec<&Pod> = listed
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        assert!(
            live.len() <= 4,
            "{} pods: more than one surging",
            live.len()
        );
        let mut served: Vec<String> = live
            .iter()
            .filter(|p| is_ready(p))
            .filter_map(|p| p.spec.as_ref()?.node_name.clone())
            .collect();
        served.sort();
        served.dedup();
        assert_eq!(served.len(), 3, "a node without a Ready pod: {served:?}");
        let updated = live
            .iter()
            .filter(|p| {
                is_ready(p)
                    && p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("agent:2")
            })
            .count();
        if updated == 3 && live.len() == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rollout stuck: {updated} updated"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    until("rolled status", || async {
        let status = sets.get("surge").await.unwrap().status?;
        (status.updated_number_scheduled == Some(3) && status.number_available == Some(3))
            .then_some(())
    })
    .await;
}
