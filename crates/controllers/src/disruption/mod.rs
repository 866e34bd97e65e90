//! The disruption controller (kube-controller-manager's `disruption-controller`): keeps
//! each PodDisruptionBudget's status current — `currentHealthy`, `desiredHealthy`,
//! `expectedPods` (the pods' count for an int `minAvailable`, else the sum of the pods'
//! controllers' replicas: ReplicaSets (their Deployment's when they have one),
//! ReplicationControllers and StatefulSets from informers, any other controller through
//! its `/scale` subresource), `disruptionsAllowed`, `observedGeneration`, `disruptedPods`
//! (entries the eviction API wrote, dropped when their pod is gone or deleting, or after
//! two minutes) and the `DisruptionAllowed` condition (`SufficientPods`,
//! `InsufficientPods`, or `SyncFailed` with no disruptions allowed when the expected count
//! cannot be worked out). Events: `NoPods` "No matching pods found", `NoControllers`,
//! `CalculateExpectedPodCountFailed`.
//!
//! The namespace's pods are read one at a time and the selected ones reduced at once
//! ([`pods::Selected`]: name, deleting, ready, and their distinct controllers).

pub mod budget;
pub mod pods;

use crate::context::Context;
use crate::ownership::controller_of;
use anyhow::Context as _;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use kube::Api;
use kube::api::{DynamicObject, GroupVersionKind, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Informer, ObjectKey};
use pods::Owner;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "disruption-controller";

struct Disruption {
    budgets: Arc<Informer<PodDisruptionBudget>>,
    pods: Arc<Informer<Pod, Compacted>>,
    replica_sets: Arc<Informer<ReplicaSet>>,
    deployments: Arc<Informer<Deployment>>,
    controllers: Arc<Informer<ReplicationController>>,
    stateful_sets: Arc<Informer<StatefulSet>>,
    client: kube::Client,
    recorder: Recorder,
    ctx: Arc<Context>,
}

