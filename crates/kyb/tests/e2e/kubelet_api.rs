//! The node agent's own API (kubelet's port 10250) on a real node: TLS with a serving
//! certificate from the cluster CA, clients authenticated (certificates, bearer tokens)
//! and authorized through the API server, the pods, health, configuration, metrics and
//! node log endpoints, container logs (tail, follow, previous) and the streaming endpoints
//! up to the runtime's upgrade. Requests are made with curl inside the node's namespace.

use crate::node::{BUSYBOX, NodeCluster};
use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Who a request is from.
enum Who<'a> {
    Anonymous,
    /// A client certificate `<pki>/<name>.crt`/`.key`.
    Certificate(&'a str),
    Token(&'a str),
}

struct Kubelet<'a> {
    cluster: &'a NodeCluster,
    pki: PathBuf,
}

impl Kubelet<'_> {
    fn curl(&self, who: &Who<'_>, extra: &[&str], path: &str) -> std::process::Command {
        let mut command = self.cluster.command("curl");
        command.args(["-s", "-m", "10"]);
        match who {
            Who::Anonymous => {}
            Who::Certificate(name) => {
                command
                    .arg("--cert")
                    .arg(self.pki.join(format!("{name}.crt")))
                    .arg("--key")
                    .arg(self.pki.join(format!("{name}.key")));
            }
            Who::Token(token) => {
                command.args(["-H", &format!("Authorization: Bearer {token}")]);
            }
        }
        // The certificate names the node: reached by its name, verified against the CA.
        let node = &self.cluster.node_name;
        command
            .arg("--cacert")
            .arg(self.pki.join("ca.crt"))
            .args(["--resolve", &format!("{node}:10250:127.0.0.1")])
            .args(extra)
            .arg(format!("https://{node}:10250{path}"));
        command
    }

    /// The status code and body of a request.
    fn get(&self, who: &Who<'_>, path: &str) -> (u16, String) {
        let output = self
            .curl(who, &["-w", "\n%{http_code}"], path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        (code.trim().parse().unwrap_or(0), body.to_string())
    }
}

fn pki(cluster: &NodeCluster) -> PathBuf {
    cluster.kubeconfig().parent().unwrap().join("pki")
}

