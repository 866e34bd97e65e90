//! Label selectors (`matchLabels` / `matchExpressions`): validation as metav1's
//! `ValidateLabelSelector`; evaluation is `kyb_apimachinery::labels`'
//! (`LabelSelectorAsSelector(...).Matches(...)`).

use kyb_apimachinery::labels::Selector;
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

/// The selector a `LabelSelector` value stands for, by `kyb_apimachinery::labels`: a
/// missing one selects nothing, an empty one everything; `Err` when it is malformed (bad
/// operator, empty values for In/NotIn, bad keys or values), which Kubernetes reports as an
/// invalid selector.
pub(crate) fn parse(sel: &Value) -> Result<Selector, ()> {
    if sel.is_null() {
        return Ok(Selector::nothing());
    }
    if !sel.is_object() {
        return Err(());
    }
    Selector::from_label_selector(sel).map_err(|_| ())
}

/// A plain map selector (Service, ReplicationController) as a `Selector`.
pub(crate) fn from_map(map: &Value) -> Selector {
    Selector::from_map(
        map.as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default())),
    )
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
        let sel = parse(&json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "x", "operator": "DoesNotExist"}
        ]}))
        .unwrap();
        assert!(sel.matches(json!({"app": "web", "tier": "a"}).as_object()));
        assert!(!sel.matches(json!({"app": "web", "tier": "c"}).as_object()));
        assert!(!sel.matches(json!({"app": "web", "tier": "a", "env": "prod"}).as_object()));
        assert!(!sel.matches(json!({"app": "web", "tier": "a", "x": "1"}).as_object()));
        assert!(parse(&json!({})).unwrap().is_empty());
        assert!(!parse(&Value::Null).unwrap().matches(json!({}).as_object()));
        assert!(parse(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).is_err());
    }
}
