//! NodeRestriction for pods: a node creates only mirror pods bound to and owned by itself
//! that refer to no other API object, deletes only pods bound to itself, updates the status
//! (not labels or resource-claim statuses) only of pods bound to itself, and evicts only
//! pods bound to itself.

use serde_json::Value;

use super::{Lookup, NodeRequest, object, quote, unexpected_type};
use crate::denial::Denial;
use crate::pod_refs;
use crate::service_account::{MIRROR_POD_ANNOTATION, is_mirror_pod};
use kyb_api::Operation;
use kyb_apimachinery::json;

fn pod_not_found(name: &str) -> Denial {
    Denial::NotFound {
        group: "",
        resource: "pod",
        name: name.to_string(),
    }
}

fn node_name_of(pod: &Value) -> &str {
    json::str_at(pod, &["spec", "nodeName"])
}

/// Pods without a subresource: create (mirror pods) and delete.
pub(super) fn admit_pod(
    node: &str,
    request: &NodeRequest<'_>,
    lookup: &dyn Lookup,
) -> Result<(), Denial> {
    match request.operation {
        Operation::Create => admit_pod_create(node, request, lookup),
        Operation::Delete => {
            let existing = lookup
                .pod(request.namespace, request.name)
                .ok_or_else(|| pod_not_found(request.name))?;
            if node_name_of(&existing) != node {
                return Err(Denial::Forbidden(format!(
                    "node {} can only delete pods with spec.nodeName set to itself",
                    quote(node)
                )));
            }
            Ok(())
        }
        other => Err(Denial::Forbidden(format!(
            "unexpected operation {}, node {} can only create and delete mirror pods",
            quote(other.as_str()),
            quote(node)
        ))),
    }
}

fn admit_pod_create(
    node: &str,
    request: &NodeRequest<'_>,
    lookup: &dyn Lookup,
) -> Result<(), Denial> {
    let pod = object(request.object)?;
    let q = quote(node);
    let forbid = |text: String| Err(Denial::Forbidden(text));
    if !is_mirror_pod(pod) {
        return forbid(format!(
            "pod does not have {} annotation, node {q} can only create mirror pods",
            quote(MIRROR_POD_ANNOTATION)
        ));
    }
    if node_name_of(pod) != node {
        return forbid(format!(
            "node {q} can only create pods with spec.nodeName set to itself"
        ));
    }
    let owners = json::items(pod, &["metadata", "ownerReferences"]);
    match owners {
        [] => {
            return forbid(format!(
                "node {q} can only create pods with an owner reference set to itself"
            ));
        }
        [owner] => {
            if json::str_at(owner, &["apiVersion"]) != "v1"
                || json::str_at(owner, &["kind"]) != "Node"
                || json::str_at(owner, &["name"]) != node
            {
                return forbid(format!(
                    "node {q} can only create pods with an owner reference set to itself"
                ));
            }
            if json::opt_bool(owner, &["controller"]) != Some(true) {
                return forbid(format!(
                    "node {q} can only create pods with a controller owner reference set to itself"
                ));
            }
            if json::opt_bool(owner, &["blockOwnerDeletion"]) == Some(true) {
                return forbid(format!(
                    "node {q} must not set blockOwnerDeletion on an owner reference"
                ));
            }
            let node_object = lookup.node(node).ok_or_else(|| Denial::NotFound {
                group: "",
                resource: "node",
                name: node.to_string(),
            })?;
            let owner_uid = json::str_at(owner, &["uid"]);
            let node_uid = json::str_at(&node_object, &["metadata", "uid"]);
            if owner_uid != node_uid {
                return forbid(format!(
                    "node {node} UID mismatch: expected {owner_uid} got {node_uid}"
                ));
            }
        }
        _ => {
            return forbid(format!(
                "node {q} can only create pods with a single owner reference set to itself"
            ));
        }
    }
    let spec = json::at(pod, &["spec"]).unwrap_or(&Value::Null);
    if !json::str_at(spec, &["serviceAccountName"]).is_empty() {
        return forbid(format!(
            "node {q} can not create pods that reference a service account"
        ));
    }
    if pod_refs::references_secrets(spec) {
        return forbid(format!(
            "node {q} can not create pods that reference secrets"
        ));
    }
    if pod_refs::references_configmaps(spec) {
        return forbid(format!(
            "node {q} can not create pods that reference configmaps"
        ));
    }
    let volumes = json::items(spec, &["volumes"]);
    let uses_trust_bundle = volumes.iter().any(|v| {
        json::items(v, &["projected", "sources"])
            .iter()
            .any(|s| s.get("clusterTrustBundle").is_some_and(Value::is_object))
    });
    if uses_trust_bundle {
        return forbid(format!(
            "node {q} can not create pods that reference clustertrustbundles"
        ));
    }
    if volumes
        .iter()
        .any(|v| v.get("persistentVolumeClaim").is_some_and(Value::is_object))
    {
        return forbid(format!(
            "node {q} can not create pods that reference persistentvolumeclaims"
        ));
    }
    if !json::items(spec, &["resourceClaims"]).is_empty() {
        return forbid(format!(
            "node {q} can not create pods that reference resourceclaims"
        ));
    }
    Ok(())
}

