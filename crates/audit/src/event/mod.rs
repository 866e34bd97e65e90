//! Audit events (`audit.k8s.io/v1` `Event`) and the builder the API server fills as a
//! request progresses.
//!
//! [`AuditContext::new`] takes the policy's decision for the request; when the level is
//! `None` the context holds nothing and every call on it returns at once, so an unaudited
//! request costs the policy evaluation and nothing more. Otherwise the server adds what it
//! learns (user details, impersonation, object reference, bodies, response, annotations)
//! and calls [`AuditContext::event`] at each stage for one JSON line.
//!
//! The JSON has Kubernetes' member order and `omitempty` rules, Go's string escapes, and
//! timestamps with microseconds, so the log reads like kube-apiserver's.

mod json;
mod objects;
mod parts;
mod status;

use std::collections::BTreeMap;

use serde_json::Value;

pub use parts::{ObjectRef, UserInfo};

use crate::attributes::RequestAttributes;
use crate::level::{Level, Stage};
use crate::policy::RuleDecision;
use crate::time::MicroTime;
use parts::StoredObjectRef;
use status::ResponseStatus;

/// The annotation recording the authorizer's decision (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The annotation recording the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// What the server knows of a request when it starts auditing it, besides the
/// authorization attributes.
#[derive(Clone, Copy, Debug)]
pub struct RequestMetadata<'a> {
    /// The request's audit ID (see [`crate::audit_id_for`]).
    pub audit_id: &'a str,
    /// The request URI as received: path and query (`/api/v1/pods?limit=500`).
    pub request_uri: &'a str,
    /// The client addresses (see [`crate::source_ips`]).
    pub source_ips: &'a [String],
    /// The `User-Agent` header, empty when absent.
    pub user_agent: &'a str,
    /// When the request was received.
    pub received: MicroTime,
}

/// The audit record of one request, filled in as the request progresses.
#[derive(Debug, Default)]
pub struct AuditContext {
    state: Option<Box<EventState>>,
}

#[derive(Debug)]
struct EventState {
    decision: RuleDecision,
    audit_id: String,
    request_uri: String,
    verb: String,
    /// `user`, already rendered.
    user: String,
    /// `impersonatedUser`, already rendered.
    impersonated_user: Option<String>,
    source_ips: Vec<String>,
    user_agent: String,
    object_ref: Option<StoredObjectRef>,
    response_status: Option<ResponseStatus>,
    request_object: Option<String>,
    response_object: Option<String>,
    received: MicroTime,
    annotations: BTreeMap<String, String>,
}

impl AuditContext {
    /// Starts the record of a request the policy decided on. With level `None` nothing is
    /// allocated and the context stays disabled.
    ///
    /// The event's `user` starts as the attributes' user name and groups (call
    /// [`AuditContext::set_user`] to add uid and extra), its `verb` is the attributes'
    /// verb, and a resource request gets an `objectRef` from the attributes' resource.
    pub fn new(
        decision: RuleDecision,
        attributes: &RequestAttributes<'_>,
        request: &RequestMetadata<'_>,
    ) -> AuditContext {
        if decision.level == Level::None {
            return AuditContext::disabled();
        }
        let mut user = String::new();
        parts::write_user(
            &mut user,
            &UserInfo {
                username: attributes.user,
                uid: "",
                groups: attributes.groups,
                extra: &BTreeMap::new(),
            },
        );
        let object_ref = attributes.resource.map(|r| {
            StoredObjectRef::of(&ObjectRef {
                resource: r.resource,
                namespace: r.namespace,
                name: r.name,
                api_group: r.group,
                api_version: r.version,
                subresource: r.subresource,
                ..ObjectRef::default()
            })
        });
        AuditContext {
            state: Some(Box::new(EventState {
                decision,
                audit_id: request.audit_id.to_string(),
                request_uri: request.request_uri.to_string(),
                verb: attributes.verb.to_string(),
                user,
                impersonated_user: None,
                source_ips: request.source_ips.to_vec(),
                user_agent: request.user_agent.to_string(),
                object_ref,
                response_status: None,
                request_object: None,
                response_object: None,
                received: request.received,
                annotations: BTreeMap::new(),
            })),
        }
    }

    /// A context that records nothing.
    pub fn disabled() -> AuditContext {
        AuditContext { state: None }
    }

    /// Whether events are recorded for this request.
    pub fn is_enabled(&self) -> bool {
        self.state.is_some()
    }

    /// The request's level (`None` when disabled).
    pub fn level(&self) -> Level {
        self.state
            .as_ref()
            .map_or(Level::None, |state| state.decision.level)
    }

