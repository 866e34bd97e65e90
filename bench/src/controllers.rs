//! Controller-manager benchmark: a release `kyb apiserver`, `kyb scheduler` and `kyb
//! controller-manager` as separate processes (so each one's memory and CPU are its own),
//! 100 Node objects, and this process playing the kubelets (it writes Running/Ready status,
//! with an IP, for every pod bound to a node).
//!
//! 1. A Deployment of 3,000 replicas: time until all its pods exist, are bound, and until
//!    the Deployment reports them available.
//! 2. A second Deployment brings the cluster to 10,000 pods; then the manager's RSS.
//! 3. Reaction latency with 10,000 pods: a pod of the first Deployment is deleted, and the
//!    time until its replacement is created is measured (200 times, one at a time); and the
//!    manager's own reconcile-time histogram (`/metrics`) for the ReplicaSet controller.

use crate::http::{
    Sender, connect, cpu_ms, follow_watch, kyb_binary, request, request_as, rss_mib,
};
use crate::scheduler::{NAMESPACE, create_nodes, revision, setup_namespace};
use crate::stats::{Latencies, ms};
use bytes::Bytes;
use kyb_testkit::Process;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Status writers (kubelet stand-ins) working at once.
const WRITERS: usize = 16;

#[derive(Default)]
struct Seen {
    /// Pods by name, when first seen created.
    created: HashMap<String, Instant>,
    /// When first seen bound.
    bound: HashMap<String, Instant>,
    /// Pods deleted (gone from the watch).
    deleted: HashSet<String>,
}

/// Creates each node's Lease in `kube-node-lease` and renews them every 10 s, as the
/// kubelets the benchmark plays would: without that the node lifecycle controller would
/// find the nodes unreachable after its 40 s grace period and start marking every pod not
/// ready in the middle of the measurements.
async fn renew_leases(
    port: u16,
    nodes: Vec<String>,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let mut sender = connect(port).await?;
    let lease = |node: &str| {
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": node, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": 40,
                "renewTime": now_micro()},
        })
    };
    for node in &nodes {
        let (code, body) = request(
            &mut sender,
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            lease(node).to_string().into(),
        )
        .await?;
        anyhow::ensure!(
            code == 201,
            "lease of {node}: {code} {}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            for node in &nodes {
                let patch = json!({"spec": {"renewTime": now_micro()}});
                let (code, _) = crate::http::request_as(
                    &mut sender,
                    "PATCH",
                    &format!(
                        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"
                    ),
                    "application/merge-patch+json",
                    patch.to_string().into(),
                )
                .await?;
                anyhow::ensure!(code == 200, "renewing the lease of {node}: {code}");
            }
        }
    }))
}

/// The time now as a Kubernetes MicroTime.
fn now_micro() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// Watches the namespace's pods from `from`: records creations and bindings, and queues
/// bound pods without an IP for the status writers.
fn watch_pods(
    port: u16,
    from: String,
    seen: Arc<Mutex<Seen>>,
    to_write: tokio::sync::mpsc::UnboundedSender<(String, usize)>,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    tokio::spawn(async move {
        let path = format!(
            "/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion={from}&timeoutSeconds=3600"
        );
        let mut count = 0usize;
        follow_watch(port, path, |event| {
            let object = &event["object"];
            let Some(name) = object["metadata"]["name"].as_str() else {
                return;
            };
            let now = Instant::now();
            let Ok(mut seen) = seen.lock() else { return };
            if event["type"] == "DELETED" {
                seen.deleted.insert(name.to_string());
                return;
            }
            seen.created.entry(name.to_string()).or_insert(now);
            if object["spec"]["nodeName"].is_string() {
                let first = !seen.bound.contains_key(name);
                seen.bound.entry(name.to_string()).or_insert(now);
                if first && !object["status"]["podIP"].is_string() {
                    count += 1;
                    let _ = to_write.send((name.to_string(), count));
                }
            }
        })
        .await
    })
}

