//! Field errors, shaped like Kubernetes' `field.Error` (`k8s.io/apimachinery/pkg/util/
//! validation/field`): a kind, the JSON path of the field, the offending value and a human
//! detail. `Display` renders them exactly the way the Kubernetes API server words them in
//! `Status` messages and causes. Validation, the audit policy and the scheduler's
//! configuration report their problems with them.

use std::fmt;

use crate::gofmt;
use serde_json::Value;

mod path;

pub use path::Path;

/// What is wrong with a field, as Kubernetes' `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl ErrorKind {
    /// The `metav1.CauseType` of this kind (the `reason` of a `StatusCause`).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "FieldValueNotFound",
            ErrorKind::Required => "FieldValueRequired",
            ErrorKind::Duplicate => "FieldValueDuplicate",
            ErrorKind::Invalid => "FieldValueInvalid",
            ErrorKind::NotSupported => "FieldValueNotSupported",
            ErrorKind::Forbidden => "FieldValueForbidden",
            ErrorKind::TooLong => "FieldValueTooLong",
            ErrorKind::TooMany => "FieldValueTooMany",
            ErrorKind::Internal => "InternalError",
            ErrorKind::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The short text Kubernetes prints for this kind.
    pub fn text(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "Not found",
            ErrorKind::Required => "Required value",
            ErrorKind::Duplicate => "Duplicate value",
            ErrorKind::Invalid => "Invalid value",
            ErrorKind::NotSupported => "Unsupported value",
            ErrorKind::Forbidden => "Forbidden",
            ErrorKind::TooLong => "Too long",
            ErrorKind::TooMany => "Too many",
            ErrorKind::Internal => "Internal error",
            ErrorKind::TypeInvalid => "Invalid value",
        }
    }

    /// Kinds whose message never shows the offending value.
    fn hides_value(self) -> bool {
        matches!(
            self,
            ErrorKind::Required | ErrorKind::Forbidden | ErrorKind::TooLong | ErrorKind::Internal
        )
    }
}

/// A field error, as Kubernetes' `field.Error`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub kind: ErrorKind,
    /// JSON path of the field, e.g. `spec.containers[0].image` or `metadata.labels`.
    pub field: String,
    /// The bad value, for Invalid / NotSupported / Duplicate / NotFound / TooMany.
    pub value: Option<Value>,
    pub detail: String,
}

