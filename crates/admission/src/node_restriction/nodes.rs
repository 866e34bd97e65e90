//! NodeRestriction for Node objects: a node writes only its own Node; it may not set a
//! config source, may set only the labels kubelets own (never `node-restriction.kubernetes.io`
//! ones, nor other `kubernetes.io`/`k8s.io` labels), and after creation may not change its
//! taints or owner references.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{NodeRequest, object, quote};
use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The label namespace reserved for labels only administrators set on nodes.
pub const LABEL_NAMESPACE_NODE_RESTRICTION: &str = "node-restriction.kubernetes.io";

/// The `kubernetes.io`/`k8s.io` labels a kubelet may set on its Node.
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// Label namespaces (and their subdomains) kubelets may use freely.
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

pub(super) fn admit_node(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    let q = quote(node);
    if request.name != node {
        return Err(Denial::Forbidden(format!(
            "node {q} is not allowed to modify node {}",
            quote(request.name)
        )));
    }
    match request.operation {
        Operation::Create => {
            let new = object(request.object)?;
            if has_config_source(new) {
                return Err(Denial::Forbidden(format!(
                    "node {q} is not allowed to create pods with a non-nil configSource"
                )));
            }
            let forbidden = forbidden_labels(labels(new), None);
            if !forbidden.is_empty() {
                return Err(Denial::Forbidden(format!(
                    "node {q} is not allowed to set the following labels: {}",
                    forbidden.join(", ")
                )));
            }
        }
        Operation::Update => {
            let new = object(request.object)?;
            let old = object(request.old_object)?;
            let config_source = |n| json::field_at(n, &["spec", "configSource"]);
            if has_config_source(new)
                && !kyb_apimachinery::equality::semantic_eq(config_source(new), config_source(old))
            {
                return Err(Denial::Forbidden(format!(
                    "node {q} is not allowed to update configSource to a new non-nil configSource"
                )));
            }
            let taints = |n| json::field_at(n, &["spec", "taints"]);
            if !kyb_apimachinery::equality::semantic_eq(taints(new), taints(old)) {
                return Err(Denial::Forbidden(format!(
                    "node {q} is not allowed to modify taints"
                )));
            }
            let owners = |n| json::field_at(n, &["metadata", "ownerReferences"]);
            if !kyb_apimachinery::equality::semantic_eq(owners(new), owners(old)) {
                return Err(Denial::Forbidden(format!(
                    "node {q} is not allowed to modify ownerReferences"
                )));
            }
            let forbidden = forbidden_labels(labels(new), labels(old));
            if !forbidden.is_empty() {
                return Err(Denial::Forbidden(format!(
                    "is not allowed to modify labels: {}",
                    forbidden.join(", ")
                )));
            }
        }
        Operation::Delete | Operation::Connect => {}
    }
    Ok(())
}

fn has_config_source(node: &Value) -> bool {
    json::at(node, &["spec", "configSource"]).is_some_and(|v| !v.is_null())
}

fn labels(node: &Value) -> Option<&Map<String, Value>> {
    json::map_at(node, &["metadata", "labels"])
}

/// The changed label keys (added, removed or with another value) a node may not change,
/// sorted.
fn forbidden_labels<'a>(
    new: Option<&'a Map<String, Value>>,
    old: Option<&'a Map<String, Value>>,
) -> Vec<&'a str> {
    let mut modified = BTreeSet::new();
    for (a, b) in [(new, old), (old, new)] {
        for (key, value) in a.into_iter().flatten() {
            if b.and_then(|b| b.get(key)) != Some(value) {
                modified.insert(key.as_str());
            }
        }
    }
    modified
        .into_iter()
        .filter(|key| {
            let namespace = label_namespace(key);
            in_namespace(namespace, LABEL_NAMESPACE_NODE_RESTRICTION)
                || (is_kubernetes_label(namespace) && !is_kubelet_label(key, namespace))
        })
        .collect()
}

/// The prefix of a label key before `/` ("" without one).
fn label_namespace(key: &str) -> &str {
    key.split_once('/').map_or("", |(prefix, _)| prefix)
}

