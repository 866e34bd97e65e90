//! The client itself: TLS to the kubelet (the API server's kubelet client certificate; the
//! kubelet's certificate verified against `--kubelet-certificate-authority`, or not at all
//! without one, as kube-apiserver does), one HTTP/1.1 connection per request, the
//! response handed back as it arrives.

use super::address::{DEFAULT_PREFERRED_ADDRESS_TYPES, kubelet_port, preferred_address};
use super::errors::{backend_status, transport_error};
use crate::engine::Engine;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use kyb_api::Status;
use kyb_pki::Credentials;
use kyb_serving::Body;
use std::sync::Arc;
use std::time::Duration;

/// The kubelets' port when a Node does not report one.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;
/// How much of a failed upgrade's answer is read into the error.
const MAX_ERROR_BODY: usize = 64 << 10;

/// How the API server reaches kubelets (kube-apiserver's `--kubelet-*` flags).
#[derive(Clone, Debug)]
pub struct KubeletClientConfig {
    /// The certificate and key presented to kubelets (`--kubelet-client-certificate`,
    /// `--kubelet-client-key`); none: the API server connects anonymously.
    pub client_certificate: Option<Credentials>,
    /// The CA (PEM) kubelets' serving certificates are verified against
    /// (`--kubelet-certificate-authority`); none: they are not verified.
    pub certificate_authority: Option<String>,
    /// `--kubelet-preferred-address-types`, most preferred first.
    pub preferred_address_types: Vec<String>,
    /// The port used when a Node reports none.
    pub default_port: u16,
    /// How long connecting (TCP and the TLS handshake) may take.
    pub connect_timeout: Duration,
}

impl Default for KubeletClientConfig {
    fn default() -> Self {
        KubeletClientConfig {
            client_certificate: None,
            certificate_authority: None,
            preferred_address_types: DEFAULT_PREFERRED_ADDRESS_TYPES
                .iter()
                .map(|t| t.to_string())
                .collect(),
            default_port: DEFAULT_KUBELET_PORT,
            connect_timeout: Duration::from_secs(30),
        }
    }
}

/// Where one node's kubelet is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletLocation {
    pub node_name: String,
    /// The address chosen by preferred type: an IP (without brackets) or a name.
    pub host: String,
    pub port: u16,
    /// Skip verifying this kubelet's certificate for the request (pods/log's
    /// `insecureSkipTLSVerifyBackend`).
    pub insecure_skip_tls_verify: bool,
}

impl KubeletLocation {
    /// `host:port`, an IPv6 address in brackets.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The kubelet's URL for `path_and_query` (`/containerLogs/ns/pod/c?follow=true`).
    pub fn url(&self, path_and_query: &str) -> String {
        format!("https://{}{path_and_query}", self.authority())
    }
}

/// The API server's client to kubelets; cheap to clone.
#[derive(Clone)]
pub struct KubeletClient {
    inner: Arc<Inner>,
}

struct Inner {
    tls: Arc<rustls::ClientConfig>,
    insecure_tls: Arc<rustls::ClientConfig>,
    preferred_address_types: Vec<String>,
    default_port: u16,
    connect_timeout: Duration,
}

impl std::fmt::Debug for KubeletClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletClient")
            .field(
                "preferred_address_types",
                &self.inner.preferred_address_types,
            )
            .field("default_port", &self.inner.default_port)
            .finish_non_exhaustive()
    }
}

impl KubeletClient {
    /// A client as `config` says; fails on an unreadable certificate, key or CA.
    pub fn new(config: &KubeletClientConfig) -> Result<KubeletClient, kyb_pki::Error> {
        let identity = config.client_certificate.as_ref();
        let insecure_tls = kyb_pki::tls::insecure_client_config(identity)?;
        let tls = match &config.certificate_authority {
            Some(ca_pem) => kyb_pki::tls::client_config(ca_pem, identity)?,
            None => insecure_tls.clone(),
        };
        Ok(KubeletClient {
            inner: Arc::new(Inner {
                tls,
                insecure_tls,
                preferred_address_types: config.preferred_address_types.clone(),
                default_port: config.default_port,
                connect_timeout: config.connect_timeout,
            }),
        })
    }

