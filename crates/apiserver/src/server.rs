//! The API server process: configuration, start-up, and the stack every request passes.
//!
//! The stack ([`ApiServer::stack`]), outermost first, is Kubernetes' handler chain:
//!
//! 1. request log — the audit ID and arrival time; the debug log line (`filters`)
//! 2. request info — what the request targets: resource verb or non-resource path;
//!    then the request timeout — `504` for a request that is not long-running and has
//!    not been answered within `request_timeout` (or its `?timeout=`)
//! 3. authentication — the connection's client certificate, else a bearer token, else
//!    anonymous; a refused credential goes to the audited `401`
//! 4. audit — the record, at the level the policy gives this user and request
//! 5. impersonation — `Impersonate-*` headers, if the user may
//! 6. priority and fairness — each request classified by the FlowSchemas and queued fairly
//!    for a seat of its priority level, `429` when its queue is full (`flowcontrol`); or,
//!    with it off, the max-in-flight limits (`429` past them; watches and non-resource
//!    requests not counted)
//! 7. authorization — `system:masters`, the Node authorizer, RBAC; refused is `403`
//! 8. body limit — `413` for a body over `max_body_bytes`, declared or streamed
//! 9. router — non-resource routes, connect handlers (streamed), or the REST engine
//!    (decode → admission → storage)
//!
//! Layers 2, 3, 6, 7 and 8 are `kyb-serving`'s generic ones, which other servers (the
//! kubelet) reuse; 1, 4 and 5 are this crate's (`filters`). Connections are TLS only
//! (`kyb_serving::tls`); a verified client certificate authenticates every request on its
//! connection.

use crate::audit::Auditor;
use crate::auth::{Authenticator, RequestAuthenticator};
use crate::bootstrap::{self, Advertised};
use crate::cache::WatchCache;
use crate::engine::{Engine, ServiceRanges};
use crate::filters::{Audit, Impersonation, RequestLog};
use crate::response::{self, Response};
use crate::router::{Connectors, Router};
use crate::routes::Routes;
use http::Request;
use kyb_serving::filters::{
    Authentication, Authorization, BodyLimit, InFlightLimit, PriorityAndFairness, RequestTimeout,
    ResolveRequestInfo, Unauthorized, filter,
};
use kyb_serving::{Body, RequestInfo};
use kyb_storage::Store;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;
use tower::util::BoxCloneService;
use tower::{Layer, ServiceBuilder};

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
    /// Read-only requests served at once (watches excluded) before answering 429, with
    /// priority and fairness off; with it on, part of the server's concurrency limit.
    pub max_requests_in_flight: usize,
    /// Mutating requests served at once, likewise.
    pub max_mutating_requests_in_flight: usize,
    /// API Priority and Fairness (`--enable-priority-and-fairness`); off, the
    /// max-in-flight limits apply.
    pub priority_and_fairness: bool,
    /// Larger request bodies get 413.
    pub max_body_bytes: usize,
    /// How long a request that is not long-running may take before a 504 (zero: no limit).
    pub request_timeout: std::time::Duration,
    /// Connection timeouts and the per-client connection cap.
    pub connection_limits: kyb_serving::tls::Limits,
    /// Checks kept by others (the process's supervised components, its shutdown), reported
    /// beside the server's own in `/readyz`, `/livez` and `/healthz`.
    pub health: kyb_component::Health,
    /// How the server reaches kubelets (`--kubelet-*`).
    pub kubelet: crate::kubelet::KubeletClientConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: 6443,
            advertise_address: None,
            service_cidr: (Ipv4Addr::new(10, 43, 0, 0), 16),
            node_ports: (30000, 32767),
            max_requests_in_flight: 400,
            max_mutating_requests_in_flight: 200,
            priority_and_fairness: true,
            max_body_bytes: 3 << 20,
            request_timeout: std::time::Duration::from_secs(60),
            connection_limits: kyb_serving::tls::Limits::default(),
            health: kyb_component::Health::default(),
            kubelet: crate::kubelet::KubeletClientConfig::default(),
        }
    }
}

