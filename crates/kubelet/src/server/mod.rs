//! The kubelet's API on port 10250 (`--port`, `--address`): HTTPS with the node's serving
//! certificate ([`certificate`]), every request authenticated and authorized through the
//! API server ([`auth`]: TokenReview, SubjectAccessReview), then routed as kubelet routes
//! it:
//!
//! - `/healthz`, `/pods` (the node's pods as the agent sees them), `/configz`;
//! - `/metrics` ([`metrics`]), `/metrics/probes` (the prober's counters),
//!   `/metrics/resource` and `/stats/summary` (the [`NodeStats`] the agent was given);
//! - `/logs/…` ([`node_logs`]: the node's log files);
//! - `/containerLogs/{ns}/{pod}/{container}` ([`container_logs`]);
//! - `/exec/…`, `/attach/…`, `/portForward/…` ([`streaming`]: proxied to the runtime's
//!   streaming server).
//!
//! Answers are kubelet's: plain text errors, not `Status` objects.

pub mod auth;
pub mod body;
pub mod certificate;
pub mod container_logs;
pub mod metrics;
pub mod node_logs;
pub mod streaming;

use crate::pods::Shared;
use crate::stats::NodeStats;
use anyhow::Context as _;
use body::Response;
use http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use certificate::{Issuer, ServingCertificate};

/// The server's settings (kubelet's flags of the same names).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// `--address` (0.0.0.0).
    pub address: IpAddr,
    /// `--port` (10250).
    pub port: u16,
    /// Where the serving certificate comes from.
    pub certificate: ServingCertificate,
    /// `--client-ca-file`'s contents: client certificates it verifies name the user.
    pub client_ca_pem: Option<String>,
}

impl ServerConfig {
    /// Port 10250 on every address, the certificate as given, no client CA.
    pub fn new(certificate: ServingCertificate) -> ServerConfig {
        ServerConfig {
            address: IpAddr::from([0, 0, 0, 0]),
            port: 10250,
            certificate,
            client_ca_pem: None,
        }
    }
}

/// Stats not (yet) available: `/stats/summary` and `/metrics/resource` answer 503.
pub struct NoStats;

#[derive(Debug, thiserror::Error)]
#[error("the node's resource statistics are not available")]
pub struct StatsUnavailable;

#[async_trait::async_trait]
impl NodeStats for NoStats {
    async fn summary(&self, _: bool) -> anyhow::Result<Value> {
        Err(StatsUnavailable.into())
    }

    async fn resource_metrics(&self) -> anyhow::Result<String> {
        Err(StatsUnavailable.into())
    }
}

/// What the handlers read.
pub struct Host {
    pub shared: Arc<Shared>,
    pub stats: Arc<dyn NodeStats>,
    /// `/configz`'s `kubeletconfig`.
    pub configz: Value,
    /// The node's log directory `/logs/` serves (`/var/log`).
    pub node_log_dir: PathBuf,
    pub pod_starts: metrics::PodStartTracker,
}

/// `/configz`'s document for `config` (a KubeletConfiguration's fields that apply).
pub fn configz(config: &crate::Config) -> Value {
    let server = config.server.as_ref();
    json!({
        "kubeletconfig": {
            "enableServer": server.is_some(),
            "address": server.map(|s| s.address.to_string()),
            "port": server.map(|s| s.port),
            "staticPodPath": config.pod_manifest_path.as_ref().map(|p| p.display().to_string()),
            "authentication": {
                "x509": {"clientCAFile": config.client_ca_file.as_ref().map(|p| p.display().to_string())},
                "webhook": {"enabled": true, "cacheTTL": "2m0s"},
                "anonymous": {"enabled": false},
            },
            "authorization": {
                "mode": "Webhook",
                "webhook": {"cacheAuthorizedTTL": "5m0s", "cacheUnauthorizedTTL": "30s"},
            },
            "maxPods": config.node.max_pods.unwrap_or(110),
            "containerLogMaxSize": config.log_rotation.max_size.to_string(),
            "containerLogMaxFiles": config.log_rotation.max_files,
            "containerRuntimeEndpoint": config.container_runtime_endpoint,
            "serverTLSBootstrap": matches!(server.map(|s| &s.certificate), Some(ServingCertificate::Bootstrap)),
        }
    })
}

