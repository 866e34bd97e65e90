//! The filter layers: tower [`Layer`](tower::Layer)s a server stacks around its handler,
//! each doing one thing to a request on its way in and recording what it decided in the
//! request's (or the response's) extensions for the layers after it.
//!
//! The API server's stack, outermost first, is Kubernetes' handler chain:
//! request info → authentication → audit → impersonation → in-flight limit → authorization
//! → body limit → router. The request facts travel as extensions: [`RequestInfo`] (set by
//! [`RequestInfoLayer`]), the [`Connection`](crate::Connection) (set by the TLS serving
//! loop), the `Arc<User>` (set by [`AuthenticationLayer`], replaced by impersonation);
//! decisions a later audit record needs travel back on the response
//! ([`AuthorizationDecision`]). The kubelet reuses request info, authentication,
//! authorization and the in-flight limit with its own resolver and authenticator.
//!
//! [`RequestInfo`]: crate::RequestInfo

mod authentication;
mod authorization;
mod body_limit;
mod inflight;
mod request_info;
mod timeout;

pub use authentication::{Authenticate, Authentication, AuthenticationFailure, Unauthorized};
pub use authorization::{Authorization, AuthorizationDecision, Authorize};
pub use body_limit::BodyLimit;
pub use inflight::InFlightLimit;
pub use request_info::ResolveRequestInfo;
pub use timeout::RequestTimeout;

use crate::body::Body;
use http::{Request, Response};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// One filter's logic: what it does to a request on its way in and to the response on its
/// way out, and whether the rest of the stack sees the request at all (a filter that
/// answers itself does not call `next`). [`filter`] makes it a tower layer.
pub trait Filter<B>: Clone + Send + Sync + 'static {
    fn filter<S>(
        &self,
        request: Request<Body>,
        next: Next<S>,
    ) -> impl Future<Output = Response<B>> + Send
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send;
}

/// The rest of the stack, ready to take one request.
pub struct Next<S> {
    inner: S,
}

impl<S> Next<S> {
    /// Passes the request on; the rest of the stack's response.
    pub async fn run<B>(mut self, request: Request<Body>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible>,
    {
        match self.inner.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// A [`Filter`] as a tower layer.
pub fn filter<F>(filter: F) -> FilterLayer<F> {
    FilterLayer { filter }
}

#[derive(Clone)]
pub struct FilterLayer<F> {
    filter: F,
}

impl<F: Clone, S> Layer<S> for FilterLayer<F> {
    type Service = Filtered<F, S>;

    fn layer(&self, inner: S) -> Self::Service {
        Filtered {
            filter: self.filter.clone(),
            inner,
        }
    }
}

/// A service behind a filter.
#[derive(Clone)]
pub struct Filtered<F, S> {
    filter: F,
    inner: S,
}

/// The future of every filtered service.
pub type ResponseFuture<B> = Pin<Box<dyn Future<Output = Result<Response<B>, Infallible>> + Send>>;

impl<F, S, B> Service<Request<Body>> for Filtered<F, S>
where
    F: Filter<B>,
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = Infallible;
    type Future = ResponseFuture<B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The service that was polled ready serves this request; a clone stays for the next.
        let fresh = self.inner.clone();
        let next = Next {
            inner: std::mem::replace(&mut self.inner, fresh),
        };
        let filter = self.filter.clone();
        Box::pin(async move { Ok(filter.filter(request, next).await) })
    }
}
