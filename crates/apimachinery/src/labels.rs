//! Label selectors: parsing the `labelSelector` query syntax (equality- and set-based),
//! `metav1.LabelSelector` objects (JSON or typed parts) and map selectors, and matching
//! label sets, as `k8s.io/apimachinery/pkg/labels` does. The one implementation: the API
//! server's list filters, validation, the controllers, quota and the scheduler use it.

use serde_json::Value;
use std::collections::BTreeSet;

use crate::names;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operator {
    Exists,
    DoesNotExist,
    Equals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: BTreeSet<String>,
}

/// A parsed selector: all requirements must hold. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub requirements: Vec<Requirement>,
}

impl Selector {
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector no label set satisfies (Kubernetes' `labels.Nothing()`, what a missing
    /// `metav1.LabelSelector` means in affinity terms).
    pub fn nothing() -> Self {
        Self {
            requirements: vec![Requirement {
                key: String::new(),
                operator: Operator::In,
                values: BTreeSet::new(),
            }],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses the query syntax: `app=web,tier!=db,env in (a,b),!legacy,release`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(format!(
                    "unable to parse requirement: found empty requirement in {text:?}"
                ));
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(Self { requirements })
    }

    /// The selector of a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`)
    /// in JSON form, as `metav1.LabelSelectorAsSelector`: an empty one selects everything;
    /// a malformed one (bad key or value, unknown operator, values where none are allowed
    /// or none where some are needed) is an error.
    pub fn from_label_selector(selector: &Value) -> Result<Self, String> {
        let match_labels = selector
            .get("matchLabels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()));
        let mut expressions = Vec::new();
        for expression in selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |key: &str| expression.get(key).and_then(Value::as_str);
            let values: Vec<&str> = expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            expressions.push((text("key").unwrap_or_default(), text("operator"), values));
        }
        Self::from_parts(
            match_labels,
            expressions
                .iter()
                .map(|(key, operator, values)| (*key, *operator, values.iter().copied())),
        )
    }

    /// A `metav1.LabelSelector` from its parts, for typed callers: the `matchLabels` pairs
    /// and each expression's key, operator and values (see [`Selector::from_label_selector`]).
    pub fn from_parts<'a, V: IntoIterator<Item = &'a str>>(
        match_labels: impl IntoIterator<Item = (&'a str, &'a str)>,
        match_expressions: impl IntoIterator<Item = (&'a str, Option<&'a str>, V)>,
    ) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for (key, value) in match_labels {
            check_key(key)?;
            check_value(value)?;
            requirements.push(Requirement {
                key: key.to_string(),
                operator: Operator::Equals,
                values: BTreeSet::from([value.to_string()]),
            });
        }
        for (key, operator, values) in match_expressions {
            check_key(key)?;
            let values: BTreeSet<String> = values.into_iter().map(str::to_string).collect();
            let operator = match operator {
                Some("In") => Operator::In,
                Some("NotIn") => Operator::NotIn,
                Some("Exists") => Operator::Exists,
                Some("DoesNotExist") => Operator::DoesNotExist,
                other => {
                    return Err(format!(
                        "{:?} is not a valid label selector operator",
                        other.unwrap_or_default()
                    ));
                }
            };
            match operator {
                Operator::In | Operator::NotIn if values.is_empty() => {
                    return Err("for 'in', 'notin' operators, values set can't be empty".into());
                }
                Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                    return Err("values set must be empty for exists and does not exist".into());
                }
                _ => {}
            }
            for value in &values {
                check_value(value)?;
            }
            requirements.push(Requirement {
                key: key.to_string(),
                operator,
                values,
            });
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// A plain map selector (a Service's or ReplicationController's `selector`): every pair
    /// must match. Keys and values are not checked (the API validated them).
    pub fn from_map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            requirements: pairs
                .into_iter()
                .map(|(key, value)| Requirement {
                    key: key.to_string(),
                    operator: Operator::Equals,
                    values: BTreeSet::from([value.to_string()]),
                })
                .collect(),
        }
    }

    /// Whether a label map (`metadata.labels`, or `None`) satisfies the selector.
    pub fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether a label list of pairs satisfies the selector.
    pub fn matches_pairs<'a>(&self, labels: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches_value(labels(&r.key)))
    }
}

