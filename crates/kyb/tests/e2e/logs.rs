//! `kubectl logs` and the proxy subresources on a real node (see [`crate::node`]): the
//! API server reaches the kubelet's API on 10250 with its kubelet client certificate,
//! and pods and services directly. Logs are followed as they are written and end with the
//! container, `--tail --timestamps`, `--previous` after a crash, init containers;
//! `nodes/proxy` to the kubelet, `pods/proxy` and `services/proxy` to busybox httpd. Each
//! test needs root (containers, network namespaces).

use crate::node::{BUSYBOX, NodeCluster, container_status};
use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn logs_are_followed_tailed_and_read_from_previous_and_init_containers_as_root() {
    let cluster = NodeCluster::start();
    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: talker}}
spec:
  restartPolicy: Never
  initContainers:
  - name: setup
    image: {BUSYBOX}
    command: ["sh", "-c", "echo init done"]
  containers:
  - name: app
    image: {BUSYBOX}
    command: ["sh", "-c", "for i in 1 2 3 4 5; do echo line $i; sleep 2; done"]
---
apiVersion: v1
kind: Pod
metadata: {{name: crasher}}
spec:
  containers:
  - name: c
    image: {BUSYBOX}
    command: ["sh", "-c", "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo attempt $n; exit 1"]
    volumeMounts: [{{name: data, mountPath: /data}}]
  volumes: [{{name: data, emptyDir: {{}}}}]
"#
    ));
    // A container that never starts has no log yet: the kubelet's reason, passed on.
    cluster.apply(
        r#"
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  containers:
  - name: c
    image: registry.invalid/no/such:image
"#,
    );
    cluster.wait_for_pod("never", "waiting", |pod| {
        container_status(pod, "c").is_some_and(|c| c["state"]["waiting"].is_object())
    });
    let waiting = cluster.kubectl(&["logs", "never"]);
    assert!(!waiting.status.success());
    let error = String::from_utf8_lossy(&waiting.stderr);
    assert!(
        error.contains("container \"c\" in pod \"never\" is waiting to start: "),
        "{error}"
    );

    cluster.wait_for_pod("talker", "app running", |pod| {
        container_status(pod, "app").is_some_and(|c| c["state"]["running"].is_object())
    });

    // Followed: each line arrives as the container writes it (two seconds apart), and
    // kubectl ends when the container does.
    let mut follow = cluster
        .command("kubectl")
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(["logs", "-f", "talker", "-c", "app"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = follow.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .map(|line| (line, Instant::now()))
            .collect::<Vec<_>>()
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = follow.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl logs -f did not end with the container"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let lines = reader.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut follow.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "kubectl logs -f failed: {stderr}");
    let texts: Vec<&str> = lines.iter().map(|(line, _)| line.as_str()).collect();
    assert_eq!(texts, ["line 1", "line 2", "line 3", "line 4", "line 5"]);
    let spread = lines[4].1 - lines[0].1;
    assert!(
        spread >= Duration::from_secs(3),
        "the lines arrived together ({spread:?} apart): the log was not streamed"
    );

    cluster.wait_for_pod("talker", "Succeeded", |pod| {
        pod["status"]["phase"] == "Succeeded"
    });
    // The last three lines, each after its RFC 3339 time.
    let tail = cluster.kubectl_ok(&["logs", "talker", "-c", "app", "--tail=3", "--timestamps"]);
    let tail: Vec<&str> = tail.lines().collect();
    assert_eq!(tail.len(), 3, "{tail:?}");
    for (line, expected) in tail.iter().zip(["line 3", "line 4", "line 5"]) {
        let (time, text) = line.split_once(' ').unwrap();
        assert!(time.parse::<jiff::Timestamp>().is_ok(), "{line}");
        assert_eq!(text, expected);
    }
    // An init container's log; no previous instance of a container that never restarted.
    assert_eq!(
        cluster.kubectl_ok(&["logs", "talker", "-c", "setup"]),
        "init done\n"
    );
    assert_eq!(
        cluster.kubectl_ok(&[
            "logs",
            "talker",
            "-c",
            "setup",
            "--insecure-skip-tls-verify-backend"
        ]),
        "init done\n"
    );
    let previous = cluster.kubectl(&["logs", "talker", "-c", "app", "--previous"]);
    assert!(!previous.status.success());
    let error = String::from_utf8_lossy(&previous.stderr);
    assert!(
        error.contains("previous terminated container \"app\" in pod \"talker\" not found"),
        "{error}"
    );
    // The API server's own check: which container, when the pod has several.
    let unnamed = cluster.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/talker/log?container=nope",
    ]);
    assert!(!unnamed.status.success());
    assert!(
        String::from_utf8_lossy(&unnamed.stderr)
            .contains("container nope is not valid for pod talker"),
        "{}",
        String::from_utf8_lossy(&unnamed.stderr)
    );

    // After a crash: the previous instance's log, counted in an emptyDir that outlives it.
    let pod = cluster.wait_for_pod("crasher", "restarted", |pod| {
        container_status(pod, "c").is_some_and(|c| c["restartCount"].as_i64() >= Some(1))
    });
    let restarts = container_status(&pod, "c").unwrap()["restartCount"]
        .as_i64()
        .unwrap();
    let previous = cluster.kubectl_ok(&["logs", "crasher", "--previous"]);
    let attempt: i64 = previous
        .trim()
        .strip_prefix("attempt ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an attempt's log: {previous:?}"));
    assert!(
        (1..=restarts + 1).contains(&attempt),
        "attempt {attempt} after {restarts} restarts"
    );
}

