//! What `kubectl logs`, `exec` and `port-forward` cost on one node (see [`Node`]): the
//! real kubectl against a release `kyb server` and `kyb kubelet`, every byte through the
//! API server, the kubelet and containerd. `exec -- true` round trips one after another
//! (each a whole kubectl run, as a user types it); `logs -f` of a finished container's
//! 8 MiB log (below the 10 MiB rotation size); port-forward of a 64 MiB download and of
//! small requests, next to the same requests sent straight to the pod's address from
//! inside the node's network namespace.

use crate::pods::Node;
use crate::stats::{Latencies, ms};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BUSYBOX: &str = kyb_kubelet::images::BUSYBOX_IMAGE;

/// kubectl inside the node's namespace, as the admin.
fn kubectl(node: &Node) -> Command {
    let mut command = node.netns.command("kubectl");
    command.env("KUBECONFIG", node.dir.path().join("kubeconfig.yaml"));
    command
}

fn ok(output: Output, what: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn apply(node: &Node, manifest: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut child = kubectl(node)
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdin"))?
        .write_all(manifest.as_bytes())?;
    ok(child.wait_with_output()?, "kubectl apply")?;
    Ok(())
}

/// Waits (up to 2 min) until `jsonpath` of pod `name` prints `want`.
fn wait_pod(node: &Node, name: &str, jsonpath: &str, want: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let output = kubectl(node)
            .args(["get", "pod", name, "-o", &format!("jsonpath={jsonpath}")])
            .output()?;
        if output.status.success() && String::from_utf8_lossy(&output.stdout) == want {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "pod {name}: {jsonpath} never {want}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn pod(name: &str, restart: &str, script: &str) -> String {
    format!(
        r#"{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "{name}"}},
  "spec": {{"restartPolicy": "{restart}", "terminationGracePeriodSeconds": 1,
    "containers": [{{"name": "c", "image": "{BUSYBOX}", "command": ["sh", "-c", {script:?}]}}]}}}}"#
    )
}

/// A `kubectl port-forward` running until dropped, with its output kept open (it writes
/// a line per address it listens on; a closed pipe would end it).
struct Forward(Child, Option<std::io::BufReader<std::process::ChildStdout>>);

