//! The Node authorizer: what a kubelet (`system:node:<name>` in `system:nodes`) may do. It
//! may read the secrets, ConfigMaps, PVCs, PVs and ResourceClaims its pods use, request
//! tokens for its pods' service accounts, read its pods, its own Node, its
//! VolumeAttachments and ResourceSlices, and write its Lease and CSINode; everything else is
//! judged by the static rules of the `system:node` role (services, endpoints, events, ...).
//! Writes it allows broadly (pods, nodes, statuses) are narrowed by NodeRestriction.
//!
//! [`NodeGraph`] is fed the watch events of the objects in [`WATCHED_RESOURCES`] and
//! answers [`NodeGraph::authorize`]. It answers [`Decision::NoOpinion`] for everyone who is
//! not a node, so it goes first in the authorizer chain, before RBAC.

mod graph;

use kyb_rbac::PolicyRule;
use serde_json::Value;

use crate::identity::node_identity;
use graph::{Index, RefKind};

/// The (group, resource) pairs whose objects the graph needs: feed their watch events to
/// [`NodeGraph::apply`] and [`NodeGraph::delete`].
pub const WATCHED_RESOURCES: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "persistentvolumes"),
    ("storage.k8s.io", "volumeattachments"),
    ("resource.k8s.io", "resourceslices"),
];

/// The parts of a pod the graph reads: per top-level field, all of it (`None`) or only the
/// keys listed. A pod cut down to these gives the graph exactly what the whole pod gives,
/// so a caller holding a pod's JSON may parse just these parts (the rest, managedFields
/// and most of the status, is most of a pod).
pub const POD_FIELDS: &[(&str, Option<&[&str]>)] = &[
    ("metadata", Some(&["annotations", "name", "namespace"])),
    ("spec", None),
    ("status", Some(&["resourceClaimStatuses"])),
];

/// The Node authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Not allowed here; the reason (possibly empty) is what Kubernetes appends to the 403
    /// message after `: ` (see `kyb_rbac::Attributes::forbidden_message`) when no other
    /// authorizer allows the request.
    NoOpinion(String),
}

impl Decision {
    fn no(reason: impl Into<String>) -> Self {
        Decision::NoOpinion(reason.into())
    }

    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// A request as the authorizer sees it. Empty strings stand for absent values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestAttributes<'a> {
    /// The API verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, ...), or for non-resource requests the HTTP method verb.
    pub verb: &'a str,
    pub namespace: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// The object's name (for list and watch, the one a `metadata.name` field selector pins).
    pub name: &'a str,
    /// The raw `fieldSelector` of a list or watch ("" when none).
    pub field_selector: &'a str,
    /// The path of a non-resource request.
    pub path: &'a str,
    pub resource_request: bool,
}

/// The Node authorizer's state: the reachability index and the static node rules.
#[derive(Debug)]
pub struct NodeGraph {
    index: Index,
    rules: Vec<PolicyRule>,
}

impl Default for NodeGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeGraph {
    /// An empty graph with the static rules of the bootstrap `system:node` ClusterRole.
    pub fn new() -> Self {
        let rules = kyb_rbac::bootstrap::cluster_roles()
            .iter()
            .find(|role| json_name(role) == "system:node")
            .map(PolicyRule::list_from_object)
            .unwrap_or_default();
        Self::with_rules(rules)
    }

    /// An empty graph judging other resources by `rules`.
    pub fn with_rules(rules: Vec<PolicyRule>) -> Self {
        Self {
            index: Index::default(),
            rules,
        }
    }

    /// Records an added or updated object of `resource` (`pods`, `persistentvolumes`,
    /// `volumeattachments`, `resourceslices`; other resources, PVCs included, are ignored:
    /// PVC edges come from pods and PVs). Costs the size of the object.
    pub fn apply(&mut self, resource: &str, object: &Value) {
        match resource {
            "pods" => self.index.apply_pod(object),
            "persistentvolumes" => self.index.apply_pv(object),
            "volumeattachments" => self.index.apply_pinned(false, object),
            "resourceslices" => self.index.apply_pinned(true, object),
            _ => {}
        }
    }

    /// Records a deleted object of `resource` (only its `metadata` is read).
    pub fn delete(&mut self, resource: &str, object: &Value) {
        self.delete_named(
            resource,
            kyb_apimachinery::json::str_at(object, &["metadata", "namespace"]),
            json_name(object),
        );
    }

