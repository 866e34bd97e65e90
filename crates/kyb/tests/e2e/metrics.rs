//! The built-in resource metrics API (`metrics.k8s.io/v1beta1`) inside `kyb server`: its
//! scraper reads `/metrics/resource` from a node's kubelet endpoint — here a test kubelet
//! on loopback HTTPS whose counters grow at rates the test sets, so every figure is known
//! — and `kubectl top nodes`, `kubectl top pods --containers`, raw reads, selectors,
//! errors, discovery, the APIService and the reader role are checked against them; and the
//! HorizontalPodAutoscaler scales a Deployment up on that CPU and back down once it stops.

use crate::cluster::{Cluster, rows};
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::within;
use crate::webhook_server::{TlsStream, accept_tls, respond};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Two scrapes (15 s apart) are needed before usage is known; some slack on a busy machine.
const METRICS_WAIT: Duration = Duration::from_secs(90);

/// A container's CPU rate (cores) and working set (bytes).
#[derive(Clone, Copy)]
struct Rate {
    cores: f64,
    memory: u64,
}

/// What the test kubelet reports: the node's rates and each container's, keyed by
/// (namespace, pod, container); the cumulative counters it has accumulated.
struct Counters {
    node: Rate,
    containers: HashMap<(String, String, String), Rate>,
    /// Cumulative CPU seconds per key ("" for the node), and when they were last advanced.
    cumulative: HashMap<(String, String, String), f64>,
    last_ms: Option<u128>,
}

impl Counters {
    /// Advances every counter to now at its rate; the text of `/metrics/resource`.
    fn render(&mut self) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let elapsed = self
            .last_ms
            .map_or(0.0, |last| (now - last) as f64 / 1000.0);
        self.last_ms = Some(now);
        let node_key = (String::new(), String::new(), String::new());
        *self.cumulative.entry(node_key.clone()).or_insert(1.0) += self.node.cores * elapsed;
        let mut text = String::from(
            "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds\n# TYPE node_cpu_usage_seconds_total counter\n",
        );
        text += &format!(
            "node_cpu_usage_seconds_total {} {now}\nnode_memory_working_set_bytes {} {now}\n",
            self.cumulative[&node_key], self.node.memory
        );
        let mut keys: Vec<_> = self.containers.keys().cloned().collect();
        keys.sort();
        for key in keys {
            let rate = self.containers[&key];
            let total = self.cumulative.entry(key.clone()).or_insert(0.0);
            *total += rate.cores * elapsed;
            let (namespace, pod, container) = &key;
            let labels =
                format!("container=\"{container}\",namespace=\"{namespace}\",pod=\"{pod}\"");
            text += &format!(
                "container_cpu_usage_seconds_total{{{labels}}} {total} {now}\ncontainer_memory_working_set_bytes{{{labels}}} {} {now}\ncontainer_start_time_seconds{{{labels}}} 1.7e+09\n",
                rate.memory
            );
        }
        text + "resource_scrape_error 0\n"
    }
}

/// A kubelet's `/metrics/resource` on loopback HTTPS (any other path is 404).
struct MetricsKubelet {
    port: u16,
    counters: Arc<Mutex<Counters>>,
    scrapes: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
}

impl MetricsKubelet {
    /// Serves with a certificate from `cluster`'s CA, which the API server verifies.
    fn start(cluster: &Cluster, node: Rate) -> MetricsKubelet {
        let sans = kyb_pki::Sans {
            dns: vec!["localhost".to_string()],
            ips: vec![IpAddr::from([127, 0, 0, 1])],
        };
        let issuer = kyb_pki::ClientIssuer::open(&cluster.dir.path().join("pki")).unwrap();
        let serving = issuer
            .serving(
                "metrics-kubelet",
                "system:node:metrics",
                &["system:nodes"],
                &sans,
            )
            .unwrap();
        let config = kyb_pki::tls::server_config(&serving, issuer.ca_pem()).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counters = Arc::new(Mutex::new(Counters {
            node,
            containers: HashMap::new(),
            cumulative: HashMap::new(),
            last_ms: None,
        }));
        let scrapes = Arc::new(Mutex::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (counters, scrapes) = (counters.clone(), scrapes.clone());
            accept_tls(listener, config, stop.clone(), move |stream| {
                answer(stream, &counters, &scrapes)
            });
        }
        MetricsKubelet {
            port,
            counters,
            scrapes,
            stop,
        }
    }

