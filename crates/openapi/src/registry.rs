//! The built-in kinds this crate knows the Rust types (and so the schemas) of.
//!
//! Each entry ties a group/version/kind to its k8s-openapi type (the schemas; what is served,
//! with which verbs, comes from the API server's registry): its definition name
//! (`io.k8s.api.core.v1.Pod`) and a function that adds its schema, and the schemas of
//! everything it references, to a schema generator.

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use std::borrow::Cow;

/// A built-in kind with a known Rust type.
pub(crate) struct BuiltinKind {
    pub(crate) group: &'static str,
    pub(crate) version: &'static str,
    pub(crate) kind: &'static str,
    /// `None` for kinds only used through a subresource (Scale, Eviction, TokenRequest).
    pub(crate) namespaced: Option<bool>,
    pub(crate) schema_name: fn() -> Cow<'static, str>,
    pub(crate) generate: fn(&mut SchemaGenerator),
}

/// Whether a k8s-openapi resource scope is namespaced.
trait ScopeFlag {
    const NAMESPACED: Option<bool>;
}

impl ScopeFlag for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: Option<bool> = Some(true);
}

impl ScopeFlag for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: Option<bool> = Some(false);
}

impl ScopeFlag for k8s_openapi::SubResourceScope {
    const NAMESPACED: Option<bool> = None;
}

fn generate<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

const fn kind<T>() -> BuiltinKind
where
    T: k8s_openapi::Resource + JsonSchema,
    T::Scope: ScopeFlag,
{
    BuiltinKind {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        namespaced: <T::Scope as ScopeFlag>::NAMESPACED,
        schema_name: T::schema_name,
        generate: generate::<T>,
    }
}

/// Every built-in kind: those the API server serves, the kinds of their subresources,
/// and the review kinds of later issues.
pub(crate) static BUILTIN_KINDS: &[BuiltinKind] = &[
    kind::<api::core::v1::Namespace>(),
    kind::<api::core::v1::Pod>(),
    kind::<api::core::v1::Service>(),
    kind::<api::core::v1::Endpoints>(),
    kind::<api::core::v1::ConfigMap>(),
    kind::<api::core::v1::Secret>(),
    kind::<api::core::v1::ServiceAccount>(),
    kind::<api::core::v1::Node>(),
    kind::<api::core::v1::Event>(),
    kind::<api::core::v1::LimitRange>(),
    kind::<api::core::v1::ResourceQuota>(),
    kind::<api::core::v1::PersistentVolume>(),
    kind::<api::core::v1::PersistentVolumeClaim>(),
    kind::<api::core::v1::PodTemplate>(),
    kind::<api::core::v1::ReplicationController>(),
    kind::<api::core::v1::Binding>(),
    kind::<api::core::v1::ComponentStatus>(),
    kind::<api::apps::v1::Deployment>(),
    kind::<api::apps::v1::ReplicaSet>(),
    kind::<api::apps::v1::StatefulSet>(),
    kind::<api::apps::v1::DaemonSet>(),
    kind::<api::apps::v1::ControllerRevision>(),
    kind::<api::batch::v1::Job>(),
    kind::<api::batch::v1::CronJob>(),
    kind::<api::coordination::v1::Lease>(),
    kind::<api::discovery::v1::EndpointSlice>(),
    kind::<api::events::v1::Event>(),
    kind::<api::policy::v1::PodDisruptionBudget>(),
    kind::<api::policy::v1::Eviction>(),
    kind::<api::autoscaling::v1::HorizontalPodAutoscaler>(),
    kind::<api::autoscaling::v1::Scale>(),
    kind::<api::autoscaling::v2::HorizontalPodAutoscaler>(),
    kind::<api::networking::v1::Ingress>(),
    kind::<api::networking::v1::IngressClass>(),
    kind::<api::networking::v1::NetworkPolicy>(),
    kind::<api::networking::v1::IPAddress>(),
    kind::<api::networking::v1::ServiceCIDR>(),
    kind::<api::storage::v1::StorageClass>(),
    kind::<api::storage::v1::CSIDriver>(),
    kind::<api::storage::v1::CSINode>(),
    kind::<api::storage::v1::CSIStorageCapacity>(),
    kind::<api::storage::v1::VolumeAttachment>(),
    kind::<api::scheduling::v1::PriorityClass>(),
    kind::<api::node::v1::RuntimeClass>(),
    kind::<api::rbac::v1::Role>(),
    kind::<api::rbac::v1::RoleBinding>(),
    kind::<api::rbac::v1::ClusterRole>(),
    kind::<api::rbac::v1::ClusterRoleBinding>(),
    kind::<api::admissionregistration::v1::MutatingWebhookConfiguration>(),
    kind::<api::admissionregistration::v1::ValidatingWebhookConfiguration>(),
    kind::<api::admissionregistration::v1::ValidatingAdmissionPolicy>(),
    kind::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(),
    kind::<apiextensions::CustomResourceDefinition>(),
    kind::<apiregistration::APIService>(),
    kind::<api::authentication::v1::TokenRequest>(),
    kind::<api::authentication::v1::TokenReview>(),
    kind::<api::authentication::v1::SelfSubjectReview>(),
    kind::<api::authorization::v1::SubjectAccessReview>(),
    kind::<api::authorization::v1::SelfSubjectAccessReview>(),
    kind::<api::authorization::v1::SelfSubjectRulesReview>(),
    kind::<api::authorization::v1::LocalSubjectAccessReview>(),
    kind::<api::certificates::v1::CertificateSigningRequest>(),
    kind::<api::flowcontrol::v1::FlowSchema>(),
    kind::<api::flowcontrol::v1::PriorityLevelConfiguration>(),
];

/// Schemas every document may need besides the kinds: request and response bodies of
/// the generic operations and of discovery.
pub(crate) static SUPPORT_TYPES: &[fn(&mut SchemaGenerator)] = &[
    generate::<meta::DeleteOptions>,
    generate::<meta::Status>,
    generate::<meta::WatchEvent<api::core::v1::Pod>>,
    generate::<meta::Patch>,
    generate::<meta::APIResourceList>,
    generate::<meta::APIGroup>,
    generate::<meta::APIGroupList>,
    generate::<meta::APIVersions>,
    generate::<k8s_openapi::apimachinery::pkg::version::Info>,
];

/// Well-known definition names.
pub(crate) mod names {
    pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
    pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
    pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
    pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
    pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
    pub(crate) const API_RESOURCE_LIST: &str =
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
    pub(crate) const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
    pub(crate) const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
    pub(crate) const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
    pub(crate) const VERSION_INFO: &str = "io.k8s.apimachinery.pkg.version.Info";
    pub(crate) const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
    pub(crate) const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
}

/// The built-in kind with this group, version and kind.
pub(crate) fn find(group: &str, version: &str, kind: &str) -> Option<&'static BuiltinKind> {
    BUILTIN_KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_and_names_come_from_the_types() {
        let pod = find("", "v1", "Pod").expect("pod");
        assert_eq!(pod.namespaced, Some(true));
        assert_eq!((pod.schema_name)(), "io.k8s.api.core.v1.Pod");
        let node = find("", "v1", "Node").expect("node");
        assert_eq!(node.namespaced, Some(false));
        let scale = find("autoscaling", "v1", "Scale").expect("scale");
        assert_eq!(scale.namespaced, None);
        assert!(find("apps", "v1", "Pod").is_none());
    }
}