    /// Records a deleted object of `resource` by its namespace ("" when cluster-scoped)
    /// and name.
    pub fn delete_named(&mut self, resource: &str, namespace: &str, name: &str) {
        match resource {
            "pods" => self.index.delete_pod(namespace, name),
            "persistentvolumes" => self.index.delete_pv(name),
            "volumeattachments" => self.index.delete_pinned(false, name),
            "resourceslices" => self.index.delete_pinned(true, name),
            _ => {}
        }
    }

    /// Whether the graph holds a pod (it holds only pods bound to a node). A pod it does
    /// not hold and that names no node changes nothing: callers may skip reading it.
    pub fn holds_pod(&self, namespace: &str, name: &str) -> bool {
        self.index.holds_pod(namespace, name)
    }

    /// How many objects the graph holds.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Authorizes a request by `user` in `groups`. Users that are not nodes get
    /// `NoOpinion("")`.
    pub fn authorize(
        &self,
        user: &str,
        groups: &[String],
        attributes: &RequestAttributes<'_>,
    ) -> Decision {
        let Some(node) = node_identity(user, groups) else {
            return Decision::no("");
        };
        if node.is_empty() {
            return Decision::NoOpinion(format!(
                "unknown node for user {}",
                kyb_apimachinery::gofmt::quote(user)
            ));
        }
        let a = attributes;
        if a.resource_request {
            match (a.api_group, a.resource) {
                ("", "secrets") => return self.read_namespaced(node, RefKind::Secret, a),
                ("", "configmaps") => return self.read_namespaced(node, RefKind::ConfigMap, a),
                ("", "persistentvolumeclaims") => {
                    if a.subresource == "status" {
                        return self.status_update(node, a);
                    }
                    return self.get(node, Target::Ref(RefKind::Pvc), a);
                }
                ("", "persistentvolumes") => return self.get(node, Target::Pv, a),
                ("resource.k8s.io", "resourceclaims") => {
                    return self.get(node, Target::Ref(RefKind::ResourceClaim), a);
                }
                ("storage.k8s.io", "volumeattachments") => {
                    return self.get(node, Target::VolumeAttachment, a);
                }
                ("", "serviceaccounts") => return self.create_token(node, a),
                ("coordination.k8s.io", "leases") => return lease(node, a),
                ("storage.k8s.io", "csinodes") => return csi_node(node, a),
                ("resource.k8s.io", "resourceslices") => return self.resource_slice(node, a),
                ("", "nodes") => return node_object(node, a),
                ("", "pods") => return self.pod(node, a),
                _ => {}
            }
        }
        let rbac_attributes = kyb_rbac::Attributes {
            user,
            groups,
            verb: a.verb,
            namespace: a.namespace,
            api_group: a.api_group,
            resource: a.resource,
            subresource: a.subresource,
            name: a.name,
            path: a.path,
            resource_request: a.resource_request,
        };
        if self.rules.iter().any(|rule| rule.allows(&rbac_attributes)) {
            Decision::Allow
        } else {
            Decision::no("")
        }
    }

    fn has_path(&self, node: &str, target: Target, a: &RequestAttributes<'_>) -> bool {
        match target {
            Target::Ref(kind) => self.index.reaches(kind, a.namespace, a.name, node),
            Target::Pod => self.index.pod_on(a.namespace, a.name, node),
            Target::Pv => self.index.pv_reachable(a.name, node),
            Target::VolumeAttachment => self.index.pinned_to(false, a.name, node),
            Target::ResourceSlice => self.index.pinned_to(true, a.name, node),
        }
    }

    fn authorize_path(&self, node: &str, target: Target, a: &RequestAttributes<'_>) -> Decision {
        if a.name.is_empty() {
            return Decision::no("No Object name found");
        }
        if self.has_path(node, target, a) {
            Decision::Allow
        } else {
            no_relationship(node)
        }
    }

