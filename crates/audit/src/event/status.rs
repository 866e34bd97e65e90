//! The `responseStatus` of an event: the subset of a `metav1.Status` Kubernetes copies
//! (`status`, `message`, `reason`, `details`) when the response is a Status, and always the
//! HTTP status code. Members are written in the Go struct's order.

use std::fmt::Write;

use serde_json::Value;

use super::json;

/// A response status, ready to write: the members after `"metadata":{}` and before
/// `code`, already rendered, so an event written at several stages renders them once.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResponseStatus {
    members: String,
    pub(crate) code: u16,
}

impl ResponseStatus {
    /// Only a code (the response is not a Status, or nothing is known of it yet).
    pub(crate) fn code(code: u16) -> ResponseStatus {
        ResponseStatus {
            members: String::new(),
            code,
        }
    }

    /// The bounded fields of a `Status` object, with the HTTP code.
    pub(crate) fn of_status(status: &Value, code: u16) -> ResponseStatus {
        let mut members = String::new();
        let text = |name: &str| status.get(name).and_then(Value::as_str).unwrap_or("");
        json::optional_string(&mut members, "status", text("status"));
        json::optional_string(&mut members, "message", text("message"));
        json::optional_string(&mut members, "reason", text("reason"));
        if let Some(details @ Value::Object(_)) = status.get("details") {
            json::key(&mut members, "details");
            write_details(&mut members, details);
        }
        ResponseStatus { members, code }
    }

    /// What Kubernetes records when a handler finished without writing a response.
    pub(crate) fn connection_closed_early() -> ResponseStatus {
        ResponseStatus::of_parts("Success", "Connection closed early", "", 200)
    }

    /// What Kubernetes records for a request whose handler panicked.
    pub(crate) fn panicked(message: &str) -> ResponseStatus {
        let message = format!("APIServer panic'd: {message}");
        ResponseStatus::of_parts("Failure", &message, "InternalError", 500)
    }

    fn of_parts(status: &str, message: &str, reason: &str, code: u16) -> ResponseStatus {
        let mut members = String::new();
        json::optional_string(&mut members, "status", status);
        json::optional_string(&mut members, "message", message);
        json::optional_string(&mut members, "reason", reason);
        ResponseStatus { members, code }
    }

    /// Appends the status object.
    pub(crate) fn write(&self, out: &mut String) {
        out.push_str("{\"metadata\":{}");
        out.push_str(&self.members);
        if self.code != 0 {
            json::key(out, "code");
            let _ = write!(out, "{}", self.code);
        }
        out.push('}');
    }
}

/// `StatusDetails` in Go's member order: name, group, kind, uid, causes, retryAfterSeconds.
fn write_details(out: &mut String, details: &Value) {
    let text = |name: &str| details.get(name).and_then(Value::as_str).unwrap_or("");
    let mut members = String::new();
    json::optional_string(&mut members, "name", text("name"));
    json::optional_string(&mut members, "group", text("group"));
    json::optional_string(&mut members, "kind", text("kind"));
    json::optional_string(&mut members, "uid", text("uid"));
    if let Some(causes) = details.get("causes").and_then(Value::as_array)
        && !causes.is_empty()
    {
        json::key(&mut members, "causes");
        members.push('[');
        for (i, cause) in causes.iter().enumerate() {
            if i > 0 {
                members.push(',');
            }
            let text = |name: &str| cause.get(name).and_then(Value::as_str).unwrap_or("");
            let mut fields = String::new();
            json::optional_string(&mut fields, "reason", text("reason"));
            json::optional_string(&mut fields, "message", text("message"));
            json::optional_string(&mut fields, "field", text("field"));
            members.push('{');
            members.push_str(fields.strip_prefix(',').unwrap_or(&fields));
            members.push('}');
        }
        members.push(']');
    }
    if let Some(seconds) = details.get("retryAfterSeconds").and_then(Value::as_i64)
        && seconds != 0
    {
        json::key(&mut members, "retryAfterSeconds");
        let _ = write!(members, "{seconds}");
    }
    out.push('{');
    out.push_str(members.strip_prefix(',').unwrap_or(&members));
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(status: &ResponseStatus) -> String {
        let mut out = String::new();
        status.write(&mut out);
        out
    }

    #[test]
    fn code_only() {
        assert_eq!(
            written(&ResponseStatus::code(200)),
            r#"{"metadata":{},"code":200}"#
        );
    }

    #[test]
    fn status_subset_in_go_order() {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "pods \"web\" not found",
            "reason": "NotFound",
            "details": {"kind": "pods", "name": "web", "causes": [{"field": "spec", "message": "m", "reason": "FieldValueInvalid"}], "retryAfterSeconds": 0},
            "code": 404
        });
        assert_eq!(
            written(&ResponseStatus::of_status(&status, 404)),
            r#"{"metadata":{},"status":"Failure","message":"pods \"web\" not found","reason":"NotFound","details":{"name":"web","kind":"pods","causes":[{"reason":"FieldValueInvalid","message":"m","field":"spec"}]},"code":404}"#
        );
    }

    #[test]
    fn faked_statuses() {
        assert_eq!(
            written(&ResponseStatus::connection_closed_early()),
            r#"{"metadata":{},"status":"Success","message":"Connection closed early","code":200}"#
        );
        assert_eq!(
            written(&ResponseStatus::panicked("boom")),
            r#"{"metadata":{},"status":"Failure","message":"APIServer panic'd: boom","reason":"InternalError","code":500}"#
        );
    }
}