fn wait_until(what: &str, mut probe: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !probe() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_kubelet_api_authenticates_authorizes_and_serves_logs_pods_and_metrics_as_root() {
    let cluster = NodeCluster::start();
    let pki = pki(&cluster);
    // A user the API server knows but grants nothing on nodes.
    kyb_pki::ClientIssuer::open(&pki)
        .unwrap()
        .client("eve", "eve", &["developers"])
        .unwrap();
    let kubelet = Kubelet {
        cluster: &cluster,
        pki: pki.clone(),
    };
    let node = cluster.get_json(&["node", &cluster.node_name]).unwrap();
    assert_eq!(
        node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
        10250
    );

    // Authentication and authorization.
    assert_eq!(
        kubelet.get(&Who::Anonymous, "/healthz"),
        (401, "Unauthorized".to_string())
    );
    assert_eq!(
        kubelet.get(&Who::Certificate("eve"), "/pods"),
        (
            403,
            "Forbidden (user=eve, verb=get, resource=nodes, subresource=proxy)".to_string()
        )
    );
    let token = cluster.kubectl_ok(&["create", "token", "default"]);
    assert_eq!(
        kubelet.get(&Who::Token(token.trim()), "/metrics"),
        (
            403,
            "Forbidden (user=system:serviceaccount:default:default, verb=get, resource=nodes, subresource=metrics)"
                .to_string()
        )
    );
    assert_eq!(
        kubelet.get(&Who::Token("not-a-token"), "/healthz"),
        (401, "Unauthorized".to_string())
    );
    let admin = Who::Certificate("admin");
    assert_eq!(kubelet.get(&admin, "/healthz"), (200, "ok".to_string()));

    // A pod writing a line a second, with a readiness probe counted by the prober.
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: talker
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: talk
    image: {BUSYBOX}
    command: ["sh", "-c", "i=0; while true; do echo line-$i; echo err-$i >&2; i=$((i+1)); sleep 1; done"]
    readinessProbe:
      exec:
        command: ["true"]
      periodSeconds: 1
"#
    ));
    cluster.wait_for_pod("talker", "ready", |pod| {
        crate::node::condition(pod, "Ready") == Some("True")
    });

    let (code, pods) = kubelet.get(&admin, "/pods");
    assert_eq!(code, 200, "{pods}");
    let pods: serde_json::Value = serde_json::from_str(&pods).unwrap();
    assert_eq!(pods["kind"], "PodList");
    assert!(
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["metadata"]["name"] == "talker"),
        "{pods}"
    );
    let (code, configz) = kubelet.get(&admin, "/configz");
    assert_eq!(code, 200);
    let configz: serde_json::Value = serde_json::from_str(&configz).unwrap();
    assert_eq!(configz["kubeletconfig"]["port"], 10250);
    assert_eq!(configz["kubeletconfig"]["containerLogMaxFiles"], 5);

    wait_until("the readiness probe counted", || {
        let (code, text) = kubelet.get(&admin, "/metrics/probes");
        code == 200
            && text.lines().any(|l| {
                l.starts_with(
                    "prober_probe_total{container=\"talk\",namespace=\"default\",pod=\"talker\"",
                ) && l.contains("probe_type=\"Readiness\",result=\"successful\"")
            })
    });
    let (code, metrics) = kubelet.get(&admin, "/metrics");
    assert_eq!(code, 200);
    assert!(metrics.contains(&format!(
        "kubelet_node_name{{node=\"{}\"}} 1",
        cluster.node_name
    )));
    assert!(metrics.contains("kubelet_running_containers{container_state=\"running\"} "));
    assert!(
        metrics.contains("kubelet_pod_start_duration_seconds_count 1\n")
            || metrics.contains("kubelet_pod_start_duration_seconds_count 2\n"),
        "{metrics}"
    );
    let running_pods = metrics
        .lines()
        .find_map(|l| l.strip_prefix("kubelet_running_pods "))
        .and_then(|n| n.parse::<u32>().ok());
    assert!(running_pods.is_some_and(|n| n >= 1), "{metrics}");
    let (code, listing) = kubelet.get(&admin, "/logs/");
    assert_eq!(code, 200);
    assert!(listing.contains("<pre>"), "{listing}");
    assert_eq!(kubelet.get(&admin, "/logs/../etc/passwd").0, 404);

    // Container logs: tail, timestamps, stderr merged, the errors kubelet gives.
    wait_until("three lines logged", || {
        kubelet
            .get(&admin, "/containerLogs/default/talker/talk")
            .1
            .contains("line-2")
    });
    let (code, tail) = kubelet.get(
        &admin,
        "/containerLogs/default/talker/talk?tailLines=2&timestamps=true",
    );
    assert_eq!(code, 200);
    let lines: Vec<&str> = tail.lines().collect();
    assert_eq!(lines.len(), 2, "{tail}");
    assert!(
        lines
            .iter()
            .all(|l| l.len() > 20 && l.as_bytes()[4] == b'-' && l.contains("Z ")),
        "{tail}"
    );
    let (_, all) = kubelet.get(&admin, "/containerLogs/default/talker/talk");
    assert!(
        all.contains("line-0\nerr-0\n") || all.contains("err-0\nline-0\n"),
        "{all}"
    );
    assert_eq!(
        kubelet.get(&admin, "/containerLogs/default/nope/talk"),
        (404, "pod \"nope\" does not exist\n".to_string())
    );
    assert_eq!(
        kubelet.get(&admin, "/containerLogs/default/talker/other"),
        (
            404,
            "container \"other\" not found in pod \"talker\"\n".to_string()
        )
    );
    assert_eq!(
        kubelet.get(&admin, "/containerLogs/default/talker/talk?previous=true"),
        (
            400,
            "previous terminated container \"talk\" in pod \"talker\" not found\n".to_string()
        )
    );
    assert_eq!(
        kubelet
            .get(&admin, "/containerLogs/default/talker/talk?tailLines=-1")
            .0,
        422
    );

    // Following: lines arrive as they are written.
    let mut follow = kubelet
        .curl(
            &admin,
            &["-N", "-m", "30"],
            "/containerLogs/default/talker/talk?follow=true&tailLines=0",
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(follow.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let started = Instant::now();
    let mut later = String::new();
    while later.is_empty() || later == first {
        later.clear();
        reader.read_line(&mut later).unwrap();
        assert!(!later.is_empty(), "the follow ended early after {first:?}");
    }
    assert!(
        first.starts_with("line-") || first.starts_with("err-"),
        "{first:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let _ = follow.kill();
    let _ = follow.wait();

    // Streaming: kubelet's refusals, then an exec upgraded by the runtime.
    assert_eq!(
        kubelet.get(&admin, "/exec/default/nope/talk?command=true&output=1"),
        (404, "pod does not exist\n".to_string())
    );
    let (code, text) = kubelet.get(&admin, "/exec/default/talker/talk?command=true");
    assert_eq!(
        (code, text.as_str()),
        (
            400,
            "you must specify at least 1 of stdin, stdout, stderr\n"
        )
    );
    let upgrade = kubelet
        .curl(
            &admin,
            &[
                "-i",
                "--http1.1",
                "-m",
                "3",
                "-X",
                "POST",
                "-H",
                "Connection: Upgrade",
                "-H",
                "Upgrade: SPDY/3.1",
                "-H",
                "X-Stream-Protocol-Version: v4.channel.k8s.io",
            ],
            "/exec/default/talker/talk?command=true&output=1",
        )
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&upgrade.stdout);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("x-stream-protocol-version: v4.channel.k8s.io"),
        "{head}"
    );
}
