//! Auditing on the request path (`--audit-policy-file`, `--audit-log-path`): after
//! authentication, the policy decides the request's level; the event then learns the
//! impersonated user, the authorization decision, the request body, admission's
//! annotations and the response, and is written at `RequestReceived` and
//! `ResponseComplete` (and `ResponseStarted` for watches, whose completion is written
//! when the watch ends). Events, policy and log are `kyb-audit`'s.

use crate::auth::User;
use crate::negotiation::BodyFormat;
use crate::response::{Body, Response};
use kyb_audit::{AuditContext, AuditLog, Policy, RequestAttributes, ResourceAttributes, Stage};
use kyb_serving::{ResourceRequest, Target};
use std::net::IpAddr;
use std::sync::Arc;

/// The audit policy and the log events go to.
pub struct Auditor {
    pub policy: Policy,
    pub log: AuditLog,
}

impl Auditor {
    /// Flushes what is buffered (at shutdown).
    pub fn flush(&self) {
        if let Err(error) = self.log.flush() {
            tracing::warn!(%error, "flushing the audit log");
        }
    }
}

/// One request's audit record in the making; does nothing when the request is not
/// audited.
pub struct RequestAudit {
    context: AuditContext,
    auditor: Option<Arc<Auditor>>,
}

/// What the request looked like when it arrived.
pub struct Arrival<'a> {
    pub audit_id: &'a str,
    pub uri: &'a http::Uri,
    pub headers: &'a http::HeaderMap,
    pub peer: Option<IpAddr>,
    pub received: kyb_audit::MicroTime,
    pub method: &'a http::Method,
}

impl RequestAudit {
    /// A record for a request by `user` (as authenticated, before impersonation).
    pub fn begin(
        auditor: Option<&Arc<Auditor>>,
        user: &User,
        target: &Target,
        arrival: &Arrival<'_>,
    ) -> RequestAudit {
        let Some(auditor) = auditor else {
            return RequestAudit {
                context: AuditContext::disabled(),
                auditor: None,
            };
        };
        let resource = match target {
            Target::Resource(request) => Some(resource_attributes(request)),
            Target::NonResource => None,
        };
        let verb = match target {
            Target::Resource(request) => request.verb.as_str().to_string(),
            Target::NonResource => arrival.method.as_str().to_ascii_lowercase(),
        };
        let attributes = RequestAttributes {
            user: &user.name,
            groups: &user.groups,
            verb: &verb,
            resource,
            path: arrival.uri.path(),
        };
        let decision = auditor.policy.evaluate(&attributes);
        if decision.level == kyb_audit::Level::None {
            return RequestAudit {
                context: AuditContext::disabled(),
                auditor: None,
            };
        }
        let header = |name: &str| arrival.headers.get(name).and_then(|v| v.to_str().ok());
        let source_ips =
            kyb_audit::source_ips(header("x-forwarded-for"), header("x-real-ip"), arrival.peer);
        let uri = arrival
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let metadata = kyb_audit::RequestMetadata {
            audit_id: arrival.audit_id,
            request_uri: uri,
            source_ips: &source_ips,
            user_agent: header("user-agent").unwrap_or_default(),
            received: arrival.received,
        };
        let mut context = AuditContext::new(decision, &attributes, &metadata);
        context.set_user(&user_info(user));
        let audit = RequestAudit {
            context,
            auditor: Some(auditor.clone()),
        };
        audit.write(Stage::RequestReceived)
    }

    fn write(mut self, stage: Stage) -> RequestAudit {
        if let Some(auditor) = &self.auditor {
            auditor.log.write_event(self.context.event(stage));
        }
        self
    }

    pub fn is_enabled(&self) -> bool {
        self.auditor.is_some()
    }

    pub fn impersonated(&mut self, user: &User) {
        if self.is_enabled() {
            self.context.set_impersonated_user(&user_info(user));
        }
    }