    /// Where `node_name`'s kubelet is, from the Node in the watch cache: `404 nodes "x" not
    /// found`, or Kubernetes' 500 `no preferred addresses found; known addresses: […]`.
    pub async fn location(
        &self,
        engine: &Engine,
        node_name: &str,
    ) -> Result<KubeletLocation, Status> {
        let node = engine
            .cache
            .lookup_shared("", "nodes", None, node_name)
            .ok_or_else(|| Status::not_found("", "nodes", node_name))?;
        let host = preferred_address(&node, &self.inner.preferred_address_types)
            .map_err(|message| Status::new(500, "", message))?;
        Ok(KubeletLocation {
            node_name: node_name.to_string(),
            host,
            port: kubelet_port(&node, self.inner.default_port),
            insecure_skip_tls_verify: false,
        })
    }

    /// Sends `request` (its URI's path and query are used; `Host` is set to the kubelet)
    /// and returns the kubelet's response with its body still streaming. Any answer,
    /// error codes included, is returned; a failure to get one is Go's transport error.
    pub async fn send(
        &self,
        location: &KubeletLocation,
        request: Request<Body>,
    ) -> Result<Response<Incoming>, Status> {
        let (mut parts, body) = request.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        let url = location.url(&path);
        let method = parts.method.clone();
        parts.uri = path
            .parse()
            .map_err(|e| Status::bad_request(format!("invalid kubelet path {path:?}: {e}")))?;
        let authority = location
            .authority()
            .parse::<http::HeaderValue>()
            .map_err(|e| Status::internal(format!("invalid kubelet address {url:?}: {e}")))?;
        parts.headers.insert(http::header::HOST, authority);
        let mut sender = self
            .connect(location)
            .await
            .map_err(|why| transport_error(&method, &url, why))?;
        sender
            .send_request(Request::from_parts(parts, body))
            .await
            .map_err(|e| transport_error(&method, &url, e))
    }

    /// Sends an upgrade request (`Connection: Upgrade`, `Upgrade: SPDY/3.1`, …) and
    /// returns the `101` answer's headers and the upgraded connection. Any other answer is
    /// an error with the kubelet's code and its body as the message.
    pub async fn upgrade(
        &self,
        location: &KubeletLocation,
        request: Request<Body>,
    ) -> Result<(Response<()>, Upgraded), Status> {
        let url = location.url(request.uri().path_and_query().map_or("/", |p| p.as_str()));
        let method = request.method().clone();
        let mut response = self.send(location, request).await?;
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            let code = response.status();
            let body = http_body_util::Limited::new(response.into_body(), MAX_ERROR_BODY)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            return Err(backend_status(code, &body));
        }
        let upgraded = hyper::upgrade::on(&mut response)
            .await
            .map_err(|e| transport_error(&method, &url, e))?;
        let (parts, _) = response.into_parts();
        Ok((Response::from_parts(parts, ()), upgraded))
    }

    /// A new connection to the kubelet, TLS established, its driver spawned.
    async fn connect(
        &self,
        location: &KubeletLocation,
    ) -> Result<hyper::client::conn::http1::SendRequest<Body>, String> {
        let address = location.authority();
        let tls = if location.insecure_skip_tls_verify {
            self.inner.insecure_tls.clone()
        } else {
            self.inner.tls.clone()
        };
        let server_name = rustls::pki_types::ServerName::try_from(location.host.clone())
            .map_err(|e| format!("invalid server name {:?}: {e}", location.host))?;
        let dial = async {
            let tcp = tokio::net::TcpStream::connect(&address)
                .await
                .map_err(|e| format!("dial tcp {address}: {}", go_io_error(&e)))?;
            let _ = tcp.set_nodelay(true);
            tokio_rustls::TlsConnector::from(tls)
                .connect(server_name, tcp)
                .await
                .map_err(|e| format!("tls: {e}"))
        };
        let stream = tokio::time::timeout(self.inner.connect_timeout, dial)
            .await
            .map_err(|_| format!("dial tcp {address}: i/o timeout"))??;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            if let Err(error) = connection.with_upgrades().await {
                tracing::debug!(%error, "kubelet connection ended");
            }
        });
        Ok(sender)
    }
}

/// An I/O error as Go words the common ones (`connect: connection refused`).
fn go_io_error(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
        _ => error.to_string(),
    }
}
