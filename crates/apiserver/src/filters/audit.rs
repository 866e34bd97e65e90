//! Auditing as a layer, just inside authentication (and in front of the failure service
//! that answers refused authentications, so those are audited too, with no user): the
//! record starts with the authenticated user and the request's facts (the policy decides
//! its level), and learns the rest from the response's extensions on the way out — the
//! impersonated user, the authorization decision, the request body and admission's
//! annotations — before `RequestAudit::finish` writes the final event.

use super::impersonation::Impersonated;
use super::request_log::Received;
use crate::audit::{Arrival, Auditor, RequestAudit};
use crate::auth::User;
use crate::response::{self, Response};
use bytes::Bytes;
use http::Request;
use kyb_serving::filters::{AuthorizationDecision, Filter, Next};
use kyb_serving::{Body, Connection, RequestInfo, Target};
use std::convert::Infallible;
use std::sync::Arc;
use tower::Service;

/// The request body as the handler read it (in the response's extensions), for records
/// at level Request and above.
#[derive(Clone, Debug)]
pub struct AuditedBody {
    pub bytes: Bytes,
    pub content_type: Option<String>,
}

/// What admission found worth recording (in the response's extensions).
#[derive(Clone, Debug, Default)]
pub struct AuditAnnotations(pub Vec<(String, String)>);

#[derive(Clone)]
pub struct Audit {
    auditor: Option<Arc<Auditor>>,
}

impl Audit {
    pub fn new(auditor: Option<Arc<Auditor>>) -> Audit {
        Audit { auditor }
    }
}

impl Filter<response::Body> for Audit {
    async fn filter<S>(&self, request: Request<Body>, next: Next<S>) -> Response
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Send + 'static,
        S::Future: Send,
    {
        let Some(auditor) = &self.auditor else {
            return next.run(request).await;
        };
        let mut audit = begin(auditor, &request);
        let mut response = next.run(request).await;
        if audit.is_enabled() {
            let extensions = response.extensions_mut();
            if let Some(Impersonated(user)) = extensions.remove::<Impersonated>() {
                audit.impersonated(&user);
            }
            if let Some(decision) = extensions.remove::<AuthorizationDecision>() {
                audit.authorized(decision.allowed, &decision.reason);
            }
            if let Some(body) = extensions.remove::<AuditedBody>() {
                audit.request_body(&body.bytes, body.content_type.as_deref());
            }
            if let Some(AuditAnnotations(annotations)) = extensions.remove() {
                audit.annotate(&annotations);
            }
        }
        audit.finish(response)
    }
}

/// The record of a request, by its authenticated user (none when authentication refused
/// it).
fn begin(auditor: &Arc<Auditor>, request: &Request<Body>) -> RequestAudit {
    let extensions = request.extensions();
    let anonymous;
    let user: &User = match extensions.get::<Arc<User>>() {
        Some(user) => user,
        None => {
            anonymous = User::default();
            &anonymous
        }
    };
    let target = extensions
        .get::<RequestInfo>()
        .map_or(&Target::NonResource, |info| &info.target);
    let (audit_id, received) = match extensions.get::<Received>() {
        Some(received) => (received.audit_id.clone(), received.at),
        None => (kyb_audit::audit_id_for(None), kyb_audit::MicroTime::now()),
    };
    let arrival = Arrival {
        audit_id: &audit_id,
        uri: request.uri(),
        headers: request.headers(),
        peer: extensions.get::<Connection>().and_then(|c| c.peer),
        received,
        method: request.method(),
    };
    RequestAudit::begin(Some(auditor), user, target, &arrival)
}