impl Drop for Forward {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Times `curl` fetching `url` (`-o /dev/null`) inside the node's namespace.
fn curl(node: &Node, url: &str) -> anyhow::Result<(Duration, u64)> {
    let mut command = node.netns.command("curl");
    let started = Instant::now();
    let output = command
        .args([
            "-sS",
            "--fail",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
            url,
        ])
        .output()?;
    let elapsed = started.elapsed();
    let bytes = ok(output, &format!("curl {url}"))?.trim().parse()?;
    Ok((elapsed, bytes))
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let node = Node::start("bench-streaming", true)?;
    ok(
        kubectl(&node)
            .args([
                "wait",
                "--for=condition=Ready",
                "node",
                "--all",
                "--timeout=60s",
            ])
            .output()?,
        "the node Ready",
    )?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !kubectl(&node)
        .args(["get", "serviceaccount", "default"])
        .output()?
        .status
        .success()
    {
        anyhow::ensure!(Instant::now() < deadline, "no default service account");
        std::thread::sleep(Duration::from_millis(200));
    }

    // exec: whole `kubectl exec -- true` runs, one after another.
    apply(&node, &pod("shell", "Always", "exec sleep 3600"))?;
    wait_pod(&node, "shell", "{.status.phase}", "Running")?;
    // A standalone kubelet serves a self-signed certificate until its serving CSR is
    // signed; the API server, verifying kubelets against the cluster CA, waits for that.
    let waited = Instant::now();
    let deadline = waited + Duration::from_secs(180);
    loop {
        let tried = kubectl(&node)
            .args(["exec", "shell", "--", "true"])
            .output()?;
        if tried.status.success() {
            break;
        }
        if Instant::now() > deadline {
            let said = node.kubelet.output();
            let certificate: Vec<&str> = said
                .lines()
                .filter(|l| l.contains("certificate") || l.contains("WARN") || l.contains("ERROR"))
                .collect();
            let csrs = kubectl(&node).args(["get", "csr", "-o", "wide"]).output()?;
            let nodes = kubectl(&node)
                .args(["get", "nodes", "-o", "wide"])
                .output()?;
            anyhow::bail!(
                "exec never worked ({}); the kubelet said: {certificate:#?}; CSRs: {}; nodes: {}",
                String::from_utf8_lossy(&tried.stderr).trim(),
                String::from_utf8_lossy(&csrs.stdout),
                String::from_utf8_lossy(&nodes.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "(exec first worked {:.0} s after the pod ran)",
        waited.elapsed().as_secs_f64()
    );
    let rounds = if quick { 20 } else { 100 };
    let mut execs = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        ok(
            kubectl(&node)
                .args(["exec", "shell", "--", "true"])
                .output()?,
            "kubectl exec",
        )?;
        execs.push(started.elapsed());
    }
    let execs = Latencies::new(execs);

    // logs -f of a finished container's 8 MiB (8192 lines of 1 KiB).
    apply(
        &node,
        &pod(
            "talker",
            "Never",
            "line=$(head -c 1023 /dev/zero | tr '\\0' a); yes \"$line\" | head -n 8192",
        ),
    )?;
    wait_pod(&node, "talker", "{.status.phase}", "Succeeded")?;
    let mut log_rates = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let output = kubectl(&node).args(["logs", "-f", "talker"]).output()?;
        let elapsed = started.elapsed();
        let bytes = ok(output, "kubectl logs -f")?.len();
        anyhow::ensure!(bytes == 8 << 20, "logs returned {bytes} bytes");
        log_rates.push(bytes as f64 / (1 << 20) as f64 / elapsed.as_secs_f64());
    }
    log_rates.sort_by(f64::total_cmp);

    // port-forward: a 64 MiB download and small requests, forwarded and direct.
    apply(
        &node,
        &pod(
            "web",
            "Always",
            "mkdir -p /www && echo ok > /www/small && dd if=/dev/zero of=/www/big bs=1M count=64 2>/dev/null && exec httpd -f -p 8080 -h /www",
        ),
    )?;
    wait_pod(&node, "web", "{.status.phase}", "Running")?;
    let pod_ip = ok(
        kubectl(&node)
            .args(["get", "pod", "web", "-o", "jsonpath={.status.podIP}"])
            .output()?,
        "the pod's IP",
    )?;
    let local = kyb_testkit::free_port()?;
    let mut forward = Forward(
        kubectl(&node)
            .args(["port-forward", "pod/web", &format!("{local}:8080")])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?,
        None,
    );
    {
        use std::io::BufRead;
        let stdout = forward
            .0
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let mut line = String::new();
        let mut reader = std::io::BufReader::new(stdout);
        reader.read_line(&mut line)?;
        anyhow::ensure!(
            line.starts_with("Forwarding from"),
            "port-forward said {line:?}"
        );
        forward.1 = Some(reader);
    }
    let forwarded = format!("http://127.0.0.1:{local}");
    let direct = format!("http://{pod_ip}:8080");
    let mut throughput = Vec::new();
    for (label, base) in [("forwarded", &forwarded), ("direct", &direct)] {
        let mut best = 0.0f64;
        for _ in 0..3 {
            let (elapsed, bytes) = curl(&node, &format!("{base}/big"))?;
            anyhow::ensure!(bytes == 64 << 20, "{label}: {bytes} bytes");
            best = best.max(bytes as f64 / (1 << 20) as f64 / elapsed.as_secs_f64());
        }
        let mut small = Vec::new();
        for _ in 0..rounds {
            small.push(curl(&node, &format!("{base}/small"))?.0);
        }
        throughput.push((label, best, Latencies::new(small)));
    }
    drop(forward);

    println!("\n## kubectl exec, logs and port-forward through the API server and the kubelet\n");
    println!("| measure | p50 | p99 |");
    println!("|---|---|---|");
    println!(
        "| `kubectl exec shell -- true` ({rounds} runs, whole kubectl) | {} | {} |",
        ms(execs.percentile(50.0)),
        ms(execs.percentile(99.0))
    );
    for (label, _, small) in &throughput {
        println!(
            "| `curl` of a 3-byte file, {label} ({rounds} runs, whole curl) | {} | {} |",
            ms(small.percentile(50.0)),
            ms(small.percentile(99.0))
        );
    }
    println!("\n| throughput | MiB/s |");
    println!("|---|---|");
    println!(
        "| `kubectl logs -f` of an 8 MiB log (median of 5) | {:.0} |",
        log_rates[log_rates.len() / 2]
    );
    for (label, best, _) in &throughput {
        println!("| 64 MiB download, {label} (best of 3) | {best:.0} |");
    }
    Ok(())
}
