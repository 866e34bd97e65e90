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

    /// The response head (lower-cased) of an upgrade request over HTTP/1.1; the upgraded
    /// connection is dropped after a moment.
    fn upgrade(&self, method: &str, headers: &[&str], path: &str) -> String {
        let mut extra = vec![
            "-i",
            "--http1.1",
            "-m",
            "3",
            "-X",
            method,
            "-H",
            "Connection: Upgrade",
        ];
        for header in headers {
            extra.extend(["-H", header]);
        }
        let output = self
            .curl(&Who::Certificate("admin"), &extra, path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).to_ascii_lowercase()
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
    let cluster = NodeCluster::start_with(&[
        "--container-log-max-size",
        "4Ki",
        "--container-log-max-files",
        "3",
    ]);
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
---
apiVersion: v1
kind: Pod
metadata:
  name: chatter
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: chat
    image: {BUSYBOX}
    command: ["sh", "-c", "i=0; while true; do echo chat-$i-0123456789012345678901234567890123456789012345678901234567890123456789; i=$((i+1)); sleep 0.05; done"]
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
    assert_eq!(configz["kubeletconfig"]["containerLogMaxFiles"], 3);
    assert_eq!(configz["kubeletconfig"]["containerLogMaxSize"], "4096");

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
    for escape in [
        "/logs/../etc/passwd",
        "/logs/%2e%2e/etc/passwd",
        "/logs/..%2fetc/passwd",
    ] {
        let output = kubelet
            .curl(&admin, &["--path-as-is", "-w", "\n%{http_code}"], escape)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            text.ends_with("\n404") && !text.contains("root:"),
            "{escape}: {text}"
        );
    }

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
        (404, "pod \"nope\" does not exist".to_string())
    );
    assert_eq!(
        kubelet.get(&admin, "/containerLogs/default/talker/other"),
        (
            404,
            "container \"other\" not found in pod \"talker\"".to_string()
        )
    );
    assert_eq!(
        kubelet.get(&admin, "/containerLogs/default/talker/talk?previous=true"),
        (
            400,
            "previous terminated container \"talk\" in pod \"talker\" not found".to_string()
        )
    );
    assert_eq!(
        kubelet
            .get(&admin, "/containerLogs/default/talker/talk?tailLines=-1")
            .0,
        422
    );

    // Rotation: the chatty container's log is renamed past 4Ki and reopened, at most
    // three files kept; a tail reads across the rotated file and the current one.
    let chatter = cluster.wait_for_pod("chatter", "running", |pod| {
        pod["status"]["phase"] == "Running"
    });
    let log_dir = cluster.kubeconfig().parent().unwrap().join(format!(
        "agent/logs/default_chatter_{}/chat",
        chatter["metadata"]["uid"].as_str().unwrap()
    ));
    let files = |dir: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let names = files(&log_dir);
        assert!(
            names.len() <= 3,
            "more files than --container-log-max-files: {names:?}"
        );
        if names.len() == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no rotation in {}: {names:?}",
            log_dir.display()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let current = std::fs::read_to_string(log_dir.join("0.log")).unwrap_or_default();
    let current_lines = current.lines().count();
    let (code, tail) = kubelet.get(
        &admin,
        &format!(
            "/containerLogs/default/chatter/chat?tailLines={}",
            current_lines + 20
        ),
    );
    assert_eq!(code, 200);
    let numbers: Vec<u64> = tail
        .lines()
        .filter_map(|l| l.strip_prefix("chat-")?.split('-').next()?.parse().ok())
        .collect();
    assert!(
        numbers.len() >= current_lines + 20,
        "{} lines",
        numbers.len()
    );
    assert!(
        numbers.windows(2).all(|w| w[1] == w[0] + 1),
        "lines missing across the rotation"
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
        (404, "pod does not exist".to_string())
    );
    let (code, text) = kubelet.get(&admin, "/exec/default/talker/talk?command=true");
    assert_eq!(
        (code, text.as_str()),
        (400, "you must specify at least 1 of stdin, stdout, stderr")
    );
    let head = kubelet.upgrade(
        "POST",
        &[
            "Upgrade: SPDY/3.1",
            "X-Stream-Protocol-Version: v4.channel.k8s.io",
        ],
        "/exec/default/talker/talk?command=true&output=1",
    );
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("x-stream-protocol-version: v4.channel.k8s.io"),
        "{head}"
    );
    let head = kubelet.upgrade(
        "POST",
        &[
            "Upgrade: SPDY/3.1",
            "X-Stream-Protocol-Version: portforward.k8s.io",
        ],
        "/portForward/default/talker",
    );
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("x-stream-protocol-version: portforward.k8s.io"),
        "{head}"
    );
    // A WebSocket client: the runtime accepts the key and the channel protocol.
    let head = kubelet.upgrade(
        "GET",
        &[
            "Upgrade: websocket",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Protocol: v4.channel.k8s.io",
        ],
        "/exec/default/talker/talk?command=true&output=1",
    );
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
        "{head}"
    );
}

