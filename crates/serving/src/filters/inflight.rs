//! The max-in-flight limits, used when API Priority and Fairness is off
//! (`--enable-priority-and-fairness=false`): at most so many read-only and so many
//! mutating requests handled at once (long-running ones — watches, exec, attach,
//! port-forward, proxy, log — exempt); past a limit, `429 Too Many Requests` with
//! `Retry-After: 1` at once instead of queueing, as kube-apiserver's max-in-flight filter
//! answers. Non-resource requests (health checks, discovery, OpenAPI) are not counted, so
//! a saturated server still answers its probes.

use super::{Filter, Next};
use crate::body::Body;
use crate::request_info::{RequestInfo, Verb};
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tower::Service;

#[derive(Clone)]
pub struct InFlightLimit {
    read_only: Arc<Semaphore>,
    mutating: Arc<Semaphore>,
}

impl InFlightLimit {
    /// `read_only` (`--max-requests-inflight`) and `mutating`
    /// (`--max-mutating-requests-inflight`) requests at once.
    pub fn new(read_only: usize, mutating: usize) -> InFlightLimit {
        InFlightLimit {
            read_only: Arc::new(Semaphore::new(read_only.max(1))),
            mutating: Arc::new(Semaphore::new(mutating.max(1))),
        }
    }
}

impl<B: From<Bytes> + Send + 'static> Filter<B> for InFlightLimit {
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let slots = match request.extensions().get::<RequestInfo>() {
            Some(info) if !info.is_long_running() => match info.resource() {
                Some(r) if matches!(r.verb, Verb::Get | Verb::List | Verb::Watch) => {
                    &self.read_only
                }
                Some(_) => &self.mutating,
                None => return next.run(request).await,
            },
            _ => return next.run(request).await,
        };
        let Ok(_permit) = slots.clone().try_acquire_owned() else {
            let status = Status::too_many_requests("Too many requests, please try again later.", 1);
            return crate::reply::status(&status);
        };
        next.run(request).await
    }
}