    /// Sets a container's rates (from the next scrape on).
    fn set(&self, namespace: &str, pod: &str, container: &str, rate: Rate) {
        self.counters.lock().unwrap().containers.insert(
            (
                namespace.to_string(),
                pod.to_string(),
                container.to_string(),
            ),
            rate,
        );
    }

    fn scrapes(&self) -> usize {
        *self.scrapes.lock().unwrap()
    }

    /// Points `node`'s kubelet endpoint here (its address is loopback).
    async fn serve_node(&self, client: &kube::Client, node: &str) {
        let nodes: Api<Node> = Api::all(client.clone());
        let status = json!({"status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                          {"type": "Hostname", "address": node}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
        }});
        nodes
            .patch_status(node, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }
}

impl Drop for MetricsKubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn answer(mut stream: TlsStream, counters: &Mutex<Counters>, scrapes: &Mutex<usize>) {
    let mut reader = BufReader::new(&mut stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line == "\r\n" || line.is_empty() {
            break;
        }
    }
    if request_line.starts_with("GET /metrics/resource ") {
        *scrapes.lock().unwrap() += 1;
        let body = counters.lock().unwrap().render();
        respond(
            stream,
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            &body,
        );
    } else {
        respond(
            stream,
            "404 Not Found",
            "text/plain",
            "404 page not found\n",
        );
    }
}

/// A pod bound to `node` with the given containers.
fn pod(name: &str, node: &str, containers: &[&str]) -> Pod {
    let containers: Vec<_> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox"}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"nodeName": node, "containers": containers},
    }))
    .unwrap()
}

