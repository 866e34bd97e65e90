//! The API client components use: kube-rs's client with a client-side request rate limit
//! (a token bucket, as client-go's `--kube-api-qps` / `--kube-api-burst`) and a cap on
//! requests in flight at once ([`InFlightLayer`]; watches are not counted). Each request
//! in flight holds an HTTP/1.1 connection with its buffers, so a burst of hundreds of
//! concurrent creates would otherwise open (and keep pooled) hundreds of connections.
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
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service};

/// Requests (other than watches) one client has in flight at once, by default.
pub const MAX_IN_FLIGHT: usize = 64;

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
        .with_layer(&InFlightLayer::new(MAX_IN_FLIGHT))
        .with_layer(&RateLimitLayer {
            qps: options.qps,
            burst: options.burst,
        })
        .build())
}

/// Caps the requests in flight at once; a request's slot is held until its response body
/// is read (or dropped). Watches, which stay open, are not counted.
#[derive(Clone, Debug)]
pub struct InFlightLayer {
    slots: Arc<Semaphore>,
}

impl InFlightLayer {
    pub fn new(limit: usize) -> InFlightLayer {
        InFlightLayer {
            slots: Arc::new(Semaphore::new(limit)),
        }
    }
}

impl<S> Layer<S> for InFlightLayer {
    type Service = InFlight<S>;
    fn layer(&self, inner: S) -> InFlight<S> {
        InFlight {
            inner,
            slots: self.slots.clone(),
        }
    }
}

/// The service [`InFlightLayer`] makes.
#[derive(Clone)]
pub struct InFlight<S> {
    inner: S,
    slots: Arc<Semaphore>,
}

/// Whether a request is a watch (`watch=true` or `watch=1` in its query).
fn is_watch<B>(request: &Request<B>) -> bool {
    request.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1"))
    })
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<Body>> for InFlight<S>
where
    S: Service<Request<Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: hyper::body::Body + Send + 'static,
{
    type Response = http::Response<Held<B>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let slots = (!is_watch(&request)).then(|| self.slots.clone());
        // The inner future does nothing until polled: the connection is taken after the slot.
        let response = self.inner.call(request);
        Box::pin(async move {
            let permit = match slots {
                Some(slots) => slots.acquire_owned().await.ok(),
                None => None,
            };
            let response = response.await?;
            Ok(response.map(|body| Held {
                body: Box::pin(body),
                permit,
            }))
        })
    }
}

/// A response body holding its request's in-flight slot until it is read to the end.
pub struct Held<B> {
    body: Pin<Box<B>>,
    permit: Option<OwnedSemaphorePermit>,
}

impl<B: hyper::body::Body> hyper::body::Body for Held<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let frame = ready!(this.body.as_mut().poll_frame(cx));
        if frame.is_none() || this.body.is_end_stream() {
            this.permit = None;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
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

    #[test]
    fn watches_are_told_apart() {
        let request = |uri: &str| Request::builder().uri(uri).body(()).unwrap();
        assert!(is_watch(&request(
            "/api/v1/pods?watch=true&resourceVersion=5"
        )));
        assert!(is_watch(&request("/api/v1/pods?resourceVersion=5&watch=1")));
        assert!(!is_watch(&request("/api/v1/pods?watch=false")));
        assert!(!is_watch(&request("/api/v1/namespaces/watch/pods")));
    }

    #[tokio::test]
    async fn requests_beyond_the_cap_wait_until_a_body_is_read() {
        use http_body_util::{BodyExt, Full};
        let inner = tower::service_fn(|_: Request<Body>| async {
            Ok::<_, Infallible>(http::Response::new(Full::new(bytes::Bytes::from_static(
                b"{}",
            ))))
        });
        let layer = InFlightLayer::new(2);
        let mut service = layer.layer(inner);
        let get = |uri: &str| Request::builder().uri(uri).body(Body::empty()).unwrap();
        let first = service
            .ready()
            .await
            .unwrap()
            .call(get("/a"))
            .await
            .unwrap();
        let second = service
            .ready()
            .await
            .unwrap()
            .call(get("/b"))
            .await
            .unwrap();
        assert_eq!(layer.slots.available_permits(), 0);
        // A watch is not held back.
        let watch = service.ready().await.unwrap().call(get("/c?watch=true"));
        tokio::time::timeout(std::time::Duration::from_secs(5), watch)
            .await
            .unwrap()
            .unwrap();
        // A third request waits until a body is read to its end.
        let third = service.ready().await.unwrap().call(get("/d"));
        tokio::pin!(third);
        assert!(futures::poll!(third.as_mut()).is_pending());
        first.into_body().collect().await.unwrap();
        let _third = tokio::time::timeout(std::time::Duration::from_secs(5), third)
            .await
            .unwrap()
            .unwrap();
        drop(second);
        assert_eq!(
            layer.slots.available_permits(),
            1,
            "dropping a body frees its slot"
        );
    }

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
