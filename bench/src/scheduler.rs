//! Scheduler benchmark in the style of Kubernetes' scheduler_perf: a release `kyb
//! apiserver` and a separate `kyb scheduler` process (so the scheduler's memory is its
//! own), N Node objects created through the API (ready, with capacity), then M pods; every
//! pod is timed from its create request to the watch event showing it bound.
//!
//! Workloads: (a) plain pods; (b) pods with required pod anti-affinity on the hostname,
//! and pods spread over zones (topology spread, DoNotSchedule); (c) preemption: nodes full
//! of low-priority pods, then high-priority pods that must evict them.

use crate::http::{Sender, admin_tls, connect, cpu_ms, follow_watch, kyb_binary, request, rss_mib};
use crate::stats::{Latencies, ms};
use bytes::Bytes;
use kyb_testkit::Process;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const CLIENTS: usize = 16;

/// The API server's and the scheduler's pids in the running workload, for CPU figures.
static PIDS: Mutex<(u32, u32)> = Mutex::new((0, 0));

/// What one Node object costs in memory as the scheduler keeps it (without managed
/// fields): the same nodes, listed from the API server and parsed here, by the growth of
/// this process' RSS (MiB per node).
async fn node_object_mib(port: u16, count: usize) -> anyhow::Result<f64> {
    use k8s_openapi::api::core::v1::Node;
    let mut admin = connect(port).await?;
    let (_, body) = request(&mut admin, "GET", "/api/v1/nodes", Bytes::new()).await?;
    let list: Value = serde_json::from_slice(&body)?;
    drop(body);
    let items: Vec<String> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(Value::to_string)
        .collect();
    drop(list);
    // Parsed five times over: the first copy may fill memory this process already has, the
    // growth over the next four is what the objects take.
    let mut copies = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..5 {
        let mut nodes = Vec::with_capacity(items.len());
        for item in &items {
            let mut node: Node = serde_json::from_str(item)?;
            node.metadata.managed_fields = None;
            nodes.push(std::sync::Arc::new(node));
        }
        anyhow::ensure!(
            nodes.len() == count,
            "listed {} nodes of {count}",
            nodes.len()
        );
        copies.push(nodes);
        rss.push(rss_mib(std::process::id()));
    }
    Ok((rss[4] - rss[0]) / (4 * count) as f64)
}

/// What the scheduler's cache costs per node beyond the Node object, measured in this
/// process (the same allocator as `kyb`): `count` Node objects (as the informer reads them)
/// are parsed first, then put in a cache and a loop snapshot taken from it; bytes per node
/// by the growth of the RSS.
fn cache_bytes_per_node(count: usize) -> anyhow::Result<f64> {
    use k8s_openapi::api::core::v1::Node;
    use kyb_scheduler::cache::Cache;
    use kyb_scheduler::framework::Snapshot;
    use kyb_scheduler::slim::Slim;
    let objects: Vec<Arc<Node>> = (0..count)
        .map(|i| {
            let (_, body) = node_body(i, "node");
            serde_json::from_str::<Slim<Node>>(&body).map(|n| Arc::new(n.0))
        })
        .collect::<Result<_, _>>()?;
    let before = rss_mib(std::process::id());
    let mut cache = Cache::new();
    for object in &objects {
        cache.upsert_node(object.clone());
    }
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let after = rss_mib(std::process::id());
    anyhow::ensure!(
        snapshot.len() == count,
        "{} nodes in the snapshot",
        snapshot.len()
    );
    Ok((after - before) * 1048576.0 / count as f64)
}

/// CPU milliseconds used so far by the API server, the scheduler and this benchmark.
fn cpu_now() -> [f64; 3] {
    let (apiserver, scheduler) = PIDS.lock().map(|p| *p).unwrap_or((0, 0));
    [
        cpu_ms(Some(apiserver)),
        cpu_ms(Some(scheduler)),
        cpu_ms(None),
    ]
}
pub(crate) const NAMESPACE: &str = "bench";

