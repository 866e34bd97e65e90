//! The API client components use: kube-rs's client with a client-side request rate limit
//! (a token bucket, as client-go's `--kube-api-qps` / `--kube-api-burst`).
//!
//! Retries come from kube-rs's default stack: requests answered 429, 503 or 504 are
//! retried with jittered exponential backoff (5 ms doubling, up to 15 times), honouring
//! the server's `Retry-After`. Other 5xx answers are not retried blindly (a create that
//! failed with 500 may have happened); the controllers' work queues retry those with their
//! own backoff.

use crate::queue::TokenBucket;
use anyhow::Context as _;
use http::Request;
use kube::client::{Body, ClientBuilder};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tower::{Layer, Service};

/// How fast a component may send requests.
#[derive(Clone, Copy, Debug)]
pub struct ClientOptions {
    /// Requests per second, sustained.
    pub qps: f64,
    /// Requests allowed in a burst above the rate.
    pub burst: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            qps: 1000.0,
            burst: 2000,
        }
    }
}

/// A kube-rs client from a kubeconfig file, rate limited by `options`.
pub async fn from_kubeconfig(path: &Path, options: ClientOptions) -> anyhow::Result<kube::Client> {
    from_config(config_from_kubeconfig(path).await?, options)
}

/// The connection settings of a kubeconfig file's current context.
pub async fn config_from_kubeconfig(path: &Path) -> anyhow::Result<kube::Config> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let file = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .with_context(|| format!("loading {}", path.display()))
}

/// A kube-rs client for `config`, rate limited by `options`.
pub fn from_config(config: kube::Config, options: ClientOptions) -> anyhow::Result<kube::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = ClientBuilder::try_from(config).context("building the API client")?;
    Ok(builder
        .with_layer(&RateLimitLayer {
            qps: options.qps,
            burst: options.burst,
        })
        .build())
}

/// Spaces requests by a token bucket.
#[derive(Clone, Copy, Debug)]
pub struct RateLimitLayer {
    pub qps: f64,
    pub burst: u32,
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;
    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited {
            inner,
            bucket: TokenBucket::new(self.qps, f64::from(self.burst)),
            reserved: false,
            wait: None,
        }
    }
}

/// The service [`RateLimitLayer`] makes: ready once the next request's token is due.
pub struct RateLimited<S> {
    inner: S,
    bucket: TokenBucket,
    /// Whether a token is held for the next call.
    reserved: bool,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S: Service<Request<Body>>> Service<Request<Body>> for RateLimited<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !self.reserved {
            self.reserved = true;
            let delay = self.bucket.reserve(tokio::time::Instant::now());
            if !delay.is_zero() {
                self.wait = Some(Box::pin(tokio::time::sleep(delay)));
            }
        }
        if let Some(wait) = &mut self.wait {
            ready!(wait.as_mut().poll(cx));
            self.wait = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        self.reserved = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::convert::Infallible;
    use tower::ServiceExt;

    #[tokio::test(start_paused = true)]
    async fn requests_beyond_the_burst_wait_for_the_rate() {
        let inner = tower::service_fn(|_: Request<Body>| async { Ok::<_, Infallible>(()) });
        let mut service = RateLimitLayer {
            qps: 10.0,
            burst: 3,
        }
        .layer(inner);
        let start = tokio::time::Instant::now();
        for _ in 0..5 {
            service
                .ready()
                .await
                .unwrap()
                .call(Request::new(Body::empty()))
                .await
                .unwrap();
        }
        // Three at once, then one per 100 ms.
        assert_eq!(start.elapsed().as_millis(), 200);
    }
}