/// Runs kubectl until `accept` takes its rows, within [`METRICS_WAIT`].
async fn kubectl_rows_until(
    cluster: &Cluster,
    args: &[&str],
    what: &str,
    accept: impl Fn(&[Vec<String>]) -> bool,
) -> Vec<Vec<String>> {
    within(what, METRICS_WAIT, || async {
        let output = cluster.kubectl(args);
        let table = rows(&String::from_utf8_lossy(&output.stdout));
        (output.status.success() && accept(&table)).then_some(table)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_top_shows_what_the_kubelets_report() {
    let cluster = Cluster::start();
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["metrics-node"]).await;
    let metrics = MetricsKubelet::start(
        &cluster,
        Rate {
            cores: 0.25,
            memory: 512 << 20,
        },
    );
    metrics.serve_node(&client, "metrics-node").await;
    metrics.set(
        "default",
        "busy",
        "app",
        Rate {
            cores: 0.5,
            memory: 64 << 20,
        },
    );
    metrics.set(
        "default",
        "busy",
        "side",
        Rate {
            cores: 0.1,
            memory: 16 << 20,
        },
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &pod("busy", "metrics-node", &["app", "side"]),
    )
    .await
    .unwrap();

    // Discovery, the APIService and the reader role, as metrics-server installs them.
    let resources =
        cluster.kubectl_ok(&["api-resources", "--api-group=metrics.k8s.io", "-o", "wide"]);
    let resources = rows(&resources);
    assert_eq!(resources.len(), 3, "{resources:?}");
    assert_eq!(
        resources[1][..5],
        [
            "nodes",
            "metrics.k8s.io/v1beta1",
            "false",
            "NodeMetrics",
            "get,list"
        ]
    );
    assert_eq!(
        resources[2][..5],
        [
            "pods",
            "metrics.k8s.io/v1beta1",
            "true",
            "PodMetrics",
            "get,list"
        ]
    );
    let service = rows(&cluster.kubectl_ok(&["get", "apiservice", "v1beta1.metrics.k8s.io"]));
    assert_eq!(service[1][..3], ["v1beta1.metrics.k8s.io", "Local", "True"]);
    let view = cluster.kubectl_ok(&["get", "clusterrole", "view", "-o", "json"]);
    let view: serde_json::Value = serde_json::from_str(&view).unwrap();
    assert!(
        view["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|rule| rule["apiGroups"] == json!(["metrics.k8s.io"])
                && rule["resources"] == json!(["pods", "nodes"])),
        "{view}"
    );

    // The node's usage: the rate of its counter, its working set.
    let nodes = kubectl_rows_until(&cluster, &["top", "nodes"], "node metrics", |table| {
        table.len() == 2 && table[1][0] == "metrics-node"
    })
    .await;
    assert_eq!(
        nodes[0],
        ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    );
    // 250m of 4 CPUs, 512Mi of 8Gi.
    assert_eq!(nodes[1], ["metrics-node", "250m", "6%", "512Mi", "6%"]);
    assert!(metrics.scrapes() >= 2);

    // Each container's, and the pod's sum.
    let containers = kubectl_rows_until(
        &cluster,
        &["top", "pods", "--containers"],
        "pod metrics",
        |table| table.len() == 3,
    )
    .await;
    assert_eq!(
        containers[0],
        ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    );
    assert_eq!(containers[1], ["busy", "app", "500m", "64Mi"]);
    assert_eq!(containers[2], ["busy", "side", "100m", "16Mi"]);
    let pod_rows = rows(&cluster.kubectl_ok(&["top", "pod", "busy"]));
    assert_eq!(pod_rows[1], ["busy", "600m", "80Mi"]);
    // `kubectl get` prints metrics-server's table: usage summed, the window.
    let table = rows(&cluster.kubectl_ok(&["get", "podmetrics", "busy"]));
    assert_eq!(table[0], ["NAME", "CPU", "MEMORY", "WINDOW"]);
    assert_eq!(table[1][..3], ["busy", "600m", "80Mi"]);
    let all = rows(&cluster.kubectl_ok(&["top", "pods", "-A", "-l", "app=busy"]));
    assert_eq!(all[1][..2], ["default", "busy"]);

    // Raw reads: the objects, selectors, and metrics-server's errors.
    let raw = cluster.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy",
    ]);
    let object: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(object["kind"], "PodMetrics");
    assert_eq!(object["metadata"]["labels"], json!({"app": "busy"}));
    assert_eq!(
        object["containers"][0],
        json!({"name": "app", "usage": {"cpu": "500m", "memory": "64Mi"}})
    );
    let window = object["window"].as_str().unwrap();
    let seconds: f64 = window.trim_end_matches('s').parse().unwrap();
    assert!((5.0..=60.0).contains(&seconds), "{window}");
    let (code, body) = cluster.http(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=kubernetes.io%2Fhostname%3Dother",
        "",
        b"",
    );
    assert_eq!(code, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["kind"], "NodeMetricsList");
    assert_eq!(list["items"], json!([]));
    let (code, body) = cluster.http(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.name%3Dbusy",
        "",
        b"",
    );
    assert_eq!(code, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "busy");
    let (code, body) = cluster.http("GET", "/apis/metrics.k8s.io/v1beta1/nodes/nope", "", b"");
    assert_eq!(code, 404, "{body}");
    assert!(
        body.contains(r#""message":"nodes \"nope\" not found""#),
        "{body}"
    );
    pods.create(&PostParams::default(), &pod("idle", "other-node", &["app"]))
        .await
        .unwrap();
    let (code, body) = cluster.http(
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/idle",
        "",
        b"",
    );
    assert_eq!(code, 404, "{body}");
    assert!(
        body.contains(r#""message":"podmetrics.metrics.k8s.io \"default/idle\" not found""#),
        "{body}"
    );
    let (code, body) = cluster.http(
        "DELETE",
        "/apis/metrics.k8s.io/v1beta1/nodes/metrics-node",
        "",
        b"",
    );
    assert_eq!(code, 405, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hpa_scales_on_the_cpu_the_kubelets_report() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--horizontal-pod-autoscaler-sync-period=1s"]);
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["hpa-node"]).await;
    let metrics = Arc::new(MetricsKubelet::start(
        &cluster,
        Rate {
            cores: 1.0,
            memory: 1 << 30,
        },
    ));
    metrics.serve_node(&client, "hpa-node").await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"nodeName": "hpa-node",
                                       "containers": [{"name": "app", "image": "busybox",
                                        "resources": {"requests": {"cpu": "100m"}}}]}}}
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    // Every pod of the Deployment burns `busy` cores (a tenth of a core idle).
    let busy = Arc::new(Mutex::new(0.2f64));
    let follower = {
        let (client, metrics, busy) = (client.clone(), metrics.clone(), busy.clone());
        tokio::spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client, "default");
            loop {
                if let Ok(list) = pods.list(&ListParams::default().labels("app=web")).await {
                    let cores = *busy.lock().unwrap();
                    for pod in list.items {
                        let name = pod.metadata.name.unwrap_or_default();
                        metrics.set(
                            "default",
                            &name,
                            "app",
                            Rate {
                                cores,
                                memory: 8 << 20,
                            },
                        );
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 3,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                  "target": {"type": "Utilization", "averageUtilization": 50}}}],
                     "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}}"#,
    );
    let replicas = || async {
        deployments
            .get("web")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas)
    };
    // 200m against a 100m request at a 50% target: up to the maximum.
    within("scaled up to 3", Duration::from_secs(150), || async {
        (replicas().await == Some(3)).then_some(())
    })
    .await;
    let hpa = cluster.kubectl_ok(&["get", "hpa", "web"]);
    assert!(hpa.contains("cpu:"), "{hpa}");
    // The load stops: back to the minimum once the window's rate has dropped.
    *busy.lock().unwrap() = 0.0;
    within("scaled down to 1", Duration::from_secs(150), || async {
        (replicas().await == Some(1)).then_some(())
    })
    .await;
    follower.abort();
}

