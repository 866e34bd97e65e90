//! The in-flight limit: at most so many requests handled at once (long-running ones —
//! watches, and later exec, attach, port-forward and proxy — exempt); past it, `429 Too
//! Many Requests` with `Retry-After: 1` at once instead of queueing, as kube-apiserver's
//! max-in-flight filter answers. Non-resource requests (health checks, discovery, OpenAPI)
//! are not counted, so a saturated server still answers its probes.

use super::{ResponseFuture, take};
use crate::body::Body;
use crate::request_info::RequestInfo;
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::Semaphore;
use tower::{Layer, Service};

#[derive(Clone)]
pub struct InFlightLayer {
    slots: Arc<Semaphore>,
}

impl InFlightLayer {
    pub fn new(limit: usize) -> InFlightLayer {
        InFlightLayer {
            slots: Arc::new(Semaphore::new(limit.max(1))),
        }
    }
}

impl<S> Layer<S> for InFlightLayer {
    type Service = InFlightService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        InFlightService {
            inner,
            slots: self.slots.clone(),
        }
    }
}

#[derive(Clone)]
pub struct InFlightService<S> {
    inner: S,
    slots: Arc<Semaphore>,
}

impl<S, B> Service<Request<Body>> for InFlightService<S>
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
    B: From<Bytes> + Send + 'static,
{
    type Response = Response<B>;
    type Error = Infallible;
    type Future = ResponseFuture<B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let mut inner = take(&mut self.inner);
        let counted = request
            .extensions()
            .get::<RequestInfo>()
            .is_some_and(|info| info.resource().is_some() && !info.is_long_running());
        if !counted {
            return Box::pin(inner.call(request));
        }
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            let status = Status::too_many_requests("Too many requests, please try again later.", 1);
            return Box::pin(std::future::ready(Ok(crate::reply::status(&status))));
        };
        Box::pin(async move {
            let response = inner.call(request).await;
            drop(permit);
            response
        })
    }
}