impl Requirement {
    pub fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let value = labels
            .and_then(|l| l.get(&self.key))
            .and_then(Value::as_str);
        self.matches_value(value)
    }

    fn matches_value(&self, value: Option<&str>) -> bool {
        match self.operator {
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => {
                !value.is_some_and(|v| self.values.contains(v))
            }
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(value), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values
                        .iter()
                        .next()
                        .and_then(|b| b.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    value > bound
                } else {
                    value < bound
                }
            }
        }
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    format!("unable to parse requirement: unbalanced ')' in {text:?}")
                })?;
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!(
            "unable to parse requirement: unbalanced '(' in {text:?}"
        ));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let requirement =
        |key: &str, operator, values: BTreeSet<String>| -> Result<Requirement, String> {
            check_key(key)?;
            for value in &values {
                check_value(value)?;
            }
            Ok(Requirement {
                key: key.to_string(),
                operator,
                values,
            })
        };
    if let Some(key) = part.strip_prefix('!') {
        return requirement(key.trim(), Operator::DoesNotExist, BTreeSet::new());
    }
    for (token, operator) in [
        ("!=", Operator::NotEquals),
        ("==", Operator::Equals),
        ("=", Operator::Equals),
    ] {
        if let Some((key, value)) = part.split_once(token) {
            return requirement(
                key.trim(),
                operator,
                BTreeSet::from([value.trim().to_string()]),
            );
        }
    }
    for (token, operator) in [(">", Operator::GreaterThan), ("<", Operator::LessThan)] {
        if let Some((key, value)) = part.split_once(token) {
            let value = value.trim();
            if value.parse::<i64>().is_err() {
                return Err(format!(
                    "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {value:?}"
                ));
            }
            return requirement(key.trim(), operator, BTreeSet::from([value.to_string()]));
        }
    }
    // `key in (a,b)`, `key notin (a,b)`, or `key`.
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().trim();
    let rest = words.next().unwrap_or_default().trim();
    if rest.is_empty() {
        return requirement(key, Operator::Exists, BTreeSet::new());
    }
    let (operator, list) = if let Some(list) = rest.strip_prefix("notin") {
        (Operator::NotIn, list)
    } else if let Some(list) = rest.strip_prefix("in") {
        (Operator::In, list)
    } else {
        return Err(format!(
            "unable to parse requirement: found '{rest}', expected: in, notin, =, ==, !=, gt, lt"
        ));
    };
    let list = list.trim();
    let inner = list
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .ok_or_else(|| format!("unable to parse requirement: found {list:?}, expected: '('"))?;
    let values: BTreeSet<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    if inner.trim().is_empty() {
        return Err(
            "unable to parse requirement: for 'in', 'notin' operators, values set can't be empty"
                .into(),
        );
    }
    requirement(key, operator, values)
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters of alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
pub fn check_key(key: &str) -> Result<(), String> {
    let invalid = |why: &str| {
        Err(format!(
            "unable to parse requirement: invalid label key {key:?}: {why}"
        ))
    };
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty() || !names::dns1123_subdomain_errors(prefix).is_empty())
    {
        return invalid("prefix part must be a lowercase RFC 1123 subdomain");
    }
    if name.is_empty() {
        return invalid("name part must be non-empty");
    }
    if !names::qualified_part_errors(name).is_empty() {
        return invalid(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters",
        );
    }
    Ok(())
}

/// A label value: empty, or like the name part of a key.
pub fn check_value(value: &str) -> Result<(), String> {
    if names::label_value_errors(value).is_empty() {
        Ok(())
    } else {
        Err(format!(
            "unable to parse requirement: invalid label value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn matches(selector: &str, l: Value) -> bool {
        Selector::parse(selector)
            .map(|s| s.matches(Some(&labels(l))))
            .unwrap_or(false)
    }

    #[test]
    fn equality_based() {
        assert!(matches("app=web", json!({"app": "web"})));
        assert!(matches("app==web", json!({"app": "web", "x": "y"})));
        assert!(!matches("app=web", json!({"app": "db"})));
        assert!(matches("app!=web", json!({"app": "db"})));
        assert!(matches("app!=web", json!({})));
        assert!(matches(
            "app=web, tier = front",
            json!({"app": "web", "tier": "front"})
        ));
        assert!(matches("app=", json!({"app": ""})));
    }

    #[test]
    fn set_based() {
        assert!(matches("env in (prod, qa)", json!({"env": "qa"})));
        assert!(!matches("env in (prod,qa)", json!({})));
        assert!(matches("env notin (prod,qa)", json!({})));
        assert!(!matches("env notin (prod,qa)", json!({"env": "prod"})));
        assert!(matches("release", json!({"release": "1"})));
        assert!(matches("!release", json!({})));
        assert!(!matches("!release", json!({"release": ""})));
        assert!(matches(
            "env in (a,b),!legacy,app=x",
            json!({"env": "b", "app": "x"})
        ));
        assert!(matches("replicas>2", json!({"replicas": "3"})));
        assert!(!matches("replicas<2", json!({"replicas": "3"})));
    }

    #[test]
    fn bad_syntax_is_an_error() {
        for bad in [
            "app=web,",
            "env in ()",
            "env in (a",
            "a b c",
            "-bad=x",
            "app=not valid",
            "x/y/=1",
            "k>a",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
        assert!(Selector::parse("").map(|s| s.is_empty()).unwrap_or(false));
        assert!(Selector::parse("example.com/app=web").is_ok());
    }

    #[test]
    fn label_selector_objects() {
        let selector = Selector::from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]
        }))
        .unwrap_or_default();
        assert!(selector.matches(Some(&labels(json!({"app": "web", "tier": "a"})))));
        assert!(!selector.matches(Some(&labels(json!({"app": "web"})))));
        assert!(
            Selector::from_label_selector(
                &json!({"matchExpressions": [{"key": "k", "operator": "In"}]})
            )
            .is_err()
        );
    }
}
