//! Calling a webhook: where it is (a URL, or a Service resolved to one of its ready
//! endpoints), TLS trusting its `caBundle` (the system's roots when empty), one POST of
//! the AdmissionReview with the webhook's timeout, the response body read whole (bounded).

use crate::engine::Engine;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest response a webhook may send.
const MAX_RESPONSE: usize = 3 << 20;
/// Where the system's trusted roots are (Debian's ca-certificates).
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Where a webhook is and how to reach it.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Url(String),
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

impl Endpoint {
    pub fn from_client_config(config: &Value) -> Option<Endpoint> {
        if let Some(url) = config["url"].as_str() {
            return Some(Endpoint::Url(url.to_string()));
        }
        let service = config.get("service")?;
        Some(Endpoint::Service {
            namespace: service["namespace"].as_str()?.to_string(),
            name: service["name"].as_str()?.to_string(),
            path: service["path"].as_str().unwrap_or("/").to_string(),
            port: service["port"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        })
    }

    /// The URL as Kubernetes names it in errors (`https://svc.ns.svc:443/path`).
    pub fn display(&self, timeout: Duration) -> String {
        let base = match self {
            Endpoint::Url(url) => url.clone(),
            Endpoint::Service {
                namespace,
                name,
                path,
                port,
            } => format!("https://{name}.{namespace}.svc:{port}{path}"),
        };
        let separator = if base.contains('?') { '&' } else { '?' };
        format!("{base}{separator}timeout={}s", timeout.as_secs())
    }
}

/// TLS client configurations by CA bundle, built once each.
#[derive(Default)]
pub struct TlsConfigs {
    configs: Mutex<HashMap<String, Arc<rustls::ClientConfig>>>,
}

impl TlsConfigs {
    fn get(&self, ca_bundle: &str) -> Result<Arc<rustls::ClientConfig>, String> {
        if let Ok(configs) = self.configs.lock()
            && let Some(config) = configs.get(ca_bundle)
        {
            return Ok(config.clone());
        }
        let pem = if ca_bundle.is_empty() {
            std::fs::read_to_string(SYSTEM_ROOTS)
                .map_err(|e| format!("reading the system roots {SYSTEM_ROOTS}: {e}"))?
        } else {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(ca_bundle)
                .map_err(|e| format!("the caBundle is not base64: {e}"))?;
            String::from_utf8(bytes).map_err(|_| "the caBundle is not PEM".to_string())?
        };
        let config = kyb_pki::tls::client_config(&pem, None).map_err(|e| e.to_string())?;
        if let Ok(mut configs) = self.configs.lock() {
            configs.insert(ca_bundle.to_string(), config.clone());
        }
        Ok(config)
    }
}

/// Where to connect, what name to verify, and the request target.
struct Resolved {
    connect: String,
    server_name: String,
    path: String,
}

fn resolve(engine: &Engine, endpoint: &Endpoint) -> Result<Resolved, String> {
    match endpoint {
        Endpoint::Url(url) => {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| format!("parsing the webhook URL {url:?}: {e}"))?;
            if uri.scheme_str() != Some("https") {
                return Err(format!("webhook URL {url:?} is not https"));
            }
            let host = uri.host().ok_or("the webhook URL has no host")?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let port = uri.port_u16().unwrap_or(443);
            let connect = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            Ok(Resolved {
                connect,
                server_name: host.to_string(),
                path: uri
                    .path_and_query()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_else(|| "/".to_string()),
            })
        }
        Endpoint::Service {
            namespace,
            name,
            path,
            port,
        } => {
            let address = service_endpoint(engine, namespace, name, *port)?;
            Ok(Resolved {
                connect: address,
                server_name: format!("{name}.{namespace}.svc"),
                path: path.clone(),
            })
        }
    }
}

/// A ready endpoint of a service's port: the API server reaches webhooks behind services
/// directly, as kube-apiserver does with endpoint routing.
fn service_endpoint(
    engine: &Engine,
    namespace: &str,
    name: &str,
    port: u16,
) -> Result<String, String> {
    let service = engine
        .cache
        .lookup("", "services", Some(namespace), name)
        .ok_or_else(|| format!("service \"{name}\" not found"))?;
    let service_port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p["port"].as_u64() == Some(u64::from(port)))
        })
        .ok_or_else(|| format!("service {namespace}/{name} has no port {port}"))?;
    let port_name = service_port["name"].as_str().unwrap_or_default();
    let endpoints = engine
        .cache
        .lookup("", "endpoints", Some(namespace), name)
        .ok_or_else(|| format!("service {namespace}/{name} has no endpoints"))?;
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let Some(target) = subset["ports"].as_array().and_then(|ports| {
            ports
                .iter()
                .find(|p| p["name"].as_str().unwrap_or_default() == port_name)
                .and_then(|p| p["port"].as_u64())
        }) else {
            continue;
        };
        if let Some(ip) = subset["addresses"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|a| a["ip"].as_str())
        {
            return Ok(if ip.contains(':') {
                format!("[{ip}]:{target}")
            } else {
                format!("{ip}:{target}")
            });
        }
    }
    Err(format!(
        "no ready endpoints for service {namespace}/{name} port {port}"
    ))
}

/// POSTs `body` to the webhook and returns the response body; errors read like the
/// underlying failure ("connection refused", "context deadline exceeded").
pub async fn post(
    engine: &Engine,
    tls: &TlsConfigs,
    endpoint: &Endpoint,
    ca_bundle: &str,
    timeout: Duration,
    body: Bytes,
) -> Result<Value, String> {
    let attempt = async {
        let resolved = resolve(engine, endpoint)?;
        let config = tls.get(ca_bundle)?;
        let tcp = tokio::net::TcpStream::connect(&resolved.connect)
            .await
            .map_err(|e| format!("dial tcp {}: {e}", resolved.connect))?;
        let _ = tcp.set_nodelay(true);
        let name = rustls::pki_types::ServerName::try_from(resolved.server_name.clone())
            .map_err(|e| format!("invalid server name {:?}: {e}", resolved.server_name))?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("tls: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let separator = if resolved.path.contains('?') {
            '&'
        } else {
            '?'
        };
        let request = http::Request::post(format!(
            "{}{separator}timeout={}s",
            resolved.path,
            timeout.as_secs()
        ))
        .header(http::header::HOST, resolved.server_name.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| format!("reading the response: {e}"))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "the server responded with the status code {} but did not return more information",
                status.as_u16()
            ));
        }
        serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| format!("received invalid webhook response: {e}"))
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err("context deadline exceeded".to_string()),
    }
}
