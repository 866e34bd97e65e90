//! Integration tests of `kyb-rbac`: authorization decisions (`authorize`), escalation
//! prevention (`escalation`), ClusterRole aggregation (`aggregation`), rule reviews
//! (`rules_for`), the default policy (`bootstrap`) and the subject index under many
//! bindings (`scale`).

#![allow(clippy::unwrap_used)]

mod aggregation;
mod authorize;
mod bootstrap;
mod escalation;
mod rules_for;
mod scale;

use kyb_rbac::aggregation::aggregate_cluster_roles;
use kyb_rbac::{Policy, PolicyRule, bootstrap as defaults};
use serde_json::{Value, json};

pub fn groups(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

pub fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules})
}

pub fn role(namespace: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace}, "rules": rules})
}

pub fn cluster_role_binding(name: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects})
}

pub fn role_binding(namespace: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": subjects})
}

pub fn user(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

pub fn group(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name})
}

/// The default ClusterRoles with `admin`, `edit` and `view` aggregated, as they are once
/// the aggregation controller has run.
pub fn aggregated_default_cluster_roles() -> Vec<Value> {
    let mut roles = defaults::cluster_roles();
    let aggregated = aggregate_cluster_roles(&roles);
    for role in &mut roles {
        let name = role["metadata"]["name"].as_str().unwrap().to_string();
        if let Some(Ok(rules)) = aggregated.get(&name) {
            role["rules"] = PolicyRule::list_to_json(rules);
        }
    }
    roles
}

/// The default policy, aggregated, plus the bindings of the test scenario:
/// - `vera` views, `eddie` edits and `adam` administers namespace `team-a` (role bindings
///   to the default cluster roles);
/// - `root` is in `system:masters`;
/// - the service account `team-a/builder` may deploy in `team-a` (a Role bound to the
///   subject without a namespace, which defaults to the binding's);
/// - `nina` may get the config map `app-config` in `team-a` only;
/// - `prom` is in `system:monitoring`.
pub fn scenario() -> Policy {
    let mut objects = aggregated_default_cluster_roles();
    objects.extend(defaults::cluster_role_bindings());
    objects.extend(defaults::roles());
    objects.extend(defaults::role_bindings());
    objects.push(role_binding(
        "team-a",
        "viewers",
        "ClusterRole",
        "view",
        json!([user("vera")]),
    ));
    objects.push(role_binding(
        "team-a",
        "editors",
        "ClusterRole",
        "edit",
        json!([user("eddie")]),
    ));
    objects.push(role_binding(
        "team-a",
        "admins",
        "ClusterRole",
        "admin",
        json!([user("adam")]),
    ));
    objects.push(role(
        "team-a",
        "deployer",
        json!([{"verbs": ["get", "create", "update"], "apiGroups": ["apps"], "resources": ["deployments"]}]),
    ));
    objects.push(role_binding(
        "team-a",
        "ci",
        "Role",
        "deployer",
        json!([{"kind": "ServiceAccount", "name": "builder"}]),
    ));
    objects.push(role(
        "team-a",
        "config-reader",
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app-config"]}]),
    ));
    objects.push(role_binding(
        "team-a",
        "config-readers",
        "Role",
        "config-reader",
        json!([user("nina")]),
    ));
    let mut policy = Policy::new();
    for object in &objects {
        policy.apply(object).unwrap();
    }
    policy
}
