//! LIST in JSON and in protobuf (issue 16): a `kyb server` (the release binary, or
//! `KYB_BIN`) holding 10,000 ConfigMaps of 1 KiB and 10,000 pods, each listed whole with
//! `Accept: application/json` and with `Accept: application/vnd.kubernetes.protobuf`.
//!
//! Figures per resource and format: the first LIST (for protobuf, the one that encodes
//! every object and keeps the encoding in the watch cache), then the p50/p99 of the next
//! lists (time to the last byte on one connection: the server's work plus loopback
//! transfer), the bytes on the wire, the time this client takes to parse a body (serde_json
//! into a `Value`, `kyb-protobuf` into the same JSON form), and the server's RSS before and
//! after the protobuf lists (the cost of the kept encodings).

use crate::http::{admin_tls, connect, request, rss_mib, start_server};
use crate::stats::{Latencies, ms};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::time::{Duration, Instant};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A GET with an `Accept` header: (status, body, time to the last byte).
async fn get(
    sender: &mut crate::http::Sender,
    path: &str,
    accept: &str,
) -> anyhow::Result<(u16, Bytes, Duration)> {
    sender.ready().await?;
    let request = hyper::Request::builder()
        .uri(path)
        .header("host", "127.0.0.1")
        .header("accept", accept)
        .body(Full::new(Bytes::new()))?;
    let started = Instant::now();
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body, started.elapsed()))
}

/// Creates `count` objects (a multiple of `clients`) with `clients` concurrent clients;
/// `body(i)` is object i.
async fn create_all(
    port: u16,
    path: &'static str,
    count: usize,
    clients: usize,
    body: fn(usize) -> String,
) -> anyhow::Result<()> {
    let per_client = count / clients;
    let mut tasks = Vec::new();
    for client in 0..clients {
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(port).await?;
            for i in client * per_client..(client + 1) * per_client {
                let (status, answer) = request(&mut sender, "POST", path, body(i).into()).await?;
                anyhow::ensure!(
                    status == 201,
                    "{path} answered {status}: {}",
                    String::from_utf8_lossy(&answer)
                );
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

fn configmap(i: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","labels":{{"app":"bench"}}}},"data":{{"v":"{}"}}}}"#,
        "x".repeat(1024)
    )
}

/// A pod as a Deployment would make it (labels, an owner, resources, a probe, an env),
/// bound to a node so the scheduler leaves it alone.
fn pod(i: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"web-{i}","labels":{{"app":"web","pod-template-hash":"6cd687d988"}}}},"spec":{{"nodeName":"bench-node","containers":[{{"name":"web","image":"registry.local/web:1.2.3","ports":[{{"containerPort":8080,"name":"http"}}],"env":[{{"name":"MODE","value":"fast"}}],"resources":{{"requests":{{"cpu":"100m","memory":"64Mi"}},"limits":{{"memory":"128Mi"}}}},"readinessProbe":{{"httpGet":{{"path":"/healthz","port":"http"}},"periodSeconds":5}}}}]}}}}"#
    )
}

struct Row {
    what: &'static str,
    format: &'static str,
    first: Duration,
    latency: Latencies,
    bytes: usize,
    parse: Duration,
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let clients = 16;
    let (objects, lists) = if quick { (1008, 5) } else { (10_000, 15) };
    let dir = kyb_testkit::temp_dir("bench-lists")?;
    let (mut server, port) = start_server(dir.path(), &[])?;
    let pid = server.id();
    admin_tls(dir.path())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut sender = connect(port).await?;
        // Pods wait for the namespace's default ServiceAccount.
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&mut sender, "/api/v1/namespaces/default/serviceaccounts/default", "application/json").await?.0 != 200 {
            anyhow::ensure!(Instant::now() < deadline, "no default ServiceAccount");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        create_all(port, "/api/v1/namespaces/default/configmaps", objects, clients, configmap).await?;
        create_all(port, "/api/v1/namespaces/default/pods", objects, clients, pod).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss_before = rss_mib(pid);

        let mut rows = Vec::new();
        for (what, path) in [
            ("ConfigMaps (1 KiB)", "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dbench"),
            ("pods", "/api/v1/namespaces/default/pods"),
        ] {
            for (format, accept) in [("JSON", "application/json"), ("protobuf", PROTOBUF)] {
                let (status, body, first) = get(&mut sender, path, accept).await?;
                anyhow::ensure!(status == 200, "{path} as {format} answered {status}");
                let mut samples = Vec::with_capacity(lists);
                let mut bytes = 0;
                for _ in 0..lists {
                    let (status, body, took) = get(&mut sender, path, accept).await?;
                    anyhow::ensure!(status == 200, "{path} as {format} answered {status}");
                    samples.push(took);
                    bytes = body.len();
                }
                let parse_started = Instant::now();
                let items = if format == "JSON" {
                    let list: serde_json::Value = serde_json::from_slice(&body)?;
                    list["items"].as_array().map_or(0, Vec::len)
                } else {
                    let list = kyb_protobuf::decode(&body)?;
                    list["items"].as_array().map_or(0, Vec::len)
                };
                let parse = parse_started.elapsed();
                anyhow::ensure!(items == objects, "{path} as {format}: {items} items");
                rows.push(Row { what, format, first, latency: Latencies::new(samples), bytes, parse });
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss_after = rss_mib(pid);

        println!();
        println!("| LIST of {objects} | format | first LIST | next {lists}: p50 / p99 | bytes | client parse (Rust) |");
        println!("|---|---|---|---|---|---|");
        for row in &rows {
            println!(
                "| {} | {} | {} | {} / {} | {:.2} MiB | {} |",
                row.what,
                row.format,
                ms(row.first),
                ms(row.latency.percentile(50.0)),
                ms(row.latency.percentile(99.0)),
                row.bytes as f64 / f64::from(1 << 20),
                ms(row.parse),
            );
        }
        println!();
        println!("server RSS before the lists {rss_before:.1} MiB, after (protobuf encodings kept) {rss_after:.1} MiB");
        anyhow::Ok(())
    })?;
    server.terminate()?;
    server.wait_exit(Duration::from_secs(30))?;
    Ok(())
}