    /// The audit ID, when enabled.
    pub fn audit_id(&self) -> Option<&str> {
        self.state.as_ref().map(|state| state.audit_id.as_str())
    }

    /// Whether the request object is recorded (level `Request` or above): a caller that
    /// must build the body specially can skip the work otherwise.
    pub fn wants_request_object(&self) -> bool {
        self.level() >= Level::Request
    }

    /// Whether the response object is recorded (level `RequestResponse`).
    pub fn wants_response_object(&self) -> bool {
        self.level() >= Level::RequestResponse
    }

    /// The authenticated user in full (replaces the name and groups taken from the
    /// attributes).
    pub fn set_user(&mut self, user: &UserInfo<'_>) {
        if let Some(state) = &mut self.state {
            state.user.clear();
            parts::write_user(&mut state.user, user);
        }
    }

    /// The user the request impersonates (`impersonatedUser`); `user` stays the
    /// authenticated one.
    pub fn set_impersonated_user(&mut self, user: &UserInfo<'_>) {
        if let Some(state) = &mut self.state {
            let mut rendered = String::new();
            parts::write_user(&mut rendered, user);
            state.impersonated_user = Some(rendered);
        }
    }

    /// Replaces the `objectRef`.
    pub fn set_object_ref(&mut self, object_ref: &ObjectRef<'_>) {
        if let Some(state) = &mut self.state {
            state.object_ref = Some(StoredObjectRef::of(object_ref));
        }
    }

    /// Fills the `objectRef` members that are still empty (as Kubernetes completes the
    /// reference from the request object: name, uid, resourceVersion of the body).
    pub fn complete_object_ref(&mut self, object_ref: &ObjectRef<'_>) {
        if let Some(state) = &mut self.state {
            state
                .object_ref
                .get_or_insert_with(StoredObjectRef::default)
                .complete(object_ref);
        }
    }

    /// The request body as JSON bytes (a decoded object re-encoded, or a patch as sent).
    /// Only kept at level `Request` and above, and only looked at then; a body that is
    /// not one JSON value is left out.
    pub fn set_request_object(&mut self, body: &[u8]) {
        if let Some(state) = &mut self.state
            && state.decision.level >= Level::Request
        {
            state.request_object = objects::from_bytes(body, state.decision.omit_managed_fields);
        }
    }

    /// The request object as the server decoded it. At every level this completes the
    /// `objectRef` from the object's metadata (namespace, name, uid, resourceVersion), as
    /// Kubernetes does; the object itself is kept at level `Request` and above.
    pub fn set_request_object_value(&mut self, object: &Value) {
        let Some(state) = &mut self.state else {
            return;
        };
        if let Some(metadata) = object.get("metadata") {
            let text = |name: &str| metadata.get(name).and_then(Value::as_str).unwrap_or("");
            state
                .object_ref
                .get_or_insert_with(StoredObjectRef::default)
                .complete(&ObjectRef {
                    namespace: text("namespace"),
                    name: text("name"),
                    uid: text("uid"),
                    resource_version: text("resourceVersion"),
                    ..ObjectRef::default()
                });
        }
        if state.decision.level >= Level::Request {
            state.request_object = objects::from_value(object, state.decision.omit_managed_fields);
        }
    }

    /// The response: its HTTP status code, the `Status` object when the response is one
    /// (its status, message, reason and details are recorded), and the body as JSON bytes
    /// (kept at level `RequestResponse` only, and only looked at then).
    pub fn set_response(&mut self, code: u16, status: Option<&Value>, body: Option<&[u8]>) {
        let Some(state) = &mut self.state else {
            return;
        };
        state.response_status = Some(match status {
            Some(status) => ResponseStatus::of_status(status, code),
            None => ResponseStatus::code(code),
        });
        if state.decision.level >= Level::RequestResponse
            && let Some(body) = body
        {
            state.response_object = objects::from_bytes(body, state.decision.omit_managed_fields);
        }
    }

    /// The response object as a decoded value (kept at level `RequestResponse` only).
    pub fn set_response_object_value(&mut self, object: &Value) {
        if let Some(state) = &mut self.state
            && state.decision.level >= Level::RequestResponse
        {
            state.response_object = objects::from_value(object, state.decision.omit_managed_fields);
        }
    }

    /// Only the response code (when the headers of a long-running response are sent),
    /// keeping any status recorded earlier.
    pub fn set_response_code(&mut self, code: u16) {
        if let Some(state) = &mut self.state {
            state
                .response_status
                .get_or_insert_with(ResponseStatus::default)
                .code = code;
        }
    }

