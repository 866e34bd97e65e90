//! Label selectors (`matchLabels` / `matchExpressions`): validation as metav1's
//! `ValidateLabelSelector`, and evaluation against a label set, as
//! `LabelSelectorAsSelector(...).Matches(...)`.

use serde_json::Value;

use crate::meta::{validate_label_name, validate_labels};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;

/// Validates a label selector. `allow_invalid_values` keeps old objects with bad
/// `matchExpressions` values valid, as Kubernetes' option of the same name.
pub(crate) fn validate_label_selector(
    sel: &Value,
    allow_invalid_values: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if sel.is_null() {
        return errs;
    }
    errs.extend(validate_labels(
        field(sel, "matchLabels"),
        &path.child("matchLabels"),
    ));
    for (i, expr) in sel.arr("matchExpressions").iter().enumerate() {
        errs.extend(validate_requirement(
            expr,
            allow_invalid_values,
            &path.child("matchExpressions").index(i),
        ));
    }
    errs
}

fn validate_requirement(req: &Value, allow_invalid_values: bool, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let op = req.str("operator");
    let values = req.arr("values");
    match op {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        _ => errs.push(FieldError::invalid(
            &path.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(req.str("key"), &path.child("key")));
    if !allow_invalid_values {
        for (i, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or_default();
            for msg in names::label_value_errors(v) {
                errs.push(FieldError::invalid(&path.child("values").index(i), v, msg));
            }
        }
    }
    errs
}

/// One requirement of a parsed selector.
#[derive(Clone, Debug)]
pub(crate) enum Requirement {
    Equals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector.
#[derive(Clone, Debug)]
pub(crate) enum Selector {
    /// A missing selector: matches nothing.
    Nothing,
    /// Requirements that must all hold; none means "everything".
    All(Vec<Requirement>),
}

impl Selector {
    /// Parses a selector; `Err` when it is malformed (bad operator, empty values for
    /// In/NotIn, bad keys or values), which Kubernetes reports as an invalid selector.
    pub(crate) fn parse(sel: &Value) -> Result<Selector, ()> {
        if sel.is_null() {
            return Ok(Selector::Nothing);
        }
        if !sel.is_object() {
            return Err(());
        }
        let mut reqs = Vec::new();
        for (k, v) in sel.str_map("matchLabels") {
            if !names::qualified_name_errors(k).is_empty()
                || !names::label_value_errors(v).is_empty()
            {
                return Err(());
            }
            reqs.push(Requirement::Equals(k.to_string(), v.to_string()));
        }
        for expr in sel.arr("matchExpressions") {
            let key = expr.str("key").to_string();
            if !names::qualified_name_errors(&key).is_empty() {
                return Err(());
            }
            let values: Vec<String> = expr
                .str_list("values")
                .into_iter()
                .map(str::to_string)
                .collect();
            if values
                .iter()
                .any(|v| !names::label_value_errors(v).is_empty())
            {
                return Err(());
            }
            let req = match expr.str("operator") {
                "In" if !values.is_empty() => Requirement::In(key, values),
                "NotIn" if !values.is_empty() => Requirement::NotIn(key, values),
                "Exists" if values.is_empty() => Requirement::Exists(key),
                "DoesNotExist" if values.is_empty() => Requirement::DoesNotExist(key),
                _ => return Err(()),
            };
            reqs.push(req);
        }
        Ok(Selector::All(reqs))
    }

    /// Whether the selector selects everything (no requirements).
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Selector::All(r) if r.is_empty())
    }

    /// Whether a label set (a JSON object of strings) is selected.
    pub(crate) fn matches(&self, labels: &Value) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        match self {
            Selector::Nothing => false,
            Selector::All(reqs) => reqs.iter().all(|r| match r {
                Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
                Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
                Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
                Requirement::Exists(k) => get(k).is_some(),
                Requirement::DoesNotExist(k) => get(k).is_none(),
            }),
        }
    }
}

/// A plain map selector (Service, ReplicationController) as a `Selector`.
pub(crate) fn from_map(map: &Value) -> Selector {
    let mut reqs = Vec::new();
    if let Value::Object(m) = map {
        for (k, v) in m {
            reqs.push(Requirement::Equals(
                k.clone(),
                v.as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    Selector::All(reqs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn validates_expressions() {
        let sel = json!({"matchLabels": {"a": "b"}, "matchExpressions": [
            {"key": "k", "operator": "In", "values": []},
            {"key": "k", "operator": "Exists", "values": ["x"]},
            {"key": "k", "operator": "Near"},
            {"key": "k", "operator": "In", "values": ["-bad"]}
        ]});
        let errs = validate_label_selector(&sel, false, &Path::new("spec.selector"));
        let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs[0],
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        );
        assert_eq!(
            msgs[1],
            "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        );
        assert_eq!(
            msgs[2],
            r#"spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid selector operator"#
        );
        assert_eq!(errs[3].field, "spec.selector.matchExpressions[3].values[0]");
    }

    #[test]
    fn matches_labels() {
        let sel = Selector::parse(&json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "x", "operator": "DoesNotExist"}
        ]}))
        .unwrap();
        assert!(sel.matches(&json!({"app": "web", "tier": "a"})));
        assert!(!sel.matches(&json!({"app": "web", "tier": "c"})));
        assert!(!sel.matches(&json!({"app": "web", "tier": "a", "env": "prod"})));
        assert!(!sel.matches(&json!({"app": "web", "tier": "a", "x": "1"})));
        assert!(Selector::parse(&json!({})).unwrap().is_empty());
        assert!(!Selector::parse(&Value::Null).unwrap().matches(&json!({})));
        assert!(
            Selector::parse(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))
                .is_err()
        );
    }
}
