//! The built-in resources: names, scope, verbs, subresources and where they are stored.
//!
//! Adding a built-in resource is one entry in [`BUILTIN`]; the API server derives routing,
//! discovery, OpenAPI and storage from it.

/// A subresource of a resource (`pods/status`, `deployments/scale`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    Status,
    Scale,
    Binding,
    Eviction,
    Token,
    Finalize,
}

impl Subresource {
    pub fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Scale => "scale",
            Self::Binding => "binding",
            Self::Eviction => "eviction",
            Self::Token => "token",
            Self::Finalize => "finalize",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "status" => Self::Status,
            "scale" => Self::Scale,
            "binding" => Self::Binding,
            "eviction" => Self::Eviction,
            "token" => Self::Token,
            "finalize" => Self::Finalize,
            _ => return None,
        })
    }

    /// The verbs a client may use on it.
    pub fn verbs(self) -> &'static [&'static str] {
        match self {
            Self::Status | Self::Scale => &["get", "patch", "update"],
            Self::Binding | Self::Eviction | Self::Token => &["create"],
            Self::Finalize => &["update"],
        }
    }

    /// The group, version and kind of the subresource's body, given the parent's.
    pub fn gvk(self, parent: &ResourceDef) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Status | Self::Finalize => (parent.group, parent.version, parent.kind),
            Self::Scale => ("autoscaling", "v1", "Scale"),
            Self::Binding => ("", "v1", "Binding"),
            Self::Eviction => ("policy", "v1", "Eviction"),
            Self::Token => ("authentication.k8s.io", "v1", "TokenRequest"),
        }
    }
}

/// One resource in one group-version.
#[derive(Debug, PartialEq, Eq)]
pub struct ResourceDef {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub subresources: &'static [Subresource],
    /// Storage key prefix; objects live at `<prefix>/<namespace>/<name>` or `<prefix>/<name>`.
    /// Versions of one resource share it.
    pub storage_prefix: &'static str,
    /// The version objects are stored in (the others are converted on the way).
    pub storage_version: &'static str,
    /// Whether a DELETE answers with the deleted object (rather than a success Status).
    pub returns_deleted_object: bool,
}

impl ResourceDef {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn has_subresource(&self, sub: Subresource) -> bool {
        self.subresources.contains(&sub)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether the kind has no built-in type (served as custom resources are: any JSON
    /// object, no protobuf, no strategic merge patch) — the kinds of the
    /// community scheduler-plugins (`scheduling.x-k8s.io`) until CRDs land.
    pub fn is_untyped(&self) -> bool {
        self.group == "scheduling.x-k8s.io"
    }

    /// Whether objects of this resource are answered on the spot and never stored
    /// (TokenReview, SubjectAccessReview, ...).
    pub fn is_virtual(&self) -> bool {
        self.storage_prefix.is_empty()
    }

    /// The storage key of an object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/{name}", self.storage_prefix),
            _ => format!("{}/{name}", self.storage_prefix),
        }
    }

    /// The storage prefix of a list (one namespace, or everything).
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/", self.storage_prefix),
            _ => format!("{}/", self.storage_prefix),
        }
    }

    /// The OpenAPI definition name of the kind's type (`io.k8s.api.apps.v1.Deployment`),
    /// the key to its schema and its fields' merge semantics.
    pub fn definition(&self) -> String {
        definition_name(self.group, self.version, self.kind)
    }

    /// The `<resource>.<group>` name used in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Every verb of a namespaced or cluster-scoped resource with collection deletes.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Resources that are only ever created: reviews answered on the spot, never stored.
const CREATE_ONLY: &[&str] = &["create"];
/// Resources without `deletecollection`.
const NO_COLLECTION_DELETE: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

use Subresource::{Binding, Eviction, Finalize, Scale, Status, Token};

macro_rules! resources {
    ($( $group:literal $version:literal $kind:literal $plural:literal $singular:literal
        [$($short:literal),*] [$($cat:literal),*] $namespaced:literal $verbs:ident
        [$($sub:ident),*] $prefix:literal $storage_version:literal $returns:literal; )*) => {
        /// The built-in resources, preferred versions first within each group.
        pub static BUILTIN: &[ResourceDef] = &[$(
            ResourceDef {
                group: $group,
                version: $version,
                kind: $kind,
                plural: $plural,
                singular: $singular,
                short_names: &[$($short),*],
                categories: &[$($cat),*],
                namespaced: $namespaced,
                verbs: $verbs,
                subresources: &[$($sub),*],
                storage_prefix: $prefix,
                storage_version: $storage_version,
                returns_deleted_object: $returns,
            },
        )*];
    };
}

