//! The API server process: configuration, the accept loop, and the request pipeline.
//!
//! The pipeline, outermost first: in-flight limit (long-running watches exempt) → request
//! body limit → request classification → authentication → authorization → the REST engine
//! (`rest`) or the non-resource routes (`routes`). Connections are TLS only; a verified
//! client certificate authenticates every request on its connection.

use crate::audit::{Arrival, Auditor, RequestAudit};
use crate::auth::{self, Attributes, Authenticator, User};
use crate::cache::WatchCache;
use crate::query::Query;
use crate::request::{self, Target, Verb};
use crate::response::{self, Response};
use crate::{bootstrap, rest, routes};
use bytes::Bytes;
use http::{HeaderMap, Request};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kyb_api::Status;
use kyb_storage::Store;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{Mutex, Semaphore};

/// How long a consistent read waits for the cache before reading storage directly.
const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

#[derive(Clone, Debug)]
pub struct Config {
    pub bind_address: IpAddr,
    pub port: u16,
    /// The address other components and pods reach the API server at (the `kubernetes`
    /// service's endpoint); derived from the bind address when not given.
    pub advertise_address: Option<Ipv4Addr>,
    /// The range ClusterIPs come from; its first address is the `kubernetes` service's.
    pub service_cidr: (Ipv4Addr, u8),
    pub node_ports: (u16, u16),
    /// Requests served at once (watches excluded) before answering 429.
    pub max_requests_in_flight: usize,
    /// Larger request bodies get 413.
    pub max_body_bytes: usize,
    /// Checks kept by others (the process's supervised components, its shutdown), reported
    /// beside the server's own in `/readyz`, `/livez` and `/healthz`.
    pub health: kyb_component::Health,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: 6443,
            advertise_address: None,
            service_cidr: (Ipv4Addr::new(10, 43, 0, 0), 16),
            node_ports: (30000, 32767),
            max_requests_in_flight: 600,
            max_body_bytes: 3 << 20,
            health: kyb_component::Health::default(),
        }
    }
}

/// Why the API server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("listening on {address}: {source}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("loading the watch cache: {0}")]
    Cache(#[from] kyb_storage::Error),
}

/// How the server proves who it is and learns who its clients are.
pub struct Security {
    /// The serving certificate and the CA client certificates are verified against.
    pub tls: Arc<rustls::ServerConfig>,
    pub authenticator: Authenticator,
    /// The admission chain every write passes.
    pub admission: crate::admission::Chain,
    /// Where audit events go, if anywhere.
    pub auditor: Option<Arc<Auditor>>,
    /// The cluster CA (PEM), published to every namespace for pods to trust.
    pub ca_pem: String,
}

/// How long a client gets to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// State shared by every request.
pub struct Server {
    /// This server, for work that outlives the request that starts it.
    me: std::sync::Weak<Server>,
    pub store: Arc<dyn Store>,
    pub cache: Arc<WatchCache>,
    pub config: Config,
    pub advertise_address: Ipv4Addr,
    pub ready: AtomicBool,
    pub started: Instant,
    pub service_allocation: Mutex<()>,
    pub openapi: Arc<kyb_openapi::Documents>,
    pub authenticator: Authenticator,
    pub authorizer: auth::Authorizer,
    pub admission: crate::admission::Chain,
    pub auditor: Option<Arc<Auditor>>,
    pub ca_pem: String,
    /// The identity of the server's own writes.
    pub apiserver_user: Arc<User>,
    inflight: Arc<Semaphore>,
}

impl Server {
    /// A shared handle to this server (`None` once it is being dropped).
    pub fn self_ref(&self) -> Option<Arc<Server>> {
        self.me.upgrade()
    }

    /// Waits until the cache reflects every acknowledged write; `false` if it did not catch
    /// up in time (the caller then reads storage).
    pub async fn fresh(&self) -> bool {
        self.cache.wait_fresh(FRESHNESS_WAIT).await.is_some()
    }
}

/// A bound, bootstrapped API server, ready to serve.
pub struct ApiServer {
    server: Arc<Server>,
    listener: TcpListener,
    tls: tokio_rustls::TlsAcceptor,
}

