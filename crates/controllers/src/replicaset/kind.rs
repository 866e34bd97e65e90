//! What the replica controller needs of its owner kinds: ReplicaSets (`apps/v1`, label
//! selector) and ReplicationControllers (`core/v1`, map selector) — one implementation
//! for both, as Kubernetes runs the ReplicationController through the ReplicaSet code.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    PodTemplateSpec, ReplicationController, ReplicationControllerCondition,
    ReplicationControllerStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::core::NamespaceResourceScope;
use kyb_runtime::informer::Informable;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// The `ReplicaFailure` condition (the only one these controllers set).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub reason: String,
    pub message: String,
    pub last_transition_time: Option<Time>,
}

/// The status both kinds share.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicaStatus {
    pub replicas: i32,
    pub fully_labeled_replicas: i32,
    pub ready_replicas: i32,
    pub available_replicas: i32,
    pub observed_generation: Option<i64>,
    pub failure: Option<Failure>,
}

/// An owner of replicated pods.
pub trait ReplicaOwner:
    Informable
    + kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Serialize
    + DeserializeOwned
{
    /// kube-controller-manager's name of the controller.
    const CONTROLLER: &'static str;
    /// The controller's service account (and RBAC role).
    const SERVICE_ACCOUNT: &'static str;
    fn replicas(&self) -> i32;
    fn min_ready_seconds(&self) -> i32;
    fn selects(&self, labels: Option<&BTreeMap<String, String>>) -> bool;
    fn template(&self) -> Option<&PodTemplateSpec>;
    fn replica_status(&self) -> ReplicaStatus;
    fn set_replica_status(&mut self, status: &ReplicaStatus);
}

const FAILURE: &str = "ReplicaFailure";

/// The parts of [`ReplicaOwner`] ReplicaSets and ReplicationControllers share: their spec
/// and status differ only in type names (and ReplicaSets' `terminatingReplicas`).
macro_rules! replica_owner_common {
    ($status:ident, $condition:ident { $($extra:ident),* }) => {
        fn replicas(&self) -> i32 {
            self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
        }

        fn min_ready_seconds(&self) -> i32 {
            self.spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .unwrap_or(0)
        }

        fn template(&self) -> Option<&PodTemplateSpec> {
            self.spec.as_ref().and_then(|s| s.template.as_ref())
        }

        fn replica_status(&self) -> ReplicaStatus {
            let s = self.status.clone().unwrap_or_default();
            ReplicaStatus {
                replicas: s.replicas,
                fully_labeled_replicas: s.fully_labeled_replicas.unwrap_or(0),
                ready_replicas: s.ready_replicas.unwrap_or(0),
                available_replicas: s.available_replicas.unwrap_or(0),
                observed_generation: s.observed_generation,
                failure: s
                    .conditions
                    .iter()
                    .flatten()
                    .find(|c| c.type_ == FAILURE && c.status == "True")
                    .map(|c| Failure {
                        reason: c.reason.clone().unwrap_or_default(),
                        message: c.message.clone().unwrap_or_default(),
                        last_transition_time: c.last_transition_time.clone(),
                    }),
            }
        }

        fn set_replica_status(&mut self, status: &ReplicaStatus) {
            let old = self.status.take().unwrap_or_default();
            let mut conditions: Vec<$condition> = old
                .conditions
                .unwrap_or_default()
                .into_iter()
                .filter(|c| c.type_ != FAILURE)
                .collect();
            if let Some(f) = &status.failure {
                conditions.push($condition {
                    type_: FAILURE.to_string(),
                    status: "True".to_string(),
                    reason: Some(f.reason.clone()),
                    message: Some(f.message.clone()),
                    last_transition_time: f.last_transition_time.clone(),
                });
            }
            self.status = Some($status {
                replicas: status.replicas,
                fully_labeled_replicas: Some(status.fully_labeled_replicas),
                ready_replicas: Some(status.ready_replicas),
                available_replicas: Some(status.available_replicas),
                observed_generation: status.observed_generation,
                conditions: (!conditions.is_empty()).then_some(conditions),
                $($extra: old.$extra,)*
            });
        }
    };
}

impl ReplicaOwner for ReplicaSet {
    const CONTROLLER: &'static str = "replicaset-controller";
    const SERVICE_ACCOUNT: &'static str = "replicaset-controller";

    replica_owner_common!(
        ReplicaSetStatus,
        ReplicaSetCondition {
            terminating_replicas
        }
    );

    fn selects(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        // A ReplicaSet's empty selector selects nothing (validation forbids it anyway).
        self.spec.as_ref().is_some_and(|s| {
            !crate::selector::is_empty(&s.selector) && crate::selector::matches(&s.selector, labels)
        })
    }
}

impl ReplicaOwner for ReplicationController {
    const CONTROLLER: &'static str = "replicationcontroller-controller";
    const SERVICE_ACCOUNT: &'static str = "replication-controller";

    replica_owner_common!(
        ReplicationControllerStatus,
        ReplicationControllerCondition {}
    );

    fn selects(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .is_some_and(|s| crate::selector::map_matches(s, labels))
    }
}