    pub fn authorized(&mut self, allowed: bool, reason: &str) {
        if self.is_enabled() {
            self.context.set_authorization_decision(allowed, reason);
        }
    }

    /// The request body: an object (JSON, YAML or protobuf) completes the `objectRef`
    /// (name, uid, ...) and is recorded from level Request; a patch is recorded as sent.
    pub fn request_body(&mut self, body: &[u8], content_type: Option<&str>) {
        if !self.is_enabled() || body.is_empty() {
            return;
        }
        let Ok(format) = crate::negotiation::body_format(content_type) else {
            return;
        };
        match format {
            BodyFormat::JsonPatch | BodyFormat::MergePatch | BodyFormat::StrategicMergePatch => {
                self.context.set_request_object(body);
            }
            format => {
                if let Ok(object) = crate::rest::parse_body(body, format) {
                    self.context.set_request_object_value(&object);
                }
            }
        }
    }

    pub fn annotate(&mut self, annotations: &[(String, String)]) {
        if self.is_enabled() {
            for (key, value) in annotations {
                self.context.add_annotation(key, value);
            }
        }
    }

    /// Records the response and writes the final event; a watch's final event waits for
    /// the end of its stream.
    pub fn finish(mut self, response: Response) -> Response {
        let Some(auditor) = self.auditor.clone() else {
            return response;
        };
        let code = response.status().as_u16();
        let (parts, body) = response.into_parts();
        let body = match body {
            Body::Stream(mut chunks) => {
                self.context.set_response_code(code);
                self = self.write(Stage::ResponseStarted);
                let (sender, receiver) = tokio::sync::mpsc::channel(16);
                tokio::spawn(async move {
                    while let Some(chunk) = chunks.recv().await {
                        if sender.send(chunk).await.is_err() {
                            break;
                        }
                    }
                    auditor
                        .log
                        .write_event(self.context.event(Stage::ResponseComplete));
                });
                return http::Response::from_parts(parts, Body::Stream(receiver));
            }
            body => body,
        };
        let bytes = match &body {
            Body::Full(Some(bytes)) => Some(bytes.clone()),
            Body::Pieces { pieces, .. } if self.context.wants_response_object() => {
                Some(pieces.iter().flat_map(|p| p.iter().copied()).collect())
            }
            _ => None,
        };
        let content_type = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let is_json = content_type.starts_with("application/json");
        // A protobuf answer is recorded as the object it holds, in JSON, as Kubernetes'
        // audit records the object whatever the wire format.
        let (bytes, is_json) = match bytes {
            Some(raw)
                if content_type == kyb_protobuf::CONTENT_TYPE
                    && (code >= 400 || self.context.wants_response_object()) =>
            {
                (
                    kyb_protobuf::decode(&raw)
                        .ok()
                        .and_then(|v| serde_json::to_vec(&v).ok())
                        .map(bytes::Bytes::from),
                    true,
                )
            }
            other => (other, is_json),
        };
        // Failures are Status objects; a success's body is only recorded, not read.
        let status = bytes
            .as_ref()
            .filter(|_| is_json && code >= 400)
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
            .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status"));
        let body_bytes = bytes.as_deref().filter(|_| is_json);
        self.context.set_response(code, status.as_ref(), body_bytes);
        auditor
            .log
            .write_event(self.context.event(Stage::ResponseComplete));
        http::Response::from_parts(parts, body)
    }
}

fn user_info(user: &User) -> kyb_audit::UserInfo<'_> {
    kyb_audit::UserInfo {
        username: &user.name,
        uid: &user.uid,
        groups: &user.groups,
        extra: &user.extra,
    }
}

fn resource_attributes(request: &ResourceRequest) -> ResourceAttributes<'_> {
    ResourceAttributes {
        group: &request.group,
        version: &request.version,
        resource: &request.resource,
        subresource: request.subresource.as_deref().unwrap_or_default(),
        namespace: request.namespace.as_deref().unwrap_or_default(),
        name: request.name.as_deref().unwrap_or_default(),
    }
}
