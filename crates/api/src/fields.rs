//! Field selectors: the `fieldSelector` query syntax, and [`SelectableField`], a field a
//! kind can be selected by (`metadata.name` and `metadata.namespace` everywhere, plus what
//! each kind's strategy lists; [`builtin`] has the built-in kinds' lists).

use serde_json::Value;
use std::borrow::Cow;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub field: String,
    pub equals: bool,
    pub value: String,
}

/// A parsed field selector: all requirements must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub requirements: Vec<Requirement>,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses `a=b,c!=d` (also `==`); `\` escapes `,`, `=`, `!` and `\` in values.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        for part in split_unescaped(text, ',') {
            let (field, rest, equals) = if let Some(at) = find_unescaped(&part, "!=") {
                (&part[..at], &part[at + 2..], false)
            } else if let Some(at) = find_unescaped(&part, "==") {
                (&part[..at], &part[at + 2..], true)
            } else if let Some(at) = find_unescaped(&part, "=") {
                (&part[..at], &part[at + 1..], true)
            } else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            }
            requirements.push(Requirement {
                field: field.to_string(),
                equals,
                value: unescape(rest),
            });
        }
        Ok(Self { requirements })
    }

    /// Checks that every field is `metadata.name`, `metadata.namespace` or one of `fields`
    /// (the kind's selectable fields): `field label not supported: x`.
    pub fn check_supported(&self, fields: &[SelectableField]) -> Result<(), String> {
        for requirement in &self.requirements {
            if !supported(fields, &requirement.field) {
                return Err(format!("field label not supported: {}", requirement.field));
            }
        }
        Ok(())
    }

    /// Whether an object, whose kind selects by `fields`, satisfies the selector (fields it
    /// does not have count as what [`SelectableField::missing`] says).
    pub fn matches(&self, fields: &[SelectableField], object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let value = field_value(fields, object, &r.field).unwrap_or_default();
            (value == r.value) == r.equals
        })
    }

    /// The value a requirement pins a field to (`metadata.name=x` → `x`).
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.equals && r.field == field)
            .map(|r| r.value.as_str())
    }
}

/// A field a kind can be selected by (besides `metadata.name` and `metadata.namespace`,
/// which every kind can).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectableField {
    /// The label a selector names (`spec.nodeName`).
    pub label: Cow<'static, str>,
    /// The dotted path the value is read from: the label itself but for the few fields
    /// Kubernetes reads elsewhere (an Event's `source` is `source.component`).
    pub path: Cow<'static, str>,
    /// What an object without the field is selected as (`false` for booleans Kubernetes
    /// defaults to false, `0` for counts, else empty).
    pub missing: Cow<'static, str>,
    /// The label of the same field in the version objects are stored in, when it differs
    /// (events.k8s.io's `regarding.kind` is core/v1's `involvedObject.kind`).
    pub stored_as: Option<Cow<'static, str>>,
}

impl SelectableField {
    /// A field read at its own path, empty when missing.
    pub const fn new(label: &'static str) -> SelectableField {
        SelectableField {
            label: Cow::Borrowed(label),
            path: Cow::Borrowed(label),
            missing: Cow::Borrowed(""),
            stored_as: None,
        }
    }

    /// The field's value in an object, as a selector compares it.
    pub fn value(&self, object: &Value) -> String {
        let mut value = Some(object);
        for segment in self.path.split('.') {
            value = value.and_then(|v| v.get(segment));
        }
        self.text(value)
    }

    /// The field's value as a string, from what its path holds (`None`: the object lacks it).
    pub fn text(&self, value: Option<&Value>) -> String {
        match value {
            None => self.missing.to_string(),
            Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => other.to_string(),
        }
    }

    /// The label the storage version selects this field by.
    pub fn storage_label(&self) -> &str {
        self.stored_as.as_deref().unwrap_or(&self.label)
    }
}

const fn f(label: &'static str) -> SelectableField {
    SelectableField::new(label)
}

/// A field read at another path.
const fn at(label: &'static str, path: &'static str) -> SelectableField {
    SelectableField {
        label: Cow::Borrowed(label),
        path: Cow::Borrowed(path),
        missing: Cow::Borrowed(""),
        stored_as: None,
    }
}

/// A field selected as `missing` when an object lacks it.
const fn or(label: &'static str, missing: &'static str) -> SelectableField {
    SelectableField {
        label: Cow::Borrowed(label),
        path: Cow::Borrowed(label),
        missing: Cow::Borrowed(missing),
        stored_as: None,
    }
}

/// A field the storage version selects as `stored`.
const fn stored(label: &'static str, stored: &'static str) -> SelectableField {
    SelectableField {
        label: Cow::Borrowed(label),
        path: Cow::Borrowed(label),
        missing: Cow::Borrowed(""),
        stored_as: Some(Cow::Borrowed(stored)),
    }
}

