//! The request body limit: a body declared larger than the limit is refused (413) before
//! the handler runs; any other body reaches the handler as a stream that fails with
//! [`TooLarge`](crate::body::TooLarge) once it grows past the limit, which
//! [`collect`](crate::body::collect) turns into the same 413. Nothing is buffered here.

use super::{ResponseFuture, take};
use crate::body::{self, Body, Limited, TooLarge};
use bytes::Bytes;
use http::{Request, Response};
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// Bodies this much over the limit are still read (and thrown away) before answering 413,
/// so the client, still sending, gets the answer rather than a reset connection.
const DISCARD_LIMIT: usize = 32 << 20;

#[derive(Clone, Copy)]
pub struct BodyLimitLayer {
    limit: usize,
}

impl BodyLimitLayer {
    pub fn new(limit: usize) -> BodyLimitLayer {
        BodyLimitLayer { limit }
    }
}

impl<S> Layer<S> for BodyLimitLayer {
    type Service = BodyLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BodyLimitService {
            inner,
            limit: self.limit,
        }
    }
}

#[derive(Clone)]
pub struct BodyLimitService<S> {
    inner: S,
    limit: usize,
}

impl<S, B> Service<Request<Body>> for BodyLimitService<S>
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
        let limit = self.limit;
        let (parts, body) = request.into_parts();
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|len| len > limit) {
            return Box::pin(async move {
                body::discard(body, DISCARD_LIMIT).await;
                Ok(crate::reply::status(&TooLarge { limit }.status()))
            });
        }
        let body = Body::new(Limited::new(body, limit));
        Box::pin(inner.call(Request::from_parts(parts, body)))
    }
}
