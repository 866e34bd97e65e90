//! `metav1.Status`: how the API reports every failure (and some successes).

use serde_json::{Value, json};

/// A Kubernetes `Status` error with its HTTP code and reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub code: u16,
    /// The machine-readable reason: `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...
    pub reason: &'static str,
    pub message: String,
    /// `details` (name, group, kind, causes, retryAfterSeconds), when there are any.
    pub details: Option<Value>,
}

/// One cause inside `details.causes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl Status {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, "Unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// `<resource>[.<group>] "<name>" not found`, as Kubernetes words it.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// A path that names no API resource (Kubernetes' generic 404, with empty details).
    pub fn not_found_path() -> Self {
        let mut status = Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        status.details = Some(json!({}));
        status
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// A method the path is not served with (Kubernetes' generic 405, with empty details).
    pub fn method_not_supported() -> Self {
        let mut status = Self::method_not_allowed(
            "the server does not allow this method on the requested resource",
        );
        status.details = Some(json!({}));
        status
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// An optimistic-concurrency failure.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message)
    }

    /// A watch or list resourceVersion older than the server keeps.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(413, "RequestEntityTooLarge", message)
    }

    /// `<Kind>.<group> "<name>" is invalid: <causes>`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[Cause]) -> Self {
        let summary = match causes {
            [one] => format!("{}: {}", one.field, one.message),
            many => format!(
                "[{}]",
                many.iter()
                    .map(|c| if c.field.is_empty() {
                        c.message.clone()
                    } else {
                        format!("{}: {}", c.field, c.message)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut status = Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{name}\" is invalid: {summary}",
                qualified(group, kind)
            ),
        )
        .with_details(group, kind, name);
        if let Some(Value::Object(details)) = &mut status.details {
            details.insert(
                "causes".into(),
                causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect(),
            );
        }
        status
    }

    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        let mut status = Self::new(429, "TooManyRequests", message);
        status.details = Some(json!({"retryAfterSeconds": retry_after_seconds}));
        status
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// Adds `details.{name, group, kind}` (kind is the resource or kind, as Kubernetes does).
    pub fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        let mut details = serde_json::Map::new();
        if !name.is_empty() {
            details.insert("name".into(), name.into());
        }
        if !group.is_empty() {
            details.insert("group".into(), group.into());
        }
        details.insert("kind".into(), kind.into());
        self.details = Some(Value::Object(details));
        self
    }

    /// The JSON `Status` object.
    pub fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let (Some(details), Value::Object(map)) = (&self.details, &mut status) {
            map.insert("details".into(), details.clone());
        }
        status
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for Status {}

/// `resource` or `resource.group`.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// A success `Status`, as returned by some deletes.
pub fn success(group: &str, resource: &str, name: &str, uid: Option<&str>) -> Value {
    let mut details = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        details["group"] = group.into();
    }
    if let Some(uid) = uid {
        details["uid"] = uid.into();
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_is_worded_as_kubernetes_does() {
        let status = Status::not_found("apps", "deployments", "web").to_json();
        assert_eq!(status["message"], "deployments.apps \"web\" not found");
        assert_eq!(status["code"], 404);
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(
            Status::not_found("", "pods", "p").message,
            "pods \"p\" not found"
        );
    }

    #[test]
    fn invalid_lists_its_causes() {
        let causes = [
            Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.containers[0].image".into(),
            },
            Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: \"Foo\"".into(),
                field: "metadata.name".into(),
            },
        ];
        let status = Status::invalid("", "Pod", "p", &causes);
        assert_eq!(status.code, 422);
        assert_eq!(
            status.message,
            "Pod \"p\" is invalid: [spec.containers[0].image: Required value, metadata.name: Invalid value: \"Foo\"]"
        );
        assert_eq!(
            status.to_json()["details"]["causes"][1]["field"],
            "metadata.name"
        );
        let one = Status::invalid("apps", "Deployment", "d", &causes[..1]);
        assert_eq!(
            one.message,
            "Deployment.apps \"d\" is invalid: spec.containers[0].image: Required value"
        );
    }
}
