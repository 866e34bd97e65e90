//! API server benchmark: a release `kyb server` on the embedded store, driven over HTTP/1.1
//! by this process (one connection per client, hyper's client connection API).
//!
//! Figures: creates/s and p50/p99 latency of 16 clients creating 10,000 ConfigMaps of
//! 1 KiB; LIST of those 10,000 objects (p50/p99 of 20 lists); 1,000 concurrent watchers
//! each receiving one event (p50/p99 delivery, from the write being sent); startup time to
//! /readyz; RSS of the server idle and after the 10,000 objects. Then the cost of security:
//! the same creates by a user with a bearer token whose rights come from RBAC (`edit` in a
//! namespace with a ResourceQuota), and pod creates through the whole admission chain
//! (ServiceAccount, LimitRanger, PodSecurity, Priority, DefaultTolerationSeconds,
//! ResourceQuota).

use crate::http::{
    TOKEN, TOKEN_TLS, admin_tls, connect, connect_with, path_str, request, request_as, rss_mib,
    send, start_server, token_file,
};
use crate::stats::{Latencies, ms};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::time::{Duration, Instant};

struct Sizes {
    objects: usize,
    clients: usize,
    lists: usize,
    watchers: usize,
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let sizes = if quick {
        Sizes {
            objects: 1000,
            clients: 16,
            lists: 5,
            watchers: 100,
        }
    } else {
        Sizes {
            objects: 10_000,
            clients: 16,
            lists: 20,
            watchers: 1000,
        }
    };
    let dir = kyb_testkit::temp_dir("bench-apiserver")?;
    let tokens = token_file(dir.path())?;
    let started = Instant::now();
    let (mut server, port) = start_server(dir.path(), &["--token-auth-file", path_str(&tokens)?])?;
    let ready = started.elapsed();
    let pid = server.id();
    admin_tls(dir.path())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Let the background OpenAPI generation finish before measuring idle memory.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let idle = rss_mib(pid);

