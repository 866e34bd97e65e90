//! The default RBAC policy of a Kubernetes 1.33 API server, with the feature gates at their
//! 1.33 defaults: the ClusterRoles and ClusterRoleBindings it reconciles at start (the
//! user-facing and `system:` roles, and one `system:controller:<name>` role and binding per
//! built-in controller, bound to the service account `kube-system/<name>`), and the few
//! Roles and RoleBindings of `kube-system` and `kube-public`.
//!
//! Every object carries the label `kubernetes.io/bootstrapping: rbac-defaults` and the
//! annotation `rbac.authorization.kubernetes.io/autoupdate: "true"`, and every rule has its
//! lists sorted, as Kubernetes creates them. The aggregated roles `admin`, `edit` and `view`
//! are created without `rules`; the aggregation controller fills them in (see
//! [`crate::aggregation`]).
//!
//! The rule contents follow Kubernetes' bootstrap policy (`plugin/pkg/auth/authorizer/rbac/
//! bootstrappolicy`: `policy.go`, `controller_policy.go`, `namespace_policy.go` and the
//! expected objects in their `testdata`), restated here as data.

mod cluster_roles;
mod controller_roles;
mod namespace_roles;

use crate::rule::PolicyRule;
use crate::subject::RBAC_GROUP;
use serde_json::{Map, Value, json};

/// The annotation telling the API server to reconcile an object with its defaults at start.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The label marking the default objects.
pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
/// The value of [`BOOTSTRAPPING_LABEL`].
pub const BOOTSTRAPPING_VALUE: &str = "rbac-defaults";
/// The prefix of the controllers' roles and bindings.
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// The default ClusterRoles: the general ones followed by the controllers' ones.
pub fn cluster_roles() -> Vec<Value> {
    let mut roles = cluster_roles::cluster_roles();
    roles.extend(
        controller_roles::controller_roles()
            .iter()
            .map(|c| c.role()),
    );
    roles
}

/// The default ClusterRoleBindings: the general ones followed by the controllers' ones.
pub fn cluster_role_bindings() -> Vec<Value> {
    let mut bindings = cluster_roles::cluster_role_bindings();
    bindings.extend(
        controller_roles::controller_roles()
            .iter()
            .map(|c| c.binding()),
    );
    bindings
}

/// The default Roles of `kube-system` and `kube-public`.
pub fn roles() -> Vec<Value> {
    namespace_roles::roles()
}

/// The default RoleBindings of `kube-system` and `kube-public`.
pub fn role_bindings() -> Vec<Value> {
    namespace_roles::role_bindings()
}

// Verb sets of the bootstrap policy.
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];

// API groups.
const LEGACY: &str = "";
const APPS: &str = "apps";
const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTOSCALING: &str = "autoscaling";
const BATCH: &str = "batch";
const CERTIFICATES: &str = "certificates.k8s.io";
const COORDINATION: &str = "coordination.k8s.io";
const DISCOVERY: &str = "discovery.k8s.io";
const EVENTS: &str = "events.k8s.io";
const EXTENSIONS: &str = "extensions";
const NETWORKING: &str = "networking.k8s.io";
const POLICY: &str = "policy";
const STORAGE: &str = "storage.k8s.io";
const ADMISSION_REGISTRATION: &str = "admissionregistration.k8s.io";

/// A rule granting `verbs`; the builder methods of [`PolicyRule`] add the rest.
fn rule(verbs: &[&str]) -> PolicyRule {
    PolicyRule::new(verbs)
}

/// Creating and updating events in both event APIs, which nearly every component needs.
fn events_rule() -> PolicyRule {
    rule(&["create", "update", "patch"])
        .groups(&[LEGACY, EVENTS])
        .resources(&["events"])
}

fn metadata(name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> Value {
    let mut label_map = Map::new();
    label_map.insert(BOOTSTRAPPING_LABEL.into(), json!(BOOTSTRAPPING_VALUE));
    for (key, value) in labels {
        label_map.insert((*key).into(), json!(value));
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    if let Some(namespace) = namespace {
        metadata.insert("namespace".into(), json!(namespace));
    }
    metadata.insert("labels".into(), Value::Object(label_map));
    metadata.insert(
        "annotations".into(),
        json!({ AUTOUPDATE_ANNOTATION: "true" }),
    );
    Value::Object(metadata)
}

fn sorted_rules(rules: Vec<PolicyRule>) -> Value {
    Value::Array(rules.into_iter().map(|r| r.sorted().to_json()).collect())
}

/// A ClusterRole with `rules` and extra `labels`.
fn cluster_role_with_labels(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "rules": sorted_rules(rules),
    })
}

fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> Value {
    cluster_role_with_labels(name, &[], rules)
}

/// A ClusterRole aggregating the ClusterRoles labelled `<aggregate_label>: "true"`.
fn aggregated_cluster_role(name: &str, labels: &[(&str, &str)], aggregate_label: &str) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "aggregationRule": {
            "clusterRoleSelectors": [{"matchLabels": {aggregate_label: "true"}}]
        },
    })
}

fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "Role",
        "metadata": metadata(name, Some(namespace), &[]),
        "rules": sorted_rules(rules),
    })
}

fn user(name: &str) -> Value {
    json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": name})
}

fn group(name: &str) -> Value {
    json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": name})
}

fn service_account(namespace: &str, name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
}

/// A ClusterRoleBinding named after the ClusterRole it grants.
fn cluster_role_binding(role: &str, subjects: Vec<Value>) -> Value {
    let mut binding = json!({
        "apiVersion": API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": metadata(role, None, &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
    });
    if !subjects.is_empty() {
        binding["subjects"] = Value::Array(subjects);
    }
    binding
}

fn role_binding(namespace: &str, name: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "RoleBinding",
        "metadata": metadata(name, Some(namespace), &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role},
        "subjects": subjects,
    })
}
