//! NodeRestriction for the other objects a node writes: PVC status (capacity, conditions and
//! resize status only), its own Lease in `kube-node-lease`, its own CSINode, and
//! ResourceSlices pinned to it.

use serde_json::Value;

use super::{NodeRequest, object, quote};
use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The namespace of node heartbeat leases.
pub const NAMESPACE_NODE_LEASE: &str = "kube-node-lease";

/// `persistentvolumeclaims/status` updates may change only `status.capacity`,
/// `status.conditions`, `status.allocatedResources` and `status.allocatedResourceStatuses`
/// (besides `resourceVersion` and `managedFields`).
///
/// Kubernetes appends a Go structural diff (`cmp.Diff`) to the refusal; here the text after
/// the colon lists the changed fields instead.
pub(super) fn admit_pvc_status(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    if request.operation != Operation::Update {
        return Err(Denial::Forbidden(format!(
            "unexpected operation {}",
            quote(request.operation.as_str())
        )));
    }
    let old = object(request.old_object)?;
    let new = object(request.object)?;
    let (old, new) = (comparable_pvc(old), comparable_pvc(new));
    let mut changed = Vec::new();
    changed_paths(
        Some(&old),
        Some(&new),
        false,
        &mut String::new(),
        &mut changed,
    );
    if changed.is_empty() {
        return Ok(());
    }
    Err(Denial::Forbidden(format!(
        "node {} is not allowed to update fields other than status.quantity and status.conditions: changed {}",
        quote(node),
        changed.join(", ")
    )))
}

/// A PVC without the fields a node may change.
fn comparable_pvc(pvc: &Value) -> Value {
    let mut pvc = pvc.clone();
    if let Some(metadata) = pvc.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
    }
    if let Some(status) = pvc.get_mut("status").and_then(Value::as_object_mut) {
        for key in [
            "capacity",
            "conditions",
            "allocatedResourceStatuses",
            "allocatedResources",
        ] {
            status.remove(key);
        }
    }
    pvc
}

/// The dotted paths where two values differ semantically (see
/// [`kyb_apimachinery::equality`]);
/// `map` when the values are Go maps.
fn changed_paths(
    a: Option<&Value>,
    b: Option<&Value>,
    map: bool,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let (x, y) = (a.unwrap_or(&json::NULL), b.unwrap_or(&json::NULL));
    let equal = if map {
        kyb_apimachinery::equality::semantic_eq_map(x, y)
    } else {
        kyb_apimachinery::equality::semantic_eq(x, y)
    };
    if equal {
        return;
    }
    if let (Some(Value::Object(x)), Some(Value::Object(y))) = (a, b) {
        let before = out.len();
        let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
        for key in keys {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            changed_paths(
                x.get(key),
                y.get(key),
                !map && kyb_apimachinery::equality::is_map_field(key),
                path,
                out,
            );
            path.truncate(len);
        }
        if out.len() > before {
            return;
        }
    }
    out.push(path.clone());
}

/// Leases: only in `kube-node-lease`, only the one named for the node.
pub(super) fn admit_lease(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    if request.namespace != NAMESPACE_NODE_LEASE {
        return Err(Denial::Forbidden(format!(
            "can only access leases in the {} system namespace",
            quote(NAMESPACE_NODE_LEASE)
        )));
    }
    let name = if request.operation == Operation::Create {
        json::str_at(object(request.object)?, &["metadata", "name"])
    } else {
        request.name
    };
    if name != node {
        return Err(Denial::forbidden(
            "can only access node lease with the same name as the requesting node",
        ));
    }
    Ok(())
}

/// CSINodes: only the one named for the node.
pub(super) fn admit_csi_node(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    let name = if request.operation == Operation::Create {
        let Some(metadata) = request
            .object
            .and_then(|o| o.get("metadata"))
            .and_then(Value::as_object)
        else {
            return Err(Denial::forbidden("unable to access the object name"));
        };
        metadata.get("name").and_then(Value::as_str).unwrap_or("")
    } else {
        request.name
    };
    if name != node {
        return Err(Denial::forbidden(
            "can only access CSINode with the same name as the requesting node",
        ));
    }
    Ok(())
}

