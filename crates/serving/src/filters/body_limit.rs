//! The request body limit: a body declared larger than the limit is refused (413) before
//! the handler runs; any other body reaches the handler as a stream that fails with
//! [`TooLarge`](crate::body::TooLarge) once it grows past the limit, which
//! [`collect`](crate::body::collect) turns into the same 413. Nothing is buffered here.

use super::{Filter, Next};
use crate::body::{self, Body, Limited, TooLarge};
use bytes::Bytes;
use http::{Request, Response};
use std::convert::Infallible;
use tower::Service;

/// Bodies this much over the limit are still read (and thrown away) before answering 413,
/// so the client, still sending, gets the answer rather than a reset connection.
const DISCARD_LIMIT: usize = 32 << 20;

#[derive(Clone, Copy)]
pub struct BodyLimit {
    limit: usize,
}

impl BodyLimit {
    pub fn new(limit: usize) -> BodyLimit {
        BodyLimit { limit }
    }
}

impl<B: From<Bytes> + Send + 'static> Filter<B> for BodyLimit {
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let limit = self.limit;
        let (parts, body) = request.into_parts();
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|len| len > limit) {
            body::discard(body, DISCARD_LIMIT).await;
            return crate::reply::status(&TooLarge { limit }.status());
        }
        let body = Body::new(Limited::new(body, limit));
        next.run(Request::from_parts(parts, body)).await
    }
}
