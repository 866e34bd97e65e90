//! The workload controllers of `kyb server`'s controller manager, driven by kubectl with a
//! fake kubelet playing the nodes: ReplicaSets (and ReplicationControllers) that come up,
//! heal, scale down the least useful pods first and adopt orphans; Deployments that roll
//! out within maxSurge/maxUnavailable, recreate, roll back, pause, restart, and converge
//! after the controller manager restarts mid-rollout.

use crate::cluster::{Cluster, DEADLINE};
use crate::kubelet::{FakeKubelet, admin_client};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Polls `check` until it gives a value, failing after the deadline.
fn wait<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {}",
            DUMP.with(|d| d.borrow().as_ref().map(|f| f()).unwrap_or_default())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

thread_local! {
    /// What the cluster looks like, for failure messages.
    static DUMP: std::cell::RefCell<Option<Box<dyn Fn() -> String>>> = const { std::cell::RefCell::new(None) };
}

fn dump_on_failure(cluster: &Cluster) {
    let kubeconfig = cluster.kubeconfig();
    DUMP.with(|d| {
        *d.borrow_mut() = Some(Box::new(move || {
            let out = std::process::Command::new("kubectl")
                .env("KUBECONFIG", &kubeconfig)
                .args(["get", "nodes,deploy,rs,rc,pods,events", "-o", "wide"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
        }))
    });
}

fn get(cluster: &Cluster, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&cluster.kubectl_ok(&all)).unwrap()
}

fn apply(cluster: &Cluster, object: &Value) {
    cluster.kubectl_stdin(&["apply", "-f", "-"], &object.to_string());
}

/// Pods with `app=<app>` not being deleted.
fn live_pods(cluster: &Cluster, app: &str) -> Vec<Value> {
    let list = get(cluster, &["pods", "-l", &format!("app={app}")]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .cloned()
        .collect()
}

fn name(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap().to_string()
}

/// Finishes pods' graceful deletion as a kubelet would (the fake kubelet leaves them
/// terminating).
fn finish_deletions(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let pods: Api<Pod> = Api::all(client.clone());
        let mut stream = watcher::watcher(pods, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(Ok(pod)) = stream.next().await {
            if pod.metadata.deletion_timestamp.is_some() {
                let api: Api<Pod> = Api::namespaced(
                    client.clone(),
                    pod.metadata.namespace.as_deref().unwrap_or("default"),
                );
                let _ = api
                    .delete(
                        pod.metadata.name.as_deref().unwrap_or_default(),
                        &DeleteParams::default().grace_period(0),
                    )
                    .await;
            }
        }
    })
}

/// The `default` service account pods run as (the service-account controller's job;
/// made here so these tests need only the workload controllers).
fn default_service_account(cluster: &Cluster) {
    let _ = cluster.kubectl(&["create", "serviceaccount", "default"]);
}

async fn cluster_with_nodes() -> (Cluster, FakeKubelet, tokio::task::JoinHandle<()>) {
    let cluster = Cluster::start();
    default_service_account(&cluster);
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    let finisher = finish_deletions(client);
    dump_on_failure(&cluster);
    (cluster, kubelet, finisher)
}

fn replica_set(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    })
}