        // Creates, in two halves: the second half's memory growth is the steady-state cost
        // of an object (the first also warms up the allocator and caches).
        let value = "x".repeat(1024);
        let per_client = sizes.objects / sizes.clients / 2;
        let mut samples = Vec::new();
        let mut elapsed = Duration::ZERO;
        let mut halfway = 0.0;
        for half in 0..2 {
        let begin = Instant::now();
        let mut tasks = Vec::new();
        for client in 0..sizes.clients {
            let value = value.clone();
            tasks.push(tokio::spawn(async move {
                let mut sender = connect(port).await?;
                let mut samples = Vec::with_capacity(per_client);
                for i in half * per_client..(half + 1) * per_client {
                    let body = format!(
                        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{client}-{i}"}},"data":{{"v":"{value}"}}}}"#
                    );
                    let t = Instant::now();
                    let (status, _) = request(&mut sender, "POST", "/api/v1/namespaces/default/configmaps", body.into()).await?;
                    samples.push(t.elapsed());
                    anyhow::ensure!(status == 201, "create answered {status}");
                }
                anyhow::Ok(samples)
            }));
        }
        for task in tasks {
            samples.extend(task.await??);
        }
        elapsed += begin.elapsed();
        if half == 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            halfway = rss_mib(pid);
        }
        }
        let creates = samples.len() as f64 / elapsed.as_secs_f64();
        let create_latency = Latencies::new(samples);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let loaded = rss_mib(pid);

        // Patches of the objects just created, each client its own: a strategic merge
        // patch of a label, then a server-side apply of the data (two managers).
        let mut patch_rates = Vec::new();
        for (kind, content_type) in [
            ("strategic merge patches", "application/strategic-merge-patch+json"),
            ("server-side applies", "application/apply-patch+yaml"),
        ] {
            let per_client = (sizes.objects / sizes.clients / 2).min(250);
            let begin = Instant::now();
            let mut tasks = Vec::new();
            for client in 0..sizes.clients {
                tasks.push(tokio::spawn(async move {
                    let mut sender = connect(port).await?;
                    let mut samples = Vec::with_capacity(per_client);
                    for i in 0..per_client {
                        let name = format!("cm-{client}-{i}");
                        let (path, body) = if content_type.contains("apply") {
                            (
                                format!("/api/v1/namespaces/default/configmaps/{name}?fieldManager=bench"),
                                format!("{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\"}},\"data\":{{\"applied\":\"{i}\"}}}}"),
                            )
                        } else {
                            (
                                format!("/api/v1/namespaces/default/configmaps/{name}"),
                                format!("{{\"metadata\":{{\"labels\":{{\"patched\":\"{i}\"}}}}}}"),
                            )
                        };
                        let t = Instant::now();
                        let (status, _) = request_as(&mut sender, "PATCH", &path, content_type, body.into()).await?;
                        samples.push(t.elapsed());
                        anyhow::ensure!(status == 200, "{content_type} answered {status}");
                    }
                    anyhow::Ok(samples)
                }));
            }
            let mut samples = Vec::new();
            for task in tasks {
                samples.extend(task.await??);
            }
            let rate = samples.len() as f64 / begin.elapsed().as_secs_f64();
            patch_rates.push((kind, samples.len(), rate, Latencies::new(samples)));
        }

        // Lists.
        let mut sender = connect(port).await?;
        let mut lists = Vec::new();
        let mut listed_bytes = 0;
        for _ in 0..sizes.lists {
            let t = Instant::now();
            let (status, body) = request(&mut sender, "GET", "/api/v1/namespaces/default/configmaps", Bytes::new()).await?;
            lists.push(t.elapsed());
            anyhow::ensure!(status == 200, "list answered {status}");
            listed_bytes = body.len();
        }
        if std::env::var("KYB_BENCH_VERBOSE").is_ok() {
            eprintln!("lists: {lists:?}");
        }
        let list_latency = Latencies::new(lists);

        // Watchers.
        let revision = {
            let (_, body) = request(&mut sender, "GET", "/api/v1/namespaces/default/configmaps?limit=1", Bytes::new()).await?;
            let list: serde_json::Value = serde_json::from_slice(&body)?;
            list["metadata"]["resourceVersion"].as_str().unwrap_or("0").to_string()
        };
        let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(sizes.watchers);
        let mut watchers = Vec::new();
        for _ in 0..sizes.watchers {
            let ready_tx = ready_tx.clone();
            let path = format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={revision}&fieldSelector=metadata.name%3Dwatched");
            watchers.push(tokio::spawn(async move {
                let mut sender = connect(port).await?;
                sender.ready().await?;
                let request = hyper::Request::builder()
                    .uri(path)
                    .header("host", "127.0.0.1")
                    .body(Full::new(Bytes::new()))?;
                let response = sender.send_request(request).await?;
                let mut body = response.into_body();
                let _ = ready_tx.send(()).await;
                loop {
                    match body.frame().await {
                        Some(Ok(frame)) if frame.data_ref().is_some_and(|d| !d.is_empty()) => return anyhow::Ok(Instant::now()),
                        Some(Ok(_)) => continue,
                        Some(Err(error)) => return Err(error.into()),
                        None => anyhow::bail!("watch ended"),
                    }
                }
            }));
        }
        for _ in 0..sizes.watchers {
            ready_rx.recv().await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let watched_rss = rss_mib(pid);
        let sent = Instant::now();
        let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"watched"}}"#;
        let (status, _) = request(&mut sender, "POST", "/api/v1/namespaces/default/configmaps", body.into()).await?;
        anyhow::ensure!(status == 201, "create answered {status}");
        if std::env::var("KYB_BENCH_VERBOSE").is_ok() {
            eprintln!("the watched create took {:?}", sent.elapsed());
        }
        let mut deliveries = Vec::new();
        for watcher in watchers {
            let received = tokio::time::timeout(Duration::from_secs(30), watcher).await???;
            deliveries.push(received.duration_since(sent));
        }
        let delivery = Latencies::new(deliveries);

        let security = security(port, &sizes).await?;

        println!();
        println!("| figure | value |");
        println!("|---|---|");
        println!("| start to ready (kubeconfig written) | {} |", ms(ready));
        println!("| RSS idle | {idle:.1} MiB |");
        println!("| {} creates, {} clients | {creates:.0} creates/s, p50 {}, p99 {} |", sizes.objects, sizes.clients, ms(create_latency.percentile(50.0)), ms(create_latency.percentile(99.0)));
        let object_json = listed_bytes as f64 / sizes.objects as f64 / 1024.0;
        let marginal = (loaded - halfway) * 1024.0 / (sizes.objects / 2) as f64;
        println!("| RSS after {} ConfigMaps of 1 KiB | {loaded:.1} MiB; second half {marginal:.2} KiB per object, of which {object_json:.2} KiB is its JSON |", sizes.objects);
        println!("| LIST of {} ({:.1} MiB) | p50 {}, p99 {} |", sizes.objects, listed_bytes as f64 / (1 << 20) as f64, ms(list_latency.percentile(50.0)), ms(list_latency.percentile(99.0)));
        for (kind, count, rate, latency) in &patch_rates {
            println!("| {count} {kind}, {} clients | {rate:.0}/s ({:.2}× creates), p50 {}, p99 {} |", sizes.clients, rate / creates, ms(latency.percentile(50.0)), ms(latency.percentile(99.0)));
        }
        println!("| {} watchers, one event each | p50 {}, p99 {} (RSS with the watchers {watched_rss:.1} MiB) |", sizes.watchers, ms(delivery.percentile(50.0)), ms(delivery.percentile(99.0)));
        for (what, count, rate, latency) in &security {
            println!("| {count} {what}, {} clients | {rate:.0}/s ({:.2}× admin ConfigMap creates), p50 {}, p99 {} |", sizes.clients, rate / creates, ms(latency.percentile(50.0)), ms(latency.percentile(99.0)));
        }
        anyhow::Ok(())
    })?;
    server.terminate()?;
    server.wait_exit(Duration::from_secs(30))?;
    Ok(())
}