/// One workload's figures.
struct Figures {
    name: String,
    pods: usize,
    rate: f64,
    latency: Latencies,
}

/// Sends `bodies` as POSTs to `path` from `CLIENTS` connections; the send time of each by
/// name.
pub(crate) async fn create_all(
    port: u16,
    path: &str,
    bodies: Vec<(String, String)>,
) -> anyhow::Result<HashMap<String, Instant>> {
    let queue = Arc::new(Mutex::new(bodies));
    let sent = Arc::new(Mutex::new(HashMap::new()));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let queue = queue.clone();
        let sent = sent.clone();
        let path = path.to_string();
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(port).await?;
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop());
                let Some((name, body)) = next else { break };
                let at = Instant::now();
                let (status, answer) = request(&mut sender, "POST", &path, body.into()).await?;
                anyhow::ensure!(
                    status == 201,
                    "create {name} answered {status}: {}",
                    String::from_utf8_lossy(&answer)
                );
                if let Ok(mut sent) = sent.lock() {
                    sent.insert(name, at);
                }
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let sent = std::mem::take(&mut *sent.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
    Ok(sent)
}

/// Node `i`: ready, with capacity, in zone a, b or c; its name and JSON.
fn node_body(i: usize, prefix: &str) -> (String, String) {
    let name = format!("{prefix}-{i}");
    let zone = ["a", "b", "c"][i % 3];
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    });
    (name, node.to_string())
}

