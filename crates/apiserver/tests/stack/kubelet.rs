//! `pods/log` and the kubelet client, in process, against a stand-in kubelet serving HTTPS
//! on loopback: the API server presents its kubelet client certificate and verifies the
//! kubelet's, the options reach the kubelet as its query, log lines arrive as the kubelet
//! writes them, `limitBytes` cuts the stream, and the kubelet's refusals and the API
//! server's own checks read as Kubernetes words them. The bootstrap policy binds the
//! client's user to `system:kubelet-api-admin`.

use super::{ADMIN, request_as, send, server};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Frame;
use kyb_apiserver::kubelet::KubeletClientConfig;
use kyb_apiserver::{Config, Stack};
use kyb_pki::{Pki, Sans};
use kyb_serving::{Body, Connection};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tower::ServiceExt;

/// A response body fed by a channel.
struct Lines(mpsc::Receiver<Bytes>);

impl http_body::Body for Lines {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.get_mut()
            .0
            .poll_recv(cx)
            .map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

/// What the stand-in kubelet saw: `user path?query` per request.
type Seen = Arc<Mutex<Vec<String>>>;

fn kubelet(
    request: Request<Body>,
    seen: &Seen,
    lines: &Mutex<Option<mpsc::Receiver<Bytes>>>,
    sidecar: &Mutex<Option<mpsc::Receiver<Bytes>>>,
) -> Response<Body> {
    let user = request
        .extensions()
        .get::<Connection>()
        .and_then(|c| c.certificate.clone())
        .map_or_else(|| "anonymous".to_string(), |u| u.name.clone());
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(String::new, |p| p.to_string());
    if let Ok(mut seen) = seen.lock() {
        seen.push(format!("{user} {target}"));
    }
    let text = |code: u16, text: &str| {
        let mut response = Response::new(Body::full(text.to_string()));
        *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
        response
    };
    match request.uri().path() {
        "/containerLogs/default/web/app" => match lines.lock().ok().and_then(|mut l| l.take()) {
            Some(receiver) => Response::new(Body::new(Lines(receiver))),
            None => text(200, "0123456789\n"),
        },
        "/containerLogs/default/web/sidecar" => {
            match sidecar.lock().ok().and_then(|mut l| l.take()) {
                Some(receiver) => Response::new(Body::new(Lines(receiver))),
                None => text(404, "404 page not found\n"),
            }
        }
        "/containerLogs/default/web/setup" => text(
            400,
            "container \"setup\" in pod \"web\" is waiting to start: PodInitializing",
        ),
        _ => text(404, "404 page not found\n"),
    }
}

struct StandIn {
    _dir: tempfile::TempDir,
    port: u16,
    seen: Seen,
    lines: mpsc::Sender<Bytes>,
    sidecar: mpsc::Sender<Bytes>,
    client: KubeletClientConfig,
}

/// A kubelet on loopback with its own CA, and the client configuration trusting it.
async fn stand_in() -> anyhow::Result<StandIn> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(
        dir.path(),
        &Sans {
            dns: vec![],
            ips: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        },
    )?;
    let client = KubeletClientConfig {
        client_certificate: Some(pki.client(
            "apiserver-kubelet-client",
            "kube-apiserver-kubelet-client",
            &[],
        )?),
        certificate_authority: Some(pki.ca_pem().to_string()),
        ..KubeletClientConfig::default()
    };
    let tls = kyb_pki::tls::server_config(pki.serving(), pki.ca_pem())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let seen: Seen = Arc::default();
    let (sender, receiver) = mpsc::channel(4);
    let lines = Arc::new(Mutex::new(Some(receiver)));
    let (sidecar_sender, sidecar) = mpsc::channel(4);
    let sidecar = Arc::new(Mutex::new(Some(sidecar)));
    let recorded = seen.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let response = kubelet(request, &recorded, &lines, &sidecar);
        async move { Ok::<_, Infallible>(response) }
    });
    tokio::spawn(async move { kyb_serving::tls::serve(&listener, tls, service).await });
    Ok(StandIn {
        _dir: dir,
        port,
        seen,
        lines: sender,
        sidecar: sidecar_sender,
        client,
    })
}

async fn create(stack: &Stack, path: &str, object: Value) -> anyhow::Result<Value> {
    let mut request = request_as(ADMIN, Method::POST, path, Body::full(object.to_string()));
    request
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, "application/json".parse()?);
    let (code, created) = send(stack, request).await?;
    anyhow::ensure!(code.is_success(), "creating at {path}: {code} {created}");
    Ok(created)
}

fn get(path: &str) -> Request<Body> {
    request_as(ADMIN, Method::GET, path, Body::empty())
}