/// Whether `budget` selects `pod` (a missing selector selects nothing).
fn selects(budget: &PodDisruptionBudget, pod: &Pod) -> bool {
    budget
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some_and(|s| crate::selector::matches(s, pod.metadata.labels.as_ref()))
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let budgets = ctx.informers.get::<PodDisruptionBudget>();
    let pods = ctx.informers.compacted::<Pod>();
    let replica_sets = ctx.informers.get::<ReplicaSet>();
    let deployments = ctx.informers.get::<Deployment>();
    let controllers = ctx.informers.get::<ReplicationController>();
    let stateful_sets = ctx.informers.get::<StatefulSet>();
    let client = ctx
        .client_for(NAME)
        .await
        .context("disruption controller client")?;
    let reconciler = Arc::new(Disruption {
        budgets: budgets.clone(),
        pods: pods.clone(),
        replica_sets: replica_sets.clone(),
        deployments: deployments.clone(),
        controllers: controllers.clone(),
        stateful_sets: stateful_sets.clone(),
        client,
        recorder: ctx.recorder("controllermanager"),
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    {
        let queue = queue.clone();
        budgets.on_change(move |change| queue.add(ObjectKey::of(change.object().as_ref())));
    }
    {
        // A pod change matters to the budgets selecting it (before or after).
        let queue = queue.clone();
        let budgets = budgets.clone();
        pods.on_change(move |change| {
            let (old, new) = match change {
                kyb_runtime::informer::Change::Updated { old, new } => (Some(*old), *new),
                other => (None, other.object()),
            };
            let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
            for budget in budgets.list_namespace(namespace) {
                if selects(&budget, new) || old.is_some_and(|o| selects(&budget, o)) {
                    queue.add(ObjectKey::of(budget.as_ref()));
                }
            }
        });
    }
    // A scale change matters to the budgets of its namespace.
    macro_rules! on_scale {
        ($informer:expr) => {{
            let queue = queue.clone();
            let budgets = budgets.clone();
            $informer.on_change(move |change| {
                let namespace = change
                    .object()
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or_default();
                for budget in budgets.list_namespace(namespace) {
                    queue.add(ObjectKey::of(budget.as_ref()));
                }
            });
        }};
    }
    on_scale!(replica_sets);
    on_scale!(deployments);
    on_scale!(controllers);
    on_scale!(stateful_sets);
    budgets.wait_synced().await;
    pods.wait_synced().await;
    replica_sets.wait_synced().await;
    deployments.wait_synced().await;
    controllers.wait_synced().await;
    stateful_sets.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Disruption {
    /// The replicas of the controller `reference` names in `namespace` (and its UID, to
    /// count each controller once).
    async fn scale_of(
        &self,
        namespace: &str,
        reference: &OwnerReference,
    ) -> anyhow::Result<Option<(String, i32)>> {
        let group = reference.api_version.split('/').next().unwrap_or_default();
        let same = |uid: Option<&String>| uid == Some(&reference.uid);
        match (group, reference.kind.as_str()) {
            ("apps", "ReplicaSet") => {
                let Some(rs) = self.replica_sets.get(namespace, &reference.name) else {
                    return Ok(None);
                };
                if !same(rs.metadata.uid.as_ref()) {
                    return Ok(None);
                }
                if let Some(owner) = controller_of(&rs.metadata)
                    && owner.kind == "Deployment"
                    && let Some(d) = self.deployments.get(namespace, &owner.name)
                    && d.metadata.uid.as_ref() == Some(&owner.uid)
                {
                    let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    return Ok(Some((owner.uid.clone(), replicas)));
                }
                let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                Ok(Some((reference.uid.clone(), replicas)))
            }
            ("v1", "ReplicationController") => Ok(self
                .controllers
                .get(namespace, &reference.name)
                .filter(|rc| same(rc.metadata.uid.as_ref()))
                .map(|rc| {
                    let replicas = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    (reference.uid.clone(), replicas)
                })),
            ("apps", "StatefulSet") => Ok(self
                .stateful_sets
                .get(namespace, &reference.name)
                .filter(|s| same(s.metadata.uid.as_ref()))
                .map(|s| {
                    let replicas = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    (reference.uid.clone(), replicas)
                })),
            _ => {
                // Any other controller: its /scale subresource.
                let (group, version) = match reference.api_version.split_once('/') {
                    Some((g, v)) => (g, v),
                    None => ("", reference.api_version.as_str()),
                };
                let gvk = GroupVersionKind::gvk(group, version, &reference.kind);
                let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk)
                    .await
                    .with_context(|| format!("finding {}", reference.kind))?;
                let api: Api<DynamicObject> =
                    Api::namespaced_with(self.client.clone(), namespace, &resource);
                let scale = match api.get_scale(&reference.name).await {
                    Ok(scale) => scale,
                    Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!("reading the scale of {} {}", reference.kind, reference.name)
                        });
                    }
                };
                if scale
                    .metadata
                    .uid
                    .as_ref()
                    .is_some_and(|u| *u != reference.uid)
                {
                    return Ok(None);
                }
                let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
                Ok(Some((reference.uid.clone(), replicas)))
            }
        }
    }

    /// The sum of the pods' controllers' replicas, each controller once (`owners` as
    /// [`pods::Selected`] gathers them).
    async fn expected_scale(&self, namespace: &str, owners: &[Owner]) -> Result<i32, Failure> {
        let mut counted = BTreeSet::new();
        let mut total = 0i32;
        for owner in owners {
            let (name, reference) = match owner {
                Owner::Missing { pod } => {
                    return Err(Failure::NoControllers(format!(
                        "found no controller ref for pod {pod:?}"
                    )));
                }
                Owner::Controller { pod, reference } => (pod, reference),
            };
            match self.scale_of(namespace, reference).await {
                Ok(Some((uid, replicas))) => {
                    if counted.insert(uid) {
                        total = total.saturating_add(replicas);
                    }
                }
                Ok(None) => {
                    return Err(Failure::NoControllers(format!(
                        "found no controllers for pod {name:?}"
                    )));
                }
                Err(error) => return Err(Failure::Other(format!("{error:#}"))),
            }
        }
        Ok(total)
    }

    async fn write(
        &self,
        budget: &PodDisruptionBudget,
        status: PodDisruptionBudgetStatus,
    ) -> anyhow::Result<()> {
        if budget.status.as_ref() == Some(&status) {
            return Ok(());
        }
        let namespace = budget.metadata.namespace.as_deref().unwrap_or_default();
        let name = budget.metadata.name.as_deref().unwrap_or_default();
        let mut updated = budget.clone();
        updated.status = Some(status);
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), namespace);
        api.replace_status(name, &PostParams::default(), &updated)
            .await
            .with_context(|| {
                format!("updating the status of PodDisruptionBudget {namespace}/{name}")
            })?;
        Ok(())
    }
}