/// Creates ready nodes (zones a/b/c), then takes off the `not-ready` taint admission puts
/// on new nodes, as the node lifecycle controller would once the node reports Ready.
pub(crate) async fn create_nodes(
    port: u16,
    range: std::ops::Range<usize>,
    prefix: &str,
) -> anyhow::Result<()> {
    let bodies = range.map(|i| node_body(i, prefix)).collect();
    let created = create_all(port, "/api/v1/nodes", bodies).await?;
    let names: Vec<String> = created.into_keys().collect();
    let queue = Arc::new(Mutex::new(names));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let queue = queue.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(port).await?;
            loop {
                let next = queue.lock().ok().and_then(|mut q| q.pop());
                let Some(name) = next else { break };
                let (status, _) = crate::http::request_as(
                    &mut sender,
                    "PATCH",
                    &format!("/api/v1/nodes/{name}"),
                    "application/merge-patch+json",
                    Bytes::from_static(br#"{"spec":{"taints":null}}"#),
                )
                .await?;
                anyhow::ensure!(status == 200, "untainting {name} answered {status}");
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// When each pod was seen bound, by name.
type Bound = Arc<Mutex<HashMap<String, Instant>>>;

/// Watches pods in the namespace from `revision`, recording when each is seen bound.
fn watch_bindings(
    port: u16,
    revision: String,
) -> (Bound, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let bound = Arc::new(Mutex::new(HashMap::new()));
    let record = bound.clone();
    let task = tokio::spawn(async move {
        let path = format!(
            "/api/v1/namespaces/{NAMESPACE}/pods?watch=true&resourceVersion={revision}&timeoutSeconds=3600"
        );
        follow_watch(port, path, |event| {
            let object = &event["object"];
            if object["spec"]["nodeName"].is_string()
                && let Some(name) = object["metadata"]["name"].as_str()
                && let Ok(mut bound) = record.lock()
            {
                bound.entry(name.to_string()).or_insert_with(Instant::now);
            }
        })
        .await
    });
    (bound, task)
}

pub(crate) async fn revision(sender: &mut Sender) -> anyhow::Result<String> {
    let (_, body) = request(
        sender,
        "GET",
        &format!("/api/v1/namespaces/{NAMESPACE}/pods?limit=1"),
        Bytes::new(),
    )
    .await?;
    let list: Value = serde_json::from_slice(&body)?;
    Ok(list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string())
}

/// Creates `pods` and times each until it is seen bound.
async fn measure(
    port: u16,
    name: &str,
    pods: Vec<(String, Value)>,
    timeout: Duration,
) -> anyhow::Result<Figures> {
    let mut admin = connect(port).await?;
    let from = revision(&mut admin).await?;
    let (bound, watcher) = watch_bindings(port, from);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let count = pods.len();
    let bodies = pods.into_iter().map(|(n, v)| (n, v.to_string())).collect();
    let cpu_before = cpu_now();
    let begin = Instant::now();
    let sent = create_all(
        port,
        &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
        bodies,
    )
    .await?;
    let created = begin.elapsed();
    let deadline = Instant::now() + timeout;
    loop {
        let done = bound.lock().map(|b| b.len()).unwrap_or(0);
        if done >= count {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{name}: only {done} of {count} pods bound in {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cpu_after = cpu_now();
    watcher.abort();
    let per_pod = |i: usize| (cpu_after[i] - cpu_before[i]) / count.max(1) as f64;
    eprintln!(
        "{name}: CPU per pod: API server {:.2} ms, scheduler {:.2} ms, benchmark client {:.2} ms",
        per_pod(0),
        per_pod(1),
        per_pod(2)
    );
    let bound = std::mem::take(&mut *bound.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
    let last = bound.values().max().copied().unwrap_or(begin);
    let latencies = sent
        .iter()
        .filter_map(|(pod, at)| bound.get(pod).map(|b| b.saturating_duration_since(*at)))
        .collect();
    eprintln!(
        "{name}: {count} pods created in {:.2} s ({:.0}/s), all bound after {:.2} s",
        created.as_secs_f64(),
        count as f64 / created.as_secs_f64(),
        last.duration_since(begin).as_secs_f64()
    );
    Ok(Figures {
        name: name.to_string(),
        pods: count,
        rate: count as f64 / last.duration_since(begin).as_secs_f64(),
        latency: Latencies::new(latencies),
    })
}

fn plain_pod(name: &str, cpu: &str, extra: Value) -> (String, Value) {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "registry.local/pause:3.9",
            "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]},
    });
    if let (Some(target), Value::Object(extra)) = (pod.as_object_mut(), extra) {
        for (k, v) in extra {
            match (target.get_mut(&k), v) {
                (Some(Value::Object(t)), Value::Object(v)) => t.extend(v),
                (_, v) => {
                    target.insert(k, v);
                }
            }
        }
    }
    (name.to_string(), pod)
}

/// A fresh API server and scheduler; returns them with the scheduler's pid.
pub(crate) fn start(dir: &std::path::Path, port: u16) -> anyhow::Result<(Process, Process)> {
    let binary = kyb_binary();
    let mut apiserver = Process::spawn(
        Command::new(&binary)
            .env_remove("RUST_LOG")
            .args(["apiserver", "--bind-address", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(dir),
    )?;
    apiserver.wait_for_line("kyb server ready", Duration::from_secs(60))?;
    admin_tls(dir)?;
    let mut scheduler = Process::spawn(
        Command::new(&binary)
            .env_remove("RUST_LOG")
            .args(["scheduler", "--leader-elect=false", "--kubeconfig"])
            .arg(dir.join("components/scheduler.kubeconfig")),
    )?;
    scheduler.wait_for_line("scheduling", Duration::from_secs(60))?;
    Ok((apiserver, scheduler))
}

pub(crate) async fn setup_namespace(port: u16) -> anyhow::Result<()> {
    let mut admin = connect(port).await?;
    let (status, _) = request(
        &mut admin,
        "POST",
        "/api/v1/namespaces",
        format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{NAMESPACE}"}}}}"#)
            .into(),
    )
    .await?;
    anyhow::ensure!(status == 201, "namespace answered {status}");
    // Pods need the namespace's default service account. The controller manager creates
    // it when one runs (409 then); the scheduler benchmark runs without one.
    let (status, _) = request(
        &mut admin,
        "POST",
        &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts"),
        r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}"#.into(),
    )
    .await?;
    anyhow::ensure!(
        status == 201 || status == 409,
        "default service account answered {status}"
    );
    Ok(())
}

/// Waits until the scheduler has seen `node` (a probe pod bound there), then lets the
/// allocator settle and returns the scheduler's RSS (MiB).
async fn settled_rss(port: u16, pid: u32, node: &str, probe: &str) -> anyhow::Result<f64> {
    let probe = plain_pod(
        probe,
        "10m",
        json!({"spec": {"nodeSelector": {"kubernetes.io/hostname": node}}}),
    );
    measure(port, "probe", vec![probe], Duration::from_secs(120)).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    Ok(rss_mib(pid))
}

/// Runs one workload on a fresh cluster with `nodes` nodes created first.
fn workload(
    nodes: usize,
    run: impl AsyncFnOnce(u16, u32) -> anyhow::Result<Vec<Figures>>,
) -> anyhow::Result<Vec<Figures>> {
    let dir = kyb_testkit::temp_dir("bench-scheduler")?;
    let port = kyb_testkit::free_port()?;
    let (mut apiserver, mut scheduler) = start(dir.path(), port)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let scheduler_pid = scheduler.id();
    if let Ok(mut pids) = PIDS.lock() {
        *pids = (apiserver.id(), scheduler_pid);
    }
    let figures = runtime.block_on(async {
        setup_namespace(port).await?;
        create_nodes(port, 0..nodes, "node").await?;
        run(port, scheduler_pid).await
    });
    scheduler.terminate()?;
    let _ = scheduler.wait_exit(Duration::from_secs(30));
    apiserver.terminate()?;
    let _ = apiserver.wait_exit(Duration::from_secs(30));
    figures
}

/// Runs the workloads named in `chosen` (`a`, `b`, `c`; all when empty).
pub fn run(quick: bool, chosen: &[&str]) -> anyhow::Result<()> {
    let wanted = |w: &str| chosen.is_empty() || chosen.contains(&w);
    let scale = if quick { 10 } else { 1 };
    let nodes = 5000 / scale;
    let mut all = Vec::new();
    let mut memory = String::new();
    // First, while this process has no memory to reuse.
    let cache = cache_bytes_per_node(20_000)?;

    // (a) Plain pods; the scheduler's memory per node.
    let plain = 10_000 / scale;
    if wanted("a") {
        all.extend(workload(nodes / 2, async |port, pid| {
            // The memory a node costs: the growth from half the nodes to all of them (what
            // does not grow with nodes — threads, connections, buffers — cancels out).
            let half =
                settled_rss(port, pid, &format!("node-{}", nodes / 2 - 1), "probe-half").await?;
            create_nodes(port, nodes / 2..nodes, "node").await?;
            let full = settled_rss(port, pid, &format!("node-{}", nodes - 1), "probe").await?;
            let object = node_object_mib(port, nodes).await?;
            let per_node = (full - half) / (nodes - nodes / 2) as f64;
            memory = format!(
                "scheduler RSS {half:.1} MiB with {} nodes, {full:.1} MiB with {nodes}: \
             {:.0} bytes per node, of which the Node object (without managed fields) {:.0}; \
             the cache alone (node info, index, the loop's snapshot; measured in-process \
             with 20,000 nodes) {cache:.0} bytes per node beyond the Node object",
                nodes / 2,
                per_node * 1048576.0,
                object * 1048576.0,
            );
            let pods = (0..plain)
                .map(|i| plain_pod(&format!("plain-{i}"), "100m", json!({})))
                .collect();
            let figures = measure(port, "plain pods", pods, Duration::from_secs(600)).await?;
            Ok(vec![figures])
        })?);
    }

    // (b) Required anti-affinity per host, then topology spread over zones.
    let anti = (5000 / scale).min(nodes);
    if wanted("b") {
        all.extend(workload(nodes, async |port, _| {
        let pods = (0..anti)
            .map(|i| {
                plain_pod(
                    &format!("anti-{i}"),
                    "100m",
                    json!({"metadata": {"labels": {"app": "anti"}}, "spec": {"affinity": {"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": {"app": "anti"}},
                            "topologyKey": "kubernetes.io/hostname"}]}}}}),
                )
            })
            .collect();
        let anti = measure(port, "pods with required anti-affinity", pods, Duration::from_secs(900)).await?;
        let pods = (0..5000 / scale)
            .map(|i| {
                plain_pod(
                    &format!("spread-{i}"),
                    "100m",
                    json!({"metadata": {"labels": {"app": "spread"}}, "spec": {"topologySpreadConstraints": [{
                        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "spread"}}}]}}),
                )
            })
            .collect();
        let spread = measure(port, "pods with topology spread", pods, Duration::from_secs(900)).await?;
        Ok(vec![anti, spread])
    })?);
    }

    // (c) Preemption on 1,000 nodes: fill every node with a low-priority pod taking most of
    // it, then high-priority pods that only fit by evicting one each.
    let preempt_nodes = 1000 / scale;
    if wanted("c") {
        all.extend(workload(preempt_nodes, async |port, _| {
        let mut admin = connect(port).await?;
        for (name, value) in [("low", 10), ("high", 1000)] {
            let body = format!(
                r#"{{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{{"name":"{name}"}},"value":{value}}}"#
            );
            let (status, _) =
                request(&mut admin, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body.into()).await?;
            anyhow::ensure!(status == 201, "priority class answered {status}");
        }
        let fillers = (0..preempt_nodes)
            .map(|i| plain_pod(&format!("low-{i}"), "3", json!({"spec": {"priorityClassName": "low"}})))
            .collect();
        measure(port, "low-priority fillers", fillers, Duration::from_secs(600)).await?;
        let urgent = (0..preempt_nodes)
            .map(|i| plain_pod(&format!("high-{i}"), "3", json!({"spec": {"priorityClassName": "high"}})))
            .collect();
        // Victims have a grace period and no kubelet: the preemptors bind once the victims'
        // deletion is forced, which a helper does as soon as they are marked.
        let cleaner = tokio::spawn(force_delete_terminating(port));
        let figures = measure(port, "preempting pods (each evicting one)", urgent, Duration::from_secs(900)).await;
        cleaner.abort();
        Ok(vec![figures?])
    })?);
    }

    println!();
    println!("| workload | pods | pods/s | latency p50 | latency p99 |");
    println!("|---|---|---|---|---|");
    for f in &all {
        if f.name == "probe" {
            continue;
        }
        println!(
            "| {} | {} | {:.0} | {} | {} |",
            f.name,
            f.pods,
            f.rate,
            ms(f.latency.percentile(50.0)),
            ms(f.latency.percentile(99.0))
        );
    }
    println!();
    println!("{memory}");
    Ok(())
}

/// Plays the kubelet for victims: pods marked for deletion are deleted at once.
async fn force_delete_terminating(port: u16) -> anyhow::Result<()> {
    let mut admin = connect(port).await?;
    loop {
        let (_, body) = request(
            &mut admin,
            "GET",
            &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
            Bytes::new(),
        )
        .await?;
        let list: Value = serde_json::from_slice(&body)?;
        for pod in list["items"].as_array().into_iter().flatten() {
            if pod["metadata"]["deletionTimestamp"].is_string()
                && let Some(name) = pod["metadata"]["name"].as_str()
            {
                let _ = request(
                    &mut admin,
                    "DELETE",
                    &format!("/api/v1/namespaces/{NAMESPACE}/pods/{name}?gracePeriodSeconds=0"),
                    Bytes::new(),
                )
                .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