static POD: &[SelectableField] = &[
    f("spec.nodeName"),
    f("spec.restartPolicy"),
    f("spec.schedulerName"),
    f("spec.serviceAccountName"),
    or("spec.hostNetwork", "false"),
    f("status.phase"),
    f("status.podIP"),
    at("status.podIPs", "status.podIP"),
    f("status.nominatedNodeName"),
];
static CORE_EVENT: &[SelectableField] = &[
    f("involvedObject.kind"),
    f("involvedObject.namespace"),
    f("involvedObject.name"),
    f("involvedObject.uid"),
    f("involvedObject.apiVersion"),
    f("involvedObject.resourceVersion"),
    f("involvedObject.fieldPath"),
    f("reason"),
    f("reportingComponent"),
    at("source", "source.component"),
    f("type"),
];
static EVENT: &[SelectableField] = &[
    stored("regarding.kind", "involvedObject.kind"),
    stored("regarding.namespace", "involvedObject.namespace"),
    stored("regarding.name", "involvedObject.name"),
    stored("regarding.uid", "involvedObject.uid"),
    stored("regarding.apiVersion", "involvedObject.apiVersion"),
    stored(
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    stored("regarding.fieldPath", "involvedObject.fieldPath"),
    f("reason"),
    stored("reportingController", "reportingComponent"),
    f("type"),
];
static NAMESPACE: &[SelectableField] = &[f("status.phase")];
static SECRET: &[SelectableField] = &[f("type")];
static NODE: &[SelectableField] = &[or("spec.unschedulable", "false")];
static SERVICE: &[SelectableField] = &[f("spec.clusterIP"), f("spec.type")];
static REPLICAS: &[SelectableField] = &[or("status.replicas", "0")];
static JOB: &[SelectableField] = &[or("status.successful", "0")];
static CERTIFICATE_SIGNING_REQUEST: &[SelectableField] = &[f("spec.signerName")];

/// The selectable fields of a built-in kind (Kubernetes' `GetAttrs` of each registry), the
/// table built-in strategies are made from.
pub fn builtin(group: &str, kind: &str) -> &'static [SelectableField] {
    match (group, kind) {
        ("", "Pod") => POD,
        ("", "Event") => CORE_EVENT,
        ("events.k8s.io", "Event") => EVENT,
        ("", "Namespace") => NAMESPACE,
        ("", "Secret") => SECRET,
        ("", "Node") => NODE,
        ("", "Service") => SERVICE,
        ("", "ReplicationController") | ("apps", "ReplicaSet") => REPLICAS,
        ("batch", "Job") => JOB,
        ("certificates.k8s.io", "CertificateSigningRequest") => CERTIFICATE_SIGNING_REQUEST,
        _ => &[],
    }
}

fn supported(fields: &[SelectableField], field: &str) -> bool {
    field == "metadata.name"
        || field == "metadata.namespace"
        || fields.iter().any(|f| f.label == field)
}

/// The value of a selectable field of an object, as a string (`None` if the field is not
/// selectable for the kind; `metadata.name` and `metadata.namespace` always are).
pub fn field_value(fields: &[SelectableField], object: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" | "metadata.namespace" => {
            let name = field.trim_start_matches("metadata.");
            Some(
                object
                    .pointer(&format!("/metadata/{name}"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        }
        _ => fields
            .iter()
            .find(|f| f.label == field)
            .map(|f| f.value(object)),
    }
}

fn split_unescaped(text: &str, separator: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            if let Some(last) = parts.last_mut() {
                last.push('\\');
                last.push(c);
            }
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == separator {
            parts.push(String::new());
        } else if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    parts
}

fn find_unescaped(text: &str, token: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if text[i..].starts_with(token) {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for c in text.chars() {
        if escaped || c != '\\' {
            out.push(c);
            escaped = false;
        } else {
            escaped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_matches() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let s = Selector::parse("spec.nodeName=n1,status.phase!=Pending").unwrap_or_default();
        assert!(s.matches(builtin("", "Pod"), &pod));
        let s = Selector::parse("spec.nodeName==").unwrap_or_default();
        assert!(!s.matches(builtin("", "Pod"), &pod));
        let unscheduled = json!({"metadata": {"name": "q"}, "spec": {}});
        assert!(s.matches(builtin("", "Pod"), &unscheduled));
        assert_eq!(
            Selector::parse("metadata.name=p")
                .ok()
                .and_then(|s| s.exact("metadata.name").map(str::to_string)),
            Some("p".into())
        );
    }

    #[test]
    fn kinds_limit_the_fields() {
        let s = Selector::parse("spec.nodeName=n1").unwrap_or_default();
        assert!(s.check_supported(builtin("", "Pod")).is_ok());
        assert_eq!(
            s.check_supported(builtin("", "ConfigMap")).err().as_deref(),
            Some("field label not supported: spec.nodeName")
        );
        assert!(
            Selector::parse("type=Opaque")
                .unwrap_or_default()
                .check_supported(builtin("", "Secret"))
                .is_ok()
        );
    }

    #[test]
    fn escapes_and_errors() {
        let s = Selector::parse(r"metadata.name=a\,b").unwrap_or_default();
        assert_eq!(s.requirements.len(), 1);
        assert_eq!(s.requirements[0].value, "a,b");
        assert!(Selector::parse("nonsense").is_err());
        assert!(Selector::parse("=x").is_err());
    }

    #[test]
    fn defaults_for_missing_fields() {
        let node = json!({"metadata": {"name": "n"}, "spec": {}});
        assert!(
            Selector::parse("spec.unschedulable=false")
                .unwrap_or_default()
                .matches(builtin("", "Node"), &node)
        );
        let event = json!({"metadata": {"name": "e"}, "source": {"component": "kubelet"}, "involvedObject": {"kind": "Pod"}});
        assert!(
            Selector::parse("source=kubelet,involvedObject.kind=Pod")
                .unwrap_or_default()
                .matches(builtin("", "Event"), &event)
        );
    }
}