#[tokio::test]
async fn pod_logs_stream_from_the_kubelet_as_they_are_written() -> anyhow::Result<()> {
    let kubelet = stand_in().await?;
    let config = Config {
        kubelet: kubelet.client.clone(),
        ..Config::default()
    };
    let server = server(config, Vec::new()).await?;
    let stack = &server.stack;

    // The client's user may call every kubelet API.
    let (code, binding) = send(
        stack,
        get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kube-apiserver-kubelet-admin"),
    )
    .await?;
    assert_eq!(code, StatusCode::OK, "{binding}");
    assert_eq!(binding["roleRef"]["name"], "system:kubelet-api-admin");
    assert_eq!(
        binding["subjects"][0]["name"],
        "kube-apiserver-kubelet-client"
    );

    let node = json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {
            "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
        },
    });
    create(stack, "/api/v1/nodes", node).await?;
    // No controller manager here: the namespace's default service account by hand.
    let account =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    create(stack, "/api/v1/namespaces/default/serviceaccounts", account).await?;
    let pod = |name: &str, node: Option<&str>| {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {
                "initContainers": [{"name": "setup", "image": "busybox"}],
                "containers": [{"name": "app", "image": "busybox"}, {"name": "sidecar", "image": "busybox"}],
            },
        });
        if let Some(node) = node {
            pod["spec"]["nodeName"] = node.into();
        }
        pod
    };
    create(
        stack,
        "/api/v1/namespaces/default/pods",
        pod("web", Some("n1")),
    )
    .await?;
    create(
        stack,
        "/api/v1/namespaces/default/pods",
        pod("pending", None),
    )
    .await?;

    // Followed: each line arrives when the kubelet writes it.
    let logs = "/api/v1/namespaces/default/pods/web/log";
    let response = stack
        .clone()
        .oneshot(get(&format!(
            "{logs}?container=app&follow=true&tailLines=3&timestamps=true"
        )))
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/plain");
    let mut body = response.into_body();
    for line in ["first\n", "second\n"] {
        kubelet.lines.send(Bytes::from(line)).await?;
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await?
            .ok_or_else(|| anyhow::anyhow!("the log ended early"))?
            .map_err(|never| anyhow::anyhow!("{never:?}"))?;
        assert_eq!(frame.into_data().ok(), Some(Bytes::from(line)));
    }
    drop(kubelet.lines);
    let end = tokio::time::timeout(Duration::from_secs(10), body.frame()).await?;
    assert!(end.is_none(), "the log did not end with the kubelet's");
    assert_eq!(
        kubelet.seen.lock().map(|s| s.clone()).unwrap_or_default(),
        vec![
            "kube-apiserver-kubelet-client /containerLogs/default/web/app?follow=true&tailLines=3&timestamps=true"
        ]
    );

    // A client that goes away takes the kubelet's stream with it.
    let response = stack
        .clone()
        .oneshot(get(&format!("{logs}?container=sidecar&follow=true")))
        .await?;
    kubelet.sidecar.send(Bytes::from("one\n")).await?;
    let mut body = response.into_body();
    let first = tokio::time::timeout(Duration::from_secs(10), body.frame()).await?;
    assert!(first.is_some(), "no first line");
    drop(body);
    tokio::time::timeout(Duration::from_secs(10), kubelet.sidecar.closed())
        .await
        .map_err(|_| anyhow::anyhow!("the kubelet's stream outlived the client"))?;

    // limitBytes cuts the stream, whatever the kubelet sends.
    let response = stack
        .clone()
        .oneshot(get(&format!("{logs}?container=app&limitBytes=4")))
        .await?;
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|never| anyhow::anyhow!("{never:?}"))?
        .to_bytes();
    assert_eq!(bytes, Bytes::from("0123"));

    // The kubelet's refusal, passed on.
    let (code, status) = send(stack, get(&format!("{logs}?container=setup"))).await?;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        status["message"],
        "container \"setup\" in pod \"web\" is waiting to start: PodInitializing"
    );
    // The API server's own refusals, before any kubelet is asked.
    let (code, status) = send(stack, get(logs)).await?;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        status["message"],
        "a container name must be specified for pod web, choose one of: [setup app sidecar]"
    );
    let (code, status) = send(stack, get(&format!("{logs}?container=app&tailLines=-1"))).await?;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(status["reason"], "Invalid");
    let (code, status) = send(stack, get("/api/v1/namespaces/default/pods/nope/log")).await?;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(status["message"], "pods \"nope\" not found");
    // A pod on no node yet has an empty log.
    let (code, _) = send(
        stack,
        get("/api/v1/namespaces/default/pods/pending/log?container=app"),
    )
    .await?;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(kubelet.seen.lock().map(|s| s.len()).unwrap_or_default(), 4);

    // A node whose only address is loopback is not proxied to.
    let (code, status) = send(stack, get("/api/v1/nodes/n1/proxy/healthz")).await?;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    assert_eq!(status["message"], "address not allowed");
    Ok(())
}
