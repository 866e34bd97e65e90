//! The typed view of each built-in kind: a request body is decoded through its k8s-openapi
//! type, which gives objects their canonical JSON shape (unknown fields dropped, types
//! checked) and reports the unknown fields for `fieldValidation`. The built-in strategies
//! (`strategies`) take their kind's decoder from here once; subresource bodies (Scale,
//! Binding, Eviction, TokenRequest) and reviews are decoded by kind.

pub use kyb_api::registry::Normalized;
use serde_json::Value;

/// Decodes an object through one kind's type.
pub type Normalizer = fn(Value) -> Result<Normalized, String>;

fn normalize_as<T>(value: Value) -> Result<Normalized, String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut unknown = Vec::new();
    let typed: T = serde_ignored::deserialize(value, |path| unknown.push(field_path(&path)))
        .map_err(|e| e.to_string())?;
    let object = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    Ok(Normalized { object, unknown })
}

/// A path as Kubernetes prints it: `spec.containers[0].foo`.
fn field_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => {
            let parent = field_path(parent);
            if parent.is_empty() {
                key.to_string()
            } else {
                format!("{parent}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => field_path(parent),
    }
}

macro_rules! kinds {
    ($( $group:literal $version:literal $kind:literal => $ty:ty; )*) => {
        /// The decoder of `group/version, Kind=kind`; `None` for a kind without a type here.
        pub fn normalizer(group: &str, version: &str, kind: &str) -> Option<Normalizer> {
            match (group, version, kind) {
                $( ($group, $version, $kind) => Some(normalize_as::<$ty>), )*
                _ => None,
            }
        }
    };
}

/// Decodes an object of `group/version, Kind=kind` through its type. `None` for a kind
/// without a type here.
pub fn normalize(
    group: &str,
    version: &str,
    kind: &str,
    value: Value,
) -> Option<Result<Normalized, String>> {
    normalizer(group, version, kind).map(|normalize| normalize(value))
}

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;

kinds! {
    "" "v1" "Namespace" => api::core::v1::Namespace;
    "" "v1" "Pod" => api::core::v1::Pod;
    "" "v1" "Service" => api::core::v1::Service;
    "" "v1" "Endpoints" => api::core::v1::Endpoints;
    "" "v1" "ConfigMap" => api::core::v1::ConfigMap;
    "" "v1" "Secret" => api::core::v1::Secret;
    "" "v1" "ServiceAccount" => api::core::v1::ServiceAccount;
    "" "v1" "Node" => api::core::v1::Node;
    "" "v1" "Event" => api::core::v1::Event;
    "" "v1" "LimitRange" => api::core::v1::LimitRange;
    "" "v1" "ResourceQuota" => api::core::v1::ResourceQuota;
    "" "v1" "PersistentVolume" => api::core::v1::PersistentVolume;
    "" "v1" "PersistentVolumeClaim" => api::core::v1::PersistentVolumeClaim;
    "" "v1" "PodTemplate" => api::core::v1::PodTemplate;
    "" "v1" "ReplicationController" => api::core::v1::ReplicationController;
    "" "v1" "Binding" => api::core::v1::Binding;
    "apps" "v1" "Deployment" => api::apps::v1::Deployment;
    "apps" "v1" "ReplicaSet" => api::apps::v1::ReplicaSet;
    "apps" "v1" "StatefulSet" => api::apps::v1::StatefulSet;
    "apps" "v1" "DaemonSet" => api::apps::v1::DaemonSet;
    "apps" "v1" "ControllerRevision" => api::apps::v1::ControllerRevision;
    "batch" "v1" "Job" => api::batch::v1::Job;
    "batch" "v1" "CronJob" => api::batch::v1::CronJob;
    "coordination.k8s.io" "v1" "Lease" => api::coordination::v1::Lease;
    "discovery.k8s.io" "v1" "EndpointSlice" => api::discovery::v1::EndpointSlice;
    "events.k8s.io" "v1" "Event" => api::events::v1::Event;
    "policy" "v1" "PodDisruptionBudget" => api::policy::v1::PodDisruptionBudget;
    "policy" "v1" "Eviction" => api::policy::v1::Eviction;
    "autoscaling" "v1" "HorizontalPodAutoscaler" => api::autoscaling::v1::HorizontalPodAutoscaler;
    "autoscaling" "v1" "Scale" => api::autoscaling::v1::Scale;
    "autoscaling" "v2" "HorizontalPodAutoscaler" => api::autoscaling::v2::HorizontalPodAutoscaler;
    "networking.k8s.io" "v1" "Ingress" => api::networking::v1::Ingress;
    "networking.k8s.io" "v1" "IngressClass" => api::networking::v1::IngressClass;
    "networking.k8s.io" "v1" "NetworkPolicy" => api::networking::v1::NetworkPolicy;
    "storage.k8s.io" "v1" "StorageClass" => api::storage::v1::StorageClass;
    "storage.k8s.io" "v1" "CSIDriver" => api::storage::v1::CSIDriver;
    "storage.k8s.io" "v1" "CSINode" => api::storage::v1::CSINode;
    "storage.k8s.io" "v1" "VolumeAttachment" => api::storage::v1::VolumeAttachment;
    "scheduling.k8s.io" "v1" "PriorityClass" => api::scheduling::v1::PriorityClass;
    "node.k8s.io" "v1" "RuntimeClass" => api::node::v1::RuntimeClass;
    "flowcontrol.apiserver.k8s.io" "v1" "FlowSchema" => api::flowcontrol::v1::FlowSchema;
    "flowcontrol.apiserver.k8s.io" "v1" "PriorityLevelConfiguration" => api::flowcontrol::v1::PriorityLevelConfiguration;
    "rbac.authorization.k8s.io" "v1" "Role" => api::rbac::v1::Role;
    "rbac.authorization.k8s.io" "v1" "RoleBinding" => api::rbac::v1::RoleBinding;
    "rbac.authorization.k8s.io" "v1" "ClusterRole" => api::rbac::v1::ClusterRole;
    "rbac.authorization.k8s.io" "v1" "ClusterRoleBinding" => api::rbac::v1::ClusterRoleBinding;
    "admissionregistration.k8s.io" "v1" "MutatingWebhookConfiguration" => api::admissionregistration::v1::MutatingWebhookConfiguration;
    "admissionregistration.k8s.io" "v1" "ValidatingWebhookConfiguration" => api::admissionregistration::v1::ValidatingWebhookConfiguration;
    "admissionregistration.k8s.io" "v1" "ValidatingAdmissionPolicy" => api::admissionregistration::v1::ValidatingAdmissionPolicy;
    "admissionregistration.k8s.io" "v1" "ValidatingAdmissionPolicyBinding" => api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    "apiextensions.k8s.io" "v1" "CustomResourceDefinition" => apiextensions::CustomResourceDefinition;
    "apiregistration.k8s.io" "v1" "APIService" => apiregistration::APIService;
    "authentication.k8s.io" "v1" "TokenRequest" => api::authentication::v1::TokenRequest;
    "authentication.k8s.io" "v1" "TokenReview" => api::authentication::v1::TokenReview;
    "authentication.k8s.io" "v1" "SelfSubjectReview" => api::authentication::v1::SelfSubjectReview;
    "authorization.k8s.io" "v1" "SubjectAccessReview" => api::authorization::v1::SubjectAccessReview;
    "authorization.k8s.io" "v1" "SelfSubjectAccessReview" => api::authorization::v1::SelfSubjectAccessReview;
    "authorization.k8s.io" "v1" "SelfSubjectRulesReview" => api::authorization::v1::SelfSubjectRulesReview;
    "authorization.k8s.io" "v1" "LocalSubjectAccessReview" => api::authorization::v1::LocalSubjectAccessReview;
    "certificates.k8s.io" "v1" "CertificateSigningRequest" => api::certificates::v1::CertificateSigningRequest;
    "" "v1" "ComponentStatus" => api::core::v1::ComponentStatus;
    "storage.k8s.io" "v1" "CSIStorageCapacity" => api::storage::v1::CSIStorageCapacity;
    "networking.k8s.io" "v1" "ServiceCIDR" => api::networking::v1::ServiceCIDR;
    "networking.k8s.io" "v1" "IPAddress" => api::networking::v1::IPAddress;
}

/// Decodes `DeleteOptions` (any group's), returning the canonical JSON.
pub fn delete_options(value: Value) -> Result<Value, String> {
    normalize_as::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>(value)
        .map(|n| n.object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_reported_and_dropped() {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": true});
        let normalized = normalize("", "v1", "ConfigMap", body)
            .and_then(Result::ok)
            .map(|n| (n.object, n.unknown));
        let Some((object, mut unknown)) = normalized else {
            panic!("a ConfigMap normalizes")
        };
        unknown.sort();
        assert_eq!(
            unknown,
            vec!["extra".to_string(), "metadata.bogus".to_string()]
        );
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn every_resource_has_a_type_and_a_schema() {
        // The scheduler-plugins kinds have no Rust type: served as custom resources are;
        // nor have the metrics API's, made on each request.
        let untyped = ["PodGroup", "ElasticQuota", "NodeMetrics", "PodMetrics"];
        for def in kyb_api::registry::BUILTIN
            .iter()
            .filter(|d| !untyped.contains(&d.kind.as_ref()))
        {
            let empty = json!({"metadata": {"name": "x"}});
            assert!(
                normalize(&def.group, &def.version, &def.kind, empty).is_some(),
                "{} has no type",
                def.kind
            );
            let definition =
                kyb_api::registry::definition_name(&def.group, &def.version, &def.kind);
            assert!(
                kyb_openapi::definition(&definition).is_some(),
                "{definition} has no schema"
            );
        }
        for def in kyb_api::registry::BUILTIN
            .iter()
            .filter(|d| untyped.contains(&d.kind.as_ref()))
        {
            assert!(normalizer(&def.group, &def.version, &def.kind).is_none());
        }
    }

    #[test]
    fn wrong_types_are_errors() {
        let body =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "bogus": 1}]}}}});
        let unknown = normalize("apps", "v1", "Deployment", body)
            .and_then(Result::ok)
            .map(|n| n.unknown);
        assert_eq!(
            unknown,
            Some(vec!["spec.template.spec.containers[0].bogus".to_string()])
        );
        let body = json!({"metadata": {"name": "a"}, "spec": {"replicas": "three"}});
        assert!(matches!(
            normalize("apps", "v1", "Deployment", body),
            Some(Err(_))
        ));
        // A missing apiVersion/kind is filled in, as the API server does.
        let body = json!({"metadata": {"name": "a"}});
        let object = normalize("", "v1", "ConfigMap", body)
            .and_then(Result::ok)
            .map(|n| n.object);
        assert_eq!(
            object.as_ref().and_then(|o| o.get("kind")),
            Some(&json!("ConfigMap"))
        );
    }
}
