//! The ReplicaSet and ReplicationController controllers (kube-controller-manager's
//! `replicaset-controller` and `replicationcontroller-controller`), one implementation
//! for both kinds ([`kind::ReplicaOwner`]).
//!
//! For each owner it claims pods (adopts selector-matching orphans, releases owned pods
//! that no longer match, see [`crate::ownership`]), counts the active ones (not being
//! deleted, not Succeeded/Failed — a failed pod is replaced), and creates or deletes pods
//! to reach `spec.replicas`: at most 500 per sync, creations in slow-start batches
//! (1, 2, 4, …) that stop at the first failure, deletions in [`pods::deletion_order`].
//! [`expectations::Expectations`] keep a stale cache from acting twice. Events:
//! `SuccessfulCreate` "Created pod: <name>", `SuccessfulDelete` "Deleted pod: <name>",
//! `FailedCreate` "Error creating: <error>", `FailedDelete` "Error deleting: <error>".
//! Status: `replicas`, `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas`
//! (ready for `minReadySeconds`; the owner is looked at again when the next pod becomes
//! available), `observedGeneration`, and the `ReplicaFailure` condition while creating or
//! deleting fails.

pub mod expectations;
pub mod kind;
pub mod pods;

use crate::context::Context;
use crate::ownership;
use anyhow::Context as _;
use expectations::Expectations;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kind::{Failure, ReplicaOwner, ReplicaStatus};
use kube::api::{Api, DeleteParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use kyb_runtime::queue::WorkQueue;
use std::sync::Arc;

pub const NAME: &str = "replicaset-controller";
pub const RC_NAME: &str = "replicationcontroller-controller";

/// Pods created or deleted at most per sync (Kubernetes' `burstReplicas`).
pub const BURST_REPLICAS: usize = 500;

pub use crate::ownership::{CONTROLLER_UID, ORPHANS, controller_uid, orphan_namespace};

/// Runs the ReplicaSet controller.
pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    run_for::<ReplicaSet>(ctx).await
}

/// Runs the ReplicationController controller.
pub async fn run_rc(ctx: Arc<Context>) -> anyhow::Result<()> {
    run_for::<ReplicationController>(ctx).await
}