fn status_counts(cluster: &Cluster, kind: &str, name: &str) -> (i64, i64, i64, i64) {
    let o = get(cluster, &[kind, name]);
    let s = &o["status"];
    let n = |k: &str| s[k].as_i64().unwrap_or(0);
    (
        n("replicas"),
        n("fullyLabeledReplicas"),
        n("readyReplicas"),
        n("availableReplicas"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_set_comes_up_heals_and_records_events() {
    let (cluster, _kubelet, _finisher) = cluster_with_nodes().await;
    apply(&cluster, &replica_set("web", 3));
    wait("3 ready, available replicas", || {
        (status_counts(&cluster, "rs", "web") == (3, 3, 3, 3)).then_some(())
    });
    let pods = live_pods(&cluster, "web");
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert!(name(pod).starts_with("web-"));
        assert!(pod["spec"]["nodeName"].is_string(), "bound: {pod}");
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicaSet");
        assert_eq!(owner["name"], "web");
        assert_eq!(owner["controller"], true);
    }
    let observed = get(&cluster, &["rs", "web"]);
    assert_eq!(
        observed["status"]["observedGeneration"],
        observed["metadata"]["generation"]
    );

    // Self-healing: a deleted pod is replaced.
    let victim = name(&pods[0]);
    cluster.kubectl_ok(&["delete", "pod", &victim, "--wait=false"]);
    wait("a replacement pod", || {
        let now = live_pods(&cluster, "web");
        (now.len() == 3 && now.iter().all(|p| name(p) != victim)).then_some(())
    });
    wait("ready again", || {
        (status_counts(&cluster, "rs", "web") == (3, 3, 3, 3)).then_some(())
    });

    let described = cluster.kubectl_ok(&["describe", "rs", "web"]);
    assert!(described.contains("SuccessfulCreate"), "{described}");
    assert!(
        described.contains(&format!("Created pod: {}", name(&pods[1]))),
        "{described}"
    );
    assert!(described.contains("replicaset-controller"), "{described}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_down_deletes_not_ready_pods_first() {
    let (cluster, kubelet, _finisher) = cluster_with_nodes().await;
    apply(&cluster, &replica_set("api", 3));
    wait("3 ready", || {
        (status_counts(&cluster, "rs", "api").2 == 3).then_some(())
    });
    let pods = live_pods(&cluster, "api");
    let sick = name(&pods[1]);
    kubelet.set_ready("default", &sick, false);
    wait("2 ready", || {
        (status_counts(&cluster, "rs", "api") == (3, 3, 2, 2)).then_some(())
    });
    cluster.kubectl_ok(&["scale", "rs", "api", "--replicas=2"]);
    wait("the not-ready pod deleted", || {
        let now = live_pods(&cluster, "api");
        (now.len() == 2).then_some(now)
    })
    .iter()
    .for_each(|p| assert_ne!(name(p), sick, "the ready pods stay"));
    wait("status of 2", || {
        (status_counts(&cluster, "rs", "api") == (2, 2, 2, 2)).then_some(())
    });
    let described = cluster.kubectl_ok(&["describe", "rs", "api"]);
    assert!(
        described.contains(&format!("Deleted pod: {sick}")),
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_matching_the_selector_are_adopted_and_rcs_work_too() {
    let (cluster, _kubelet, _finisher) = cluster_with_nodes().await;
    let orphan = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"app": "cache"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    });
    apply(&cluster, &orphan);
    apply(&cluster, &replica_set("cache", 2));
    let stray = wait("the orphan adopted", || {
        let p = get(&cluster, &["pod", "stray"]);
        (p["metadata"]["ownerReferences"][0]["name"] == "cache").then_some(p)
    });
    assert_eq!(stray["metadata"]["ownerReferences"][0]["controller"], true);
    wait("2 pods, one of them the adopted one", || {
        (status_counts(&cluster, "rs", "cache").0 == 2).then_some(())
    });
    assert_eq!(
        live_pods(&cluster, "cache").len(),
        2,
        "only one pod was created"
    );

    // A ReplicationController (map selector, core/v1) works the same way.
    let rc = json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicas": 2,
            "selector": {"app": "legacy"},
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    });
    apply(&cluster, &rc);
    wait("the RC's pods ready", || {
        (status_counts(&cluster, "rc", "legacy") == (2, 2, 2, 2)).then_some(())
    });
    let pods = live_pods(&cluster, "legacy");
    assert_eq!(
        pods[0]["metadata"]["ownerReferences"][0]["kind"],
        "ReplicationController"
    );
}

fn deployment(name: &str, replicas: i32, image: &str, strategy: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    })
}

fn rollout_status(cluster: &Cluster, name: &str) -> String {
    cluster.kubectl_ok(&[
        "rollout",
        "status",
        &format!("deployment/{name}"),
        "--timeout=60s",
    ])
}