/// Creates by an RBAC user with a bearer token, in a namespace with a quota, a LimitRange
/// and Pod Security labels: ConfigMaps (authentication, RBAC and quota), then pods (the
/// whole admission chain). The pods name their node (`spec.nodeName`), as a kubelet's
/// static pods or a pre-bound workload do: `kyb server` runs the scheduler too, and
/// unschedulable pods (this cluster has no nodes) would have it attempt each one — a
/// status patch and a FailedScheduling event per pod, which halved the rate this row is
/// about. Each: (what, count, rate, latencies).
async fn security(
    port: u16,
    sizes: &Sizes,
) -> anyhow::Result<Vec<(&'static str, usize, f64, Latencies)>> {
    let mut admin = connect(port).await?;
    let setup = [
        (
            "/api/v1/namespaces",
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"secure","labels":{"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/warn":"restricted"}}}"#,
        ),
        (
            "/api/v1/namespaces/secure/limitranges",
            r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"10m","memory":"16Mi"},"default":{"cpu":"100m","memory":"64Mi"}}]}}"#,
        ),
        (
            "/api/v1/namespaces/secure/resourcequotas",
            r#"{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"room"},"spec":{"hard":{"pods":"100000","configmaps":"100000","requests.cpu":"1000"}}}"#,
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/secure/rolebindings",
            r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bench-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bench"}]}"#,
        ),
    ];
    for (path, body) in setup {
        let (status, answer) = request(&mut admin, "POST", path, body.into()).await?;
        anyhow::ensure!(
            status == 201,
            "setup {path} answered {status}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    // The quota counts once its status is filled in.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = request(
            &mut admin,
            "GET",
            "/api/v1/namespaces/secure/resourcequotas/room",
            Bytes::new(),
        )
        .await?;
        let quota: serde_json::Value = serde_json::from_slice(&body)?;
        if quota["status"]["used"].is_object() {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the quota status was never filled in"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let per_client = sizes.objects / sizes.clients / 4;
    let mut results = Vec::new();
    for (what, path) in [
        (
            "ConfigMap creates by an RBAC user (token, quota)",
            "/api/v1/namespaces/secure/configmaps",
        ),
        (
            "pod creates through the admission chain",
            "/api/v1/namespaces/secure/pods",
        ),
    ] {
        let begin = Instant::now();
        let mut tasks = Vec::new();
        for client in 0..sizes.clients {
            tasks.push(tokio::spawn(async move {
                let mut sender = connect_with(port, &TOKEN_TLS).await?;
                let mut samples = Vec::with_capacity(per_client);
                for i in 0..per_client {
                    let body = if path.ends_with("pods") {
                        format!(r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"pod-{client}-{i}"}},"spec":{{"nodeName":"bench-node","containers":[{{"name":"app","image":"registry.local/app:1"}}]}}}}"#)
                    } else {
                        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{client}-{i}"}},"data":{{"v":"{}"}}}}"#, "x".repeat(1024))
                    };
                    let t = Instant::now();
                    let (status, answer) = send(&mut sender, "POST", path, "application/json", Some(TOKEN), body.into()).await?;
                    samples.push(t.elapsed());
                    anyhow::ensure!(status == 201, "{path} answered {status}: {}", String::from_utf8_lossy(&answer));
                }
                anyhow::Ok(samples)
            }));
        }
        let mut samples = Vec::new();
        for task in tasks {
            samples.extend(task.await??);
        }
        let rate = samples.len() as f64 / begin.elapsed().as_secs_f64();
        results.push((what, samples.len(), rate, Latencies::new(samples)));
    }
    Ok(results)
}