async fn run_for<K: ReplicaOwner>(ctx: Arc<Context>) -> anyhow::Result<()> {
    let owners = ctx.informers.get::<K>();
    let pods = ctx.informers.compacted::<Pod>();
    pods.add_index(CONTROLLER_UID, |p: &Pod| controller_uid(&p.metadata));
    pods.add_index(ORPHANS, |p: &Pod| orphan_namespace(&p.metadata));
    let client = ctx.client_for(K::SERVICE_ACCOUNT).await?;
    let reconciler = Arc::new(Replicas::<K> {
        owners: owners.clone(),
        pods: pods.clone(),
        client,
        recorder: ctx.recorder(K::CONTROLLER),
        expectations: Arc::new(Expectations::default()),
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(K::CONTROLLER, reconciler.clone());
    let queue = controller.queue();
    {
        let queue = queue.clone();
        let expectations = reconciler.expectations.clone();
        owners.on_change(move |change| {
            let key = ObjectKey::of(change.object().as_ref());
            if let Change::Deleted(_) = change {
                expectations.forget(&key);
            }
            queue.add(key);
        });
    }
    {
        let owners = owners.clone();
        let expectations = reconciler.expectations.clone();
        pods.on_change(move |change| on_pod_change::<K>(change, &owners, &queue, &expectations));
    }
    owners.wait_synced().await;
    pods.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

/// The owner (of kind `K`) a controller reference points at, if it still exists.
fn owner_of<K: ReplicaOwner>(pod: &Pod, owners: &Informer<K>) -> Option<ObjectKey> {
    let r = ownership::controller_of(&pod.metadata)?;
    if r.kind != K::kind(&()) || r.api_version != K::api_version(&()) {
        return None;
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let owner = owners.get(&namespace, &r.name)?;
    (owner.meta().uid.as_deref() == Some(r.uid.as_str()))
        .then(|| ObjectKey::new(namespace, &r.name))
}

/// Owners whose selector matches an orphan pod.
fn matching_owners<K: ReplicaOwner>(pod: &Pod, owners: &Informer<K>) -> Vec<ObjectKey> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    owners
        .list_namespace(namespace)
        .iter()
        .filter(|o| o.selects(pod.metadata.labels.as_ref()))
        .map(|o| ObjectKey::of(o.as_ref()))
        .collect()
}

fn on_pod_change<K: ReplicaOwner>(
    change: &Change<'_, Pod>,
    owners: &Informer<K>,
    queue: &WorkQueue<ObjectKey>,
    expectations: &Expectations,
) {
    let pod = change.object();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let orphan = ownership::controller_of(&pod.metadata).is_none();
    match change {
        Change::Added(_) => {
            if let Some(owner) = owner_of(pod, owners) {
                if pod.metadata.deletion_timestamp.is_some() {
                    expectations.deletion_observed(&owner, name);
                } else {
                    expectations.creation_observed(&owner, 1);
                }
                queue.add(owner);
            } else if orphan {
                for owner in matching_owners(pod, owners) {
                    queue.add(owner);
                }
            }
        }
        Change::Updated { old, new } => {
            let old_owner = owner_of(old, owners);
            let new_owner = owner_of(new, owners);
            if new.metadata.deletion_timestamp.is_some()
                && let Some(owner) = &new_owner
            {
                expectations.deletion_observed(owner, name);
            }
            if old_owner != new_owner
                && let Some(owner) = old_owner
            {
                queue.add(owner);
            }
            if let Some(owner) = new_owner {
                queue.add(owner);
            } else if orphan
                && (old.metadata.labels != new.metadata.labels
                    || ownership::controller_of(&old.metadata).is_some())
            {
                for owner in matching_owners(pod, owners) {
                    queue.add(owner);
                }
            }
        }
        Change::Deleted(_) => {
            if let Some(owner) = owner_of(pod, owners) {
                expectations.deletion_observed(&owner, name);
                queue.add(owner);
            }
        }
    }
}

/// The reconciler of one owner kind.
pub struct Replicas<K: ReplicaOwner> {
    owners: Arc<Informer<K>>,
    pods: Arc<Informer<Pod, Compacted>>,
    client: kube::Client,
    recorder: Recorder,
    expectations: Arc<Expectations>,
    ctx: Arc<Context>,
}

/// Why managing replicas failed (for the `ReplicaFailure` condition).
struct ManageError {
    reason: &'static str,
    error: anyhow::Error,
}

fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 404)
}

impl<K: ReplicaOwner> Reconciler for Replicas<K> {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(owner) = self.owners.get_key(key) else {
            self.expectations.forget(key);
            return Ok(Action::Done);
        };
        let now = self.ctx.now();
        let satisfied = self.expectations.satisfied(key, now);
        let active = self.claim(&owner).await?;
        let mut manage_error = None;
        if satisfied && owner.meta().deletion_timestamp.is_none() {
            manage_error = self.manage(&owner, key, &active).await.err();
        }
        let (mut status, wait) = calculate_status(owner.as_ref(), &active, now);
        let previous = owner.replica_status();
        status.failure = match (&manage_error, previous.failure) {
            (Some(e), Some(old)) if old.reason == e.reason => Some(old),
            (Some(e), _) => Some(Failure {
                reason: e.reason.to_string(),
                message: format!("{:#}", e.error),
                last_transition_time: Some(Time(now)),
            }),
            (None, _) => None,
        };
        if status != owner.replica_status() {
            let mut updated = (*owner).clone();
            updated.set_replica_status(&status);
            let api: Api<K> = Api::namespaced(self.client.clone(), &key.namespace);
            api.replace_status(&key.name, &PostParams::default(), &updated)
                .await
                .with_context(|| format!("updating the status of {} {key}", K::kind(&())))?;
        }
        if let Some(e) = manage_error {
            return Err(e.error);
        }
        Ok(match wait {
            Some(wait) => Action::RequeueAfter(wait + std::time::Duration::from_secs(1)),
            None => Action::Done,
        })
    }
}

/// Status from the owner's active pods, and how long until the next ready pod becomes
/// available (if one is waiting on `minReadySeconds`).
fn calculate_status<K: ReplicaOwner>(
    owner: &K,
    active: &[pods::Member],
    now: jiff::Timestamp,
) -> (ReplicaStatus, Option<std::time::Duration>) {
    let min_ready = owner.min_ready_seconds();
    let mut status = ReplicaStatus {
        replicas: active.len() as i32,
        observed_generation: owner.meta().generation,
        ..ReplicaStatus::default()
    };
    let mut wait: Option<std::time::Duration> = None;
    for member in active {
        if member.fully_labeled {
            status.fully_labeled_replicas += 1;
        }
        if member.is_ready() {
            status.ready_replicas += 1;
        }
        let (available, until) = member.availability(min_ready, now);
        if available {
            status.available_replicas += 1;
        }
        if let Some(until) = until {
            wait = Some(wait.map_or(until, |w| w.min(until)));
        }
    }
    (status, wait)
}

