//! ClusterRole aggregation over the default roles: `admin` ⊇ `edit` ⊇ `view`, built from
//! the `system:aggregate-to-*` roles, and how changes to sources flow through.

use super::*;
use kyb_rbac::aggregation::{aggregate_cluster_role, aggregate_cluster_roles};
use kyb_rbac::{Attributes, covers};

fn allows(
    rules: &[PolicyRule],
    verb: &str,
    group: &str,
    resource: &str,
    subresource: &str,
) -> bool {
    let attributes = Attributes {
        subresource,
        ..Attributes::resource("u", &[], verb, group, resource, "ns")
    };
    rules.iter().any(|rule| rule.allows(&attributes))
}

fn default_aggregates() -> (Vec<PolicyRule>, Vec<PolicyRule>, Vec<PolicyRule>) {
    let aggregated = aggregate_cluster_roles(&defaults::cluster_roles());
    assert_eq!(
        aggregated.keys().cloned().collect::<Vec<_>>(),
        vec!["admin", "edit", "view"]
    );
    let get = |name: &str| aggregated[name].clone().unwrap();
    (get("admin"), get("edit"), get("view"))
}

#[test]
fn default_roles_aggregate_in_layers() {
    let (admin, edit, view) = default_aggregates();
    // edit may create pods, view may not.
    assert!(allows(&edit, "create", "", "pods", ""));
    assert!(!allows(&view, "create", "", "pods", ""));
    assert!(allows(&view, "get", "", "pods", ""));
    assert!(allows(&view, "get", "", "pods", "log"));
    assert!(!allows(&view, "get", "", "secrets", ""));
    assert!(allows(&edit, "get", "", "secrets", ""));
    // admin adds roles and bindings.
    assert!(allows(
        &admin,
        "create",
        "rbac.authorization.k8s.io",
        "rolebindings",
        ""
    ));
    assert!(!allows(
        &edit,
        "create",
        "rbac.authorization.k8s.io",
        "rolebindings",
        ""
    ));
    // Each layer holds the one below.
    assert_eq!(covers(&admin, &edit), Ok(()));
    assert_eq!(covers(&edit, &view), Ok(()));
    assert!(covers(&view, &edit).is_err());
    assert!(covers(&edit, &admin).is_err());
}

#[test]
fn aggregated_rules_follow_source_order_without_repeats() {
    let roles = defaults::cluster_roles();
    let (admin, edit, view) = default_aggregates();
    let source = |name: &str| {
        let role = roles
            .iter()
            .find(|r| r["metadata"]["name"] == name)
            .unwrap();
        PolicyRule::list_from_object(role)
    };
    // view is exactly system:aggregate-to-view.
    assert_eq!(view, source("system:aggregate-to-view"));
    // edit: system:aggregate-to-edit first (by name it sorts before "view"), then view.
    let mut expected = source("system:aggregate-to-edit");
    for rule in &view {
        if !expected.contains(rule) {
            expected.push(rule.clone());
        }
    }
    assert_eq!(edit, expected);
    // admin: "edit" sorts before "system:aggregate-to-admin".
    let mut expected = edit.clone();
    for rule in source("system:aggregate-to-admin") {
        if !expected.contains(&rule) {
            expected.push(rule);
        }
    }
    assert_eq!(admin, expected);
    // Deterministic.
    assert_eq!(
        aggregate_cluster_roles(&roles),
        aggregate_cluster_roles(&roles)
    );
}

#[test]
fn one_controller_pass_uses_current_rules() {
    let roles = defaults::cluster_roles();
    let admin = roles
        .iter()
        .find(|r| r["metadata"]["name"] == "admin")
        .unwrap();
    // Before edit has been aggregated, admin only gets system:aggregate-to-admin.
    let rules = aggregate_cluster_role(admin, &roles).unwrap().unwrap();
    assert_eq!(rules.len(), 2);
    let plain = roles
        .iter()
        .find(|r| r["metadata"]["name"] == "cluster-admin")
        .unwrap();
    assert!(aggregate_cluster_role(plain, &roles).is_none());
}

#[test]
fn custom_roles_join_by_label() {
    let mut roles = defaults::cluster_roles();
    roles.push(json!({"kind": "ClusterRole",
        "metadata": {"name": "widgets-view",
            "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}));
    roles.push(json!({"kind": "ClusterRole",
        "metadata": {"name": "selected-by-expression", "labels": {"tier": "gold"}},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]}));
    roles.push(json!({"kind": "ClusterRole", "metadata": {"name": "gold"},
        "aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "platinum"]}]}]}}));
    roles.push(
        json!({"kind": "ClusterRole", "metadata": {"name": "broken"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"bad key!": "x"}}]}}),
    );
    let aggregated = aggregate_cluster_roles(&roles);
    let admin = aggregated["admin"].clone().unwrap();
    let view = aggregated["view"].clone().unwrap();
    assert!(allows(&view, "list", "example.com", "widgets", ""));
    assert!(allows(&admin, "list", "example.com", "widgets", ""));
    let gold = aggregated["gold"].clone().unwrap();
    assert_eq!(
        gold,
        vec![
            PolicyRule::new(&["get"])
                .groups(&[""])
                .resources(&["nodes"])
        ]
    );
    assert!(aggregated["broken"].is_err());
}

#[test]
fn cycles_terminate() {
    let roles = vec![
        json!({"kind": "ClusterRole", "metadata": {"name": "a", "labels": {"in": "b"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"in": "a"}}]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["a"]}]}),
        json!({"kind": "ClusterRole", "metadata": {"name": "b", "labels": {"in": "a"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"in": "b"}}]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["b"]}]}),
    ];
    let aggregated = aggregate_cluster_roles(&roles);
    assert_eq!(aggregated.len(), 2);
}