impl FieldError {
    pub fn new(
        kind: ErrorKind,
        path: &Path,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: path.to_string(),
            value,
            detail: detail.into(),
        }
    }

    pub fn required(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Required, path, None, detail)
    }

    pub fn invalid(path: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, path, Some(value.into()), detail)
    }

    pub fn forbidden(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, path, None, detail)
    }

    pub fn duplicate(path: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorKind::Duplicate, path, Some(value.into()), "")
    }

    pub fn not_found(path: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorKind::NotFound, path, Some(value.into()), "")
    }

    /// An unsupported value; the detail lists the supported ones, quoted, in the given order.
    pub fn not_supported(path: &Path, value: impl Into<Value>, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| gofmt::quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorKind::NotSupported, path, Some(value.into()), detail)
    }

    /// A value longer than `max` bytes.
    pub fn too_long(path: &Path, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            ErrorKind::TooLong,
            path,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// A list with `actual` items where at most `max` are allowed.
    pub fn too_many(path: &Path, actual: usize, max: usize) -> Self {
        let detail = if max == 1 {
            "must have at most 1 item".to_string()
        } else {
            format!("must have at most {max} items")
        };
        Self::new(ErrorKind::TooMany, path, Some(Value::from(actual)), detail)
    }

    /// The message without the field path: Kubernetes' `ErrorBody()`, used as the
    /// `message` of a `StatusCause`.
    pub fn body(&self) -> String {
        let mut s = self.kind.text().to_string();
        if !self.kind.hides_value()
            && let Some(value) = &self.value
        {
            s.push_str(": ");
            s.push_str(&render_value(value));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// The message of the `Status` Kubernetes returns for an invalid object:
/// `Pod "p" is invalid: <error>` for one error, `... is invalid: [<e1>, <e2>]` for several
/// (identical messages are reported once). `group` is empty for the core group.
pub fn invalid_message(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> String {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let mut seen = std::collections::HashSet::new();
    let messages: Vec<String> = errors
        .iter()
        .map(ToString::to_string)
        .filter(|m| seen.insert(m.clone()))
        .collect();
    let name = gofmt::quote(name);
    match messages.len() {
        0 => format!("{qualified} {name} is invalid"),
        1 => format!("{qualified} {name} is invalid: {}", messages.concat()),
        _ => format!("{qualified} {name} is invalid: [{}]", messages.join(", ")),
    }
}

/// Renders a bad value the way `field.Error` does for the Go types Kubernetes passes:
/// strings with `%q`, numbers and booleans with `%v`, string maps and string lists in Go
/// syntax (`%#v` of a `map[string]string` or `[]string`), null as `null`, and anything
/// else as JSON.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(_) | Value::Number(_) => gofmt::v(value),
        Value::String(s) => gofmt::quote(s),
        Value::Object(map) if map.values().all(Value::is_string) => {
            let mut entries: Vec<(&String, &str)> = map
                .iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
                .collect();
            entries.sort();
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", gofmt::quote(k), gofmt::quote(v)))
                .collect();
            format!("map[string]string{{{}}}", inner.join(", "))
        }
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let inner: Vec<String> = items
                .iter()
                .map(|v| gofmt::quote(v.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", inner.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Path {
        Path::new(s)
    }

    #[test]
    fn required_hides_value() {
        let e = FieldError::required(&p("spec").child("containers").index(0).child("image"), "");
        assert_eq!(e.to_string(), "spec.containers[0].image: Required value");
        assert_eq!(e.kind.reason(), "FieldValueRequired");
    }

    #[test]
    fn invalid_quotes_strings() {
        let e = FieldError::invalid(&p("metadata").child("name"), "Foo", "bad");
        assert_eq!(e.to_string(), r#"metadata.name: Invalid value: "Foo": bad"#);
    }

    #[test]
    fn not_supported_lists_values() {
        let e = FieldError::not_supported(
            &p("spec").child("restartPolicy"),
            "Sometimes",
            &["Always", "OnFailure", "Never"],
        );
        assert_eq!(
            e.to_string(),
            r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#
        );
    }

    #[test]
    fn numbers_and_maps_render_like_go() {
        let e = FieldError::invalid(
            &p("spec").child("replicas"),
            -1,
            "must be greater than or equal to 0",
        );
        assert_eq!(
            e.to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        let m = render_value(&json!({"b": "2", "a": "1"}));
        assert_eq!(m, r#"map[string]string{"a":"1", "b":"2"}"#);
        assert_eq!(render_value(&json!(["x", "y"])), r#"[]string{"x", "y"}"#);
    }

    #[test]
    fn too_long_and_too_many() {
        let e = FieldError::too_long(&p("metadata").child("annotations"), 262144);
        assert_eq!(
            e.to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        let e = FieldError::too_many(&p("spec").child("rules"), 5, 4);
        assert_eq!(
            e.to_string(),
            "spec.rules: Too many: 5: must have at most 4 items"
        );
    }

    #[test]
    fn invalid_message_aggregates() {
        let a = FieldError::required(&p("spec").child("a"), "");
        let b = FieldError::required(&p("spec").child("b"), "");
        assert_eq!(
            invalid_message("", "Pod", "p", std::slice::from_ref(&a)),
            r#"Pod "p" is invalid: spec.a: Required value"#
        );
        assert_eq!(
            invalid_message("apps", "Deployment", "d", &[a.clone(), b, a]),
            r#"Deployment.apps "d" is invalid: [spec.a: Required value, spec.b: Required value]"#
        );
    }
}
