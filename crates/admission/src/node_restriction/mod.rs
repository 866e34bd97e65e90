//! The NodeRestriction admission plugin: what a kubelet (user `system:node:<name>` in group
//! `system:nodes`) may write. It may create and delete mirror pods bound to itself that refer
//! to no other API object, update the status of and evict pods bound to itself, create and
//! update its own Node (not its taints or owner references after creation, and only the
//! `kubernetes.io`/`k8s.io` labels kubelets own), update the status of PVCs, request tokens
//! for service accounts of pods bound to itself (for audiences those pods use), and write
//! its own Lease, CSINode, ResourceSlices and kubelet CSRs. Other users pass untouched.
//!
//! Every refusal is a [`Denial::Forbidden`] (text after
//! `<resource>[.<group>] "<name>" is forbidden: `, with the request's resource and
//! [`crate::object_name`]) unless stated otherwise; an object the plugin looks up that does
//! not exist is a [`Denial::NotFound`].

mod csr;
mod nodes;
mod objects;
mod pods;
mod token;

use std::borrow::Cow;

use serde_json::Value;

use crate::default_toleration_seconds::go_type;
use crate::denial::Denial;
use crate::identity::node_identity;
use kyb_api::Operation;

pub use token::TokenAudienceCheck;

/// One admission request as NodeRestriction sees it.
#[derive(Clone, Copy, Debug)]
pub struct NodeRequest<'a> {
    /// The authenticated user and groups.
    pub user: &'a str,
    pub groups: &'a [String],
    pub operation: Operation,
    /// The request's API group ("" for core), resource and subresource.
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// The request's namespace ("" for cluster-scoped resources).
    pub namespace: &'a str,
    /// The request's name: the one in the URL, or on create the new object's
    /// `metadata.name` ("" when it has none), as Kubernetes' admission attributes carry it.
    pub name: &'a str,
    /// The new object (create, update; for `pods/eviction` the Eviction, for
    /// `serviceaccounts/token` the TokenRequest).
    pub object: Option<&'a Value>,
    /// The stored object (update, delete).
    pub old_object: Option<&'a Value>,
}

