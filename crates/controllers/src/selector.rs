//! Label selectors of typed objects: `metav1.LabelSelector` (`matchLabels` and
//! `matchExpressions`) and the plain map selectors of ReplicationControllers and Services,
//! matched by `kyb_apimachinery::labels` (Kubernetes' `LabelSelectorAsSelector`, through
//! `kyb_component_helpers::label_selector`). An empty LabelSelector matches everything; a
//! malformed one (bad key or value, unknown operator, values where none are allowed or
//! none where some are needed) matches nothing, as Kubernetes' workload controllers read
//! them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kyb_component_helpers::label_selector::as_selector;
use std::collections::BTreeMap;

/// Whether `labels` satisfy `selector`.
pub fn matches(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    as_selector(selector)
        .is_ok_and(|s| s.matches_pairs(|key| labels.and_then(|l| l.get(key)).map(String::as_str)))
}

/// Whether a LabelSelector selects nothing in particular (no labels, no expressions).
pub fn is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}

/// Whether `labels` carry every pair of a map selector (RC, Service). An empty map
/// selector matches nothing here: Services and RCs without selectors select no pods.
pub fn map_matches(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    if selector.is_empty() {
        return false;
    }
    let Some(labels) = labels else { return false };
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn sel(v: serde_json::Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn match_labels_and_expressions() {
        let s = sel(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }));
        assert!(matches(&s, Some(&labels(&[("app", "web"), ("tier", "a")]))));
        assert!(!matches(
            &s,
            Some(&labels(&[("app", "web"), ("tier", "c")]))
        ));
        assert!(!matches(
            &s,
            Some(&labels(&[("app", "web"), ("tier", "a"), ("canary", "1")]))
        ));
        assert!(!matches(&s, None));
        assert!(matches(&sel(json!({})), None), "empty selects everything");
        let not_in =
            sel(json!({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["1"]}]}));
        assert!(matches(&not_in, Some(&labels(&[]))));
        assert!(!matches(&not_in, Some(&labels(&[("x", "1")]))));
        let bad =
            sel(json!({"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["1"]}]}));
        assert!(!matches(&bad, Some(&labels(&[("x", "1")]))));
    }

    #[test]
    fn map_selectors() {
        let s = labels(&[("app", "web")]);
        assert!(map_matches(
            &s,
            Some(&labels(&[("app", "web"), ("x", "y")]))
        ));
        assert!(!map_matches(&s, Some(&labels(&[("app", "db")]))));
        assert!(!map_matches(
            &BTreeMap::new(),
            Some(&labels(&[("app", "web")]))
        ));
    }
}
