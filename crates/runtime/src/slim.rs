//! Objects as informers read them: everything but `metadata.managedFields`, which no
//! controller or scheduler looks at and which costs as much to
//! parse (and to keep, for every cached Node and Pod) as the rest of the metadata together.
//! [`Slim`] wraps a Kubernetes type, deserializes it skipping that field, and is a
//! resource of the same kind for kube-rs (`Api<Slim<Pod>>`).

use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// A Kubernetes object read without its managed fields.
#[derive(Clone, Debug, Default)]
pub struct Slim<K>(pub K);

impl<K> Slim<K> {
    pub fn into_inner(self) -> K {
        self.0
    }
}

/// The metadata fields, but `managedFields` (skipped as an unknown field).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Meta {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl From<Meta> for ObjectMeta {
    fn from(m: Meta) -> ObjectMeta {
        ObjectMeta {
            annotations: m.annotations,
            creation_timestamp: m.creation_timestamp,
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            generate_name: m.generate_name,
            generation: m.generation,
            labels: m.labels,
            managed_fields: None,
            name: m.name,
            namespace: m.namespace,
            owner_references: m.owner_references,
            resource_version: m.resource_version,
            self_link: m.self_link,
            uid: m.uid,
        }
    }
}

/// An object's parts as they are on the wire (`apiVersion` and `kind` are skipped).
#[derive(Deserialize)]
#[serde(bound(deserialize = "S: Deserialize<'de>, T: Deserialize<'de>"))]
struct Parts<S, T> {
    #[serde(default)]
    metadata: Option<Meta>,
    #[serde(default)]
    spec: Option<S>,
    #[serde(default)]
    status: Option<T>,
}

/// A kind built from metadata, spec and status.
pub trait FromParts: Sized {
    type Spec: for<'de> Deserialize<'de>;
    type Status: for<'de> Deserialize<'de>;
    fn from_parts(
        metadata: ObjectMeta,
        spec: Option<Self::Spec>,
        status: Option<Self::Status>,
    ) -> Self;
}

/// `FromParts` for kinds made of metadata, an optional spec and an optional status.
macro_rules! from_parts {
    ($($kind:ty => $spec:ty, $status:ty;)*) => {$(
        impl FromParts for $kind {
            type Spec = $spec;
            type Status = $status;
            fn from_parts(metadata: ObjectMeta, spec: Option<$spec>, status: Option<$status>) -> $kind {
                Self {
                    metadata,
                    spec,
                    status,
                }
            }
        }
    )*};
}

use k8s_openapi::api::{
    apps::v1 as apps, autoscaling::v2 as autoscaling, batch::v1 as batch, core::v1 as core,
    policy::v1 as policy,
};
from_parts! {
    Pod => PodSpec, PodStatus;
    Node => NodeSpec, NodeStatus;
    core::Namespace => core::NamespaceSpec, core::NamespaceStatus;
    core::Service => core::ServiceSpec, core::ServiceStatus;
    core::ReplicationController => core::ReplicationControllerSpec, core::ReplicationControllerStatus;
    core::PersistentVolume => core::PersistentVolumeSpec, core::PersistentVolumeStatus;
    core::PersistentVolumeClaim => core::PersistentVolumeClaimSpec, core::PersistentVolumeClaimStatus;
    core::ResourceQuota => core::ResourceQuotaSpec, core::ResourceQuotaStatus;
    apps::Deployment => apps::DeploymentSpec, apps::DeploymentStatus;
    apps::ReplicaSet => apps::ReplicaSetSpec, apps::ReplicaSetStatus;
    apps::StatefulSet => apps::StatefulSetSpec, apps::StatefulSetStatus;
    apps::DaemonSet => apps::DaemonSetSpec, apps::DaemonSetStatus;
    batch::Job => batch::JobSpec, batch::JobStatus;
    batch::CronJob => batch::CronJobSpec, batch::CronJobStatus;
    policy::PodDisruptionBudget => policy::PodDisruptionBudgetSpec, policy::PodDisruptionBudgetStatus;
    autoscaling::HorizontalPodAutoscaler => autoscaling::HorizontalPodAutoscalerSpec, autoscaling::HorizontalPodAutoscalerStatus;
}

impl<'de, K: FromParts> Deserialize<'de> for Slim<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let parts = Parts::<K::Spec, K::Status>::deserialize(deserializer)?;
        Ok(Slim(K::from_parts(
            parts.metadata.unwrap_or_default().into(),
            parts.spec,
            parts.status,
        )))
    }
}

impl<K: k8s_openapi::Resource> k8s_openapi::Resource for Slim<K> {
    const API_VERSION: &'static str = K::API_VERSION;
    const GROUP: &'static str = K::GROUP;
    const KIND: &'static str = K::KIND;
    const VERSION: &'static str = K::VERSION;
    const URL_PATH_SEGMENT: &'static str = K::URL_PATH_SEGMENT;
    type Scope = K::Scope;
}

impl<K: k8s_openapi::Metadata<Ty = ObjectMeta>> k8s_openapi::Metadata for Slim<K> {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        self.0.metadata()
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        self.0.metadata_mut()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn everything_but_managed_fields() {
        let object = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "labels": {"app": "x"}, "annotations": {"a": "b"},
                "creationTimestamp": "2026-11-23T10:00:00Z",
                "deletionTimestamp": "2026-11-23T11:00:00Z", "deletionGracePeriodSeconds": 30,
                "finalizers": ["f"], "generateName": "p-", "generation": 2,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                    "uid": "u-2", "controller": true}],
                "managedFields": [{"manager": "kubectl", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}],
            },
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n"},
            "status": {"phase": "Pending"},
        });
        let mut full: Pod = serde_json::from_value(object.clone()).unwrap();
        let slim: Slim<Pod> = serde_json::from_value(object).unwrap();
        assert!(full.metadata.managed_fields.take().is_some());
        assert_eq!(slim.0, full);
        let node: Slim<Node> = serde_json::from_value(
            json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}}),
        )
        .unwrap();
        assert_eq!(node.0.metadata.name.as_deref(), Some("n"));
        assert_eq!(node.0.spec.and_then(|s| s.unschedulable), Some(true));
        assert!(serde_json::from_value::<Slim<Pod>>(json!({"metadata": 3})).is_err());
        assert!(serde_json::from_value::<Slim<Pod>>(json!({})).is_ok());
    }

    #[test]
    fn the_same_resource_for_kube() {
        use kube::Resource;
        assert_eq!(Slim::<Pod>::plural(&()), "pods");
        assert_eq!(Slim::<Node>::kind(&()), "Node");
        assert_eq!(Slim::<Pod>::api_version(&()), "v1");
    }
}