// group version kind plural singular [short names] [categories] namespaced verbs [subresources]
//   storage-prefix storage-version returns-deleted-object
resources! {
    "" "v1" "Namespace" "namespaces" "namespace" ["ns"] [] false NO_COLLECTION_DELETE [Status, Finalize] "/registry/namespaces" "v1" true;
    "" "v1" "Pod" "pods" "pod" ["po"] ["all"] true ALL_VERBS [Status, Binding, Eviction] "/registry/pods" "v1" true;
    "" "v1" "Service" "services" "service" ["svc"] ["all"] true ALL_VERBS [Status] "/registry/services/specs" "v1" true;
    "" "v1" "Endpoints" "endpoints" "endpoints" ["ep"] [] true ALL_VERBS [] "/registry/services/endpoints" "v1" false;
    "" "v1" "ConfigMap" "configmaps" "configmap" ["cm"] [] true ALL_VERBS [] "/registry/configmaps" "v1" false;
    "" "v1" "Secret" "secrets" "secret" [] [] true ALL_VERBS [] "/registry/secrets" "v1" false;
    "" "v1" "ServiceAccount" "serviceaccounts" "serviceaccount" ["sa"] [] true ALL_VERBS [Token] "/registry/serviceaccounts" "v1" true;
    "" "v1" "Node" "nodes" "node" ["no"] [] false ALL_VERBS [Status] "/registry/minions" "v1" false;
    "" "v1" "Event" "events" "event" ["ev"] [] true ALL_VERBS [] "/registry/events" "v1" false;
    "" "v1" "LimitRange" "limitranges" "limitrange" ["limits"] [] true ALL_VERBS [] "/registry/limitranges" "v1" false;
    "" "v1" "ResourceQuota" "resourcequotas" "resourcequota" ["quota"] [] true ALL_VERBS [Status] "/registry/resourcequotas" "v1" true;
    "" "v1" "PersistentVolume" "persistentvolumes" "persistentvolume" ["pv"] [] false ALL_VERBS [Status] "/registry/persistentvolumes" "v1" true;
    "" "v1" "PersistentVolumeClaim" "persistentvolumeclaims" "persistentvolumeclaim" ["pvc"] [] true ALL_VERBS [Status] "/registry/persistentvolumeclaims" "v1" true;
    "" "v1" "PodTemplate" "podtemplates" "podtemplate" [] [] true ALL_VERBS [] "/registry/podtemplates" "v1" false;
    "" "v1" "ReplicationController" "replicationcontrollers" "replicationcontroller" ["rc"] ["all"] true ALL_VERBS [Status, Scale] "/registry/controllers" "v1" true;
    "apps" "v1" "Deployment" "deployments" "deployment" ["deploy"] ["all"] true ALL_VERBS [Status, Scale] "/registry/deployments" "v1" true;
    "apps" "v1" "ReplicaSet" "replicasets" "replicaset" ["rs"] ["all"] true ALL_VERBS [Status, Scale] "/registry/replicasets" "v1" true;
    "apps" "v1" "StatefulSet" "statefulsets" "statefulset" ["sts"] ["all"] true ALL_VERBS [Status, Scale] "/registry/statefulsets" "v1" true;
    "apps" "v1" "DaemonSet" "daemonsets" "daemonset" ["ds"] ["all"] true ALL_VERBS [Status] "/registry/daemonsets" "v1" true;
    "apps" "v1" "ControllerRevision" "controllerrevisions" "controllerrevision" [] [] true ALL_VERBS [] "/registry/controllerrevisions" "v1" false;
    "batch" "v1" "Job" "jobs" "job" [] ["all"] true ALL_VERBS [Status] "/registry/jobs" "v1" true;
    "batch" "v1" "CronJob" "cronjobs" "cronjob" ["cj"] ["all"] true ALL_VERBS [Status] "/registry/cronjobs" "v1" true;
    "coordination.k8s.io" "v1" "Lease" "leases" "lease" [] [] true ALL_VERBS [] "/registry/leases" "v1" false;
    "discovery.k8s.io" "v1" "EndpointSlice" "endpointslices" "endpointslice" [] [] true ALL_VERBS [] "/registry/endpointslices" "v1" false;
    "events.k8s.io" "v1" "Event" "events" "event" ["ev"] [] true ALL_VERBS [] "/registry/events" "v1" false;
    "policy" "v1" "PodDisruptionBudget" "poddisruptionbudgets" "poddisruptionbudget" ["pdb"] [] true ALL_VERBS [Status] "/registry/poddisruptionbudgets" "v1" true;
    "autoscaling" "v2" "HorizontalPodAutoscaler" "horizontalpodautoscalers" "horizontalpodautoscaler" ["hpa"] ["all"] true ALL_VERBS [Status] "/registry/horizontalpodautoscalers" "v2" true;
    "autoscaling" "v1" "HorizontalPodAutoscaler" "horizontalpodautoscalers" "horizontalpodautoscaler" ["hpa"] ["all"] true ALL_VERBS [Status] "/registry/horizontalpodautoscalers" "v2" true;
    "networking.k8s.io" "v1" "Ingress" "ingresses" "ingress" ["ing"] [] true ALL_VERBS [Status] "/registry/ingress" "v1" true;
    "networking.k8s.io" "v1" "IngressClass" "ingressclasses" "ingressclass" [] [] false ALL_VERBS [] "/registry/ingressclasses" "v1" false;
    "networking.k8s.io" "v1" "NetworkPolicy" "networkpolicies" "networkpolicy" ["netpol"] [] true ALL_VERBS [] "/registry/networkpolicies" "v1" false;
    "storage.k8s.io" "v1" "StorageClass" "storageclasses" "storageclass" ["sc"] [] false ALL_VERBS [] "/registry/storageclasses" "v1" false;
    "storage.k8s.io" "v1" "CSIDriver" "csidrivers" "csidriver" [] [] false ALL_VERBS [] "/registry/csidrivers" "v1" false;
    "storage.k8s.io" "v1" "CSINode" "csinodes" "csinode" [] [] false ALL_VERBS [] "/registry/csinodes" "v1" false;
    "storage.k8s.io" "v1" "VolumeAttachment" "volumeattachments" "volumeattachment" [] [] false ALL_VERBS [Status] "/registry/volumeattachments" "v1" true;
    "scheduling.k8s.io" "v1" "PriorityClass" "priorityclasses" "priorityclass" ["pc"] [] false ALL_VERBS [] "/registry/priorityclasses" "v1" false;
    "node.k8s.io" "v1" "RuntimeClass" "runtimeclasses" "runtimeclass" [] [] false ALL_VERBS [] "/registry/runtimeclasses" "v1" false;
    "rbac.authorization.k8s.io" "v1" "Role" "roles" "role" [] [] true ALL_VERBS [] "/registry/roles" "v1" false;
    "rbac.authorization.k8s.io" "v1" "RoleBinding" "rolebindings" "rolebinding" [] [] true ALL_VERBS [] "/registry/rolebindings" "v1" false;
    "rbac.authorization.k8s.io" "v1" "ClusterRole" "clusterroles" "clusterrole" [] [] false ALL_VERBS [] "/registry/clusterroles" "v1" false;
    "rbac.authorization.k8s.io" "v1" "ClusterRoleBinding" "clusterrolebindings" "clusterrolebinding" [] [] false ALL_VERBS [] "/registry/clusterrolebindings" "v1" false;
    "admissionregistration.k8s.io" "v1" "MutatingWebhookConfiguration" "mutatingwebhookconfigurations" "mutatingwebhookconfiguration" [] ["api-extensions"] false ALL_VERBS [] "/registry/mutatingwebhookconfigurations" "v1" false;
    "admissionregistration.k8s.io" "v1" "ValidatingWebhookConfiguration" "validatingwebhookconfigurations" "validatingwebhookconfiguration" [] ["api-extensions"] false ALL_VERBS [] "/registry/validatingwebhookconfigurations" "v1" false;
    "admissionregistration.k8s.io" "v1" "ValidatingAdmissionPolicy" "validatingadmissionpolicies" "validatingadmissionpolicy" [] ["api-extensions"] false ALL_VERBS [Status] "/registry/validatingadmissionpolicies" "v1" true;
    "admissionregistration.k8s.io" "v1" "ValidatingAdmissionPolicyBinding" "validatingadmissionpolicybindings" "validatingadmissionpolicybinding" [] ["api-extensions"] false ALL_VERBS [] "/registry/validatingadmissionpolicybindings" "v1" false;
    "apiextensions.k8s.io" "v1" "CustomResourceDefinition" "customresourcedefinitions" "customresourcedefinition" ["crd", "crds"] ["api-extensions"] false ALL_VERBS [Status] "/registry/apiextensions.k8s.io/customresourcedefinitions" "v1" true;
    "apiregistration.k8s.io" "v1" "APIService" "apiservices" "apiservice" [] ["api-extensions"] false ALL_VERBS [Status] "/registry/apiregistration.k8s.io/apiservices" "v1" true;
    "scheduling.x-k8s.io" "v1alpha1" "PodGroup" "podgroups" "podgroup" ["pg", "pgs"] [] true ALL_VERBS [Status] "/registry/scheduling.x-k8s.io/podgroups" "v1alpha1" true;
    "scheduling.x-k8s.io" "v1alpha1" "ElasticQuota" "elasticquotas" "elasticquota" ["eq", "eqs"] [] true ALL_VERBS [Status] "/registry/scheduling.x-k8s.io/elasticquotas" "v1alpha1" true;
    "authentication.k8s.io" "v1" "TokenReview" "tokenreviews" "tokenreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authentication.k8s.io" "v1" "SelfSubjectReview" "selfsubjectreviews" "selfsubjectreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "SubjectAccessReview" "subjectaccessreviews" "subjectaccessreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "SelfSubjectAccessReview" "selfsubjectaccessreviews" "selfsubjectaccessreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "SelfSubjectRulesReview" "selfsubjectrulesreviews" "selfsubjectrulesreview" [] [] false CREATE_ONLY [] "" "v1" false;
    "authorization.k8s.io" "v1" "LocalSubjectAccessReview" "localsubjectaccessreviews" "localsubjectaccessreview" [] [] true CREATE_ONLY [] "" "v1" false;
}