/// The millicores of a `kubectl top` CPU cell (`250m`, `1`).
fn millicores(cell: &str) -> u64 {
    match cell.strip_suffix('m') {
        Some(milli) => milli.parse().unwrap(),
        None => cell.parse::<u64>().unwrap() * 1000,
    }
}

/// A real node (containerd in the test's namespace): the kubelet's `/stats/summary` and
/// `/metrics/resource` (through `nodes/proxy`) report a busy pod's CPU, `kubectl top`
/// shows it, and an HPA scales the busy Deployment up on it and back down once the
/// Deployment's pods are idle. The pods' CPU is capped at 200m so the test stays light.
#[test]
fn top_and_an_hpa_follow_a_busy_pod_on_a_real_node_as_root() {
    use crate::node::{BUSYBOX, NodeCluster};
    let cluster = NodeCluster::start_with(&["--horizontal-pod-autoscaler-sync-period=1s"]);
    let deployment = |command: &str| {
        format!(
            r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: burn
spec:
  replicas: 1
  selector:
    matchLabels: {{app: burn}}
  template:
    metadata:
      labels: {{app: burn}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: app
        image: {BUSYBOX}
        command: ["sh", "-c", "{command}"]
        resources:
          requests: {{cpu: 100m}}
          limits: {{cpu: 200m}}
"#
        )
    };
    cluster.apply(&deployment("while :; do :; done"));
    let busy_pod = cluster.wait_for("a running busy pod", Duration::from_secs(90), |cluster| {
        let pods = cluster.get_json(&["pods", "-l", "app=burn"])?;
        pods["items"]
            .as_array()?
            .iter()
            .find(|p| p["status"]["phase"] == "Running")
            .and_then(|p| p["metadata"]["name"].as_str())
            .map(str::to_string)
    });
    let node = cluster.node_name.clone();

    // The kubelet's own figures, through the API server's nodes/proxy.
    let summary = cluster.wait_for("the pod in the summary", METRICS_WAIT, |cluster| {
        let text = cluster.kubectl_ok(&[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{node}/proxy/stats/summary"),
        ]);
        let summary: serde_json::Value = serde_json::from_str(&text).ok()?;
        let pod = summary["pods"]
            .as_array()?
            .iter()
            .find(|p| p["podRef"]["name"] == busy_pod.as_str())?
            .clone();
        // A rate needs two samples: asked again until there is one.
        (pod["cpu"]["usageNanoCores"].as_u64()? > 0).then_some(summary)
    });
    assert_eq!(summary["node"]["nodeName"], node.as_str());
    assert!(
        summary["node"]["cpu"]["usageCoreNanoSeconds"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        summary["node"]["memory"]["workingSetBytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(summary["node"]["fs"]["capacityBytes"].as_u64().unwrap() > 0);
    let pod = summary["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["podRef"]["name"] == busy_pod.as_str())
        .unwrap();
    assert_eq!(pod["podRef"]["namespace"], "default");
    let container = &pod["containers"][0];
    assert_eq!(container["name"], "app");
    assert!(container["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap() > 0);
    assert!(container["memory"]["workingSetBytes"].as_u64().unwrap() > 0);
    assert!(container["rootfs"]["usedBytes"].is_u64(), "{container}");
    let cut = cluster.kubectl_ok(&[
        "get",
        "--raw",
        &format!("/api/v1/nodes/{node}/proxy/stats/summary?only_cpu_and_memory=true"),
    ]);
    let cut: serde_json::Value = serde_json::from_str(&cut).unwrap();
    assert!(cut["node"].get("fs").is_none(), "{cut}");
    let resource = cluster.kubectl_ok(&[
        "get",
        "--raw",
        &format!("/api/v1/nodes/{node}/proxy/metrics/resource"),
    ]);
    let line = format!(
        "container_cpu_usage_seconds_total{{container=\"app\",namespace=\"default\",pod=\"{busy_pod}\"}} "
    );
    assert!(resource.contains(&line), "{resource}");
    assert!(
        resource.contains("\nresource_scrape_error 0\n"),
        "{resource}"
    );

    // kubectl top: non-zero CPU for the node and the busy container.
    let nodes = cluster.wait_for("node metrics", METRICS_WAIT, |cluster| {
        let output = cluster.kubectl(&["top", "nodes"]);
        let table = rows(&String::from_utf8_lossy(&output.stdout));
        (output.status.success() && table.len() == 2 && millicores(&table[1][1]) > 0)
            .then_some(table)
    });
    assert_eq!(nodes[1][0], node);
    let containers = cluster.wait_for("busy pod metrics", METRICS_WAIT, |cluster| {
        let output = cluster.kubectl(&["top", "pods", "--containers", "-l", "app=burn"]);
        let table = rows(&String::from_utf8_lossy(&output.stdout));
        (output.status.success() && table.len() == 2 && millicores(&table[1][2]) >= 50)
            .then_some(table)
    });
    assert_eq!(containers[1][..2], [busy_pod.as_str(), "app"]);

    // An HPA at 50% of the 100m request: about 200% used, so up to the maximum of 2.
    cluster.apply(
        r#"
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: burn
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burn}
  minReplicas: 1
  maxReplicas: 2
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 50}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
"#,
    );
    let replicas = |cluster: &NodeCluster| {
        cluster.get_json(&["deployment", "burn"])?["spec"]["replicas"].as_i64()
    };
    cluster.wait_for("scaled up to 2", Duration::from_secs(120), |cluster| {
        (replicas(cluster)? == 2).then_some(())
    });
    // The load stops (the pods replaced by idle ones; the replica count left to the
    // HPA): back to 1.
    cluster.kubectl_ok(&[
        "patch",
        "deployment",
        "burn",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/spec/template/spec/containers/0/command", "value": ["sh", "-c", "sleep 3600"]}]"#,
    ]);
    cluster.wait_for("scaled down to 1", Duration::from_secs(180), |cluster| {
        (replicas(cluster)? == 1).then_some(())
    });
}