fn image(cluster: &Cluster, name: &str) -> String {
    get(cluster, &["deployment", name])["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The deployment's ReplicaSets: (name, revision, image, spec replicas).
fn replica_sets(cluster: &Cluster, app: &str) -> Vec<(String, String, String, i64)> {
    let list = get(cluster, &["rs", "-l", &format!("app={app}")]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rs| {
            (
                name(rs),
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                rs["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                rs["spec"]["replicas"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Watches the pods of `app`: the most live pods and the fewest ready live pods seen.
fn watch_extremes(
    client: kube::Client,
    app: &str,
) -> (Arc<Mutex<(usize, usize)>>, tokio::task::JoinHandle<()>) {
    let extremes = Arc::new(Mutex::new((0usize, usize::MAX)));
    let seen = extremes.clone();
    let selector = format!("app={app}");
    let task = tokio::spawn(async move {
        let pods: Api<Pod> = Api::namespaced(client, "default");
        let mut stream = watcher::watcher(pods, watcher::Config::default().labels(&selector))
            .default_backoff()
            .boxed();
        let mut state: HashMap<String, (bool, bool)> = HashMap::new();
        while let Some(Ok(event)) = stream.next().await {
            match event {
                watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                    let live = p.metadata.deletion_timestamp.is_none()
                        && !matches!(
                            p.status.as_ref().and_then(|s| s.phase.as_deref()),
                            Some("Succeeded" | "Failed")
                        );
                    let ready = p
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| {
                            c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                        });
                    state.insert(
                        p.metadata.name.clone().unwrap_or_default(),
                        (live, live && ready),
                    );
                }
                watcher::Event::Delete(p) => {
                    state.remove(&p.metadata.name.clone().unwrap_or_default());
                }
                _ => continue,
            }
            let live = state.values().filter(|s| s.0).count();
            let ready = state.values().filter(|s| s.1).count();
            let mut e = seen.lock().unwrap();
            e.0 = e.0.max(live);
            e.1 = e.1.min(ready);
        }
    });
    (extremes, task)
}

/// Watches the ReplicaSets of `app`: the largest sum of their `spec.replicas` seen (what
/// the deployment controller bounds by replicas + maxSurge; pods follow their ReplicaSet's
/// size a moment later).
fn watch_most_replicas(
    client: kube::Client,
    app: &str,
) -> (Arc<Mutex<i32>>, tokio::task::JoinHandle<()>) {
    let most = Arc::new(Mutex::new(0));
    let seen = most.clone();
    let selector = format!("app={app}");
    let task = tokio::spawn(async move {
        let rss: Api<k8s_openapi::api::apps::v1::ReplicaSet> = Api::namespaced(client, "default");
        let mut stream = watcher::watcher(rss, watcher::Config::default().labels(&selector))
            .default_backoff()
            .boxed();
        let mut sizes: HashMap<String, i32> = HashMap::new();
        while let Some(Ok(event)) = stream.next().await {
            match event {
                watcher::Event::Apply(rs) | watcher::Event::InitApply(rs) => {
                    let size = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
                    sizes.insert(rs.metadata.name.unwrap_or_default(), size);
                }
                watcher::Event::Delete(rs) => {
                    sizes.remove(&rs.metadata.name.unwrap_or_default());
                }
                _ => continue,
            }
            let total = sizes.values().sum::<i32>();
            let mut most = seen.lock().unwrap();
            *most = (*most).max(total);
        }
    });
    (most, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_stays_within_surge_and_unavailability() {
    let (cluster, _kubelet, _finisher) = cluster_with_nodes().await;
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}});
    apply(&cluster, &deployment("web", 4, "web:v1", strategy));
    let out = rollout_status(&cluster, "web");
    assert!(out.contains("successfully rolled out"), "{out}");
    let client = admin_client(&cluster).await;
    let (extremes, watch) = watch_extremes(client.clone(), "web");
    let (most_replicas, rs_watch) = watch_most_replicas(client, "web");
    wait("the watch to see the 4 pods", || {
        (extremes.lock().unwrap().0 == 4).then_some(())
    });
    wait("the watch to see the ReplicaSet", || {
        (*most_replicas.lock().unwrap() == 4).then_some(())
    });
    *extremes.lock().unwrap() = (0, usize::MAX);
    cluster.kubectl_ok(&["set", "image", "deployment/web", "c=web:v2"]);
    let out = rollout_status(&cluster, "web");
    assert!(out.contains("successfully rolled out"), "{out}");
    wait("only v2 pods", || {
        let pods = live_pods(&cluster, "web");
        (pods.len() == 4
            && pods
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "web:v2"))
        .then_some(())
    });
    watch.abort();
    rs_watch.abort();
    let (_, fewest_ready) = *extremes.lock().unwrap();
    let most = *most_replicas.lock().unwrap();
    assert!(most <= 5, "at most replicas + maxSurge pods: saw {most}");
    assert!(most >= 5, "the rollout did surge: saw {most}");
    assert!(
        fewest_ready >= 3,
        "at most maxUnavailable unavailable: {fewest_ready} ready"
    );

    let d = get(&cluster, &["deployment", "web"]);
    let s = &d["status"];
    assert_eq!(
        (
            s["replicas"].as_i64(),
            s["updatedReplicas"].as_i64(),
            s["availableReplicas"].as_i64()
        ),
        (Some(4), Some(4), Some(4))
    );
    assert_eq!(s["observedGeneration"], d["metadata"]["generation"]);
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let conditions = s["conditions"].as_array().unwrap();
    let reason = |t: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == t)
            .map(|c| c["reason"].clone())
    };
    assert_eq!(reason("Available"), Some(json!("MinimumReplicasAvailable")));
    assert_eq!(reason("Progressing"), Some(json!("NewReplicaSetAvailable")));
    let rss = replica_sets(&cluster, "web");
    assert_eq!(rss.len(), 2);
    let new = rss.iter().find(|r| r.2 == "web:v2").unwrap();
    assert_eq!((new.1.as_str(), new.3), ("2", 4));
    let hash = get(&cluster, &["rs", &new.0])["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(new.0, format!("web-{hash}"));
    let events = cluster.kubectl_ok(&["describe", "deployment", "web"]);
    assert!(
        events.contains(&format!("Scaled up replica set {} from 0 to 1", new.0)),
        "{events}"
    );
    assert!(events.contains("Scaled down replica set"), "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_undo_pause_resume_and_restart() {
    let (cluster, _kubelet, _finisher) = cluster_with_nodes().await;
    apply(
        &cluster,
        &deployment("app", 2, "app:v1", json!({"type": "RollingUpdate"})),
    );
    rollout_status(&cluster, "app");
    cluster.kubectl_ok(&["set", "image", "deployment/app", "c=app:v2"]);
    rollout_status(&cluster, "app");
    let history = cluster.kubectl_ok(&["rollout", "history", "deployment/app"]);
    let revisions: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");

    // Undo: back to v1's ReplicaSet (no new one), now revision 3.
    cluster.kubectl_ok(&["rollout", "undo", "deployment/app"]);
    rollout_status(&cluster, "app");
    assert_eq!(image(&cluster, "app"), "app:v1");
    let rss = replica_sets(&cluster, "app");
    assert_eq!(rss.len(), 2, "{rss:?}");
    let v1 = rss.iter().find(|r| r.2 == "app:v1").unwrap();
    assert_eq!((v1.1.as_str(), v1.3), ("3", 2));
    let rs = get(&cluster, &["rs", &v1.0]);
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"],
        "1"
    );
    // --to-revision picks a specific one.
    cluster.kubectl_ok(&["rollout", "undo", "deployment/app", "--to-revision=2"]);
    rollout_status(&cluster, "app");
    assert_eq!(image(&cluster, "app"), "app:v2");
    assert_eq!(replica_sets(&cluster, "app").len(), 2);

    // Paused: a template change waits; scaling still happens.
    cluster.kubectl_ok(&["rollout", "pause", "deployment/app"]);
    cluster.kubectl_ok(&["set", "image", "deployment/app", "c=app:v3"]);
    cluster.kubectl_ok(&["scale", "deployment/app", "--replicas=3"]);
    wait("the paused deployment observed and scaled", || {
        let d = get(&cluster, &["deployment", "app"]);
        (d["status"]["observedGeneration"] == d["metadata"]["generation"]
            && d["status"]["replicas"] == 3)
            .then_some(d)
    });
    let d = get(&cluster, &["deployment", "app"]);
    let progressing = d["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Progressing")
        .unwrap()
        .clone();
    assert_eq!(progressing["reason"], "DeploymentPaused");
    assert!(
        replica_sets(&cluster, "app")
            .iter()
            .all(|r| r.2 != "app:v3"),
        "no rollout while paused"
    );
    cluster.kubectl_ok(&["rollout", "resume", "deployment/app"]);
    rollout_status(&cluster, "app");
    let rss = replica_sets(&cluster, "app");
    let v3 = rss.iter().find(|r| r.2 == "app:v3").unwrap();
    assert_eq!(v3.3, 3);

    // Restart: a new ReplicaSet with the same image.
    cluster.kubectl_ok(&["rollout", "restart", "deployment/app"]);
    rollout_status(&cluster, "app");
    let rss = replica_sets(&cluster, "app");
    assert_eq!(rss.len(), 4, "{rss:?}");
    let latest = rss
        .iter()
        .max_by_key(|r| r.1.parse::<u32>().unwrap())
        .unwrap();
    assert_eq!((latest.2.as_str(), latest.3), ("app:v3", 3));
    let rs = get(&cluster, &["rs", &latest.0]);
    assert!(
        rs["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .is_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_removes_old_pods_before_new_ones_start() {
    let (cluster, _kubelet, _finisher) = cluster_with_nodes().await;
    apply(
        &cluster,
        &deployment("db", 2, "db:v1", json!({"type": "Recreate"})),
    );
    rollout_status(&cluster, "db");
    let client = admin_client(&cluster).await;
    // Whether a v2 pod was ever seen while a v1 pod still existed.
    let overlap = Arc::new(Mutex::new(false));
    let seen = overlap.clone();
    let watch = tokio::spawn(async move {
        let pods: Api<Pod> = Api::namespaced(client, "default");
        let mut stream = watcher::watcher(pods, watcher::Config::default().labels("app=db"))
            .default_backoff()
            .boxed();
        let mut images: HashMap<String, String> = HashMap::new();
        while let Some(Ok(event)) = stream.next().await {
            match event {
                watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                    let image = p
                        .spec
                        .as_ref()
                        .and_then(|s| s.containers[0].image.clone())
                        .unwrap_or_default();
                    images.insert(p.metadata.name.unwrap_or_default(), image);
                }
                watcher::Event::Delete(p) => {
                    images.remove(&p.metadata.name.unwrap_or_default());
                }
                _ => continue,
            }
            if images.values().any(|i| i == "db:v1") && images.values().any(|i| i == "db:v2") {
                *seen.lock().unwrap() = true;
            }
        }
    });
    cluster.kubectl_ok(&["set", "image", "deployment/db", "c=db:v2"]);
    rollout_status(&cluster, "db");
    wait("only v2 pods", || {
        let pods = live_pods(&cluster, "db");
        (pods.len() == 2
            && pods
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "db:v2"))
        .then_some(())
    });
    watch.abort();
    assert!(
        !*overlap.lock().unwrap(),
        "a v2 pod existed alongside a v1 pod"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_controller_manager_finishes_the_rollout() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_in(dir);
    default_service_account(&cluster);
    dump_on_failure(&cluster);
    let client = admin_client(&cluster).await;
    let kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    let finisher = finish_deletions(client);
    apply(
        &cluster,
        &deployment("svc", 6, "svc:v1", json!({"type": "RollingUpdate"})),
    );
    rollout_status(&cluster, "svc");
    cluster.kubectl_ok(&["set", "image", "deployment/svc", "c=svc:v2"]);
    wait("the rollout under way", || {
        replica_sets(&cluster, "svc")
            .iter()
            .any(|r| r.2 == "svc:v2" && r.3 > 0)
            .then_some(())
    });
    drop(kubelet);
    finisher.abort();
    let dir = cluster.stop();
    let cluster = Cluster::start_in(dir);
    dump_on_failure(&cluster);
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["node-a", "node-b"]).await;
    let _finisher = finish_deletions(client);
    let out = rollout_status(&cluster, "svc");
    assert!(out.contains("successfully rolled out"), "{out}");
    let rss = replica_sets(&cluster, "svc");
    assert_eq!(rss.len(), 2, "{rss:?}");
    for (_, _, image, replicas) in rss {
        assert_eq!(replicas, if image == "svc:v2" { 6 } else { 0 });
    }
    wait("six v2 pods", || {
        let pods = live_pods(&cluster, "svc");
        (pods.len() == 6
            && pods
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "svc:v2"))
        .then_some(())
    });
}