/// `pods/status`: updates only, of pods bound to the node, leaving labels and
/// resource-claim statuses alone.
pub(super) fn admit_pod_status(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    if request.operation != Operation::Update {
        return Err(Denial::Forbidden(format!(
            "unexpected operation {}",
            quote(request.operation.as_str())
        )));
    }
    let old = object(request.old_object)?;
    let q = quote(node);
    if node_name_of(old) != node {
        return Err(Denial::Forbidden(format!(
            "node {q} can only update pod status for pods with spec.nodeName set to itself"
        )));
    }
    let new = object(request.object)?;
    let labels = |pod| json::field_at(pod, &["metadata", "labels"]);
    if !kyb_apimachinery::equality::semantic_eq_map(labels(old), labels(new)) {
        return Err(Denial::Forbidden(format!(
            "node {q} cannot update labels through pod status"
        )));
    }
    if !resource_claim_statuses_equal(old, new) {
        return Err(Denial::Forbidden(format!(
            "node {q} cannot update resource claim statues"
        )));
    }
    Ok(())
}

/// Same entries in the same order: names, and claim names (set or not, and equal).
fn resource_claim_statuses_equal(old: &Value, new: &Value) -> bool {
    let a = json::items(old, &["status", "resourceClaimStatuses"]);
    let b = json::items(new, &["status", "resourceClaimStatuses"]);
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            json::str_at(x, &["name"]) == json::str_at(y, &["name"])
                && json::opt_str(x, &["resourceClaimName"])
                    == json::opt_str(y, &["resourceClaimName"])
        })
}