impl ApiServer {
    /// Binds the port, loads the watch cache and creates the default objects.
    pub async fn start(
        store: Arc<dyn Store>,
        config: Config,
        security: Security,
    ) -> Result<Self, StartError> {
        let address = SocketAddr::new(config.bind_address, config.port);
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| StartError::Bind { address, source })?;
        let cache = WatchCache::start(store.clone()).await?;
        let advertise_address = advertise_address(&config);
        let rbac = auth::Rbac::start(&cache);
        let nodes = auth::NodeAuthorizer::start(&cache);
        let server = Arc::new_cyclic(|me| Server {
            me: me.clone(),
            store,
            cache,
            advertise_address,
            ready: AtomicBool::new(false),
            started: Instant::now(),
            service_allocation: Mutex::new(()),
            openapi: Arc::new(crate::openapi::documents()),
            authenticator: security.authenticator,
            authorizer: auth::Authorizer { nodes, rbac },
            admission: security.admission,
            auditor: security.auditor,
            ca_pem: security.ca_pem,
            apiserver_user: Arc::new(User::apiserver()),
            inflight: Arc::new(Semaphore::new(config.max_requests_in_flight)),
            config,
        });
        let tls = tokio_rustls::TlsAcceptor::from(security.tls);
        Ok(Self {
            server,
            listener,
            tls,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn server(&self) -> Arc<Server> {
        self.server.clone()
    }

    /// Serves until `shutdown` resolves. Readiness is reported once the default objects
    /// exist; `ready` is called then.
    pub async fn serve(
        self,
        ready: impl FnOnce(SocketAddr) + Send,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let Self {
            server,
            listener,
            tls,
        } = self;
        let address = listener.local_addr().ok();
        let accept = {
            let server = server.clone();
            async move {
                loop {
                    let (stream, peer) = match listener.accept().await {
                        Ok(accepted) => accepted,
                        Err(error) => {
                            tracing::warn!(%error, "accepting a connection");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let server = server.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let stream =
                            match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await
                            {
                                Ok(Ok(stream)) => stream,
                                Ok(Err(error)) => {
                                    tracing::debug!(%error, "TLS handshake failed");
                                    return;
                                }
                                Err(_) => {
                                    tracing::debug!("TLS handshake timed out");
                                    return;
                                }
                            };
                        // The client certificate, verified against the cluster CA by rustls.
                        let certified: Option<Arc<User>> = stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(|certs| certs.first())
                            .and_then(|cert| kyb_pki::identity(cert))
                            .map(|identity| Arc::new(User::from_certificate(&identity)));
                        let peer = Some(peer.ip());
                        let service = hyper::service::service_fn(move |request| {
                            handle(server.clone(), peer, certified.clone(), request)
                        });
                        let builder =
                            hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                        if let Err(error) = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                        {
                            tracing::debug!(%error, "connection ended");
                        }
                    });
                }
            }
        };
        let bootstrap = {
            let server = server.clone();
            async move {
                bootstrap::run(&server).await;
                crate::keepers::start(&server).await;
                server.ready.store(true, Ordering::Release);
                if let Some(address) = address {
                    ready(address);
                }
                std::future::pending::<()>().await
            }
        };
        tokio::select! {
            () = accept => {}
            () = bootstrap => {}
            () = shutdown => {}
        }
    }
}

/// The address the API server advertises: the configured one, else derived from the
/// bind address.
pub fn advertise_address(config: &Config) -> Ipv4Addr {
    config
        .advertise_address
        .unwrap_or_else(|| advertise(config.bind_address))
}

/// The address to advertise when none was given: the bind address, or the host's primary
/// IPv4 address when bound to all or to loopback (Kubernetes refuses loopback endpoints).
fn advertise(bind: IpAddr) -> Ipv4Addr {
    match bind {
        IpAddr::V4(ip) if !ip.is_unspecified() && !ip.is_loopback() => ip,
        _ => std::net::UdpSocket::bind("0.0.0.0:0")
            .and_then(|s| s.connect("10.255.255.255:9").map(|()| s))
            .and_then(|s| s.local_addr())
            .ok()
            .and_then(|a| match a.ip() {
                IpAddr::V4(ip) if !ip.is_unspecified() => Some(ip),
                _ => None,
            })
            .unwrap_or(Ipv4Addr::LOCALHOST),
    }
}

async fn handle(
    server: Arc<Server>,
    peer: Option<IpAddr>,
    certified: Option<Arc<User>>,
    request: Request<Incoming>,
) -> Result<Response, Infallible> {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let audit_id = kyb_audit::audit_id_for(
        parts
            .headers
            .get(kyb_audit::AUDIT_ID_HEADER)
            .and_then(|v| v.to_str().ok()),
    );
    let arrival = Arrival {
        audit_id: &audit_id,
        uri: &parts.uri,
        headers: &parts.headers,
        peer,
        received: kyb_audit::MicroTime::now(),
        method: &parts.method,
    };
    let mut audit = RequestAudit::begin(None, &User::default(), &Target::NonResource, &arrival);
    let response = pipeline(&server, &parts, body, certified, &arrival, &mut audit).await;
    let mut response = audit.finish(response);
    if let Ok(value) = http::HeaderValue::from_str(&audit_id) {
        response
            .headers_mut()
            .insert(kyb_audit::AUDIT_ID_HEADER, value);
    }
    tracing::debug!(
        method = %parts.method,
        path = %parts.uri.path(),
        status = response.status().as_u16(),
        took = ?started.elapsed(),
        "request"
    );
    Ok(response)
}

/// The request pipeline: authentication → audit policy → impersonation → authorization
/// → in-flight limit → body → REST engine (admission and storage inside) or the
/// non-resource routes.
async fn pipeline(
    server: &Arc<Server>,
    parts: &http::request::Parts,
    body: Incoming,
    certified: Option<Arc<User>>,
    arrival: &Arrival<'_>,
    audit: &mut RequestAudit,
) -> Response {
    let query = Query::parse(parts.uri.query());
    let target = request::classify(&parts.method, parts.uri.path(), query.flag("watch"));
    let user =
        match server
            .authenticator
            .authenticate(certified.as_deref(), &parts.headers, &server.cache)
        {
            Ok(user) => user,
            Err(status) => {
                // Failed authentications are audited too, with no user.
                *audit = RequestAudit::begin(
                    server.auditor.as_ref(),
                    &User::default(),
                    &target,
                    arrival,
                );
                return response::error(&status);
            }
        };
    *audit = RequestAudit::begin(server.auditor.as_ref(), &user, &target, arrival);
    let user = match auth::impersonate(&server.authorizer, &user, &parts.headers) {
        Ok(Some(impersonated)) => {
            audit.impersonated(&impersonated);
            impersonated
        }
        Ok(None) => user,
        Err(status) => return response::error(&status),
    };
    let attributes = match &target {
        Target::Resource(resource) => Attributes::Resource {
            request: resource,
            field_selector: query.value("fieldSelector").unwrap_or_default(),
        },
        Target::NonResource => Attributes::NonResource {
            verb: non_resource_verb(&parts.method),
            path: parts.uri.path(),
        },
    };
    match server.authorizer.authorize(&user, &attributes) {
        Ok(reason) => audit.authorized(true, &reason),
        Err(status) => {
            tracing::debug!(user = %user.name, path = %parts.uri.path(), "forbidden");
            audit.authorized(false, &status.message);
            return response::error(&status);
        }
    }
    match target {
        Target::NonResource => {
            routes::serve(
                server,
                &parts.method,
                parts.uri.path(),
                &query,
                &parts.headers,
            )
            .await
        }
        Target::Resource(resource) => {
            let permit = if resource.verb == Verb::Watch {
                None
            } else {
                match server.inflight.clone().try_acquire_owned() {
                    Ok(permit) => Some(permit),
                    Err(_) => {
                        return response::error(&Status::too_many_requests(
                            "Too many requests, please try again later.",
                            1,
                        ));
                    }
                }
            };
            let response = match read_body(body, &parts.headers, server.config.max_body_bytes).await
            {
                Ok(body) => {
                    audit.request_body(
                        &body,
                        parts
                            .headers
                            .get(http::header::CONTENT_TYPE)
                            .and_then(|v| v.to_str().ok()),
                    );
                    let (response, annotations) = rest::serve(
                        server,
                        Arc::new(user),
                        resource,
                        query,
                        parts.headers.clone(),
                        body,
                    )
                    .await;
                    audit.annotate(&annotations);
                    response
                }
                Err(status) => response::error(&status),
            };
            drop(permit);
            response
        }
    }
}

/// The verb of a non-resource request, as authorizers see it.
fn non_resource_verb(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET | http::Method::HEAD => "get",
        http::Method::POST => "post",
        http::Method::PUT => "put",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "unknown",
    }
}

/// Bodies this much over the limit are still read (and thrown away) before answering 413,
/// so the client, still sending, gets the answer rather than a reset connection.
const DISCARD_LIMIT: usize = 32 << 20;

async fn read_body(body: Incoming, headers: &HeaderMap, limit: usize) -> Result<Bytes, Status> {
    let too_large = || Status::too_large(format!("the request body is larger than {limit} bytes"));
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        discard(body, DISCARD_LIMIT).await;
        return Err(too_large());
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(error) => Err(Status::bad_request(format!(
            "reading the request body: {error}"
        ))),
    }
}

/// Reads and drops up to `limit` bytes of a body.
async fn discard(mut body: Incoming, limit: usize) {
    let mut read = 0;
    while read < limit {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, |d| d.len()),
            _ => return,
        }
    }
}

/// The Status for a storage failure.
pub fn storage_error(error: kyb_storage::Error) -> Status {
    match error {
        kyb_storage::Error::ValueTooLarge { .. } => {
            Status::too_large("etcdserver: request is too large")
        }
        kyb_storage::Error::Compacted {
            requested,
            compacted,
        } => Status::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        kyb_storage::Error::FutureRevision { requested, current } => Status::timeout(format!(
            "Too large resource version: {requested}, current: {current}"
        )),
        kyb_storage::Error::Closed => Status::service_unavailable("the server is shutting down"),
        other => Status::internal(other.to_string()),
    }
}
