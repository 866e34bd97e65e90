//! The built-in resource metrics API in process: one scraping round after another over
//! a kubelet source played by the test (counters it advances by known amounts, a node
//! that does not answer), then `metrics.k8s.io/v1beta1` read as clients read it — lists
//! with label and field selectors, gets, metrics-server's 404s, the verbs it refuses —
//! and found through discovery, with its APIService `Available`.

use super::{ADMIN, request_as, send, server};
use http::{Method, StatusCode};
use kyb_apiserver::Config;
use kyb_apiserver::engine::Engine;
use kyb_apiserver::metrics_api::scrape::{ResourceMetricsSource, scrape_all};
use kyb_serving::Body;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Node `n1` answers with counters 15 s further on at each call (the node at half a core,
/// `default/web`'s container at a quarter); any other node does not answer.
#[derive(Default)]
struct Kubelets {
    calls: AtomicU64,
}

#[async_trait::async_trait]
impl ResourceMetricsSource for Kubelets {
    async fn resource_metrics(&self, _: &Engine, node: &str) -> Result<String, String> {
        if node != "n1" {
            return Err(format!(
                "dial tcp {node}:10250: connect: connection refused"
            ));
        }
        let round = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let at = 1_700_000_000_000 + round * 15_000;
        let labels = r#"container="app",namespace="default",pod="web""#;
        Ok(format!(
            "node_cpu_usage_seconds_total {} {at}\nnode_memory_working_set_bytes 1.073741824e+09 {at}\n\
             container_cpu_usage_seconds_total{{{labels}}} {} {at}\n\
             container_memory_working_set_bytes{{{labels}}} 8.388608e+06 {at}\n\
             container_cpu_usage_seconds_total{{container=\"app\",namespace=\"default\",pod=\"idle\"}} 1 {at}\n\
             container_memory_working_set_bytes{{container=\"app\",namespace=\"default\",pod=\"idle\"}} 4096 {at}\n",
            round as f64 * 7.5,
            round as f64 * 3.75,
        ))
    }
}

async fn call(
    stack: &kyb_apiserver::Stack,
    method: Method,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let body = if body.is_null() {
        Body::empty()
    } else {
        Body::full(body.to_string())
    };
    let mut request = request_as(ADMIN, method.clone(), path, body);
    if method == Method::PATCH {
        request.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/merge-patch+json"),
        );
    }
    send(stack, request)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn metrics_are_scraped_kept_and_served_as_metrics_server_serves_them() -> anyhow::Result<()> {
    let server = server(Config::default(), Vec::new()).await?;
    let stack = &server.stack;
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    for (node, zone) in [("n1", "a"), ("n2", "b")] {
        let object = json!({"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": node, "labels": {"zone": zone}}});
        let (code, body) = call(stack, Method::POST, "/api/v1/nodes", object).await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
        let path = format!("/api/v1/nodes/{node}/status");
        let (code, body) = call(stack, Method::PATCH, &path, ready.clone()).await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }
    // No controller manager here to make the account pods need.
    let account =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    let path = "/api/v1/namespaces/default/serviceaccounts";
    let (code, body) = call(stack, Method::POST, path, account).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    for (pod, phase) in [("web", "Running"), ("idle", "Pending")] {
        let object = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": "default", "labels": {"app": pod}},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "busybox"}]}});
        let (code, body) = call(
            stack,
            Method::POST,
            "/api/v1/namespaces/default/pods",
            object,
        )
        .await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
        let path = format!("/api/v1/namespaces/default/pods/{pod}/status");
        let status = json!({"status": {"phase": phase}});
        let (code, body) = call(stack, Method::PATCH, &path, status).await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }
    let engine = server.engine.clone();
    let store = engine.metrics.clone();
    let source: Arc<dyn ResourceMetricsSource> = Arc::new(Kubelets::default());
    let nodes = "/apis/metrics.k8s.io/v1beta1/nodes";

    // One round: a point, no rate yet.
    scrape_all(&engine, &store, &source).await;
    let (code, list) = call(stack, Method::GET, nodes, Value::Null).await;
    assert_eq!(code, StatusCode::OK, "{list}");
    assert_eq!(list["kind"], "NodeMetricsList");
    assert_eq!(list["apiVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(list["items"], json!([]));

    // Two: usage over the 15 s between them.
    scrape_all(&engine, &store, &source).await;
    let (_, list) = call(stack, Method::GET, nodes, Value::Null).await;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["metadata"]["name"], "n1");
    assert_eq!(items[0]["metadata"]["labels"], json!({"zone": "a"}));
    assert_eq!(items[0]["timestamp"], "2023-11-14T22:13:50Z");
    assert_eq!(items[0]["window"], "15s");
    assert_eq!(items[0]["usage"], json!({"cpu": "500m", "memory": "1Gi"}));
    let (_, list) = call(
        stack,
        Method::GET,
        &format!("{nodes}?labelSelector=zone%3Db"),
        Value::Null,
    )
    .await;
    assert_eq!(list["items"], json!([]));
    let (_, list) = call(
        stack,
        Method::GET,
        &format!("{nodes}?fieldSelector=metadata.name%3Dn1"),
        Value::Null,
    )
    .await;
    assert_eq!(list["items"][0]["metadata"]["name"], "n1");
    let (code, status) = call(
        stack,
        Method::GET,
        &format!("{nodes}?fieldSelector=spec.x%3Dy"),
        Value::Null,
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");

    let (code, object) = call(stack, Method::GET, &format!("{nodes}/n1"), Value::Null).await;
    assert_eq!(code, StatusCode::OK, "{object}");
    assert_eq!(object["kind"], "NodeMetrics");
    let (code, status) = call(stack, Method::GET, &format!("{nodes}/n2"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(
        status["message"],
        r#"nodemetrics.metrics.k8s.io "n2" not found"#
    );
    assert_eq!(status["details"]["group"], "metrics.k8s.io");
    let (code, status) = call(stack, Method::GET, &format!("{nodes}/n3"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(status["message"], r#"nodes "n3" not found"#);

    // Pods: only Running ones, each container's usage.
    let (_, list) = call(
        stack,
        Method::GET,
        "/apis/metrics.k8s.io/v1beta1/pods",
        Value::Null,
    )
    .await;
    assert_eq!(list["kind"], "PodMetricsList");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["metadata"]["namespace"], "default");
    assert_eq!(
        items[0]["containers"],
        json!([{"name": "app", "usage": {"cpu": "250m", "memory": "8Mi"}}])
    );
    let pods = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods";
    let (_, list) = call(
        stack,
        Method::GET,
        &format!("{pods}?labelSelector=app%3Dweb"),
        Value::Null,
    )
    .await;
    assert_eq!(list["items"][0]["metadata"]["name"], "web");
    let (_, list) = call(
        stack,
        Method::GET,
        "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods",
        Value::Null,
    )
    .await;
    assert_eq!(list["items"], json!([]));
    let (code, status) = call(stack, Method::GET, &format!("{pods}/idle"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(
        status["message"],
        r#"podmetrics.metrics.k8s.io "default/idle" not found"#
    );
    let (code, status) = call(stack, Method::GET, &format!("{pods}/gone"), Value::Null).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(status["message"], r#"pods "gone" not found"#);

    // Read-only.
    for (method, path) in [
        (Method::POST, nodes.to_string()),
        (Method::DELETE, format!("{nodes}/n1")),
        (Method::GET, format!("{nodes}?watch=true")),
    ] {
        let (code, status) = call(stack, method.clone(), &path, json!({})).await;
        assert_eq!(
            code,
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}: {status}"
        );
    }

    // A node gone Not Ready is no longer scraped, and its metrics go.
    let not_ready = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
    call(stack, Method::PATCH, "/api/v1/nodes/n1/status", not_ready).await;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        scrape_all(&engine, &store, &source).await;
        if store.series() == 0 {
            break;
        }
        assert!(std::time::Instant::now() < until, "n1 still kept");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (_, list) = call(stack, Method::GET, nodes, Value::Null).await;
    assert_eq!(list["items"], json!([]));

    // Discovery and the APIService.
    let (_, resources) = call(
        stack,
        Method::GET,
        "/apis/metrics.k8s.io/v1beta1",
        Value::Null,
    )
    .await;
    let names: Vec<(Value, Value, Value, Value)> = resources["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            (
                r["name"].clone(),
                r["kind"].clone(),
                r["namespaced"].clone(),
                r["verbs"].clone(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            (
                json!("nodes"),
                json!("NodeMetrics"),
                json!(false),
                json!(["get", "list"])
            ),
            (
                json!("pods"),
                json!("PodMetrics"),
                json!(true),
                json!(["get", "list"])
            ),
        ]
    );
    let (_, groups) = call(stack, Method::GET, "/apis", Value::Null).await;
    assert!(
        groups["groups"]
            .as_array()
            .is_some_and(|g| g
                .iter()
                .any(|g| g["name"] == "metrics.k8s.io"
                    && g["preferredVersion"]["version"] == "v1beta1")),
        "{groups}"
    );
    let (_, service) = call(
        stack,
        Method::GET,
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io",
        Value::Null,
    )
    .await;
    assert_eq!(service["spec"]["group"], "metrics.k8s.io");
    assert_eq!(service["status"]["conditions"][0]["type"], "Available");
    assert_eq!(service["status"]["conditions"][0]["status"], "True");
    Ok(())
}