/// `pods/eviction`: creates only, for pods bound to the node.
pub(super) fn admit_eviction(
    node: &str,
    request: &NodeRequest<'_>,
    lookup: &dyn Lookup,
) -> Result<(), Denial> {
    if request.operation != Operation::Create {
        return Err(Denial::Forbidden(format!(
            "unexpected operation {}",
            request.operation.as_str()
        )));
    }
    let eviction = request
        .object
        .filter(|o| o.is_object())
        .ok_or_else(|| unexpected_type(request.object))?;
    let pod_name = if request.name.is_empty() {
        json::str_at(eviction, &["metadata", "name"])
    } else {
        request.name
    };
    if pod_name.is_empty() {
        return Err(Denial::forbidden(
            "could not determine pod from request data",
        ));
    }
    let existing = lookup
        .pod(request.namespace, pod_name)
        .ok_or_else(|| pod_not_found(pod_name))?;
    if node_name_of(&existing) != node {
        return Err(Denial::Forbidden(format!(
            "node {node} can only evict pods with spec.nodeName set to itself"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::super::node_restriction;
    use super::super::test_support::*;
    use super::*;

    fn cache() -> Cache {
        let mut cache = Cache::default();
        cache.nodes.insert(
            "n1".into(),
            json!({"metadata": {"name": "n1", "uid": "uid-n1"}}),
        );
        cache.pods.insert(
            ("ns".into(), "mine".into()),
            json!({"metadata": {"name": "mine"}, "spec": {"nodeName": "n1"}}),
        );
        cache.pods.insert(
            ("ns".into(), "theirs".into()),
            json!({"metadata": {"name": "theirs"}, "spec": {"nodeName": "n2"}}),
        );
        cache
    }

    fn mirror_pod(spec: Value) -> Value {
        let mut spec = spec;
        spec["nodeName"] = json!("n1");
        json!({
            "metadata": {
                "name": "static-n1",
                "annotations": {MIRROR_POD_ANNOTATION: "h"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-n1", "controller": true}]
            },
            "spec": spec
        })
    }

    fn create(pod: &Value) -> Result<(), Denial> {
        let groups = groups();
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "",
            "static-n1",
            Some(pod),
            None,
        );
        node_restriction(&r, &cache())
    }

    #[test]
    fn mirror_pods_bound_to_self_are_allowed() {
        create(&mirror_pod(json!({"containers": [{"name": "c"}]}))).unwrap();
    }

    #[test]
    fn pod_create_refusals() {
        let mut not_mirror = mirror_pod(json!({}));
        not_mirror["metadata"]["annotations"] = json!({});
        let mut other_node = mirror_pod(json!({}));
        other_node["spec"]["nodeName"] = json!("n2");
        let mut no_owner = mirror_pod(json!({}));
        no_owner["metadata"]["ownerReferences"] = json!([]);
        let mut two_owners = mirror_pod(json!({}));
        two_owners["metadata"]["ownerReferences"] = json!([{}, {}]);
        let mut wrong_owner = mirror_pod(json!({}));
        wrong_owner["metadata"]["ownerReferences"][0]["kind"] = json!("Pod");
        let mut not_controller = mirror_pod(json!({}));
        not_controller["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        let mut blocking = mirror_pod(json!({}));
        blocking["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(true);
        let mut wrong_uid = mirror_pod(json!({}));
        wrong_uid["metadata"]["ownerReferences"][0]["uid"] = json!("old");
        let cases = [
            (
                not_mirror,
                r#"pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#,
            ),
            (
                other_node,
                r#"node "n1" can only create pods with spec.nodeName set to itself"#,
            ),
            (
                no_owner,
                r#"node "n1" can only create pods with an owner reference set to itself"#,
            ),
            (
                two_owners,
                r#"node "n1" can only create pods with a single owner reference set to itself"#,
            ),
            (
                wrong_owner,
                r#"node "n1" can only create pods with an owner reference set to itself"#,
            ),
            (
                not_controller,
                r#"node "n1" can only create pods with a controller owner reference set to itself"#,
            ),
            (
                blocking,
                r#"node "n1" must not set blockOwnerDeletion on an owner reference"#,
            ),
            (wrong_uid, "node n1 UID mismatch: expected old got uid-n1"),
            (
                mirror_pod(json!({"serviceAccountName": "sa"})),
                r#"node "n1" can not create pods that reference a service account"#,
            ),
            (
                mirror_pod(json!({"imagePullSecrets": [{"name": "s"}]})),
                r#"node "n1" can not create pods that reference secrets"#,
            ),
            (
                mirror_pod(json!({"volumes": [{"name": "c", "configMap": {"name": "c"}}]})),
                r#"node "n1" can not create pods that reference configmaps"#,
            ),
            (
                mirror_pod(
                    json!({"volumes": [{"name": "b", "projected": {"sources": [{"clusterTrustBundle": {"name": "b", "path": "p"}}]}}]}),
                ),
                r#"node "n1" can not create pods that reference clustertrustbundles"#,
            ),
            (
                mirror_pod(
                    json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}),
                ),
                r#"node "n1" can not create pods that reference persistentvolumeclaims"#,
            ),
            (
                mirror_pod(json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]})),
                r#"node "n1" can not create pods that reference resourceclaims"#,
            ),
        ];
        for (pod, message) in cases {
            assert_eq!(
                create(&pod).unwrap_err(),
                Denial::forbidden(message),
                "{message}"
            );
        }
        let mut unknown_node = mirror_pod(json!({}));
        unknown_node["spec"]["nodeName"] = json!("n1");
        let groups = groups();
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "",
            "p",
            Some(&unknown_node),
            None,
        );
        let empty = Cache::default();
        assert_eq!(
            node_restriction(&r, &empty).unwrap_err().to_string(),
            r#"node "n1" not found"#
        );
        assert_eq!(
            create(&json!("x")).unwrap_err(),
            Denial::forbidden("unexpected type string")
        );
    }

    #[test]
    fn deletes_only_own_pods() {
        let groups = groups();
        let cache = cache();
        let r = request(&groups, Operation::Delete, "pods", "", "mine", None, None);
        node_restriction(&r, &cache).unwrap();
        let r = request(&groups, Operation::Delete, "pods", "", "theirs", None, None);
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(r#"node "n1" can only delete pods with spec.nodeName set to itself"#)
        );
        let r = request(&groups, Operation::Delete, "pods", "", "gone", None, None);
        let err = node_restriction(&r, &cache).unwrap_err();
        assert_eq!(
            (err.code(), err.to_string()),
            (404, r#"pod "gone" not found"#.to_string())
        );
        let empty = json!({});
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "",
            "mine",
            Some(&empty),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(
                r#"unexpected operation "UPDATE", node "n1" can only create and delete mirror pods"#
            )
        );
    }

    #[test]
    fn status_updates_of_own_pods() {
        let groups = groups();
        let cache = cache();
        let old = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"nodeName": "n1"},
                         "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c"}]}});
        let mut new = old.clone();
        new["status"]["phase"] = json!("Running");
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "status",
            "mine",
            Some(&new),
            Some(&old),
        );
        node_restriction(&r, &cache).unwrap();

        let mut relabeled = new.clone();
        relabeled["metadata"]["labels"]["a"] = json!("2");
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "status",
            "mine",
            Some(&relabeled),
            Some(&old),
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(r#"node "n1" cannot update labels through pod status"#)
        );

        let mut empty_label = new.clone();
        empty_label["metadata"]["labels"]["b"] = json!("");
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "status",
            "mine",
            Some(&empty_label),
            Some(&old),
        );
        assert!(node_restriction(&r, &cache).is_err());

        let mut claims = new.clone();
        claims["status"]["resourceClaimStatuses"][0]["resourceClaimName"] = json!("other");
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "status",
            "mine",
            Some(&claims),
            Some(&old),
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(r#"node "n1" cannot update resource claim statues"#)
        );

        let mut other = old.clone();
        other["spec"]["nodeName"] = json!("n2");
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "status",
            "theirs",
            Some(&new),
            Some(&other),
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(
                r#"node "n1" can only update pod status for pods with spec.nodeName set to itself"#
            )
        );
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "status",
            "mine",
            Some(&new),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(r#"unexpected operation "CREATE""#)
        );
        let r = request(
            &groups,
            Operation::Update,
            "pods",
            "status",
            "mine",
            Some(&new),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden("unexpected type <nil>")
        );
    }

    #[test]
    fn evictions_of_own_pods() {
        let groups = groups();
        let cache = cache();
        let eviction =
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "mine"}});
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "eviction",
            "mine",
            Some(&eviction),
            None,
        );
        node_restriction(&r, &cache).unwrap();
        // The name comes from the Eviction when the request has none.
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "eviction",
            "",
            Some(&eviction),
            None,
        );
        node_restriction(&r, &cache).unwrap();
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "eviction",
            "theirs",
            Some(&eviction),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden("node n1 can only evict pods with spec.nodeName set to itself")
        );
        let empty = json!({});
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "eviction",
            "",
            Some(&empty),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden("could not determine pod from request data")
        );
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "eviction",
            "nope",
            Some(&eviction),
            None,
        );
        assert_eq!(node_restriction(&r, &cache).unwrap_err().code(), 404);
        let r = request(
            &groups,
            Operation::Delete,
            "pods",
            "eviction",
            "mine",
            None,
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden("unexpected operation DELETE")
        );
    }
}
