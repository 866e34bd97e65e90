//! Serving a stack over TLS: accept connections, finish each handshake within a deadline,
//! read the verified client certificate's identity, and hand every request on the
//! connection to the service with a [`Connection`] in its extensions. HTTP/1.1 and HTTP/2;
//! HTTP upgrades (WebSocket, SPDY) are let through to handlers that take them.
//!
//! Connections are kept as kube-apiserver's Go HTTP server keeps them ([`Limits`]): the TLS
//! handshake and a request's headers must arrive within the read-header timeout (32 s), a
//! connection with no request in progress is closed after the idle timeout (90 s), and dead
//! peers of long requests (watches, streams) are found by TCP keep-alive (3 min) and, on
//! HTTP/2, keep-alive pings. A client address may hold only so many connections at once;
//! those over the cap are closed on accept with one rate-limited log line, and accept
//! errors (out of file descriptors) back off instead of spinning.

mod activity;
mod clients;

use crate::body::{Body, BoxError};
use crate::user::User;
use activity::{Activity, Tracked, Watched};
use bytes::Bytes;
use clients::{Clients, RateLimitedLog};
use http::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::{Service, ServiceExt};

/// How long connections may take and stay, as kube-apiserver's HTTP server has it.
#[derive(Clone, Debug)]
pub struct Limits {
    /// A TLS handshake, and the headers of a request once they have begun (or of the
    /// first request of a connection), must arrive within this (Go's `ReadHeaderTimeout`,
    /// 32 s in kube-apiserver, which also bounds the handshake).
    pub read_header_timeout: Duration,
    /// A connection with no request in progress is closed after this (`IdleTimeout`, 90 s).
    pub idle_timeout: Duration,
    /// TCP keep-alive probes' idle time and interval (kube-apiserver's 3 min), which find
    /// dead peers of requests held open (watches, exec, logs).
    pub tcp_keepalive: Duration,
    /// HTTP/2 keep-alive pings: sent after this long without frames from the client, the
    /// connection is closed when one is not answered within as long again.
    pub http2_keepalive: Duration,
    /// The connections one client address may have open at once (0: no cap).
    pub max_connections_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read_header_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            tcp_keepalive: Duration::from_secs(180),
            http2_keepalive: Duration::from_secs(30),
            max_connections_per_client: 0,
        }
    }
}

/// What the connection a request came on tells about it.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    pub peer: Option<IpAddr>,
    /// The user a client certificate verified against the server's client CA names (CN
    /// user, O groups).
    pub certificate: Option<Arc<User>>,
}

/// Accepts TLS connections on `listener` and serves each with a clone of `service`, with
/// the default [`Limits`], until the returned future is dropped.
pub async fn serve<S, B>(listener: &TcpListener, tls: Arc<rustls::ServerConfig>, service: S)
where
    S: Service<Request<Body>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    serve_with(listener, tls, Limits::default(), service).await;
}

/// [`serve`] with the given limits.
pub async fn serve_with<S, B>(
    listener: &TcpListener,
    tls: Arc<rustls::ServerConfig>,
    limits: Limits,
    service: S,
) where
    S: Service<Request<Body>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let limits = Arc::new(limits);
    let clients = Clients::new(limits.max_connections_per_client);
    let accept_errors = RateLimitedLog::new(Duration::from_secs(10));
    let mut backoff = Duration::ZERO;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => {
                backoff = Duration::ZERO;
                accepted
            }
            Err(error) => {
                // Out of file descriptors (EMFILE) and the like: the pending connection
                // stays queued, so back off rather than spin on the same error.
                backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                if let Some(suppressed) = accept_errors.admit() {
                    tracing::warn!(%error, suppressed, "accepting connections failed; backing off");
                }
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        let Some(slot) = clients.admit(peer.ip()) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(limits.tcp_keepalive)
            .with_interval(limits.tcp_keepalive);
        if let Err(error) = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive) {
            tracing::debug!(%error, "setting TCP keep-alive");
        }
        let service = service.clone();
        let acceptor = acceptor.clone();
        let limits = limits.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let activity = Activity::new();
            let handshake = acceptor.accept(Watched::new(stream, activity.clone()));
            let stream = match tokio::time::timeout(limits.read_header_timeout, handshake).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let session = stream.get_ref().1;
            let http2 = session.alpn_protocol() == Some(b"h2");
            let certificate = session
                .peer_certificates()
                .and_then(|certs| certs.first())
                .and_then(|cert| kyb_pki::identity(cert))
                .map(|identity| Arc::new(User::from_certificate(&identity)));
            let connection = Connection {
                peer: Some(peer.ip()),
                certificate,
            };
            activity.connected();
            let tracker = activity.clone();
            let hyper_service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let request_guard = tracker.request_started();
                    let mut request = request.map(Body::new);
                    request.extensions_mut().insert(connection.clone());
                    let response = service.clone().oneshot(request);
                    async move {
                        let response = response.await?;
                        Ok::<_, Infallible>(response.map(|body| Tracked::new(body, request_guard)))
                    }
                });
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder
                .http2()
                .timer(TokioTimer::new())
                .keep_alive_interval(limits.http2_keepalive)
                .keep_alive_timeout(limits.http2_keepalive);
            let serving =
                builder.serve_connection_with_upgrades(TokioIo::new(stream), hyper_service);
            tokio::select! {
                result = serving => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "connection ended");
                    }
                }
                reason = activity.expired(&limits, http2) => {
                    tracing::debug!(%peer, reason, "closing connection");
                }
            }
        });
    }
}