/// Binds the server, prepares its certificate, and serves until `cancel` on a task of its
/// own; an address already in use is an error here.
pub async fn start(
    config: &ServerConfig,
    host: Arc<Host>,
    node_ips: &[IpAddr],
    client: kube::Client,
    cancel: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let address = std::net::SocketAddr::new(config.address, config.port);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("listening on {address} (the kubelet's API)"))?;
    let node_name = host.shared.node_name.clone();
    let sans = certificate::sans(&node_name, node_ips);
    let current = certificate::start(
        &config.certificate,
        &node_name,
        sans,
        client.clone(),
        cancel.clone(),
    )
    .await?;
    let tls = certificate::tls_config(current, config.client_ca_pem.as_deref())?;
    // Pod start durations from the pods' changes (a weak reference: the informer must
    // not keep the server's state alive).
    let weak = Arc::downgrade(&host);
    host.shared.pods.on_change(move |change| {
        if let Some(host) = weak.upgrade() {
            match change {
                kyb_runtime::informer::Change::Deleted(pod) => host.pod_starts.forget(pod),
                other => host.pod_starts.seen(other.object()),
            }
        }
    });
    let router = tower::service_fn(move |request: Request<kyb_serving::Body>| {
        let host = host.clone();
        async move { Ok::<_, Infallible>(route(&host, request).await) }
    });
    let service = tower::ServiceBuilder::new()
        .layer(kyb_serving::filters::filter(auth::KubeletAuth::new(
            &node_name, client,
        )))
        .service(router);
    tracing::info!(%address, node = %node_name, "the kubelet's API is serving");
    Ok(tokio::spawn(async move {
        tokio::select! {
            () = kyb_serving::tls::serve(&listener, tls, service) => {}
            () = cancel.cancelled() => {}
        }
    }))
}

/// Go-restful's answer to a method a route does not take.
fn method_not_allowed() -> Response {
    body::text(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed")
}

/// Answers one authorized request.
pub async fn route(host: &Host, request: Request<kyb_serving::Body>) -> Response {
    let path = request.uri().path().to_string();
    let Some(segments) = path
        .split('/')
        .skip(1)
        .map(kyb_serving::query::unescape_path)
        .collect::<Option<Vec<String>>>()
    else {
        return body::text(StatusCode::BAD_REQUEST, "400 Bad Request");
    };
    let read_only = matches!(*request.method(), Method::GET | Method::HEAD);
    let first = segments.first().map(String::as_str).unwrap_or_default();
    let rest = segments.get(1..).unwrap_or_default();
    let streaming = matches!(*request.method(), Method::GET | Method::POST);
    match (first, rest) {
        ("healthz", []) if read_only => body::text(StatusCode::OK, "ok"),
        ("pods", [] | [_]) if rest.first().is_none_or(String::is_empty) => {
            if !read_only {
                return method_not_allowed();
            }
            pods(host)
        }
        ("configz", []) if read_only => body::json(&host.configz),
        ("metrics", []) if read_only => {
            let text =
                metrics::render(&host.shared.node_name, &host.shared.cri, &host.pod_starts).await;
            prometheus(text)
        }
        ("metrics", [probes]) if probes == "probes" && read_only => {
            prometheus(host.shared.probes.counters().render())
        }
        ("metrics", [resource]) if resource == "resource" && read_only => {
            match host.stats.resource_metrics().await {
                Ok(text) => prometheus(text),
                Err(error) => stats_error(&error),
            }
        }
        ("stats", [summary]) if summary == "summary" && read_only => {
            let query = kyb_serving::Query::parse(request.uri().query());
            let only = query.flag("only_cpu_and_memory");
            match host.stats.summary(only).await {
                Ok(summary) => body::json(&summary),
                Err(error) => stats_error(&error),
            }
        }
        ("logs", _) if read_only => {
            if rest.is_empty() {
                let mut response = body::text(StatusCode::MOVED_PERMANENTLY, "");
                response.headers_mut().insert(
                    http::header::LOCATION,
                    http::HeaderValue::from_static("/logs/"),
                );
                return response;
            }
            node_logs::serve(&host.node_log_dir, &path, &rest.join("/")).await
        }
        ("containerLogs", _) if read_only => {
            let query = kyb_serving::Query::parse(request.uri().query());
            container_logs::serve(host, rest, query).await
        }
        ("exec", _) if streaming => {
            streaming::serve(host, streaming::Kind::Exec, rest, request).await
        }
        ("attach", _) if streaming => {
            streaming::serve(host, streaming::Kind::Attach, rest, request).await
        }
        ("portForward", _) if streaming => {
            streaming::serve(host, streaming::Kind::PortForward, rest, request).await
        }
        ("healthz" | "configz" | "metrics" | "stats" | "logs" | "containerLogs", _)
            if !read_only =>
        {
            method_not_allowed()
        }
        ("exec" | "attach" | "portForward", _) => method_not_allowed(),
        _ => body::not_found(),
    }
}

/// The node's pods as a `v1` PodList.
fn pods(host: &Host) -> Response {
    let mut items: Vec<Value> = host
        .shared
        .pods
        .list()
        .iter()
        .filter_map(|pod| serde_json::to_value(pod.as_ref()).ok())
        .map(|mut pod| {
            if let Some(object) = pod.as_object_mut() {
                object.insert("kind".into(), "Pod".into());
                object.insert("apiVersion".into(), "v1".into());
            }
            pod
        })
        .collect();
    items.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                v["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                v["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    body::json(&json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}))
}

fn prometheus(text: String) -> Response {
    body::bytes(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        text,
    )
}

fn stats_error(error: &anyhow::Error) -> Response {
    if error.downcast_ref::<StatsUnavailable>().is_some() {
        return body::error(StatusCode::SERVICE_UNAVAILABLE, error);
    }
    body::error(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("Internal Error: {error:#}"),
    )
}
