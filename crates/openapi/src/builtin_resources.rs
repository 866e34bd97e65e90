//! The built-in resources as Kubernetes 1.33 serves them: verbs and the subresources
//! this crate writes operations for. Scope and plural come from the k8s-openapi types.

use crate::registry;
use crate::resource::ResourceSpec;

const ALL: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const NO_DELETE_COLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// (group, version, kind, verbs, subresources)
type Served = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

const SERVED: &[Served] = &[
    (
        "",
        "v1",
        "Namespace",
        NO_DELETE_COLLECTION,
        &["status", "finalize"],
    ),
    ("", "v1", "Pod", ALL, &["status", "binding", "eviction"]),
    ("", "v1", "Service", NO_DELETE_COLLECTION, &["status"]),
    ("", "v1", "Endpoints", ALL, &[]),
    ("", "v1", "ConfigMap", ALL, &[]),
    ("", "v1", "Secret", ALL, &[]),
    ("", "v1", "ServiceAccount", ALL, &["token"]),
    ("", "v1", "Node", ALL, &["status"]),
    ("", "v1", "Event", ALL, &[]),
    ("", "v1", "LimitRange", ALL, &[]),
    ("", "v1", "ResourceQuota", ALL, &["status"]),
    ("", "v1", "PersistentVolume", ALL, &["status"]),
    ("", "v1", "PersistentVolumeClaim", ALL, &["status"]),
    ("", "v1", "PodTemplate", ALL, &[]),
    ("", "v1", "ReplicationController", ALL, &["status", "scale"]),
    ("apps", "v1", "Deployment", ALL, &["status", "scale"]),
    ("apps", "v1", "ReplicaSet", ALL, &["status", "scale"]),
    ("apps", "v1", "StatefulSet", ALL, &["status", "scale"]),
    ("apps", "v1", "DaemonSet", ALL, &["status"]),
    ("apps", "v1", "ControllerRevision", ALL, &[]),
    ("batch", "v1", "Job", ALL, &["status"]),
    ("batch", "v1", "CronJob", ALL, &["status"]),
    ("coordination.k8s.io", "v1", "Lease", ALL, &[]),
    ("discovery.k8s.io", "v1", "EndpointSlice", ALL, &[]),
    ("events.k8s.io", "v1", "Event", ALL, &[]),
    ("policy", "v1", "PodDisruptionBudget", ALL, &["status"]),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        ALL,
        &["status"],
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        ALL,
        &["status"],
    ),
    ("networking.k8s.io", "v1", "Ingress", ALL, &["status"]),
    ("networking.k8s.io", "v1", "IngressClass", ALL, &[]),
    ("networking.k8s.io", "v1", "NetworkPolicy", ALL, &[]),
    ("storage.k8s.io", "v1", "StorageClass", ALL, &[]),
    ("storage.k8s.io", "v1", "CSIDriver", ALL, &[]),
    ("storage.k8s.io", "v1", "CSINode", ALL, &[]),
    ("storage.k8s.io", "v1", "VolumeAttachment", ALL, &["status"]),
    ("scheduling.k8s.io", "v1", "PriorityClass", ALL, &[]),
    ("node.k8s.io", "v1", "RuntimeClass", ALL, &[]),
    ("rbac.authorization.k8s.io", "v1", "Role", ALL, &[]),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", ALL, &[]),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", ALL, &[]),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        ALL,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        ALL,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        ALL,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        ALL,
        &["status"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        ALL,
        &[],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        ALL,
        &["status"],
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        ALL,
        &["status"],
    ),
];

/// The built-in resources of the Kubernetes 1.33 API this project serves, with the
/// verbs and subresources Kubernetes gives them.
pub fn builtin_resource_specs() -> Vec<ResourceSpec> {
    SERVED
        .iter()
        .filter_map(|(group, version, kind, verbs, subresources)| {
            let known = registry::find(group, version, kind)?;
            Some(ResourceSpec {
                group: (*group).to_owned(),
                version: (*version).to_owned(),
                kind: (*kind).to_owned(),
                plural: known.plural.to_owned(),
                namespaced: known.namespaced.unwrap_or(true),
                verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
                subresources: subresources.iter().map(|s| (*s).to_owned()).collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_kind_is_known() {
        assert_eq!(builtin_resource_specs().len(), SERVED.len());
        let specs = builtin_resource_specs();
        let ns = specs
            .iter()
            .find(|s| s.kind == "Namespace")
            .expect("namespaces");
        assert!(!ns.namespaced);
        assert_eq!(ns.plural, "namespaces");
        let role = specs
            .iter()
            .find(|s| s.kind == "ClusterRole")
            .expect("clusterroles");
        assert!(!role.namespaced);
    }
}
