//! The client itself: TLS to the kubelet (the API server's kubelet client certificate; the
//! kubelet's certificate verified against `--kubelet-certificate-authority`, or not at all
//! without one, as kube-apiserver does), one HTTP/1.1 connection per request, the
//! response handed back as it arrives.

use super::address::{DEFAULT_PREFERRED_ADDRESS_TYPES, kubelet_port, preferred_address};
use super::dial::{join_host_port, open};
use super::errors::{backend_status, transport_error};
use crate::engine::Engine;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::upgrade::Upgraded;
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
        join_host_port(&self.host, self.port)
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
    /// The user the client certificate names, if there is one.
    user: Option<String>,
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
        let user = identity
            .and_then(|c| kyb_pki::tls::pem_certificates(&c.cert_pem).ok())
            .and_then(|certificates| certificates.into_iter().next())
            .and_then(|der| kyb_pki::identity(&der))
            .map(|identity| identity.user);
        Ok(KubeletClient {
            inner: Arc::new(Inner {
                user,
                tls,
                insecure_tls,
                preferred_address_types: config.preferred_address_types.clone(),
                default_port: config.default_port,
                connect_timeout: config.connect_timeout,
            }),
        })
    }

    /// The user kubelets see (the client certificate's common name), if the client has a
    /// certificate: what the bootstrap policy lets call the kubelet API.
    pub fn user(&self) -> Option<&str> {
        self.inner.user.as_deref()
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
    /// error codes included, is returned; a failure to get one is Go's client error
    /// (`Get "https://…": dial tcp …`).
    pub async fn send(
        &self,
        location: &KubeletLocation,
        request: Request<Body>,
    ) -> Result<Response<Incoming>, Status> {
        let method = request.method().clone();
        let url = location.url(request.uri().path_and_query().map_or("/", |p| p.as_str()));
        self.round_trip(location, request)
            .await
            .map_err(|why| transport_error(&method, &url, why))
    }

    /// [`KubeletClient::send`] with the failure as the transport words it
    /// (`dial tcp …: connect: connection refused`), as a reverse proxy reports it.
    pub(crate) async fn round_trip(
        &self,
        location: &KubeletLocation,
        request: Request<Body>,
    ) -> Result<Response<Incoming>, String> {
        let tls = if location.insecure_skip_tls_verify {
            self.inner.insecure_tls.clone()
        } else {
            self.inner.tls.clone()
        };
        let mut sender = open(
            &location.host,
            location.port,
            Some(tls),
            self.inner.connect_timeout,
        )
        .await?;
        let request = origin_form(request, &location.authority())?;
        sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())
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
}

/// The request as sent on a connection to `authority`: HTTP/1.1, the URI in origin form
/// (path and query), `Host` the backend's.
pub fn origin_form(request: Request<Body>, authority: &str) -> Result<Request<Body>, String> {
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = path
        .parse()
        .map_err(|e| format!("invalid path {path:?}: {e}"))?;
    parts.version = http::Version::HTTP_11;
    let host = authority
        .parse::<http::HeaderValue>()
        .map_err(|e| format!("invalid address {authority:?}: {e}"))?;
    parts.headers.insert(http::header::HOST, host);
    Ok(Request::from_parts(parts, body))
}
