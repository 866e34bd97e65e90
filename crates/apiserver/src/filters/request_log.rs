//! The outermost layer: gives each request its audit ID (the client's `Audit-ID` header, or
//! a new one) and arrival time, returns the ID on the response as Kubernetes does, and
//! logs the request at debug level once it is answered.

use crate::response::Response;
use http::Request;
use kyb_serving::Body;
use kyb_serving::filters::ResponseFuture;
use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Instant;
use tower::{Layer, Service};

/// When and as what a request arrived (in its extensions).
#[derive(Clone, Debug)]
pub struct Received {
    pub audit_id: String,
    pub at: kyb_audit::MicroTime,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct RequestLogLayer;

impl<S> Layer<S> for RequestLogLayer {
    type Service = RequestLog<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestLog { inner }
    }
}

#[derive(Clone)]
pub struct RequestLog<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for RequestLog<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture<crate::response::Body>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let started = Instant::now();
        let audit_id = kyb_audit::audit_id_for(
            request
                .headers()
                .get(kyb_audit::AUDIT_ID_HEADER)
                .and_then(|v| v.to_str().ok()),
        );
        let header = http::HeaderValue::from_str(&audit_id).ok();
        request.extensions_mut().insert(Received {
            audit_id,
            at: kyb_audit::MicroTime::now(),
        });
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let mut response = inner.call(request).await?;
            if let Some(value) = header {
                response
                    .headers_mut()
                    .insert(kyb_audit::AUDIT_ID_HEADER, value);
            }
            tracing::debug!(
                %method,
                %path,
                status = response.status().as_u16(),
                took = ?started.elapsed(),
                "request"
            );
            Ok(response)
        })
    }
}