/// The OpenAPI definition name of a built-in kind's type, as k8s-openapi names them.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let package = match group {
        "" => "io.k8s.api.core",
        "apiextensions.k8s.io" => "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
        "apiregistration.k8s.io" => "io.k8s.kube-aggregator.pkg.apis.apiregistration",
        "meta.k8s.io" => "io.k8s.apimachinery.pkg.apis.meta",
        other => {
            // `rbac.authorization.k8s.io` → `io.k8s.api.rbac`, `apps` → `io.k8s.api.apps`.
            let short = other.strip_suffix(".k8s.io").unwrap_or(other);
            let short = short.split('.').next().unwrap_or(short);
            return format!("io.k8s.api.{short}.{version}.{kind}");
        }
    };
    format!("{package}.{version}.{kind}")
}

/// The resource served at `group/version/plural`.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
    BUILTIN
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// A resource in its storage version, whatever versions it is served in: what server-side
/// lookups (admission, authentication) read.
pub fn find_stored(group: &str, plural: &str) -> Option<&'static ResourceDef> {
    BUILTIN
        .iter()
        .find(|r| r.group == group && r.plural == plural && r.version == r.storage_version)
}

/// The resource of a kind in a group-version.
pub fn find_kind(group: &str, version: &str, kind: &str) -> Option<&'static ResourceDef> {
    BUILTIN
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// The groups, in discovery order, each with its versions (preferred first).
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut groups: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in BUILTIN {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version);
                }
            }
            None => groups.push((r.group, vec![r.version])),
        }
    }
    groups
}

