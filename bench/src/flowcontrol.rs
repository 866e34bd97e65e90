//! The cost of API Priority and Fairness: creates/s of 16 clients creating 1 KiB
//! ConfigMaps against a release `kyb server` with APF on (the default) and off
//! (`--enable-priority-and-fairness=false`, the max-in-flight limits instead), as a user
//! with a bearer token whose requests are classified to the `global-default` level and
//! queued there, and as the admin (`system:masters`, the exempt level). The servers run one
//! after the other, alternating, twice each; the best round of each mode is reported.

use crate::http::{
    TOKEN, TOKEN_TLS, admin_tls, connect, connect_with, path_str, request, send, start_server,
    token_file,
};
use crate::stats::{Latencies, ms};
use std::time::{Duration, Instant};

const CLIENTS: usize = 16;

/// One round's figures: (creates/s, latencies) for the token user, then the admin.
type Round = ((f64, Latencies), (f64, Latencies));

pub fn run(quick: bool) -> anyhow::Result<()> {
    let objects = if quick { 1600 } else { 8000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut best: [Option<Round>; 2] = [None, None];
    for _ in 0..2 {
        for (slot, apf) in [(0, true), (1, false)] {
            let round = runtime.block_on(round(apf, objects))?;
            let better = best[slot]
                .as_ref()
                .is_none_or(|b| round.0.0 + round.1.0 > b.0.0 + b.1.0);
            if better {
                best[slot] = Some(round);
            }
        }
    }
    let [Some(on), Some(off)] = best else {
        anyhow::bail!("no round finished");
    };
    println!();
    println!(
        "| {objects} ConfigMap creates, {CLIENTS} clients | APF on | APF off (max-in-flight) | on / off |"
    );
    println!("|---|---|---|---|");
    for (what, on, off) in [
        ("token user (global-default level)", &on.0, &off.0),
        ("admin (exempt level)", &on.1, &off.1),
    ] {
        println!(
            "| {what} | {:.0}/s, p50 {}, p99 {} | {:.0}/s, p50 {}, p99 {} | {:.2} |",
            on.0,
            ms(on.1.percentile(50.0)),
            ms(on.1.percentile(99.0)),
            off.0,
            ms(off.1.percentile(50.0)),
            ms(off.1.percentile(99.0)),
            on.0 / off.0
        );
    }
    Ok(())
}

/// Starts a server with APF on or off, creates the objects as the token user and then as
/// the admin, and stops it.
async fn round(apf: bool, objects: usize) -> anyhow::Result<Round> {
    let dir = kyb_testkit::temp_dir("bench-apf")?;
    let tokens = token_file(dir.path())?;
    let apf = format!("--enable-priority-and-fairness={apf}");
    let (mut server, port) =
        start_server(dir.path(), &[&apf, "--token-auth-file", path_str(&tokens)?])?;
    admin_tls(dir.path())?;
    let mut admin = connect(port).await?;
    let binding = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bench-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bench"}]}"#;
    let (status, _) = request(
        &mut admin,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        binding.into(),
    )
    .await?;
    anyhow::ensure!(status == 201, "the role binding answered {status}");
    // Let the start-up work (OpenAPI, the controllers' first passes) settle.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let user = creates(port, objects, true).await?;
    let admin = creates(port, objects, false).await?;
    server.terminate()?;
    server.wait_exit(Duration::from_secs(30))?;
    Ok((user, admin))
}

async fn creates(port: u16, objects: usize, token: bool) -> anyhow::Result<(f64, Latencies)> {
    let per_client = objects / CLIENTS;
    let prefix = if token { "user" } else { "admin" };
    let begin = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        tasks.push(tokio::spawn(async move {
            let mut sender = if token {
                connect_with(port, &TOKEN_TLS).await?
            } else {
                connect(port).await?
            };
            let mut samples = Vec::with_capacity(per_client);
            for i in 0..per_client {
                let body = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{prefix}-{client}-{i}"}},"data":{{"v":"{}"}}}}"#,
                    "x".repeat(1024)
                );
                let t = Instant::now();
                let bearer = token.then_some(TOKEN);
                let (status, answer) = send(
                    &mut sender,
                    "POST",
                    "/api/v1/namespaces/default/configmaps",
                    "application/json",
                    bearer,
                    body.into(),
                )
                .await?;
                samples.push(t.elapsed());
                anyhow::ensure!(
                    status == 201,
                    "create answered {status}: {}",
                    String::from_utf8_lossy(&answer)
                );
            }
            anyhow::Ok(samples)
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await??);
    }
    let rate = samples.len() as f64 / begin.elapsed().as_secs_f64();
    Ok((rate, Latencies::new(samples)))
}
