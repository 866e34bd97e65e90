//! Field selectors: the `fieldSelector` query syntax, and the fields each kind can be
//! selected by (`metadata.name` and `metadata.namespace` everywhere, plus a few per kind).

use serde_json::Value;

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

    /// Checks that every field is one the kind supports: `field label not supported: x`.
    pub fn check_supported(&self, group: &str, kind: &str) -> Result<(), String> {
        for requirement in &self.requirements {
            if !supported(group, kind, &requirement.field) {
                return Err(format!("field label not supported: {}", requirement.field));
            }
        }
        Ok(())
    }

    /// Whether an object satisfies the selector (fields it does not have count as "").
    pub fn matches(&self, group: &str, kind: &str, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let value = field_value(group, kind, object, &r.field).unwrap_or_default();
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

/// The fields, beyond `metadata.name` and `metadata.namespace`, that a kind can be selected by.
pub fn kind_fields(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("events.k8s.io", "Event") => &[
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "type",
        ],
        ("", "Namespace") => &["status.phase"],
        ("", "Secret") => &["type"],
        ("", "Node") => &["spec.unschedulable"],
        ("", "Service") => &["spec.clusterIP", "spec.type"],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => &["status.replicas"],
        ("batch", "Job") => &["status.successful"],
        ("certificates.k8s.io", "CertificateSigningRequest") => &["spec.signerName"],
        _ => &[],
    }
}

fn supported(group: &str, kind: &str, field: &str) -> bool {
    field == "metadata.name"
        || field == "metadata.namespace"
        || kind_fields(group, kind).contains(&field)
}

/// The value of a selectable field of an object, as a string (`None` if the field is not
/// selectable for the kind; "" when the object lacks it).
pub fn field_value(group: &str, kind: &str, object: &Value, field: &str) -> Option<String> {
    let path = field_source(group, kind, field)?;
    let mut value = Some(object);
    for segment in path.split('.') {
        value = value.and_then(|v| v.get(segment));
    }
    Some(field_text(field, value))
}

/// The dotted path a selectable field is read from (`None` if the kind cannot be selected
/// by it): the field itself, but for the few Kubernetes maps elsewhere.
pub fn field_source<'a>(group: &str, kind: &str, field: &'a str) -> Option<&'a str> {
    if !supported(group, kind, field) {
        return None;
    }
    Some(match (group, kind, field) {
        ("", "Event", "source") => "source.component",
        ("", "Pod", "status.podIPs") => "status.podIP",
        _ => field,
    })
}

/// A selectable field's value as a string, from what its source path holds (`None`: the
/// object lacks it).
pub fn field_text(field: &str, value: Option<&Value>) -> String {
    match value {
        // Booleans Kubernetes defaults to false are selected as "false".
        None => match field {
            "spec.hostNetwork" | "spec.unschedulable" => "false".into(),
            "status.replicas" | "status.successful" => "0".into(),
            _ => String::new(),
        },
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
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
        assert!(s.matches("", "Pod", &pod));
        let s = Selector::parse("spec.nodeName==").unwrap_or_default();
        assert!(!s.matches("", "Pod", &pod));
        let unscheduled = json!({"metadata": {"name": "q"}, "spec": {}});
        assert!(s.matches("", "Pod", &unscheduled));
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
        assert!(s.check_supported("", "Pod").is_ok());
        assert_eq!(
            s.check_supported("", "ConfigMap").err().as_deref(),
            Some("field label not supported: spec.nodeName")
        );
        assert!(
            Selector::parse("type=Opaque")
                .unwrap_or_default()
                .check_supported("", "Secret")
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
                .matches("", "Node", &node)
        );
        let event = json!({"metadata": {"name": "e"}, "source": {"component": "kubelet"}, "involvedObject": {"kind": "Pod"}});
        assert!(
            Selector::parse("source=kubelet,involvedObject.kind=Pod")
                .unwrap_or_default()
                .matches("", "Event", &event)
        );
    }
}
