//! Resolves what a request is about, once, for every layer after. A path with a malformed
//! percent-escape is refused here as Go's HTTP server refuses it, before any handler: a
//! plain-text `400 Bad Request`.

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

impl<B: From<bytes::Bytes> + Send + 'static> Filter<B> for ResolveRequestInfo {
    async fn filter<S>(&self, mut request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        if crate::request_info::path_segments(request.uri().path()).is_none() {
            return bad_request_uri();
        }
        let (parts, body) = request.into_parts();
        let info = (self.resolve)(&parts);
        request = Request::from_parts(parts, body);
        request.extensions_mut().insert(info);
        next.run(request).await
    }
}

/// Go's answer to a request line it cannot parse (`url.ParseRequestURI` failed).
fn bad_request_uri<B: From<bytes::Bytes>>() -> Response<B> {
    let mut response = Response::new(B::from(bytes::Bytes::from_static(b"400 Bad Request")));
    *response.status_mut() = http::StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
