//! Pod startup on one node, as `../shared/reference-figures.md` measured the real kubelet:
//! a release `kyb server --disable-agent` and a separate `kyb kubelet` process (so the
//! agent's memory and CPU are its own), on a containerd this benchmark starts inside a
//! network namespace it creates (the pods' bridge and addresses live there), with the
//! busybox and pause images imported. Each pod is timed from its create request to the
//! watch event showing it Running: 10 pods one after another, then 30 and 100 created at
//! once. Also the agent's RSS idle and with 100 pods, and its CPU per pod start.

use crate::http::{admin_tls, connect, cpu_ms, follow_watch, kyb_binary, request, rss_mib};
use crate::stats::{Latencies, ms};
use bytes::Bytes;
use kyb_kubelet::containerd::{self, ContainerdConfig};
use kyb_testkit::{ContainerdFiles, NetNs, Process, TestContainerd};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NAMESPACE: &str = "default";

fn pod_body(name: &str) -> Bytes {
    Bytes::from(
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"bench": "pods"}},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "c",
                    "image": kyb_kubelet::images::BUSYBOX_IMAGE,
                    "command": ["sleep", "3600"],
                }],
            },
        })
        .to_string(),
    )
}

/// When each pod was first seen Running, by name.
type Seen = Arc<Mutex<HashMap<String, Instant>>>;

fn watch_running(port: u16) -> (Seen, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let task = tokio::spawn(async move {
        let path = format!(
            "/api/v1/namespaces/{NAMESPACE}/pods?watch=true&labelSelector=bench%3Dpods&timeoutSeconds=3600"
        );
        follow_watch(port, path, |event| {
            let object = &event["object"];
            if object["status"]["phase"] == "Running"
                && let Some(name) = object["metadata"]["name"].as_str()
                && let Ok(mut seen) = record.lock()
            {
                seen.entry(name.to_string()).or_insert_with(Instant::now);
            }
        })
        .await
    });
    (seen, task)
}

async fn wait_until(
    what: &str,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !done() {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Creates `names` at once (each on its own connection), returning when each create was sent.
async fn create(port: u16, names: &[String]) -> anyhow::Result<HashMap<String, Instant>> {
    let mut tasks = Vec::new();
    for name in names {
        let name = name.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(port).await?;
            let sent = Instant::now();
            let (status, body) = request(
                &mut sender,
                "POST",
                &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
                pod_body(&name),
            )
            .await?;
            anyhow::ensure!(status == 201, "creating {name}: {status} {body:?}");
            Ok::<_, anyhow::Error>((name, sent))
        }));
    }
    let mut sent = HashMap::new();
    for task in tasks {
        let (name, at) = task.await??;
        sent.insert(name, at);
    }
    Ok(sent)
}