/// ResourceSlices: created and deleted only with `spec.nodeName` set to the node (the Node
/// authorizer checks the rest).
pub(super) fn admit_resource_slice(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    match request.operation {
        Operation::Create => {
            let slice = object(request.object)?;
            if json::str_at(slice, &["spec", "nodeName"]) != node {
                return Err(Denial::forbidden(
                    "can only create ResourceSlice with the same NodeName as the requesting node",
                ));
            }
        }
        Operation::Delete => {
            let slice = object(request.old_object)?;
            if json::str_at(slice, &["spec", "nodeName"]) != node {
                return Err(Denial::forbidden(
                    "can only delete ResourceSlice with the same NodeName as the requesting node",
                ));
            }
        }
        Operation::Update | Operation::Connect => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::super::test_support::*;
    use super::super::{NodeRequest, node_restriction};
    use super::*;

    fn run(r: &NodeRequest<'_>) -> Result<(), Denial> {
        node_restriction(r, &Cache::default())
    }

    #[test]
    fn pvc_status_changes() {
        let groups = groups();
        let old = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"volumeName": "pv"},
                         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let mut new = old.clone();
        new["metadata"]["resourceVersion"] = json!("2");
        new["status"]["capacity"] = json!({"storage": "2Gi"});
        new["status"]["conditions"] = json!([{"type": "Resizing", "status": "True"}]);
        new["status"]["allocatedResources"] = json!({"storage": "2Gi"});
        let r = request(
            &groups,
            Operation::Update,
            "persistentvolumeclaims",
            "status",
            "c",
            Some(&new),
            Some(&old),
        );
        run(&r).unwrap();

        let mut relabeled = new.clone();
        relabeled["metadata"]["labels"] = json!({"a": ""});
        relabeled["status"]["phase"] = json!("Lost");
        let r = request(
            &groups,
            Operation::Update,
            "persistentvolumeclaims",
            "status",
            "c",
            Some(&relabeled),
            Some(&old),
        );
        assert_eq!(
            run(&r)
                .unwrap_err()
                .message("", "persistentvolumeclaims", "c"),
            r#"persistentvolumeclaims "c" is forbidden: node "n1" is not allowed to update fields other than status.quantity and status.conditions: changed metadata.labels, status.phase"#
        );
        let r = request(
            &groups,
            Operation::Delete,
            "persistentvolumeclaims",
            "status",
            "c",
            None,
            Some(&old),
        );
        assert_eq!(
            run(&r).unwrap_err(),
            Denial::forbidden(r#"unexpected operation "DELETE""#)
        );
    }

    #[test]
    fn leases() {
        let groups = groups();
        let lease = json!({"metadata": {"name": "n1", "namespace": NAMESPACE_NODE_LEASE}});
        let mut r = request(
            &groups,
            Operation::Create,
            "leases",
            "",
            "n1",
            Some(&lease),
            None,
        );
        r.group = "coordination.k8s.io";
        r.namespace = NAMESPACE_NODE_LEASE;
        run(&r).unwrap();
        r.operation = Operation::Update;
        run(&r).unwrap();
        r.name = "n2";
        assert_eq!(
            run(&r)
                .unwrap_err()
                .message("coordination.k8s.io", "leases", "n2"),
            r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#
        );
        r.namespace = "default";
        assert_eq!(
            run(&r).unwrap_err(),
            Denial::forbidden(
                r#"can only access leases in the "kube-node-lease" system namespace"#
            )
        );
        let other = json!({"metadata": {"name": "n2"}});
        let mut r = request(
            &groups,
            Operation::Create,
            "leases",
            "",
            "n2",
            Some(&other),
            None,
        );
        r.group = "coordination.k8s.io";
        r.namespace = NAMESPACE_NODE_LEASE;
        assert!(run(&r).is_err());
    }

    #[test]
    fn csi_nodes() {
        let groups = groups();
        let own = json!({"metadata": {"name": "n1"}});
        let mut r = request(
            &groups,
            Operation::Create,
            "csinodes",
            "",
            "n1",
            Some(&own),
            None,
        );
        r.group = "storage.k8s.io";
        r.namespace = "";
        run(&r).unwrap();
        let null = json!(null);
        r.object = Some(&null);
        assert_eq!(
            run(&r).unwrap_err(),
            Denial::forbidden("unable to access the object name")
        );
        r.operation = Operation::Delete;
        r.name = "n2";
        assert_eq!(
            run(&r).unwrap_err(),
            Denial::forbidden("can only access CSINode with the same name as the requesting node")
        );
    }

    #[test]
    fn resource_slices() {
        let groups = groups();
        let own = json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n1"}});
        let other = json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n2"}});
        let mut r = request(
            &groups,
            Operation::Create,
            "resourceslices",
            "",
            "s",
            Some(&own),
            None,
        );
        r.group = "resource.k8s.io";
        run(&r).unwrap();
        r.object = Some(&other);
        assert_eq!(
            run(&r).unwrap_err(),
            Denial::forbidden(
                "can only create ResourceSlice with the same NodeName as the requesting node"
            )
        );
        r.operation = Operation::Delete;
        r.object = None;
        r.old_object = Some(&other);
        assert_eq!(
            run(&r).unwrap_err(),
            Denial::forbidden(
                "can only delete ResourceSlice with the same NodeName as the requesting node"
            )
        );
        r.old_object = Some(&own);
        run(&r).unwrap();
    }
}
