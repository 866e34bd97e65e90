//! The outermost layer: gives each request its audit ID (the client's `Audit-ID` header, or
//! a new one) and arrival time, returns the ID on the response as Kubernetes does, and
//! logs the request at debug level once it is answered.

use crate::response::{self, Response};
use http::Request;
use kyb_serving::Body;
use kyb_serving::filters::{Filter, Next};
use std::convert::Infallible;
use std::time::Instant;
use tower::Service;

/// When and as what a request arrived (in its extensions).
#[derive(Clone, Debug)]
pub struct Received {
    pub audit_id: String,
    pub at: kyb_audit::MicroTime,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct RequestLog;

impl Filter<response::Body> for RequestLog {
    async fn filter<S>(&self, mut request: Request<Body>, next: Next<S>) -> Response
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
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
        let mut response = next.run(request).await;
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
        response
    }
}