impl<K: ReplicaOwner> Replicas<K> {
    /// The owner's active pods (as [`pods::Member`]s) after adopting matching orphans
    /// and releasing what no longer matches. Pods are read one at a time and reduced at
    /// once, so a sync of thousands of replicas never holds thousands of whole pods.
    async fn claim(&self, owner: &Arc<K>) -> anyhow::Result<Vec<pods::Member>> {
        let meta = owner.meta();
        let template_labels = owner
            .template()
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            meta.namespace.as_deref().unwrap_or_default(),
        );
        let mut active = vec![];
        ownership::claim_pods(
            &self.pods,
            &api,
            meta,
            &ownership::controller_reference(owner.as_ref()),
            |pod| owner.selects(pod.metadata.labels.as_ref()),
            |pod| {
                if pods::is_active(pod) {
                    active.push(pods::Member::of(pod, &template_labels));
                }
            },
        )
        .await?;
        Ok(active)
    }

    /// Creates or deletes pods so `active` reaches `spec.replicas`.
    async fn manage(
        &self,
        owner: &Arc<K>,
        key: &ObjectKey,
        active: &[pods::Member],
    ) -> Result<(), ManageError> {
        let wanted = owner.replicas().max(0) as usize;
        if active.len() < wanted {
            let count = (wanted - active.len()).min(BURST_REPLICAS);
            self.create(owner, key, count)
                .await
                .map_err(|error| ManageError {
                    reason: "FailedCreate",
                    error,
                })
        } else if active.len() > wanted {
            let count = (active.len() - wanted).min(BURST_REPLICAS);
            self.delete(owner, key, active, count)
                .await
                .map_err(|error| ManageError {
                    reason: "FailedDelete",
                    error,
                })
        } else {
            Ok(())
        }
    }

    async fn create(&self, owner: &Arc<K>, key: &ObjectKey, count: usize) -> anyhow::Result<()> {
        let Some(template) = owner.template() else {
            anyhow::bail!("{} {key} has no pod template", K::kind(&()));
        };
        let pod = pods::from_template(
            template,
            &key.namespace,
            &pods::name_prefix(&key.name),
            ownership::controller_reference(owner.as_ref()),
        );
        self.expectations
            .expect_creations(key, count, self.ctx.now());
        let mut remaining = count;
        let mut batch = 1usize;
        while remaining > 0 {
            let size = batch.min(remaining);
            let results = futures::future::join_all(
                (0..size).map(|_| crate::pod_creation::create(&self.client, &key.namespace, &pod)),
            )
            .await;
            remaining -= size;
            let mut first_error = None;
            for result in results {
                match result {
                    Ok(name) => {
                        self.recorder.normal(
                            owner.as_ref(),
                            "SuccessfulCreate",
                            format!("Created pod: {name}"),
                        );
                    }
                    Err(error) => {
                        // It will never be seen: stop waiting for it.
                        self.expectations.creation_observed(key, 1);
                        let message = api_message(&error);
                        self.recorder.warning(
                            owner.as_ref(),
                            "FailedCreate",
                            format!("Error creating: {message}"),
                        );
                        if first_error.is_none() {
                            first_error = Some(message);
                        }
                    }
                }
            }
            if let Some(message) = first_error {
                // The rest of this sync's pods are skipped.
                self.expectations.creation_observed(key, remaining);
                anyhow::bail!("{message}");
            }
            batch *= 2;
        }
        Ok(())
    }

    async fn delete(
        &self,
        owner: &Arc<K>,
        key: &ObjectKey,
        active: &[pods::Member],
        count: usize,
    ) -> anyhow::Result<()> {
        let names: Vec<String> = pods::deletion_order(active)
            .into_iter()
            .take(count)
            .map(|m| m.name.clone())
            .collect();
        self.expectations
            .expect_deletions(key, &names, self.ctx.now());
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &key.namespace);
        let results = futures::future::join_all(names.iter().map(|name| {
            let api = api.clone();
            async move { (name, api.delete(name, &DeleteParams::default()).await) }
        }))
        .await;
        let mut first_error = None;
        for (name, result) in results {
            match result {
                Ok(_) => self.recorder.normal(
                    owner.as_ref(),
                    "SuccessfulDelete",
                    format!("Deleted pod: {name}"),
                ),
                Err(e) if is_not_found(&e) => self.expectations.deletion_observed(key, name),
                Err(error) => {
                    self.expectations.deletion_observed(key, name);
                    let message = api_message(&error);
                    self.recorder.warning(
                        owner.as_ref(),
                        "FailedDelete",
                        format!("Error deleting: {message}"),
                    );
                    first_error.get_or_insert(message);
                }
            }
        }
        match first_error {
            Some(message) => anyhow::bail!("{message}"),
            None => Ok(()),
        }
    }
}
