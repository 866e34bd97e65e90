//! Serving a stack over TLS: accept connections, finish each handshake within a deadline,
//! read the verified client certificate's identity, and hand every request on the
//! connection to the service with a [`Connection`] in its extensions. HTTP/1.1 and HTTP/2;
//! HTTP upgrades (WebSocket, SPDY) are let through to handlers that take them.

use crate::body::{Body, BoxError};
use crate::user::User;
use bytes::Bytes;
use http::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::{Service, ServiceExt};

/// How long a client gets to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the connection a request came on tells about it.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    pub peer: Option<IpAddr>,
    /// The user a client certificate verified against the server's client CA names (CN
    /// user, O groups).
    pub certificate: Option<Arc<User>>,
}

/// Accepts TLS connections on `listener` and serves each with a clone of `service`, until
/// the returned future is dropped.
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
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
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
        let service = service.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let stream =
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
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
            let certificate = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .and_then(|cert| kyb_pki::identity(cert))
                .map(|identity| Arc::new(User::from_certificate(&identity)));
            let connection = Connection {
                peer: Some(peer.ip()),
                certificate,
            };
            let hyper_service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let mut request = request.map(Body::new);
                    request.extensions_mut().insert(connection.clone());
                    service.clone().oneshot(request)
                });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(error) = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), hyper_service)
                .await
            {
                tracing::debug!(%error, "connection ended");
            }
        });
    }
}