/// Plays the kubelets: writes Running/Ready status with an IP for each queued pod.
fn write_statuses(
    port: u16,
    queue: tokio::sync::mpsc::UnboundedReceiver<(String, usize)>,
) -> Vec<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let queue = Arc::new(tokio::sync::Mutex::new(queue));
    (0..WRITERS)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut sender = connect(port).await?;
                loop {
                    let next = queue.lock().await.recv().await;
                    let Some((name, n)) = next else { break };
                    let ip = format!("10.{}.{}.{}", 42 + n / 65536, (n / 256) % 256, n % 256);
                    let status = json!({"status": {
                        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                        "hostIP": "192.0.2.1", "startTime": "2026-01-01T00:00:00Z",
                        "conditions": [
                            {"type": "Initialized", "status": "True"},
                            {"type": "ContainersReady", "status": "True"},
                            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                            {"type": "PodScheduled", "status": "True"},
                        ],
                    }});
                    let (code, _) = request_as(
                        &mut sender,
                        "PATCH",
                        &format!("/api/v1/namespaces/{NAMESPACE}/pods/{name}/status"),
                        "application/merge-patch+json",
                        Bytes::from(status.to_string()),
                    )
                    .await?;
                    // 404: deleted meanwhile.
                    anyhow::ensure!(code == 200 || code == 404, "status of {name}: {code}");
                }
                anyhow::Ok(())
            })
        })
        .collect()
}

fn deployment(name: &str, replicas: usize) -> String {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]},
            },
        },
    })
    .to_string()
}

async fn available(sender: &mut Sender, name: &str) -> anyhow::Result<i64> {
    let (_, body) = request(
        sender,
        "GET",
        &format!("/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}"),
        Bytes::new(),
    )
    .await?;
    let object: Value = serde_json::from_slice(&body)?;
    Ok(object["status"]["availableReplicas"].as_i64().unwrap_or(0))
}

