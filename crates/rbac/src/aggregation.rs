//! ClusterRole aggregation, as Kubernetes' clusterrole-aggregation controller computes it:
//! a ClusterRole with an `aggregationRule` gets, as its `rules`, the rules of every other
//! ClusterRole whose labels match one of its `clusterRoleSelectors`, selectors in order and
//! the matching roles of each in name order, each distinct rule once, in first-seen order.
//!
//! Pure functions over the ClusterRoles' JSON; the controller writes the result back.

use crate::rule::PolicyRule;
use kyb_apimachinery::labels::Selector;
use kyb_apimachinery::meta;
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a ClusterRole is aggregated, i.e. has an `aggregationRule` object (even one
/// without selectors, which aggregates to no rules).
pub fn is_aggregated(cluster_role: &Value) -> bool {
    cluster_role
        .get("aggregationRule")
        .is_some_and(Value::is_object)
}

fn selectors(cluster_role: &Value) -> Result<Vec<Selector>, String> {
    cluster_role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(Selector::from_label_selector).collect())
        .unwrap_or_else(|| Ok(Vec::new()))
}

/// One ClusterRole as aggregation sees it: name, labels and current rules.
struct Entry<'a> {
    name: &'a str,
    object: &'a Value,
    rules: Vec<PolicyRule>,
}

/// The rules of `target_name` given `selectors` and the current state of all roles.
fn aggregate_from(target_name: &str, selectors: &[Selector], entries: &[Entry]) -> Vec<PolicyRule> {
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        let mut matching: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.name != target_name && selector.matches(meta::labels(e.object)))
            .collect();
        matching.sort_by(|a, b| a.name.cmp(b.name));
        for entry in matching {
            for rule in &entry.rules {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

fn entries(cluster_roles: &[Value]) -> Vec<Entry<'_>> {
    cluster_roles
        .iter()
        .filter_map(|object| {
            Some(Entry {
                name: meta::name(object)?,
                object,
                rules: PolicyRule::list_from_object(object),
            })
        })
        .collect()
}

/// One pass of the controller for `target`: its aggregated rules from the current rules
/// of `cluster_roles` (which may include `target` itself; it is never its own source).
/// `None` when `target` is not aggregated; an error when one of its selectors is invalid
/// (the controller then leaves the role as it is).
pub fn aggregate_cluster_role(
    target: &Value,
    cluster_roles: &[Value],
) -> Option<Result<Vec<PolicyRule>, String>> {
    if !is_aggregated(target) {
        return None;
    }
    let name = meta::name(target).unwrap_or_default();
    Some(
        selectors(target)
            .map(|selectors| aggregate_from(name, &selectors, &entries(cluster_roles))),
    )
}

/// The rules every aggregated ClusterRole among `cluster_roles` ends up with once the
/// controller has settled: aggregation is repeated, each role seeing the others' latest
/// rules, until nothing changes (so `admin`, which aggregates `edit`, which aggregates
/// `view`, gets all three layers). Keyed by role name; roles with an invalid selector map
/// to the error and keep their rules for the others. Cycles stop after as many rounds as
/// there are aggregated roles.
pub fn aggregate_cluster_roles(
    cluster_roles: &[Value],
) -> BTreeMap<String, Result<Vec<PolicyRule>, String>> {
    let mut entries = entries(cluster_roles);
    let mut targets: Vec<(usize, Result<Vec<Selector>, String>)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| is_aggregated(e.object))
        .map(|(i, e)| (i, selectors(e.object)))
        .collect();
    targets.sort_by(|a, b| entries[a.0].name.cmp(entries[b.0].name));
    for _round in 0..=targets.len() {
        let mut changed = false;
        for (index, selectors) in &targets {
            let Ok(selectors) = selectors else {
                continue;
            };
            let rules = aggregate_from(entries[*index].name, selectors, &entries);
            if rules != entries[*index].rules {
                entries[*index].rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    targets
        .into_iter()
        .map(|(index, selectors)| {
            let entry = &entries[index];
            (
                entry.name.to_string(),
                selectors.map(|_| entry.rules.clone()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    #[test]
    fn union_in_name_order_without_repeats() {
        let target = json!({"kind": "ClusterRole", "metadata": {"name": "t"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "t"}}]}});
        let roles = vec![
            target.clone(),
            role(
                "b",
                json!({"agg": "t"}),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            role(
                "a",
                json!({"agg": "t"}),
                json!([
                    {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
                ]),
            ),
            role(
                "c",
                json!({"agg": "other"}),
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ),
        ];
        let rules = aggregate_cluster_role(&target, &roles);
        let Some(Ok(rules)) = rules else {
            panic!("aggregation should succeed: {rules:?}");
        };
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].verbs, vec!["list"]);
        assert_eq!(rules[1].verbs, vec!["get"]);
    }

    #[test]
    fn invalid_selector_is_an_error() {
        let target = json!({"kind": "ClusterRole", "metadata": {"name": "t"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "Bogus"}]}]}});
        assert!(matches!(aggregate_cluster_role(&target, &[]), Some(Err(_))));
        assert!(aggregate_cluster_role(&json!({"metadata": {"name": "x"}}), &[]).is_none());
    }
}