/// Why the expected count could not be worked out.
enum Failure {
    NoControllers(String),
    Other(String),
}

/// The `DisruptionAllowed` condition, keeping its transition time if unchanged.
fn condition(
    previous: Option<&PodDisruptionBudgetStatus>,
    status: &str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let old = previous
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "DisruptionAllowed"));
    let last_transition_time = match old {
        Some(old) if old.status == status => old.last_transition_time.clone(),
        _ => Time(now),
    };
    vec![Condition {
        type_: "DisruptionAllowed".to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation: generation,
        last_transition_time,
    }]
}

impl Reconciler for Disruption {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(budget) = self.budgets.get_key(key) else {
            return Ok(Action::Done);
        };
        if budget.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let now = self.ctx.now();
        let namespace = key.namespace.as_str();
        let spec = budget.spec.clone().unwrap_or_default();
        let mut selected = pods::Selected::default();
        self.pods.visit_namespace(namespace, |pod| {
            if selects(&budget, &pod) {
                selected.add(&pod);
            }
        });
        let pods = selected.members;
        if pods.is_empty() {
            self.recorder
                .normal(budget.as_ref(), "NoPods", "No matching pods found");
        }
        let generation = budget.metadata.generation;
        let previous = budget.status.as_ref();
        let scale = if budget::needs_scale(&spec) {
            self.expected_scale(namespace, &selected.owners).await
        } else {
            Ok(0)
        };
        let counts = scale.and_then(|scale| {
            budget::expected_and_desired(&spec, pods.len() as i32, scale)
                .map_err(|e| Failure::Other(format!("{e:#}")))
        });
        let (expected, desired) = match counts {
            Ok(counts) => counts,
            Err(failure) => {
                let message = match failure {
                    Failure::NoControllers(message) => {
                        self.recorder
                            .warning(budget.as_ref(), "NoControllers", &message);
                        message
                    }
                    Failure::Other(message) => {
                        self.recorder.warning(
                            budget.as_ref(),
                            "CalculateExpectedPodCountFailed",
                            format!("Failed to calculate the number of expected pods: {message}"),
                        );
                        message
                    }
                };
                // Fail safe: no disruptions while the budget cannot be worked out.
                let mut status = previous.cloned().unwrap_or_default();
                status.disruptions_allowed = 0;
                status.observed_generation = generation;
                status.conditions = Some(condition(
                    previous,
                    "False",
                    "SyncFailed",
                    &message,
                    generation,
                    now,
                ));
                self.write(&budget, status).await?;
                return Ok(Action::RequeueAfter(Duration::from_secs(30)));
            }
        };
        let empty = BTreeMap::new();
        let disrupted = previous
            .and_then(|s| s.disrupted_pods.as_ref())
            .unwrap_or(&empty);
        let (disrupted, recheck) = budget::live_disruptions(disrupted, &pods, now);
        let healthy = budget::count_healthy(&pods, &disrupted);
        let allowed = budget::allowed(healthy, desired, expected);
        let (status, reason) = if allowed > 0 {
            ("True", "SufficientPods")
        } else {
            ("False", "InsufficientPods")
        };
        let new = PodDisruptionBudgetStatus {
            current_healthy: healthy,
            desired_healthy: desired,
            expected_pods: expected,
            disruptions_allowed: allowed,
            observed_generation: generation,
            disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
            conditions: Some(condition(previous, status, reason, "", generation, now)),
        };
        self.write(&budget, new).await?;
        Ok(match recheck {
            Some(at) => Action::RequeueAfter(
                now.duration_until(at)
                    .unsigned_abs()
                    .max(Duration::from_millis(100)),
            ),
            None => Action::Done,
        })
    }
}