/// The objects NodeRestriction reads, which the caller serves from its cache. `None` means
/// the object does not exist.
pub trait Lookup {
    /// A pod, for deletes, evictions and token requests.
    fn pod(&self, namespace: &str, name: &str) -> Option<Cow<'_, Value>>;
    /// A node, to check the UID in a mirror pod's owner reference.
    fn node(&self, name: &str) -> Option<Cow<'_, Value>>;
    /// A PVC, PV and CSIDriver, to find the audiences a pod's CSI volumes request tokens for.
    fn persistent_volume_claim(&self, namespace: &str, name: &str) -> Option<Cow<'_, Value>>;
    fn persistent_volume(&self, name: &str) -> Option<Cow<'_, Value>>;
    fn csi_driver(&self, name: &str) -> Option<Cow<'_, Value>>;
    /// Whether the authorizer allows `check` (see [`TokenAudienceCheck::attributes`]): lets
    /// a node request a token for an audience no volume of the pod uses. Kubernetes asks
    /// its whole authorizer chain (in practice RBAC).
    fn authorize_token_audience(&self, check: &TokenAudienceCheck<'_>) -> bool;
}

/// Whether the plugin looks at a request: creates, updates and deletes of pods, nodes,
/// PVCs, service accounts (their `token` subresource), leases, CSINodes, ResourceSlices and
/// CertificateSigningRequests, whatever the user (the check of the user is
/// [`node_restriction`]'s first step).
pub fn applies(operation: Operation, group: &str, resource: &str, _subresource: &str) -> bool {
    operation != Operation::Connect
        && matches!(
            (group, resource),
            (
                "",
                "pods" | "nodes" | "persistentvolumeclaims" | "serviceaccounts"
            ) | ("coordination.k8s.io", "leases")
                | ("storage.k8s.io", "csinodes")
                | ("resource.k8s.io", "resourceslices")
                | ("certificates.k8s.io", "certificatesigningrequests")
        )
}

/// Admits or refuses one request. Requests by users that are not nodes, `CONNECT` requests
/// and other resources pass.
pub fn node_restriction(request: &NodeRequest<'_>, lookup: &dyn Lookup) -> Result<(), Denial> {
    if request.operation == Operation::Connect {
        return Ok(());
    }
    let Some(node_name) = node_identity(request.user, request.groups) else {
        return Ok(());
    };
    if node_name.is_empty() {
        return Err(Denial::Forbidden(format!(
            "could not determine node from user {}",
            quote(request.user)
        )));
    }
    match (request.group, request.resource) {
        ("", "pods") => match request.subresource {
            "" => pods::admit_pod(node_name, request, lookup),
            "status" => pods::admit_pod_status(node_name, request),
            "eviction" => pods::admit_eviction(node_name, request, lookup),
            other => Err(Denial::Forbidden(format!(
                "unexpected pod subresource {}, only 'status' and 'eviction' are allowed",
                quote(other)
            ))),
        },
        ("", "nodes") => nodes::admit_node(node_name, request),
        ("", "persistentvolumeclaims") => match request.subresource {
            "status" => objects::admit_pvc_status(node_name, request),
            _ => Err(Denial::forbidden("may only update PVC status")),
        },
        ("", "serviceaccounts") => token::admit_service_account(node_name, request, lookup),
        ("coordination.k8s.io", "leases") => objects::admit_lease(node_name, request),
        ("storage.k8s.io", "csinodes") => objects::admit_csi_node(node_name, request),
        ("resource.k8s.io", "resourceslices") => objects::admit_resource_slice(node_name, request),
        ("certificates.k8s.io", "certificatesigningrequests") => csr::admit_csr(node_name, request),
        _ => Ok(()),
    }
}

/// Go's `%q` of a string.
fn quote(s: &str) -> String {
    kyb_apimachinery::gofmt::quote(s)
}

/// `unexpected type <T>` for a missing or malformed object.
fn unexpected_type(object: Option<&Value>) -> Denial {
    Denial::Forbidden(format!(
        "unexpected type {}",
        object.map_or("<nil>", go_type)
    ))
}

/// The request's object, when it is a JSON object.
fn object(object: Option<&Value>) -> Result<&Value, Denial> {
    object
        .filter(|o| o.is_object())
        .ok_or_else(|| unexpected_type(object))
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::borrow::Cow;
    use std::collections::HashMap;

    use serde_json::Value;

    use super::{Lookup, NodeRequest, TokenAudienceCheck};
    use kyb_api::Operation;

    /// An in-memory cache for tests.
    #[derive(Default)]
    pub(crate) struct Cache {
        pub pods: HashMap<(String, String), Value>,
        pub nodes: HashMap<String, Value>,
        pub pvcs: HashMap<(String, String), Value>,
        pub pvs: HashMap<String, Value>,
        pub drivers: HashMap<String, Value>,
        /// (audience, service account) pairs the authorizer allows.
        pub allowed_audiences: Vec<(String, String)>,
    }

    impl Lookup for Cache {
        fn pod(&self, namespace: &str, name: &str) -> Option<Cow<'_, Value>> {
            self.pods
                .get(&(namespace.to_string(), name.to_string()))
                .map(Cow::Borrowed)
        }
        fn node(&self, name: &str) -> Option<Cow<'_, Value>> {
            self.nodes.get(name).map(Cow::Borrowed)
        }
        fn persistent_volume_claim(&self, namespace: &str, name: &str) -> Option<Cow<'_, Value>> {
            self.pvcs
                .get(&(namespace.to_string(), name.to_string()))
                .map(Cow::Borrowed)
        }
        fn persistent_volume(&self, name: &str) -> Option<Cow<'_, Value>> {
            self.pvs.get(name).map(Cow::Borrowed)
        }
        fn csi_driver(&self, name: &str) -> Option<Cow<'_, Value>> {
            self.drivers.get(name).map(Cow::Borrowed)
        }
        fn authorize_token_audience(&self, check: &TokenAudienceCheck<'_>) -> bool {
            self.allowed_audiences
                .iter()
                .any(|(a, sa)| a == check.audience && sa == check.service_account)
        }
    }

    pub(crate) const NODE_GROUPS: &[String] = &[];

    pub(crate) fn groups() -> Vec<String> {
        vec![
            "system:nodes".to_string(),
            "system:authenticated".to_string(),
        ]
    }

    /// A request by `system:node:n1` on a core resource.
    pub(crate) fn request<'a>(
        groups: &'a [String],
        operation: Operation,
        resource: &'a str,
        subresource: &'a str,
        name: &'a str,
        object: Option<&'a Value>,
        old_object: Option<&'a Value>,
    ) -> NodeRequest<'a> {
        NodeRequest {
            user: "system:node:n1",
            groups,
            operation,
            group: "",
            resource,
            subresource,
            namespace: "ns",
            name,
            object,
            old_object,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::test_support::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn non_nodes_and_connect_pass() {
        let cache = Cache::default();
        let groups = groups();
        let mut r = request(&groups, Operation::Delete, "nodes", "", "other", None, None);
        r.user = "jane";
        assert!(node_restriction(&r, &cache).is_ok());
        let mut r = request(
            NODE_GROUPS,
            Operation::Delete,
            "nodes",
            "",
            "other",
            None,
            None,
        );
        assert!(node_restriction(&r, &cache).is_ok());
        r.groups = &groups;
        r.operation = Operation::Connect;
        assert!(node_restriction(&r, &cache).is_ok());
        r.operation = Operation::Create;
        r.group = "apps";
        r.resource = "deployments";
        assert!(node_restriction(&r, &cache).is_ok());
    }

    #[test]
    fn unnamed_node_is_refused() {
        let cache = Cache::default();
        let groups = groups();
        let mut r = request(&groups, Operation::Create, "nodes", "", "", None, None);
        r.user = "system:node:";
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden(r#"could not determine node from user "system:node:""#)
        );
    }

    #[test]
    fn subresource_and_pvc_rules() {
        let cache = Cache::default();
        let groups = groups();
        let empty = json!({});
        let r = request(
            &groups,
            Operation::Create,
            "pods",
            "binding",
            "p",
            Some(&empty),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache)
                .unwrap_err()
                .message("", "pods", "p"),
            r#"pods "p" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed"#
        );
        let empty = json!({});
        let r = request(
            &groups,
            Operation::Update,
            "persistentvolumeclaims",
            "",
            "c",
            Some(&empty),
            None,
        );
        assert_eq!(
            node_restriction(&r, &cache).unwrap_err(),
            Denial::forbidden("may only update PVC status")
        );
    }

    #[test]
    fn hostile_requests_never_panic() {
        let mut cache = Cache::default();
        cache
            .pods
            .insert(("ns".into(), "p".into()), json!({"spec": 3}));
        cache.nodes.insert("n1".into(), json!([]));
        let groups = groups();
        let garbage = [
            json!(null),
            json!(7),
            json!({"metadata": [], "spec": "x", "status": 1}),
            json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": 1}, "ownerReferences": [1]},
                   "spec": {"nodeName": "n1", "volumes": [1, {"projected": 2}], "audiences": {}, "boundObjectRef": 3}}),
        ];
        let targets = [
            ("", "pods", ""),
            ("", "pods", "status"),
            ("", "pods", "eviction"),
            ("", "nodes", ""),
            ("", "nodes", "status"),
            ("", "persistentvolumeclaims", "status"),
            ("", "serviceaccounts", "token"),
            ("coordination.k8s.io", "leases", ""),
            ("storage.k8s.io", "csinodes", ""),
            ("resource.k8s.io", "resourceslices", ""),
            ("certificates.k8s.io", "certificatesigningrequests", ""),
        ];
        for (group, resource, subresource) in targets {
            for op in [Operation::Create, Operation::Update, Operation::Delete] {
                for object in &garbage {
                    for old in [None, Some(object)] {
                        let mut r =
                            request(&groups, op, resource, subresource, "p", Some(object), old);
                        r.group = group;
                        let _ = node_restriction(&r, &cache);
                        r.object = None;
                        let _ = node_restriction(&r, &cache);
                    }
                }
            }
        }
    }

    #[test]
    fn applies_lists_the_resources() {
        assert!(applies(Operation::Create, "", "pods", "eviction"));
        assert!(applies(
            Operation::Delete,
            "coordination.k8s.io",
            "leases",
            ""
        ));
        assert!(applies(
            Operation::Create,
            "certificates.k8s.io",
            "certificatesigningrequests",
            ""
        ));
        assert!(!applies(Operation::Connect, "", "pods", "exec"));
        assert!(!applies(Operation::Create, "", "configmaps", ""));
    }
}