#[test]
fn proxies_reach_the_kubelet_pods_and_services_as_root() {
    let cluster = NodeCluster::start();
    let node = cluster.node_name.clone();
    // The kubelet, through nodes/proxy, with the API server's kubelet client certificate.
    let healthz = cluster.kubectl_ok(&[
        "get",
        "--raw",
        &format!("/api/v1/nodes/{node}/proxy/healthz"),
    ]);
    assert_eq!(healthz, "ok");
    let configz = cluster.kubectl_ok(&[
        "get",
        "--raw",
        &format!("/api/v1/nodes/{node}/proxy/configz"),
    ]);
    let configz: serde_json::Value = serde_json::from_str(&configz).unwrap();
    assert!(configz["kubeletconfig"].is_object(), "{configz}");

    cluster.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: web, labels: {{app: web}}}}
spec:
  containers:
  - name: httpd
    image: {BUSYBOX}
    command: ["httpd", "-f", "-p", "8080", "-h", "/etc"]
    ports: [{{containerPort: 8080}}]
    readinessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 80, targetPort: 8080}}]
"#
    ));
    cluster.wait_for_pod("web", "Ready", |pod| {
        crate::node::condition(pod, "Ready") == Some("True")
    });
    // The kubelet lists it.
    let pods = cluster.kubectl_ok(&["get", "--raw", &format!("/api/v1/nodes/{node}/proxy/pods")]);
    assert!(pods.contains("\"name\":\"web\""), "{pods}");

    // The pod: its first declared port, or the one named.
    for path in [
        "/api/v1/namespaces/default/pods/web/proxy/hostname",
        "/api/v1/namespaces/default/pods/web:8080/proxy/hostname",
        "/api/v1/namespaces/default/pods/http:web:8080/proxy/hostname",
    ] {
        assert_eq!(
            cluster.kubectl_ok(&["get", "--raw", path]).trim(),
            "web",
            "{path}"
        );
    }
    // The service: by port name or number, once its endpoint is ready.
    cluster.wait_for("the service's endpoint", crate::node::POD_WAIT, |cluster| {
        let output = cluster.kubectl(&[
            "get",
            "--raw",
            "/api/v1/namespaces/default/services/web:http/proxy/hostname",
        ]);
        (output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "web")
            .then_some(())
    });
    let by_number = cluster.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:80/proxy/hostname",
    ]);
    assert_eq!(by_number.trim(), "web");
    // Kubernetes' errors where there is nothing to reach.
    let missing = cluster.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:81/proxy/hostname",
    ]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("no service port 81 found for service \"web\""),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    // A file the pod does not have: the pod's own 404, passed through.
    let absent = cluster.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/proxy/no-such-file",
    ]);
    assert!(!absent.status.success());
}