    /// `get` of a single object related to the node.
    fn get(&self, node: &str, target: Target, a: &RequestAttributes<'_>) -> Decision {
        if a.verb != "get" {
            return Decision::no("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return Decision::no("cannot get subresource");
        }
        self.authorize_path(node, target, a)
    }

    /// `get`, `list` and `watch` of a single namespaced object related to the node.
    fn read_namespaced(&self, node: &str, kind: RefKind, a: &RequestAttributes<'_>) -> Decision {
        if !matches!(a.verb, "get" | "list" | "watch") {
            return Decision::no("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return Decision::no("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return Decision::no("can only read namespaced object of this type");
        }
        self.authorize_path(node, Target::Ref(kind), a)
    }

    /// `update`/`patch` of the status of a PVC related to the node.
    fn status_update(&self, node: &str, a: &RequestAttributes<'_>) -> Decision {
        if !matches!(a.verb, "update" | "patch") {
            return Decision::no("can only get/update/patch this type");
        }
        self.authorize_path(node, Target::Ref(RefKind::Pvc), a)
    }

    /// `create` of `serviceaccounts/token` for the service account of a pod on the node.
    fn create_token(&self, node: &str, a: &RequestAttributes<'_>) -> Decision {
        if a.verb != "create" || a.name.is_empty() {
            return Decision::no("can only create tokens for individual service accounts");
        }
        if a.subresource != "token" {
            return Decision::no("can only create token subresource of serviceaccount");
        }
        self.authorize_path(node, Target::Ref(RefKind::ServiceAccount), a)
    }

    fn resource_slice(&self, node: &str, a: &RequestAttributes<'_>) -> Decision {
        if !a.subresource.is_empty() {
            return Decision::no("cannot authorize ResourceSlice subresources");
        }
        match a.verb {
            // NodeRestriction checks the new object's spec.nodeName.
            "create" => Decision::Allow,
            "get" | "update" | "patch" | "delete" => {
                self.authorize_path(node, Target::ResourceSlice, a)
            }
            "watch" | "list" | "deletecollection" => {
                if selects_node(a.field_selector, node) {
                    Decision::Allow
                } else {
                    Decision::no(
                        "can only list/watch/deletecollection resourceslices with nodeName field selector",
                    )
                }
            }
            _ => Decision::no(
                "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
            ),
        }
    }

    fn pod(&self, node: &str, a: &RequestAttributes<'_>) -> Decision {
        match (a.subresource, a.verb) {
            ("", "get") => self.get(node, Target::Pod, a),
            ("", "list" | "watch") => {
                if selects_node(a.field_selector, node) {
                    Decision::Allow
                } else if !a.name.is_empty() {
                    self.authorize_path(node, Target::Pod, a)
                } else {
                    Decision::no("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // Mirror pods; NodeRestriction limits them to the node.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                Decision::Allow
            }
            _ => Decision::no(""),
        }
    }
}

/// What a request names, to find a path from the node to.
#[derive(Clone, Copy, Debug)]
enum Target {
    Ref(RefKind),
    Pod,
    Pv,
    VolumeAttachment,
    ResourceSlice,
}

fn no_relationship(node: &str) -> Decision {
    Decision::NoOpinion(format!(
        "no relationship found between node '{node}' and this object"
    ))
}

/// Whether a field selector has `spec.nodeName=<node>` among its requirements.
fn selects_node(field_selector: &str, node: &str) -> bool {
    kyb_api::fields::Selector::parse(field_selector).is_ok_and(|selector| {
        selector
            .requirements
            .iter()
            .any(|r| r.equals && r.field == "spec.nodeName" && r.value == node)
    })
}

/// Leases: get/create/update/patch/delete, in `kube-node-lease`, the node's own (any name on
/// create: NodeRestriction checks it).
fn lease(node: &str, a: &RequestAttributes<'_>) -> Decision {
    if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
        return Decision::no("can only get, create, update, patch, or delete a node lease");
    }
    if a.namespace != "kube-node-lease" {
        return Decision::no(r#"can only access leases in the "kube-node-lease" system namespace"#);
    }
    if a.verb != "create" && a.name != node {
        return Decision::no(
            "can only access node lease with the same name as the requesting node",
        );
    }
    Decision::Allow
}

/// CSINodes: get/create/update/patch/delete of the node's own (any name on create).
fn csi_node(node: &str, a: &RequestAttributes<'_>) -> Decision {
    if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
        return Decision::no("can only get, create, update, patch, or delete a CSINode");
    }
    if !a.subresource.is_empty() {
        return Decision::no("cannot authorize CSINode subresources");
    }
    if a.verb != "create" && a.name != node {
        return Decision::no("can only access CSINode with the same name as the requesting node");
    }
    Decision::Allow
}

/// Nodes: create/update/patch (NodeRestriction narrows them), reads of its own Node only,
/// and status updates.
fn node_object(node: &str, a: &RequestAttributes<'_>) -> Decision {
    match (a.subresource, a.verb) {
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Decision::Allow,
        ("", "get" | "list" | "watch") => {
            if a.name == node {
                Decision::Allow
            } else if a.name.is_empty() {
                Decision::NoOpinion(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                Decision::NoOpinion(format!(
                    "node '{node}' cannot read '{}', only its own Node object",
                    a.name
                ))
            }
        }
        _ => Decision::no(""),
    }
}

fn json_name(object: &Value) -> &str {
    kyb_apimachinery::json::str_at(object, &["metadata", "name"])
}

#[cfg(test)]
mod tests;
