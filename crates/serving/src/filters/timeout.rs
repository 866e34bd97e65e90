//! The request timeout of non-long-running requests, as kube-apiserver's
//! `WithRequestDeadline` and `WithTimeoutForNonLongRunningRequests` have it: a request that
//! is not a watch or a stream gets the server's `--request-timeout` (1m0s), or the shorter
//! `timeout` its query asks for, and is answered `504 Timeout` when its handler has not
//! answered by then. The handler runs on to its end (a write is not cut in half); its late
//! answer is thrown away. Long-running requests are exempt (dead peers are found by TCP
//! keep-alive and HTTP/2 pings, [`crate::tls::Limits`]).

use super::{Filter, Next};
use crate::RequestInfo;
use crate::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use kyb_api::Status;
use std::convert::Infallible;
use std::time::Duration;
use tower::Service;

/// Kubernetes' message for a request past its deadline.
const TIMED_OUT: &str =
    "Timeout: request did not complete within requested timeout - context deadline exceeded";

#[derive(Clone, Copy)]
pub struct RequestTimeout {
    timeout: Duration,
}

impl RequestTimeout {
    /// Non-long-running requests get at most `timeout` (zero: no limit).
    pub fn new(timeout: Duration) -> RequestTimeout {
        RequestTimeout { timeout }
    }
}

/// The deadline a request asks for with `?timeout=` (a Go duration); a malformed one is
/// refused as Kubernetes refuses it. Zero or negative asks for nothing.
fn requested(info: &RequestInfo) -> Result<Option<Duration>, Status> {
    let Some(value) = info.query.value("timeout") else {
        return Ok(None);
    };
    let nanos = kyb_apimachinery::duration::parse_nanos(value).map_err(|e| {
        Status::bad_request(format!(
            "invalid timeout specified in the request URL - {e}"
        ))
    })?;
    Ok(u64::try_from(nanos)
        .ok()
        .filter(|n| *n > 0)
        .map(Duration::from_nanos))
}

impl<B: From<Bytes> + Send + 'static> Filter<B> for RequestTimeout {
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response<B>
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let Some(info) = request.extensions().get::<RequestInfo>() else {
            return next.run(request).await;
        };
        if info.is_long_running() {
            return next.run(request).await;
        }
        let mut timeout = self.timeout;
        match requested(info) {
            Ok(Some(asked)) if timeout.is_zero() || asked < timeout => timeout = asked,
            Ok(_) => {}
            Err(status) => return crate::reply::status(&status),
        }
        if timeout.is_zero() {
            return next.run(request).await;
        }
        let handler = tokio::spawn(next.run(request));
        match tokio::time::timeout(timeout, handler).await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                tracing::error!(%error, "the request's handler failed");
                crate::reply::status(&Status::internal(
                    "an error on the server has prevented the request from succeeding",
                ))
            }
            Err(_) => {
                let mut status = Status::timeout(TIMED_OUT);
                status.details = Some(serde_json::json!({}));
                crate::reply::status(&status)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use http::Method;

    fn info(query: &str) -> RequestInfo {
        let request = Request::builder()
            .method(Method::GET)
            .uri(format!("/api/v1/pods?{query}"))
            .body(())
            .unwrap();
        RequestInfo::of_api_request(&request.into_parts().0)
    }

    #[test]
    fn requested_timeouts() {
        assert_eq!(requested(&info("")), Ok(None));
        assert_eq!(
            requested(&info("timeout=32s")),
            Ok(Some(Duration::from_secs(32)))
        );
        assert_eq!(requested(&info("timeout=0s")), Ok(None));
        assert_eq!(
            requested(&info("timeout=abc")).map_err(|s| (s.code, s.message)),
            Err((
                400,
                "invalid timeout specified in the request URL - time: invalid duration \"abc\""
                    .to_string()
            ))
        );
    }
}