/// Deletes every benchmark pod and waits until the API has none left.
async fn delete_all(port: u16) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut sender = connect(port).await?;
    let (status, _) = request(
        &mut sender,
        "DELETE",
        &format!("/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=bench%3Dpods"),
        Bytes::new(),
    )
    .await?;
    anyhow::ensure!(status == 200, "deleting the pods: {status}");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (_, body) = request(
            &mut sender,
            "GET",
            &format!("/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=bench%3Dpods"),
            Bytes::new(),
        )
        .await?;
        let list: Value = serde_json::from_slice(&body)?;
        if list["items"].as_array().is_some_and(Vec::is_empty) {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(Instant::now() < deadline, "pods still there after 300 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn image_archive(name: &'static str) -> anyhow::Result<std::path::PathBuf> {
    kyb_testkit::image_archive(name, || {
        Ok(kyb_kubelet::images::build::build_named(name)?.bytes)
    })
}

/// One node for the benchmarks: a release `kyb server --disable-agent` on loopback, a
/// containerd in a network namespace this creates (with the busybox and pause images),
/// and a separate `kyb kubelet` process on it, its API on loopback.
pub struct Node {
    pub kubelet: Process,
    _server: Process,
    pub runtime: TestContainerd,
    pub netns: NetNs,
    pub port: u16,
    _volumes: VolumeMounts,
    pub dir: tempfile::TempDir,
}

/// Unmounts the pods' volumes (tmpfs) under the data dir, once the agent and containerd
/// are gone and before the directory is removed.
struct VolumeMounts(std::path::PathBuf);

impl Drop for VolumeMounts {
    fn drop(&mut self) {
        kyb_testkit::unmount_under(&self.0);
    }
}

impl Node {
    /// The node; with `inside`, the server and the kubelet run inside the network
    /// namespace too (so that the kubelet reaches containerd's streaming server, and
    /// kubectl, run there with [`NetNs::command`], reaches them all on its loopback).
    pub fn start(label: &str, inside: bool) -> anyhow::Result<Node> {
        anyhow::ensure!(
            kyb_node_sys::privileges::is_root(),
            "this benchmark runs containers: run it as root"
        );
        let dir = kyb_testkit::temp_dir(label)?;
        let netns = NetNs::create()?;
        let (server, port) =
            crate::http::start_server_in(inside.then_some(&netns), dir.path(), &[])?;
        admin_tls(dir.path())?;
        let runtime = TestContainerd::start(&netns, |root| {
            let config = ContainerdConfig::new(root.join("agent"));
            containerd::write_config(&config)?;
            containerd::write_cni_config(&config.cni_conf_dir, "10.42.0.0/16")?;
            Ok(ContainerdFiles {
                config_file: config.config_file(),
                socket: config.socket_path(),
            })
        })?;
        for image in ["pause", "busybox"] {
            let archive = image_archive(image)?;
            let archive = crate::http::path_str(&archive)?.to_string();
            runtime.ctr(&["images", "import", &archive])?;
        }
        let kubelet_port = kyb_testkit::free_port()?;
        let mut command = if inside {
            netns.command(kyb_binary())
        } else {
            Command::new(kyb_binary())
        };
        let kubelet = Process::spawn(
            command
                .env_remove("RUST_LOG")
                .arg("--data-dir")
                .arg(dir.path())
                .arg("kubelet")
                .arg("--kubeconfig")
                .arg(dir.path().join("components/kubelet.kubeconfig"))
                .arg("--container-runtime-endpoint")
                .arg(runtime.endpoint())
                // The node and its API on loopback: nothing leaves the machine.
                .args(["--node-ip", "127.0.0.1", "--address", "127.0.0.1"])
                .args(["--port", &kubelet_port.to_string()])
                // The API server's client certificate is the cluster CA's (a standalone
                // kubelet without a client CA accepts bearer tokens only).
                .arg("--client-ca-file")
                .arg(dir.path().join("pki/ca.crt"))
                // Memory only: a full build disk must not put the node under DiskPressure.
                .args(["--eviction-hard", "memory.available<1Mi"]),
        )?;
        Ok(Node {
            kubelet,
            _server: server,
            runtime,
            netns,
            port,
            _volumes: VolumeMounts(dir.path().to_path_buf()),
            dir,
        })
    }
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let node = Node::start("bench-pods", false)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(measure(
            node.port,
            node.kubelet.id(),
            quick,
            &node.runtime.endpoint(),
            node.dir.path(),
        ))
}

/// Waits until the node is Ready and the default service account exists.
pub async fn wait_ready(port: u16) -> anyhow::Result<()> {
    let mut sender = connect(port).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = request(&mut sender, "GET", "/api/v1/nodes", Bytes::new()).await?;
        let nodes: Value = serde_json::from_slice(&body)?;
        let ready = nodes["items"].as_array().into_iter().flatten().any(|node| {
            node["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if ready {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the node did not become Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    loop {
        let (status, _) = request(
            &mut sender,
            "GET",
            "/api/v1/namespaces/default/serviceaccounts/default",
            Bytes::new(),
        )
        .await?;
        if status == 200 {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "no default service account");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn measure(
    port: u16,
    kubelet: u32,
    quick: bool,
    runtime: &str,
    data_dir: &std::path::Path,
) -> anyhow::Result<()> {
    wait_ready(port).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle_rss = rss_mib(kubelet);

    let (seen, watch) = watch_running(port);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // One after another.
    let one_by_one = if quick { 5 } else { 10 };
    let mut singles = Vec::new();
    for i in 0..one_by_one {
        let name = format!("single-{i}");
        let sent = create(port, std::slice::from_ref(&name)).await?;
        wait_until(&name, Duration::from_secs(60), || {
            seen.lock().map(|s| s.contains_key(&name)).unwrap_or(false)
        })
        .await?;
        let running = seen.lock().map_err(|_| anyhow::anyhow!("lock"))?[&name];
        singles.push(running - sent[&name]);
    }
    let singles = Latencies::new(singles);
    let deleted_singles = delete_all(port).await?;

    println!("\n## Pod startup on one node (create → Running seen by a watch, image present)\n");
    println!("| pods | created | p50 | p99 | all Running | deleting all |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {one_by_one} | one after another | {} | {} | — | {} |",
        ms(singles.percentile(50.0)),
        ms(singles.percentile(99.0)),
        ms(deleted_singles)
    );
    let mut with_pods_rss = 0.0;
    let mut cpu_per_pod = 0.0;
    let mut stats = None;
    let batches: &[usize] = if quick { &[30] } else { &[30, 100] };
    for &count in batches {
        let names: Vec<String> = (0..count).map(|i| format!("batch{count}-{i}")).collect();
        let cpu_before = cpu_ms(Some(kubelet));
        let started = Instant::now();
        let sent = create(port, &names).await?;
        wait_until(
            &format!("{count} pods Running"),
            Duration::from_secs(300),
            || {
                seen.lock()
                    .map(|s| names.iter().all(|n| s.contains_key(n)))
                    .unwrap_or(false)
            },
        )
        .await?;
        let all = started.elapsed();
        let cpu = cpu_ms(Some(kubelet)) - cpu_before;
        let latencies = {
            let seen = seen.lock().map_err(|_| anyhow::anyhow!("lock"))?;
            Latencies::new(names.iter().map(|n| seen[n] - sent[n]).collect())
        };
        if count == *batches.last().unwrap_or(&count) {
            tokio::time::sleep(Duration::from_secs(3)).await;
            with_pods_rss = rss_mib(kubelet);
            cpu_per_pod = cpu / count as f64;
            stats = Some((count, stats_cost(runtime, data_dir).await?));
        }
        let deleted = delete_all(port).await?;
        println!(
            "| {count} | at once | {} | {} | {} | {} |",
            ms(latencies.percentile(50.0)),
            ms(latencies.percentile(99.0)),
            ms(all),
            ms(deleted)
        );
    }
    watch.abort();
    let last = batches.last().copied().unwrap_or(0);
    println!("\n| agent (`kyb kubelet`) | figure |");
    println!("|---|---|");
    println!("| RSS idle | {idle_rss:.1} MiB |");
    println!("| RSS with {last} pods | {with_pods_rss:.1} MiB |");
    println!("| CPU per pod start ({last} at once) | {cpu_per_pod:.1} ms |");
    if let Some((count, costs)) = stats {
        println!(
            "\n## Node stats with {count} pods Running (the agent's CriStats, in process, {STATS_ROUNDS} rounds)\n"
        );
        println!("| endpoint | p50 | p99 | pods (containers) reported |");
        println!("|---|---|---|---|");
        for (endpoint, latencies, reported) in costs {
            println!(
                "| {endpoint} | {} | {} | {reported} |",
                ms(latencies.percentile(50.0)),
                ms(latencies.percentile(99.0)),
            );
        }
    }
    Ok(())
}

/// Rounds of each stats endpoint measured.
const STATS_ROUNDS: usize = 20;

/// What `/stats/summary` (whole and CPU-and-memory) and `/metrics/resource` cost the agent
/// with the pods now running: the same `CriStats` the agent serves them from, against the
/// same runtime, timed in process (without the HTTPS in front).
async fn stats_cost(
    runtime: &str,
    data_dir: &std::path::Path,
) -> anyhow::Result<Vec<(&'static str, Latencies, usize)>> {
    use kyb_kubelet::stats::{CriStats, NodeStats};
    let root = data_dir.join("agent");
    let stats = CriStats::new(
        kyb_kubelet::cri::Cri::connect(runtime)?,
        "bench",
        root.clone(),
        root.join("logs"),
    );
    let mut out = Vec::new();
    // The runtime's share: the one CRI call whose cost grows with the containers.
    let mut cri = kyb_kubelet::cri::Cri::connect(runtime)?;
    let mut samples = Vec::with_capacity(STATS_ROUNDS);
    let mut reported = 0;
    for _ in 0..STATS_ROUNDS {
        let started = Instant::now();
        reported = cri
            .runtime
            .list_container_stats(k8s_cri::v1::ListContainerStatsRequest { filter: None })
            .await?
            .into_inner()
            .stats
            .len();
        samples.push(started.elapsed());
    }
    out.push((
        "CRI ListContainerStats alone",
        Latencies::new(samples),
        reported,
    ));
    for endpoint in [
        "/stats/summary",
        "/stats/summary?only_cpu_and_memory=true",
        "/metrics/resource",
    ] {
        let mut samples = Vec::with_capacity(STATS_ROUNDS);
        let mut reported = 0;
        for _ in 0..STATS_ROUNDS {
            let started = Instant::now();
            reported = match endpoint {
                "/metrics/resource" => stats
                    .resource_metrics()
                    .await?
                    .lines()
                    .filter(|l| l.starts_with("pod_cpu_usage_seconds_total{"))
                    .count(),
                _ => stats.summary(endpoint.ends_with("true")).await?["pods"]
                    .as_array()
                    .map_or(0, Vec::len),
            };
            samples.push(started.elapsed());
        }
        out.push((endpoint, Latencies::new(samples), reported));
    }
    Ok(out)
}
