//! Non-resource paths: health checks, `/version`, discovery, OpenAPI, service-account
//! issuer discovery, and `/`.

use crate::discovery;
use crate::negotiation::{self, Endpoint, Output};
use crate::response::{self, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use kyb_api::Status;
use kyb_api::registry::{Registry, Snapshot};
use kyb_component::{Health, Probe};
use kyb_serving::Query;
use kyb_storage::Store;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The Kubernetes version served.
pub const KUBERNETES_VERSION: (&str, &str, &str) = ("1", "33", "v1.33.0");

/// What the non-resource paths are served from.
pub struct Routes {
    /// `host:port` clients reach this server at (discovery's `serverAddressByClientCIDRs`).
    pub advertised: String,
    /// What discovery lists.
    pub registry: Arc<Registry>,
    pub openapi: crate::openapi::Published,
    /// Asked by the health checks.
    pub store: Arc<dyn Store>,
    /// Set once the default objects exist.
    pub ready: Arc<AtomicBool>,
    /// The process's checks (`Config::health`), reported beside the server's own.
    pub health: Health,
    /// The service-account issuer's discovery documents, if published.
    pub issuer_discovery: Option<crate::auth::IssuerDiscovery>,
}

impl Routes {
    pub async fn serve(
        &self,
        method: &Method,
        path: &str,
        query: &Query,
        headers: &HeaderMap,
    ) -> Response {
        serve(self, method, path, query, headers).await
    }
}

async fn serve(
    server: &Routes,
    method: &Method,
    path: &str,
    query: &Query,
    headers: &HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return response::error(&Status::method_not_supported());
    }
    let path = path.trim_end_matches('/');
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let registry = || server.registry.snapshot();
    match parts.as_slice() {
        [] => json_ok(&root(&registry())),
        ["healthz" | "livez" | "readyz", rest @ ..] => health(server, parts[0], rest, query).await,
        ["version"] => json_ok(&version()),
        ["api"] => match negotiation::negotiate(accept, &Endpoint::DISCOVERY).map(|n| n.output) {
            Ok(Output::Discovery(v)) => aggregated(&registry(), true, v),
            Ok(_) => json_ok(&discovery::api_versions(&server.advertised)),
            Err(status) => response::error(&status),
        },
        ["apis"] => match negotiation::negotiate(accept, &Endpoint::DISCOVERY).map(|n| n.output) {
            Ok(Output::Discovery(v)) => aggregated(&registry(), false, v),
            Ok(_) => json_ok(&discovery::api_group_list(&registry())),
            Err(status) => response::error(&status),
        },
        ["api", "v1"] => found(discovery::resource_list(&registry(), "", "v1")),
        ["apis", group] => found(discovery::api_group(&registry(), group)),
        ["apis", group, version] => found(discovery::resource_list(&registry(), group, version)),
        ["openapi", ..] => crate::openapi::serve(&server.openapi.documents(), path, query, headers),
        [".well-known", "openid-configuration"] => match &server.issuer_discovery {
            Some(discovery) => issuer_document(&discovery.configuration, "application/json"),
            None => response::error(&Status::not_found_path()),
        },
        ["openid", "v1", "jwks"] => match &server.issuer_discovery {
            Some(discovery) => issuer_document(&discovery.jwks, "application/jwk-set+json"),
            None => response::error(&Status::not_found_path()),
        },
        _ => response::error(&Status::not_found_path()),
    }
}

/// A service-account issuer discovery document, cacheable for an hour as Kubernetes
/// serves it.
fn issuer_document(value: &Value, content_type: &'static str) -> Response {
    let mut response = json_ok(value);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}

fn json_ok(value: &Value) -> Response {
    response::json(StatusCode::OK, value)
}

fn found(value: Option<Value>) -> Response {
    match value {
        Some(value) => json_ok(&value),
        None => response::error(&Status::not_found_path()),
    }
}

fn aggregated(snapshot: &Snapshot, core: bool, version: &str) -> Response {
    let mut response = json_ok(&discovery::aggregated(snapshot, core, version));
    let content_type =
        format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    if let Ok(value) = HeaderValue::from_str(&content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

fn version() -> Value {
    let (major, minor, git_version) = KUBERNETES_VERSION;
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": "32",
        "gitVersion": format!("{git_version}+kyb.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else { std::env::consts::ARCH }),
    })
}

fn root(snapshot: &Snapshot) -> Value {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".to_string(),
        "/apis".to_string(),
        "/healthz".to_string(),
        "/livez".to_string(),
        "/readyz".to_string(),
        "/openapi/v2".to_string(),
        "/openapi/v3".to_string(),
        "/version".to_string(),
    ];
    for (group, versions) in snapshot.groups() {
        if group.is_empty() {
            continue;
        }
        paths.push(format!("/apis/{group}"));
        for version in versions {
            paths.push(format!("/apis/{group}/{version}"));
        }
    }
    paths.sort();
    json!({"paths": paths})
}

/// `/healthz`, `/livez`, `/readyz`, each check alone (`/readyz/etcd`,
/// `/readyz/component/scheduler`), and `?verbose`. The server's own checks come first, then
/// the process's (`Config::health`: its components, `shutdown`), readiness for `/readyz`
/// and liveness for the others.
async fn health(server: &Routes, endpoint: &str, rest: &[&str], query: &Query) -> Response {
    let storage_ok = server.store.current_revision().await.is_ok();
    let ready = server.ready.load(Ordering::Acquire);
    let probe = if endpoint == "readyz" {
        Probe::Ready
    } else {
        Probe::Live
    };
    let process = server.health.checks(probe);
    let mut checks: Vec<(&str, bool)> = vec![("ping", true), ("log", true), ("etcd", storage_ok)];
    if endpoint == "readyz" {
        checks.push(("etcd-readiness", storage_ok));
        checks.push(("informer-sync", ready));
        checks.push(("poststarthook/bootstrap-controller", ready));
    }
    checks.extend(
        process
            .iter()
            .map(|(name, state)| (name.as_str(), state.is_ok())),
    );
    if !rest.is_empty() {
        let check = rest.join("/");
        return match checks.iter().find(|(name, _)| *name == check) {
            Some((_, true)) => response::text(StatusCode::OK, "ok"),
            Some((name, false)) => response::text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {name} failed"),
            ),
            None => response::error(&Status::not_found_path()),
        };
    }
    let healthy = checks.iter().all(|(_, ok)| *ok);
    let verbose = query.get("verbose").is_some();
    if !verbose && healthy {
        return response::text(StatusCode::OK, "ok");
    }
    let mut text = String::new();
    for (name, ok) in &checks {
        if *ok {
            text.push_str(&format!("[+]{name} ok\n"));
        } else {
            text.push_str(&format!("[-]{name} failed: reason withheld\n"));
        }
    }
    if healthy {
        text.push_str(&format!("{endpoint} check passed\n"));
        response::text(StatusCode::OK, text)
    } else {
        text.push_str(&format!("{endpoint} check failed\n"));
        response::text(StatusCode::INTERNAL_SERVER_ERROR, text)
    }
}
