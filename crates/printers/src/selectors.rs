//! Labels and label selectors written as text, the way Kubernetes' printers show them.
//!
//! - A label map (`labels.FormatLabels`): `k=v` pairs sorted as whole strings, joined by
//!   commas; `<none>` when empty.
//! - A `metav1.LabelSelector` in selector syntax (`app=web,tier in (a,b),!legacy`):
//!   requirements sorted by key, set values sorted. A selector that is invalid (bad key or
//!   value, unknown operator, wrong number of values) cannot be written.
//! - A `metav1.LabelSelector` in Go's debug form (`&LabelSelector{MatchLabels:…}`), which one
//!   printer uses for admission policy bindings.

use serde_json::{Map, Value};

/// A label map as text; `<none>` when empty or missing.
pub(crate) fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        return "<none>".to_owned();
    }
    pairs.sort_unstable();
    pairs.join(",")
}

/// A selector as text (`metav1.FormatLabelSelector`): `<none>` when it selects everything
/// or nothing, `<error>` when it is invalid.
pub(crate) fn format_label_selector(selector: Option<&Value>) -> String {
    match selector_string(selector) {
        Ok(text) if text.is_empty() => "<none>".to_owned(),
        Ok(text) => text,
        Err(InvalidSelector) => "<error>".to_owned(),
    }
}

/// The selector is not valid and has no text form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InvalidSelector;

enum Operator {
    Equals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

struct Requirement<'a> {
    key: &'a str,
    operator: Operator,
    values: Vec<&'a str>,
}

/// A selector in selector syntax; empty for a missing or empty selector.
pub(crate) fn selector_string(selector: Option<&Value>) -> Result<String, InvalidSelector> {
    let Some(selector) = selector.and_then(Value::as_object) else {
        return Ok(String::new());
    };
    let mut requirements = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().unwrap_or("");
            requirements.push(requirement(key, Operator::Equals, vec![value])?);
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for expression in expressions {
            let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
            let operator = match expression.get("operator").and_then(Value::as_str) {
                Some("In") => Operator::In,
                Some("NotIn") => Operator::NotIn,
                Some("Exists") => Operator::Exists,
                Some("DoesNotExist") => Operator::DoesNotExist,
                _ => return Err(InvalidSelector),
            };
            let values = expression
                .get("values")
                .and_then(Value::as_array)
                .map(|values| values.iter().map(|v| v.as_str().unwrap_or("")).collect())
                .unwrap_or_default();
            requirements.push(requirement(key, operator, values)?);
        }
    }
    requirements.sort_by(|a, b| a.key.cmp(b.key));
    let mut out = String::new();
    for (i, requirement) in requirements.iter_mut().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_requirement(&mut out, requirement);
    }
    Ok(out)
}

fn requirement<'a>(
    key: &'a str,
    operator: Operator,
    values: Vec<&'a str>,
) -> Result<Requirement<'a>, InvalidSelector> {
    let count_ok = match operator {
        Operator::Equals => values.len() == 1,
        Operator::In | Operator::NotIn => !values.is_empty(),
        Operator::Exists | Operator::DoesNotExist => values.is_empty(),
    };
    if !count_ok || !is_qualified_name(key) || !values.iter().all(|v| is_label_value(v)) {
        return Err(InvalidSelector);
    }
    Ok(Requirement {
        key,
        operator,
        values,
    })
}

fn write_requirement(out: &mut String, requirement: &mut Requirement<'_>) {
    if matches!(requirement.operator, Operator::DoesNotExist) {
        out.push('!');
    }
    out.push_str(requirement.key);
    let set = match requirement.operator {
        Operator::Exists | Operator::DoesNotExist => return,
        Operator::Equals => {
            out.push('=');
            false
        }
        Operator::In => {
            out.push_str(" in (");
            true
        }
        Operator::NotIn => {
            out.push_str(" notin (");
            true
        }
    };
    requirement.values.sort_unstable();
    for (i, value) in requirement.values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(value);
    }
    if set {
        out.push(')');
    }
}

/// A label key: an optional DNS subdomain prefix and `/`, then a name of at most 63
/// characters made of alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        None => is_label_name(key),
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
    }
}

fn is_label_name(name: &str) -> bool {
    !name.is_empty() && is_label_value(name)
}

/// A label value: empty, or at most 63 characters made of alphanumerics, `-`, `_` and `.`,
/// starting and ending alphanumeric.
fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return true;
    }
    bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of lowercase
/// alphanumerics and `-`, each starting and ending alphanumeric.
fn is_dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            let bytes = label.as_bytes();
            let edge =
                |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            edge(bytes.first())
                && edge(bytes.last())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

/// A selector in Go's generated debug form, e.g.
/// `&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}`.
pub(crate) fn label_selector_debug_string(selector: &Value) -> String {
    let mut out = String::from("&LabelSelector{MatchLabels:map[string]string{");
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        let mut keys: Vec<&String> = labels.keys().collect();
        keys.sort_unstable();
        for key in keys {
            let value = labels.get(key).and_then(Value::as_str).unwrap_or("");
            out.push_str(key);
            out.push_str(": ");
            out.push_str(value);
            out.push(',');
        }
    }
    out.push_str("},MatchExpressions:[]LabelSelectorRequirement{");
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |name: &str| expression.get(name).and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        out.push_str("LabelSelectorRequirement{Key:");
        out.push_str(field("key"));
        out.push_str(",Operator:");
        out.push_str(field("operator"));
        out.push_str(",Values:[");
        out.push_str(&values.join(" "));
        out.push_str("],},");
    }
    out.push_str("},}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_maps_sort_whole_pairs() {
        let labels = json!({"b": "2", "a": "1", "a.b": "3"});
        // "a.b=3" sorts before "a=1" because '.' < '='.
        assert_eq!(format_labels(labels.as_object()), "a.b=3,a=1,b=2");
        assert_eq!(format_labels(json!({}).as_object()), "<none>");
        assert_eq!(format_labels(None), "<none>");
    }

    #[test]
    fn selectors_sort_requirements_by_key_and_values() {
        let selector = json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "canary", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist", "values": []}
            ]
        });
        assert_eq!(
            format_label_selector(Some(&selector)),
            "app=shop,canary,env in (dev,prod),!legacy,tier=web,zone notin (b)"
        );
    }

    #[test]
    fn empty_and_missing_selectors_print_none() {
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        assert_eq!(
            selector_string(Some(&json!({"matchLabels": {}}))),
            Ok(String::new())
        );
    }

    #[test]
    fn invalid_selectors_are_errors() {
        let cases = [
            json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchLabels": {"bad key": "v"}}),
            json!({"matchLabels": {"k": "-bad"}}),
            json!({"matchLabels": {"Example.com/k": "v"}}),
        ];
        for case in cases {
            assert_eq!(format_label_selector(Some(&case)), "<error>", "{case}");
        }
        assert_eq!(
            format_label_selector(Some(&json!({"matchLabels": {"example.com/k": ""}}))),
            "example.com/k="
        );
    }

    #[test]
    fn debug_form_of_a_selector() {
        let selector = json!({
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["x", "y"]}]
        });
        assert_eq!(
            label_selector_debug_string(&selector),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[x y],},},}"
        );
        assert_eq!(
            label_selector_debug_string(&json!({})),
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
    }
}