/// The longest a request waits in a priority level's queue: a quarter of Kubernetes'
/// default request timeout (one minute), as kube-apiserver sets it.
const QUEUE_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

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
    #[error("building the resource registry: {0}")]
    Registry(#[from] kyb_api::registry::RegistryError),
    #[error("configuring the kubelet client: {0}")]
    KubeletClient(#[from] kyb_pki::Error),
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

/// The whole request stack as one service: what the TLS loop serves and what tests drive
/// in process (`tower::ServiceExt::oneshot`).
pub type Stack = BoxCloneService<Request<Body>, Response, Infallible>;

/// A bound, bootstrapped API server, ready to serve.
pub struct ApiServer {
    engine: Arc<Engine>,
    routes: Arc<Routes>,
    connectors: Arc<Connectors>,
    auditor: Option<Arc<Auditor>>,
    flow_control: Arc<crate::flowcontrol::FlowControl>,
    config: Config,
    advertised: Advertised,
    /// `None` for a server driven in process, through [`ApiServer::stack`] alone.
    listener: Option<TcpListener>,
    tls: Arc<rustls::ServerConfig>,
}

impl ApiServer {
    /// Binds the port and loads the watch cache; [`ApiServer::serve`] then creates the
    /// default objects and serves.
    pub async fn start(
        store: Arc<dyn Store>,
        config: Config,
        security: Security,
    ) -> Result<Self, StartError> {
        let address = SocketAddr::new(config.bind_address, config.port);
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| StartError::Bind { address, source })?;
        let mut server = Self::in_process(store, config, security).await?;
        server.listener = Some(listener);
        Ok(server)
    }

    /// A server with no port: its [`stack`](ApiServer::stack) is driven in process (tests),
    /// after [`bootstrap`](ApiServer::bootstrap).
    pub async fn in_process(
        store: Arc<dyn Store>,
        config: Config,
        security: Security,
    ) -> Result<Self, StartError> {
        let kubelet = crate::kubelet::KubeletClient::new(&config.kubelet)?;
        let registry = Arc::new(crate::strategies::registry()?);
        let cache = WatchCache::start(store.clone(), registry.clone()).await?;
        let authorizer = Arc::new(crate::auth::Authorizer {
            nodes: crate::auth::NodeAuthorizer::start(&cache),
            rbac: crate::auth::Rbac::start(&cache),
        });
        let engine = Arc::new(Engine {
            registry: registry.clone(),
            cache,
            store: store.clone(),
            admission: security.admission,
            authorizer,
            authenticator: Arc::new(security.authenticator),
            services: ServiceRanges::new(config.service_cidr, config.node_ports),
            identity: Arc::new(crate::auth::User::apiserver()),
            health: config.health.clone(),
            kubelet,
            metrics: Default::default(),
        });
        let advertised = Advertised {
            address: advertise_address(&config),
            port: config.port,
        };
        let external = format!("{}:{}", advertised.address, advertised.port);
        let issuer_discovery = engine
            .authenticator
            .service_accounts
            .as_ref()
            .and_then(|tokens| tokens.discovery(&external));
        let flow_control = crate::flowcontrol::FlowControl::start(
            &engine.cache,
            config.max_requests_in_flight + config.max_mutating_requests_in_flight,
        );
        let routes = Arc::new(Routes {
            issuer_discovery,
            advertised: external,
            openapi: crate::openapi::Published::new(registry.clone()),
            registry,
            store,
            ready: Arc::new(AtomicBool::new(false)),
            health: config.health.clone(),
        });
        Ok(Self {
            engine,
            routes,
            connectors: Arc::new(default_connectors()),
            auditor: security.auditor,
            flow_control,
            config,
            advertised,
            listener: None,
            tls: security.tls,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        match &self.listener {
            Some(listener) => listener.local_addr(),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the server has no port",
            )),
        }
    }

    /// Serves `group`/`resource`/`subresource` (`"", "pods", "exec"`) with `handler`, which
    /// gets the request as it arrived: its body streamed, its connection upgradable.
    pub fn connect(
        &mut self,
        group: &str,
        resource: &str,
        subresource: &str,
        handler: Arc<dyn crate::router::Connect>,
    ) {
        Arc::make_mut(&mut self.connectors).register(group, resource, subresource, handler);
    }

    /// The handles resource requests are served with.
    pub fn engine(&self) -> Arc<Engine> {
        self.engine.clone()
    }

    /// The resources served: an entry added here (a definition with its strategy) is
    /// served once the watch cache has loaded it, listed in discovery and described in
    /// OpenAPI; a removed one stops being served.
    pub fn registry(&self) -> Arc<kyb_api::registry::Registry> {
        self.engine.registry.clone()
    }

    /// The request stack, from the request log down to the router (see the module doc).
    /// Each call builds a new stack with its own in-flight limit; the server serves one.
    pub fn stack(&self) -> Stack {
        let engine = &self.engine;
        let authenticator = Arc::new(RequestAuthenticator {
            authenticator: engine.authenticator.clone(),
            cache: engine.cache.clone(),
        });
        let audit = filter(Audit::new(self.auditor.clone()));
        let failed_authentication = audit.layer(Unauthorized::<response::Body>::default());
        let router = Router::new(engine.clone(), self.routes.clone(), self.connectors.clone());
        let stack = ServiceBuilder::new()
            .layer(filter(RequestLog))
            .layer(filter(ResolveRequestInfo::new(Arc::new(
                RequestInfo::of_api_request,
            ))))
            .layer(filter(RequestTimeout::new(self.config.request_timeout)))
            .layer(filter(Authentication::with_failure_service(
                authenticator,
                failed_authentication,
            )))
            .layer(audit)
            .layer(filter(Impersonation::new(engine.authorizer.clone())))
            .layer(tower::util::option_layer(
                self.config.priority_and_fairness.then(|| {
                    filter(PriorityAndFairness::new(
                        self.flow_control.clone(),
                        QUEUE_WAIT_LIMIT,
                    ))
                }),
            ))
            .layer(tower::util::option_layer(
                (!self.config.priority_and_fairness).then(|| {
                    filter(InFlightLimit::new(
                        self.config.max_requests_in_flight,
                        self.config.max_mutating_requests_in_flight,
                    ))
                }),
            ))
            .layer(filter(Authorization::new(engine.authorizer.clone())))
            .layer(filter(BodyLimit::new(self.config.max_body_bytes)))
            .service(router);
        BoxCloneService::new(stack)
    }

    /// Creates the default objects and starts the keepers; the server is ready after.
    pub async fn bootstrap(&self) {
        bootstrap::run(&self.engine, &self.advertised).await;
        crate::keepers::start(&self.engine).await;
        tokio::spawn(crate::metrics_api::scrape::run(
            self.engine.clone(),
            self.engine.metrics.clone(),
            Arc::new(self.engine.kubelet.clone()),
        ));
        self.routes.ready.store(true, Ordering::Release);
    }

    /// Serves until `shutdown` resolves. Readiness is reported once the default objects
    /// exist; `ready` is called then. The audit log is flushed before it returns.
    pub async fn serve(
        self,
        ready: impl FnOnce(SocketAddr) + Send,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let address = self.local_addr().ok();
        let stack = self.stack();
        let bootstrap = async {
            self.bootstrap().await;
            if let Some(address) = address {
                ready(address);
            }
            std::future::pending::<()>().await
        };
        let accept = async {
            match &self.listener {
                Some(listener) => {
                    let limits = self.config.connection_limits.clone();
                    kyb_serving::tls::serve_with(listener, self.tls.clone(), limits, stack).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = accept => {}
            () = bootstrap => {}
            () = shutdown => {}
        }
        if let Some(auditor) = &self.auditor {
            auditor.flush();
        }
    }
}

/// The connect subresources every server serves: `pods/log` and the proxies; exec,
/// attach and port-forward.
fn default_connectors() -> Connectors {
    let mut connectors = Connectors::default();
    crate::proxy::register(&mut connectors);
    crate::streaming::register(&mut connectors);
    connectors
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