/// The resources of one group-version.
pub fn resources_of(group: &str, version: &str) -> impl Iterator<Item = &'static ResourceDef> {
    let (group, version) = (group.to_string(), version.to_string());
    BUILTIN
        .iter()
        .filter(move |r| r.group == group && r.version == version)
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_unique_per_group_version() {
        for (i, a) in BUILTIN.iter().enumerate() {
            for b in &BUILTIN[i + 1..] {
                assert!(
                    !(a.group == b.group && a.version == b.version && a.plural == b.plural),
                    "{}/{} {} twice",
                    a.group,
                    a.version,
                    a.plural
                );
            }
        }
    }

    #[test]
    fn keys_follow_the_kubernetes_layout() {
        let pods = find("", "v1", "pods").map(|r| r.key(Some("default"), "web"));
        assert_eq!(pods.as_deref(), Some("/registry/pods/default/web"));
        let nodes = find("", "v1", "nodes").map(|r| r.key(None, "n1"));
        assert_eq!(nodes.as_deref(), Some("/registry/minions/n1"));
        assert_eq!(
            find("apps", "v1", "deployments")
                .map(|r| r.api_version())
                .as_deref(),
            Some("apps/v1")
        );
    }

    #[test]
    fn definition_names_follow_k8s_openapi() {
        let name = |g, v, k| definition_name(g, v, k);
        assert_eq!(name("", "v1", "Pod"), "io.k8s.api.core.v1.Pod");
        assert_eq!(
            name("apps", "v1", "Deployment"),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            name("rbac.authorization.k8s.io", "v1", "Role"),
            "io.k8s.api.rbac.v1.Role"
        );
        assert_eq!(
            name("coordination.k8s.io", "v1", "Lease"),
            "io.k8s.api.coordination.v1.Lease"
        );
        assert_eq!(
            name("autoscaling", "v2", "HorizontalPodAutoscaler"),
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"
        );
        assert_eq!(
            name("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
        assert_eq!(
            name("apiregistration.k8s.io", "v1", "APIService"),
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
        );
    }

    #[test]
    fn preferred_versions_come_first() {
        let groups = groups();
        let autoscaling = groups
            .iter()
            .find(|(g, _)| *g == "autoscaling")
            .map(|(_, v)| v.clone());
        assert_eq!(autoscaling, Some(vec!["v2", "v1"]));
        assert_eq!(groups.first().map(|(g, _)| *g), Some(""));
    }
}