#[test]
fn a_standalone_kubelet_bootstraps_its_serving_certificate_and_follows_logs_to_the_end_as_root() {
    let cluster = NodeCluster::start_with(&["--disable-agent"]);
    let kubelet = Kubelet {
        cluster: &cluster,
        pki: pki(&cluster),
    };
    // A service account allowed the kubelet's proxy subresource, and one allowed nothing.
    cluster.apply(
        r#"
apiVersion: v1
kind: ServiceAccount
metadata:
  name: scraper
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kubelet-reader
rules:
- apiGroups: [""]
  resources: ["nodes/proxy"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: scraper-kubelet-reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kubelet-reader
subjects:
- kind: ServiceAccount
  name: scraper
  namespace: default
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: prober
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kubelet-health
rules:
- apiGroups: [""]
  resources: ["nodes/healthz"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: prober-kubelet-health
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kubelet-health
subjects:
- kind: ServiceAccount
  name: prober
  namespace: default
"#,
    );
    let token = cluster.kubectl_ok(&["create", "token", "scraper"]);
    let scraper = Who::Token(token.trim());
    // Its certificate comes through a kubelet-serving CSR, approved and signed by the
    // cluster CA: once it is, curl verifies the server against the CA by the node's name.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = kubelet.get(&scraper, "/healthz");
        if answer == (200, "ok".to_string()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the kubelet serves no CA-signed certificate (last answer {answer:?}); CSRs: {}; node: {}",
            cluster
                .kubectl(&["get", "csr", "-o", "yaml"])
                .stdout
                .escape_ascii(),
            cluster
                .get_json(&["node", &cluster.node_name])
                .unwrap_or_default()["status"]["addresses"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let csrs = cluster.get_json(&["csr"]).unwrap();
    let serving = csrs["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|csr| csr["spec"]["signerName"] == "kubernetes.io/kubelet-serving")
        .expect("a kubelet-serving CSR");
    assert_eq!(
        serving["spec"]["username"],
        format!("system:node:{}", cluster.node_name)
    );
    assert!(
        serving["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Approved" && c["reason"] == "AutoApproved"),
        "{serving}"
    );
    // Without --client-ca-file, client certificates are not asked for: the admin's
    // certificate makes an anonymous request.
    assert_eq!(
        kubelet.get(&Who::Certificate("admin"), "/healthz"),
        (401, "Unauthorized".to_string())
    );
    // Fine-grained: nodes/healthz alone opens /healthz, not /pods.
    let token = cluster.kubectl_ok(&["create", "token", "prober"]);
    let prober = Who::Token(token.trim());
    assert_eq!(kubelet.get(&prober, "/healthz"), (200, "ok".to_string()));
    assert_eq!(
        kubelet.get(&prober, "/pods"),
        (
            403,
            "Forbidden (user=system:serviceaccount:default:prober, verb=get, resource=nodes, subresource=proxy)"
                .to_string()
        )
    );
    // Allowed nodes/proxy, not nodes/metrics.
    assert_eq!(
        kubelet.get(&scraper, "/metrics/probes"),
        (
            403,
            "Forbidden (user=system:serviceaccount:default:scraper, verb=get, resource=nodes, subresource=metrics)"
                .to_string()
        )
    );

    // A follower of a container that exits gets every line, then the end.
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: counter
spec:
  restartPolicy: Never
  containers:
  - name: count
    image: {BUSYBOX}
    command: ["sh", "-c", "sleep 2; for i in 1 2 3; do echo count-$i; sleep 1; done"]
"#
    ));
    cluster.wait_for_pod("counter", "running", |pod| {
        pod["status"]["phase"] == "Running"
    });
    let started = Instant::now();
    let output = kubelet
        .curl(
            &scraper,
            &["-N", "-m", "40"],
            "/containerLogs/default/counter/count?follow=true",
        )
        .output()
        .unwrap();
    assert!(output.status.success(), "curl: {:?}", output.status);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "count-1\ncount-2\ncount-3\n"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}
