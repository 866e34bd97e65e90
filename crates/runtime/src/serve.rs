//! A component's own HTTP endpoint: `/metrics` (Prometheus text format) and `/healthz`,
//! served over plain HTTP on the address the component is given (loopback by default).

use crate::metrics::Registry;
use anyhow::Context as _;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::sync::Arc;

/// Binds `address` and serves the endpoints until the process ends; returns the bound
/// address (useful with port 0).
pub async fn serve(address: SocketAddr, registry: Arc<Registry>) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding the metrics address {address}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let registry = registry.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let registry = registry.clone();
                    async move { Ok::<_, std::convert::Infallible>(answer(&request, &registry)) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}

fn answer(request: &Request<Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match request.uri().path() {
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            registry.render(),
        ),
        "/healthz" | "/livez" | "/readyz" => (StatusCode::OK, "text/plain", "ok".to_string()),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "404 page not found\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, value);
    }
    response
}
