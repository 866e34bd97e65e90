//! Resolves what a request is about, once, for every layer after.

use super::{Filter, Next};
use crate::body::Body;
use crate::request_info::Resolver;
use http::{Request, Response};
use std::convert::Infallible;
use tower::Service;

/// Puts the request's [`RequestInfo`](crate::RequestInfo) in its extensions.
#[derive(Clone)]
pub struct ResolveRequestInfo {
    resolve: Resolver,
}

impl ResolveRequestInfo {
    pub fn new(resolve: Resolver) -> ResolveRequestInfo {
        ResolveRequestInfo { resolve }
    }
}

impl<B> Filter<B> for ResolveRequestInfo {
    async fn filter<S>(&self, mut request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let (parts, body) = request.into_parts();
        let info = (self.resolve)(&parts);
        request = Request::from_parts(parts, body);
        request.extensions_mut().insert(info);
        next.run(request).await
    }
}