    /// Adds an annotation. As in Kubernetes, the first value of a key stays: a later,
    /// different value is ignored (and logged).
    pub fn add_annotation(&mut self, key: &str, value: &str) {
        let Some(state) = &mut self.state else {
            return;
        };
        match state.annotations.get(key) {
            Some(existing) if existing != value => {
                tracing::warn!(
                    audit_id = %state.audit_id,
                    key,
                    value,
                    existing = %existing,
                    "audit annotation already set; keeping the first value"
                );
            }
            Some(_) => {}
            None => {
                state.annotations.insert(key.to_string(), value.to_string());
            }
        }
    }

    /// The authorizer's verdict: `authorization.k8s.io/decision` (`allow` or `forbid`)
    /// and `authorization.k8s.io/reason` (possibly empty), as Kubernetes' authorization
    /// filter records them.
    pub fn set_authorization_decision(&mut self, allowed: bool, reason: &str) {
        self.add_annotation(
            DECISION_ANNOTATION,
            if allowed { "allow" } else { "forbid" },
        );
        self.add_annotation(REASON_ANNOTATION, reason);
    }

    /// The event for `stage`, now: one JSON object without a trailing newline. `None`
    /// when the level is `None` or the policy omits the stage.
    pub fn event(&mut self, stage: Stage) -> Option<Vec<u8>> {
        self.event_at(stage, MicroTime::now())
    }

    /// The event for `stage` with `stageTimestamp` `at` (a `RequestReceived` event is
    /// stamped with the time the request was received, whatever `at` is).
    ///
    /// At `ResponseStarted` and `ResponseComplete`, a request without a recorded response
    /// gets Kubernetes' stand-in: status `Success`, message `Connection closed early`,
    /// code 200.
    pub fn event_at(&mut self, stage: Stage, at: MicroTime) -> Option<Vec<u8>> {
        let state = self.state.as_mut()?;
        if state.decision.omit_stages.contains(stage) {
            return None;
        }
        if matches!(stage, Stage::ResponseStarted | Stage::ResponseComplete)
            && state.response_status.is_none()
        {
            state.response_status = Some(ResponseStatus::connection_closed_early());
        }
        let at = if stage == Stage::RequestReceived {
            state.received
        } else {
            at
        };
        Some(state.render(stage, at).into_bytes())
    }

    /// The `Panic` event for a handler that panicked with `message`: response status
    /// code 500, `InternalError`, message `APIServer panic'd: <message>`.
    pub fn panic_event(&mut self, message: &str) -> Option<Vec<u8>> {
        let state = self.state.as_mut()?;
        state.response_status = Some(ResponseStatus::panicked(message));
        self.event(Stage::Panic)
    }
}

impl EventState {
    fn render(&self, stage: Stage, at: MicroTime) -> String {
        let objects = self.request_object.as_ref().map_or(0, String::len)
            + self.response_object.as_ref().map_or(0, String::len);
        let mut out = String::with_capacity(768 + objects);
        out.push_str(r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":""#);
        out.push_str(self.decision.level.as_str());
        out.push('"');
        json::key(&mut out, "auditID");
        json::string(&mut out, &self.audit_id);
        json::key(&mut out, "stage");
        json::string(&mut out, stage.as_str());
        json::key(&mut out, "requestURI");
        json::string(&mut out, &self.request_uri);
        json::key(&mut out, "verb");
        json::string(&mut out, &self.verb);
        json::key(&mut out, "user");
        out.push_str(&self.user);
        if let Some(user) = &self.impersonated_user {
            json::key(&mut out, "impersonatedUser");
            out.push_str(user);
        }
        if !self.source_ips.is_empty() {
            json::key(&mut out, "sourceIPs");
            json::strings(&mut out, &self.source_ips);
        }
        json::optional_string(&mut out, "userAgent", &self.user_agent);
        if let Some(object_ref) = &self.object_ref {
            json::key(&mut out, "objectRef");
            object_ref.write(&mut out);
        }
        if let Some(status) = &self.response_status {
            json::key(&mut out, "responseStatus");
            status.write(&mut out);
        }
        if let Some(object) = &self.request_object {
            json::key(&mut out, "requestObject");
            out.push_str(object);
        }
        if let Some(object) = &self.response_object {
            json::key(&mut out, "responseObject");
            out.push_str(object);
        }
        json::key(&mut out, "requestReceivedTimestamp");
        out.push('"');
        self.received.write_rfc3339(&mut out);
        out.push('"');
        json::key(&mut out, "stageTimestamp");
        out.push('"');
        at.write_rfc3339(&mut out);
        out.push('"');
        if !self.annotations.is_empty() {
            json::key(&mut out, "annotations");
            json::string_map(&mut out, &self.annotations);
        }
        out.push('}');
        out
    }
}

#[cfg(test)]
mod tests;