/// Waits until `check` holds, polling every 20 ms, for at most `timeout`.
async fn wait_until(
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + timeout;
    loop {
        if check().await? {
            return Ok(Instant::now());
        }
        anyhow::ensure!(Instant::now() < deadline, "{what}: not after {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `q` quantile's bucket bound of a histogram family for one label, from `/metrics`.
fn histogram_quantile(metrics: &str, family: &str, label: &str, q: f64) -> Option<f64> {
    let prefix = format!("{family}_bucket{{{label},le=\"");
    let buckets: Vec<(f64, f64)> = metrics
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (bound, count) = rest.split_once("\"} ")?;
            let bound = if bound == "+Inf" {
                f64::INFINITY
            } else {
                bound.parse().ok()?
            };
            Some((bound, count.trim().parse().ok()?))
        })
        .collect();
    let total = buckets.last()?.1;
    if total == 0.0 {
        return None;
    }
    buckets
        .iter()
        .find(|(_, count)| *count >= q * total)
        .map(|(bound, _)| *bound)
}

fn metrics(port: u16) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text)
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let scale = if quick { 10 } else { 1 };
    let nodes = 100;
    let first = 3000 / scale;
    let total = 10_000 / scale;
    let reactions = 200 / scale;
    let dir = kyb_testkit::temp_dir("bench-controllers")?;
    let port = kyb_testkit::free_port()?;
    let metrics_port = kyb_testkit::free_port()?;
    let (mut apiserver, mut scheduler) = crate::scheduler::start(dir.path(), port)?;
    let mut manager = Process::spawn(
        Command::new(kyb_binary())
            .env_remove("RUST_LOG")
            .args([
                "controller-manager",
                "--leader-elect=false",
                "--metrics-bind-address",
            ])
            .arg(format!("127.0.0.1:{metrics_port}"))
            .arg("--kubeconfig")
            .arg(dir.path().join("components/controller-manager.kubeconfig")),
    )?;
    manager.wait_for_line("controllers started", Duration::from_secs(60))?;
    let manager_pid = manager.id();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(async {
        setup_namespace(port).await?;
        create_nodes(port, 0..nodes, "node").await?;
        let _heartbeats = renew_leases(port, (0..nodes).map(|i| format!("node-{i}")).collect()).await?;
        let mut admin = connect(port).await?;
        let from = revision(&mut admin).await?;
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let watcher = watch_pods(port, from, seen.clone(), tx);
        let writers = write_statuses(port, rx);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let count = |f: fn(&Seen) -> usize| seen.lock().map(|s| f(&s)).unwrap_or(0);

        // 1. One Deployment of `first` replicas.
        let cpu = [cpu_ms(Some(apiserver.id())), cpu_ms(Some(scheduler.id())), cpu_ms(Some(manager_pid))];
        let begin = Instant::now();
        let (code, body) = request(
            &mut admin,
            "POST",
            &format!("/apis/apps/v1/namespaces/{NAMESPACE}/deployments"),
            deployment("web", first).into(),
        )
        .await?;
        anyhow::ensure!(code == 201, "deployment: {code} {}", String::from_utf8_lossy(&body));
        let created = wait_until("pods created", Duration::from_secs(120), async || {
            Ok(count(|s| s.created.len()) >= first)
        })
        .await?;
        let bound = wait_until("pods bound", Duration::from_secs(120), async || {
            Ok(count(|s| s.bound.len()) >= first)
        })
        .await?;
        let ready = wait_until("deployment available", Duration::from_secs(120), async || {
            Ok(available(&mut admin, "web").await? >= first as i64)
        })
        .await?;
        let cpu_after = [cpu_ms(Some(apiserver.id())), cpu_ms(Some(scheduler.id())), cpu_ms(Some(manager_pid))];
        let per_pod = |i: usize| (cpu_after[i] - cpu[i]) / first as f64;

        // 2. The rest of the pods, then the manager's memory.
        let (code, _) = request(
            &mut admin,
            "POST",
            &format!("/apis/apps/v1/namespaces/{NAMESPACE}/deployments"),
            deployment("bulk", total - first).into(),
        )
        .await?;
        anyhow::ensure!(code == 201, "second deployment: {code}");
        let all_bound = wait_until("all pods bound", Duration::from_secs(300), async || {
            Ok(count(|s| s.bound.len()) >= total)
        })
        .await?;
        wait_until("second deployment available", Duration::from_secs(300), async || {
            Ok(available(&mut admin, "bulk").await? >= (total - first) as i64)
        })
        .await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let rss = rss_mib(manager_pid);

        // 3. Reactions: delete a pod of `web`, time until a new pod is created.
        let mut latencies = Vec::new();
        for _ in 0..reactions {
            let victim = {
                let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                seen.bound
                    .keys()
                    .find(|n| n.starts_with("web-") && !seen.deleted.contains(*n))
                    .cloned()
            };
            let Some(victim) = victim else { break };
            let before = count(|s| s.created.len());
            let at = Instant::now();
            let (code, _) = request(
                &mut admin,
                "DELETE",
                &format!("/api/v1/namespaces/{NAMESPACE}/pods/{victim}?gracePeriodSeconds=0"),
                Bytes::new(),
            )
            .await?;
            anyhow::ensure!(code == 200, "deleting {victim}: {code}");
            if let Ok(mut seen) = seen.lock() {
                seen.deleted.insert(victim.clone());
            }
            let replaced = wait_until("replacement", Duration::from_secs(30), async || {
                Ok(count(|s| s.created.len()) > before)
            })
            .await?;
            latencies.push(replaced.duration_since(at));
        }
        let latencies = Latencies::new(latencies);
        let text = metrics(metrics_port)?;
        let label = "controller=\"replicaset-controller\"";
        let reconcile_p99 = histogram_quantile(&text, "controller_reconcile_time_seconds", label, 0.99);
        watcher.abort();
        for writer in writers {
            writer.abort();
        }
        let since = |t: Instant| t.duration_since(begin).as_secs_f64();
        Ok(format!(
            "| Deployment of {first} replicas on {nodes} nodes: all pods created | {:.2} s |\n\
             | … all bound | {:.2} s |\n\
             | … Deployment reports all available (status written by the benchmark) | {:.2} s |\n\
             | CPU per pod: API server / scheduler / controller manager | {:.2} / {:.2} / {:.2} ms |\n\
             | {total} pods: all bound | {:.2} s after the first Deployment |\n\
             | controller-manager RSS with {total} pods | {rss:.1} MiB |\n\
             | pod deleted → replacement created, p50 / p99 ({} samples) | {} / {} |\n\
             | ReplicaSet reconcile time p99 (histogram bucket bound) | {} |",
            since(created),
            since(bound),
            since(ready),
            per_pod(0),
            per_pod(1),
            per_pod(2),
            since(all_bound),
            latencies.len(),
            ms(latencies.percentile(50.0)),
            ms(latencies.percentile(99.0)),
            reconcile_p99.map_or("-".to_string(), |s| format!("≤ {:.1} ms", s * 1000.0)),
        ))
    });
    manager.terminate()?;
    let _ = manager.wait_exit(Duration::from_secs(30));
    scheduler.terminate()?;
    let _ = scheduler.wait_exit(Duration::from_secs(30));
    apiserver.terminate()?;
    let _ = apiserver.wait_exit(Duration::from_secs(30));
    println!(
        "\n## Controller manager\n\n| measure | value |\n|---|---|\n{}",
        report?
    );
    Ok(())
}