/// `namespace` is `domain` or a subdomain of it.
fn in_namespace(namespace: &str, domain: &str) -> bool {
    namespace == domain
        || namespace
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

fn is_kubernetes_label(namespace: &str) -> bool {
    in_namespace(namespace, "kubernetes.io") || in_namespace(namespace, "k8s.io")
}

/// Whether a kubelet may set the label (Kubernetes' `IsKubeletLabel`).
pub fn is_kubelet_label(key: &str, namespace: &str) -> bool {
    KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_NAMESPACES
            .iter()
            .any(|allowed| in_namespace(namespace, allowed))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::super::node_restriction;
    use super::super::test_support::*;
    use super::*;

    fn run(
        op: Operation,
        name: &str,
        new: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), Denial> {
        let groups = groups();
        let r = request(&groups, op, "nodes", "", name, new, old);
        node_restriction(&r, &Cache::default())
    }

    #[test]
    fn only_its_own_node() {
        let node = json!({"metadata": {"name": "n1"}});
        run(Operation::Create, "n1", Some(&node), None).unwrap();
        assert_eq!(
            run(Operation::Create, "n2", Some(&node), None)
                .unwrap_err()
                .message("", "nodes", "n2"),
            r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#
        );
        assert!(run(Operation::Delete, "n2", None, None).is_err());
        run(Operation::Delete, "n1", None, None).unwrap();
    }

    #[test]
    fn create_labels_and_config_source() {
        let node = json!({"metadata": {"name": "n1", "labels": {
            "kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux",
            "node.kubernetes.io/exclude-from-external-load-balancers": "",
            "kubelet.kubernetes.io/x": "1", "foo.node.kubernetes.io/y": "2",
            "example.com/custom": "ok", "plain": "ok"
        }}});
        run(Operation::Create, "n1", Some(&node), None).unwrap();
        let bad = json!({"metadata": {"name": "n1", "labels": {
            "node-restriction.kubernetes.io/pool": "a",
            "node-role.kubernetes.io/control-plane": "",
            "x.k8s.io/y": "z",
            "example.com/fine": "1"
        }}});
        assert_eq!(
            run(Operation::Create, "n1", Some(&bad), None).unwrap_err(),
            Denial::forbidden(
                r#"node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/control-plane, x.k8s.io/y"#
            )
        );
        let with_source =
            json!({"metadata": {"name": "n1"}, "spec": {"configSource": {"configMap": {}}}});
        assert_eq!(
            run(Operation::Create, "n1", Some(&with_source), None).unwrap_err(),
            Denial::forbidden(
                r#"node "n1" is not allowed to create pods with a non-nil configSource"#
            )
        );
    }

    #[test]
    fn updates_keep_taints_owners_and_restricted_labels() {
        let old = json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/worker": ""}},
                         "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}});
        let mut new = old.clone();
        new["status"] = json!({"phase": "Running"});
        new["metadata"]["labels"]["example.com/x"] = json!("y");
        run(Operation::Update, "n1", Some(&new), Some(&old)).unwrap();

        let mut tainted = old.clone();
        tainted["spec"]["taints"] = json!([]);
        assert_eq!(
            run(Operation::Update, "n1", Some(&tainted), Some(&old)).unwrap_err(),
            Denial::forbidden(r#"node "n1" is not allowed to modify taints"#)
        );
        let mut owned = old.clone();
        owned["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u"}]);
        assert_eq!(
            run(Operation::Update, "n1", Some(&owned), Some(&old)).unwrap_err(),
            Denial::forbidden(r#"node "n1" is not allowed to modify ownerReferences"#)
        );
        // Removing a restricted label is a modification too; keeping it is fine.
        let mut unlabeled = old.clone();
        unlabeled["metadata"]["labels"] = json!({});
        assert_eq!(
            run(Operation::Update, "n1", Some(&unlabeled), Some(&old)).unwrap_err(),
            Denial::forbidden("is not allowed to modify labels: node-role.kubernetes.io/worker")
        );
        let mut sourced = old.clone();
        sourced["spec"]["configSource"] = json!({"configMap": {"name": "c"}});
        assert_eq!(
            run(Operation::Update, "n1", Some(&sourced), Some(&old)).unwrap_err(),
            Denial::forbidden(
                r#"node "n1" is not allowed to update configSource to a new non-nil configSource"#
            )
        );
        // Missing and empty taint lists are the same.
        let no_taints = json!({"metadata": {"name": "n1"}, "spec": {}});
        let empty_taints = json!({"metadata": {"name": "n1"}, "spec": {"taints": []}});
        run(
            Operation::Update,
            "n1",
            Some(&empty_taints),
            Some(&no_taints),
        )
        .unwrap();
    }

    #[test]
    fn label_namespaces() {
        assert!(in_namespace("a.kubernetes.io", "kubernetes.io"));
        assert!(!in_namespace("akubernetes.io", "kubernetes.io"));
        assert!(is_kubelet_label(
            "beta.kubernetes.io/arch",
            "beta.kubernetes.io"
        ));
        assert!(!is_kubelet_label("kubernetes.io/role", "kubernetes.io"));
        assert_eq!(label_namespace("plain"), "");
    }

    #[test]
    fn hostile_nodes() {
        for (new, old) in [
            (json!(null), json!(null)),
            (json!({"metadata": {"labels": 3}}), json!({"spec": "x"})),
        ] {
            let _ = run(Operation::Create, "n1", Some(&new), None);
            let _ = run(Operation::Update, "n1", Some(&new), Some(&old));
            let _ = run(Operation::Update, "n1", Some(&new), None);
        }
    }
}
