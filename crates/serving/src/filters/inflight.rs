//! The in-flight limit: at most so many requests handled at once (long-running ones —
//! watches, and later exec, attach, port-forward and proxy — exempt); past it, `429 Too
//! Many Requests` with `Retry-After: 1` at once instead of queueing, as kube-apiserver's
//! max-in-flight filter answers. Non-resource requests (health checks, discovery, OpenAPI)
//! are not counted, so a saturated server still answers its probes.

use super::{Filter, Next};
use crate::body::Body;
use crate::request_info::RequestInfo;
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tower::Service;

#[derive(Clone)]
pub struct InFlightLimit {
    slots: Arc<Semaphore>,
}

impl InFlightLimit {
    pub fn new(limit: usize) -> InFlightLimit {
        InFlightLimit {
            slots: Arc::new(Semaphore::new(limit.max(1))),
        }
    }
}

impl<B: From<Bytes> + Send + 'static> Filter<B> for InFlightLimit {
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let counted = request
            .extensions()
            .get::<RequestInfo>()
            .is_some_and(|info| info.resource().is_some() && !info.is_long_running());
        if !counted {
            return next.run(request).await;
        }
        let Ok(_permit) = self.slots.clone().try_acquire_owned() else {
            let status = Status::too_many_requests("Too many requests, please try again later.", 1);
            return crate::reply::status(&status);
        };
        next.run(request).await
    }
}
