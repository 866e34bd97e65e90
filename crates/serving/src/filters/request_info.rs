//! Resolves what a request is about, once, for every layer after.

use super::take;
use crate::body::Body;
use crate::request_info::Resolver;
use http::{Request, Response};
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Puts the request's [`RequestInfo`](crate::RequestInfo) in its extensions.
#[derive(Clone)]
pub struct RequestInfoLayer {
    resolve: Resolver,
}

impl RequestInfoLayer {
    pub fn new(resolve: Resolver) -> RequestInfoLayer {
        RequestInfoLayer { resolve }
    }
}

impl<S> Layer<S> for RequestInfoLayer {
    type Service = RequestInfoService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestInfoService {
            inner,
            resolve: self.resolve.clone(),
        }
    }
}

#[derive(Clone)]
pub struct RequestInfoService<S> {
    inner: S,
    resolve: Resolver,
}

impl<S, B> Service<Request<Body>> for RequestInfoService<S>
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<B>;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (mut parts, body) = request.into_parts();
        let info = (self.resolve)(&parts);
        parts.extensions.insert(info);
        take(&mut self.inner).call(Request::from_parts(parts, body))
    }
}
