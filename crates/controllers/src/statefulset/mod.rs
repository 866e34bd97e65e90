//! The StatefulSet controller (kube-controller-manager's `statefulset-controller`): pods
//! with stable identities `<set>-<ordinal>` and stable storage.
//!
//! Each reconcile claims the set's pods (adopting orphans the selector matches whose name
//! is one of the set's) and ControllerRevisions, makes sure a revision of the current
//! template exists (the update revision), then:
//! - creates missing pods, each after its `volumeClaimTemplates` claims
//!   (`<claim>-<set>-<ordinal>`, never deleted with the pod); with the `OrderedReady`
//!   policy one at a time in ordinal order, each only when every lower ordinal is Running
//!   and Ready (and available for `minReadySeconds`); with `Parallel` all at once;
//! - deletes and recreates Failed/Succeeded pods;
//! - deletes pods beyond `replicas` from the highest ordinal (one at a time, waiting for
//!   the others to be healthy, under `OrderedReady`), handing their claims to the pod for
//!   `persistentVolumeClaimRetentionPolicy.whenScaled: Delete` (the garbage collector
//!   deletes them with it) and to the set for `whenDeleted: Delete`;
//! - under `RollingUpdate`, deletes pods of an old revision from the highest ordinal down
//!   to `partition`, one at a time, each once the one above is healthy again (pods below
//!   the partition are recreated at the current revision; `maxUnavailable` is behind a
//!   feature gate off by default and ignored); `OnDelete` leaves that to users;
//! - writes the status (replicas, ready, available, current, updated, revisions,
//!   observedGeneration, collisionCount) and deletes revisions beyond
//!   `revisionHistoryLimit`.
//!
//! Pods are read one at a time (by the controller-UID and orphans indexes) and kept as
//! [`pods::Member`]s; only the few to adopt or release are held whole.
//!
//! Events are Kubernetes': `SuccessfulCreate` "create Pod web-0 in StatefulSet web
//! successful", "create Claim www-web-0 Pod web-0 in StatefulSet web success",
//! `SuccessfulDelete` "delete Pod web-1 in StatefulSet web successful", and `FailedCreate`
//! / `FailedDelete` with "… failed error: <error>".

mod pods;

use crate::context::Context;
use crate::history::{self, History};
use crate::ownership::{self, ORPHANS, controller_of, controller_reference};
use crate::selector;
use anyhow::Context as _;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, StatefulSet, StatefulSetSpec, StatefulSetStatus,
};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use kube::api::{Api, DeleteParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use kyb_runtime::queue::WorkQueue;
use pods::Member;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "statefulset-controller";
/// Pods by their controller reference's UID (shared with the other workload controllers).
pub use crate::ownership::CONTROLLER_UID as CONTROLLER_UID_INDEX;

struct StatefulSetReconciler {
    ctx: Arc<Context>,
    client: kube::Client,
    recorder: Recorder,
    sets: Arc<Informer<StatefulSet>>,
    pods: Arc<Informer<Pod, Compacted>>,
    claims: Arc<Informer<PersistentVolumeClaim>>,
    revisions: Arc<Informer<ControllerRevision>>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let sets = ctx.informers.get::<StatefulSet>();
    let pods = ctx.informers.compacted::<Pod>();
    let claims = ctx.informers.get::<PersistentVolumeClaim>();
    let revisions = ctx.informers.get::<ControllerRevision>();
    pods.add_index(CONTROLLER_UID_INDEX, |p: &Pod| {
        crate::ownership::controller_uid(&p.metadata)
    });
    pods.add_index(ORPHANS, |p: &Pod| {
        crate::ownership::orphan_namespace(&p.metadata)
    });
    let reconciler = Arc::new(StatefulSetReconciler {
        client: ctx.client_for(NAME).await?,
        recorder: ctx.recorder("statefulset-controller"),
        ctx: ctx.clone(),
        sets: sets.clone(),
        pods: pods.clone(),
        claims: claims.clone(),
        revisions: revisions.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    {
        let queue = queue.clone();
        sets.on_change(move |change| queue.add(ObjectKey::of(change.object().as_ref())));
    }
    {
        let queue = queue.clone();
        let sets = sets.clone();
        pods.on_change(move |change| enqueue_pod_owners(&queue, &sets, change));
    }
    {
        let queue = queue.clone();
        revisions.on_change(move |change| {
            if let Some((namespace, name)) = history::owner_key(change.object(), "StatefulSet") {
                queue.add(ObjectKey::new(namespace, name));
            }
        });
    }
    sets.wait_synced().await;
    pods.wait_synced().await;
    claims.wait_synced().await;
    revisions.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

/// A pod change: its controller (old and new), or for an orphan every set selecting it.
fn enqueue_pod_owners(
    queue: &WorkQueue<ObjectKey>,
    sets: &Informer<StatefulSet>,
    change: &Change<'_, Pod>,
) {
    let mut owners = vec![];
    let pods: Vec<&Arc<Pod>> = match change {
        Change::Updated { old, new } => vec![old, new],
        Change::Added(p) | Change::Deleted(p) => vec![p],
    };
    for pod in pods {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        match controller_of(&pod.metadata) {
            Some(r) if r.kind == "StatefulSet" => owners.push(ObjectKey::new(namespace, &r.name)),
            Some(_) => {}
            None => {
                if matches!(change, Change::Deleted(_)) {
                    continue;
                }
                for set in sets.list_namespace(&namespace) {
                    let selected = set.spec.as_ref().is_some_and(|s| {
                        selector::matches(&s.selector, pod.metadata.labels.as_ref())
                    });
                    if selected {
                        owners.push(ObjectKey::of(set.as_ref()));
                    }
                }
            }
        }
    }
    owners.dedup();
    for owner in owners {
        queue.add(owner);
    }
}

impl Reconciler for StatefulSetReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(set) = self.sets.get_key(key) else {
            return Ok(Action::Done);
        };
        if set.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let Some(spec) = set.spec.as_ref() else {
            return Ok(Action::Done);
        };
        Sync {
            r: self,
            set: &set,
            spec,
            pods_api: Api::namespaced(self.client.clone(), &key.namespace),
            claims_api: Api::namespaced(self.client.clone(), &key.namespace),
        }
        .run()
        .await
        .with_context(|| format!("syncing StatefulSet {key}"))
    }
}

/// One reconcile of one set.
struct Sync<'a> {
    r: &'a StatefulSetReconciler,
    set: &'a StatefulSet,
    spec: &'a StatefulSetSpec,
    pods_api: Api<Pod>,
    claims_api: Api<PersistentVolumeClaim>,
}

/// The revisions a reconcile works with.
struct Revisions {
    current: ControllerRevision,
    update: ControllerRevision,
    current_template: PodTemplateSpec,
    collision_count: i32,
    all: Vec<ControllerRevision>,
}

impl Sync<'_> {
    fn name(&self) -> &str {
        self.set.metadata.name.as_deref().unwrap_or_default()
    }

    fn namespace(&self) -> &str {
        self.set.metadata.namespace.as_deref().unwrap_or_default()
    }

    fn uid(&self) -> &str {
        self.set.metadata.uid.as_deref().unwrap_or_default()
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec.min_ready_seconds.unwrap_or(0)
    }

    fn healthy(&self, pod: &Member) -> bool {
        pod.lifecycle.is_running_and_ready()
            && pod
                .lifecycle
                .is_available(self.min_ready_seconds(), self.r.ctx.now())
    }

    async fn run(&self) -> anyhow::Result<Action> {
        let pods = self.claim_pods().await?;
        let revisions = self.revisions().await?;
        let requeue = self.manage(&pods, &revisions).await?;
        // Status from what the informer holds now (our writes show up in later passes).
        let pods = self.owned_pods();
        self.update_status(&pods, &revisions).await?;
        let mut live: HashSet<String> = pods.iter().filter_map(|p| p.revision.clone()).collect();
        live.insert(revisions.current.metadata.name.clone().unwrap_or_default());
        live.insert(revisions.update.metadata.name.clone().unwrap_or_default());
        History::new(self.r.client.clone(), self.namespace())
            .truncate(
                &revisions.all,
                &live,
                self.spec.revision_history_limit.unwrap_or(10),
            )
            .await?;
        Ok(requeue)
    }

    /// The pods the set controls (named as its pods), read one at a time and reduced.
    fn owned_pods(&self) -> Vec<Member> {
        let mut owned = vec![];
        self.r
            .pods
            .visit_index(CONTROLLER_UID_INDEX, self.uid(), |p| {
                owned.extend(Member::of(self.name(), &p));
            });
        owned
    }

    /// The set's pods: owned ones still selected, plus adopted orphans. Pods are read one
    /// at a time; only the few to adopt or release are kept whole.
    async fn claim_pods(&self) -> anyhow::Result<Vec<Member>> {
        let mut result = vec![];
        ownership::claim_pods(
            &self.r.pods,
            &self.pods_api,
            &self.set.metadata,
            &controller_reference(self.set),
            |pod| {
                let name = pod.metadata.name.as_deref().unwrap_or_default();
                selector::matches(&self.spec.selector, pod.metadata.labels.as_ref())
                    && pods::ordinal_of(self.name(), name).is_some()
            },
            |pod| result.extend(Member::of(self.name(), pod)),
        )
        .await?;
        Ok(result)
    }

    async fn revisions(&self) -> anyhow::Result<Revisions> {
        let history = History::new(self.r.client.clone(), self.namespace());
        let owner = history::Owner::of(self.set, &self.spec.selector, &self.spec.template);
        let mut all = history.claim(&self.r.revisions, &owner).await?;
        let status = self.set.status.clone().unwrap_or_default();
        let mut collision_count = status.collision_count.unwrap_or(0);
        let data = history::template_patch(&self.spec.template)?;
        let update = history
            .ensure(&owner, &data, &mut all, &mut collision_count)
            .await?;
        let current = status
            .current_revision
            .as_deref()
            .and_then(|name| {
                all.iter()
                    .find(|r| r.metadata.name.as_deref() == Some(name))
            })
            .cloned()
            .unwrap_or_else(|| update.clone());
        let current_template =
            history::template_of(&current).unwrap_or_else(|| self.spec.template.clone());
        Ok(Revisions {
            current,
            update,
            current_template,
            collision_count,
            all,
        })
    }

    /// Creates, recreates and deletes pods; returns when to look again.
    async fn manage(&self, pods: &[Member], revisions: &Revisions) -> anyhow::Result<Action> {
        let replicas = self.spec.replicas.unwrap_or(1).max(0);
        let start = self
            .spec
            .ordinals
            .as_ref()
            .and_then(|o| o.start)
            .unwrap_or(0)
            .max(0);
        let end = start + replicas;
        let monotonic = self.spec.pod_management_policy.as_deref() != Some("Parallel");
        let mut wanted: BTreeMap<i32, &Member> = BTreeMap::new();
        let mut condemned: Vec<(i32, &Member)> = vec![];
        for pod in pods {
            let ordinal = pod.ordinal;
            if (start..end).contains(&ordinal) {
                wanted.insert(ordinal, pod);
            } else {
                condemned.push((ordinal, pod));
            }
        }
        condemned.sort_by_key(|c| std::cmp::Reverse(c.0));
        let now = self.r.ctx.now();
        let requeue: Option<Duration> = wanted
            .values()
            .filter_map(|pod| pod.lifecycle.until_available(self.min_ready_seconds(), now))
            .filter(|wait| !wait.is_zero())
            .min()
            .map(|wait| wait + Duration::from_secs(1));
        let done = |requeue: Option<Duration>| -> anyhow::Result<Action> {
            Ok(requeue.map_or(Action::Done, Action::RequeueAfter))
        };

        // Pods in range, in ordinal order.
        let mut missing = vec![];
        let mut unhealthy = false;
        for ordinal in start..end {
            let Some(pod) = wanted.get(&ordinal) else {
                missing.push(ordinal);
                if monotonic {
                    break;
                }
                continue;
            };
            if pod.lifecycle.is_failed() || pod.lifecycle.is_succeeded() {
                if !pod.lifecycle.is_terminating() {
                    let name = &pod.name;
                    self.r.recorder.warning(
                        self.set,
                        "RecreatingTerminatedPod",
                        format!(
                            "StatefulSet {}/{} is recreating terminated Pod {name}",
                            self.namespace(),
                            self.name()
                        ),
                    );
                    self.delete_pod(pod).await?;
                }
                unhealthy = true;
                if monotonic {
                    return done(requeue);
                }
                continue;
            }
            self.ensure_claims(ordinal).await?;
            if pod.lifecycle.is_terminating() || !self.healthy(pod) {
                unhealthy = true;
                if monotonic {
                    return done(requeue);
                }
            }
        }
        if !missing.is_empty() {
            self.create_pods(&missing, revisions).await?;
            if monotonic {
                return done(requeue);
            }
            unhealthy = true;
        }

        // Pods beyond the range, from the highest ordinal.
        for (_, pod) in &condemned {
            if pod.lifecycle.is_terminating() {
                if monotonic {
                    return done(requeue);
                }
                continue;
            }
            if monotonic && unhealthy {
                return done(requeue);
            }
            self.release_claims_to_pod(pod).await?;
            self.delete_pod(pod).await?;
            if monotonic {
                return done(requeue);
            }
        }

        // Rolling update, from the highest ordinal down to the partition.
        let strategy = self.spec.update_strategy.clone().unwrap_or_default();
        if strategy.type_.as_deref().unwrap_or("RollingUpdate") != "RollingUpdate" {
            return done(requeue);
        }
        let rolling = strategy.rolling_update.unwrap_or_default();
        let partition = rolling.partition.unwrap_or(0).clamp(0, replicas);
        let update_name = revisions
            .update
            .metadata
            .name
            .as_deref()
            .unwrap_or_default();
        // One pod at a time (`maxUnavailable` is behind a feature gate that is off by
        // default): delete the highest old pod, then wait for its replacement.
        for ordinal in (start + partition..end).rev() {
            let Some(pod) = wanted.get(&ordinal) else {
                return done(requeue);
            };
            if pod.revision.as_deref() != Some(update_name) && !pod.lifecycle.is_terminating() {
                self.delete_pod(pod).await?;
                return done(requeue);
            }
            if !self.healthy(pod) {
                return done(requeue);
            }
        }
        done(requeue)
    }

    /// Creates the pods of `ordinals` (with their claims), in slow-start batches.
    async fn create_pods(&self, ordinals: &[i32], revisions: &Revisions) -> anyhow::Result<()> {
        let strategy = self.spec.update_strategy.clone().unwrap_or_default();
        let partition = strategy
            .rolling_update
            .as_ref()
            .and_then(|r| r.partition)
            .unwrap_or(0);
        let start = self
            .spec
            .ordinals
            .as_ref()
            .and_then(|o| o.start)
            .unwrap_or(0);
        let rolling = strategy.type_.as_deref().unwrap_or("RollingUpdate") == "RollingUpdate";
        let mut batch = 1;
        let mut rest = ordinals;
        while !rest.is_empty() {
            let (now, later) = rest.split_at(batch.min(rest.len()));
            rest = later;
            let results = futures::future::join_all(now.iter().map(|&ordinal| async move {
                // Below the partition pods stay at the current revision.
                let (template, revision) = if rolling && ordinal < start + partition {
                    (&revisions.current_template, &revisions.current)
                } else {
                    (&self.spec.template, &revisions.update)
                };
                let revision = revision.metadata.name.as_deref().unwrap_or_default();
                self.ensure_claims(ordinal).await?;
                self.create_pod(pods::new_pod(self.set, template, revision, ordinal))
                    .await
            }))
            .await;
            for result in results {
                result?;
            }
            batch *= 2;
        }
        Ok(())
    }

    async fn create_pod(&self, pod: Pod) -> anyhow::Result<()> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        match self.pods_api.create(&PostParams::default(), &pod).await {
            Ok(_) => {
                self.r.recorder.normal(
                    self.set,
                    "SuccessfulCreate",
                    format!(
                        "create Pod {name} in StatefulSet {} successful",
                        self.name()
                    ),
                );
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(error) => {
                self.r.recorder.warning(
                    self.set,
                    "FailedCreate",
                    format!(
                        "create Pod {name} in StatefulSet {} failed error: {}",
                        self.name(),
                        api_message(&error)
                    ),
                );
                Err(error).with_context(|| format!("creating pod {name}"))
            }
        }
    }

    async fn delete_pod(&self, pod: &Member) -> anyhow::Result<()> {
        let name = pod.name.as_str();
        match self.pods_api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                self.r.recorder.normal(
                    self.set,
                    "SuccessfulDelete",
                    format!(
                        "delete Pod {name} in StatefulSet {} successful",
                        self.name()
                    ),
                );
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(error) => {
                self.r.recorder.warning(
                    self.set,
                    "FailedDelete",
                    format!(
                        "delete Pod {name} in StatefulSet {} failed error: {}",
                        self.name(),
                        api_message(&error)
                    ),
                );
                Err(error).with_context(|| format!("deleting pod {name}"))
            }
        }
    }

    fn retention(&self) -> (bool, bool) {
        let policy = self
            .spec
            .persistent_volume_claim_retention_policy
            .clone()
            .unwrap_or_default();
        (
            policy.when_deleted.as_deref() == Some("Delete"),
            policy.when_scaled.as_deref() == Some("Delete"),
        )
    }

    /// Creates the claims of `ordinal` that do not exist; keeps the set's reference on
    /// existing ones in line with `whenDeleted`.
    async fn ensure_claims(&self, ordinal: i32) -> anyhow::Result<()> {
        let (when_deleted, _) = self.retention();
        let owner = when_deleted.then(|| pods::claim_owner(self.set));
        for claim in pods::new_claims(self.set, ordinal, owner.clone()) {
            let name = claim.metadata.name.clone().unwrap_or_default();
            if let Some(existing) = self.r.claims.get(self.namespace(), &name) {
                self.fix_claim_owner(&existing, when_deleted).await?;
                continue;
            }
            let pod_name = pods::pod_name(self.name(), ordinal);
            match self.claims_api.create(&PostParams::default(), &claim).await {
                Ok(_) => self.r.recorder.normal(
                    self.set,
                    "SuccessfulCreate",
                    format!(
                        "create Claim {name} Pod {pod_name} in StatefulSet {} success",
                        self.name()
                    ),
                ),
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(error) => {
                    self.r.recorder.warning(
                        self.set,
                        "FailedCreate",
                        format!(
                            "create Claim {name} for Pod {pod_name} in StatefulSet {} failed error: {}",
                            self.name(),
                            api_message(&error)
                        ),
                    );
                    return Err(error).with_context(|| format!("creating claim {name}"));
                }
            }
        }
        Ok(())
    }

    /// Adds or removes the set's reference on a claim to match `whenDeleted`.
    async fn fix_claim_owner(
        &self,
        claim: &PersistentVolumeClaim,
        when_deleted: bool,
    ) -> anyhow::Result<()> {
        let has = claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == self.uid());
        if has == when_deleted {
            return Ok(());
        }
        let mut claim = claim.clone();
        let references = claim.metadata.owner_references.get_or_insert_with(Vec::new);
        if when_deleted {
            references.push(pods::claim_owner(self.set));
        } else {
            references.retain(|r| r.uid != self.uid());
        }
        self.replace_claim(&claim).await
    }

    async fn replace_claim(&self, claim: &PersistentVolumeClaim) -> anyhow::Result<()> {
        let name = claim.metadata.name.clone().unwrap_or_default();
        match self
            .claims_api
            .replace(&name, &PostParams::default(), claim)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(error) => Err(error).with_context(|| format!("updating claim {name}")),
        }
    }

    /// Under `whenScaled: Delete`, makes a condemned pod own its claims so they go with it.
    async fn release_claims_to_pod(&self, pod: &Member) -> anyhow::Result<()> {
        let (_, when_scaled) = self.retention();
        let ordinal = pod.ordinal;
        if !when_scaled {
            return Ok(());
        }
        let pod_ref = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: pod.name.clone(),
            uid: pod.uid.clone(),
            controller: None,
            block_owner_deletion: None,
        };
        for template in pods::new_claims(self.set, ordinal, None) {
            let name = template.metadata.name.clone().unwrap_or_default();
            let Some(existing) = self.r.claims.get(self.namespace(), &name) else {
                continue;
            };
            let references = existing
                .metadata
                .owner_references
                .clone()
                .unwrap_or_default();
            if references.iter().any(|r| r.uid == pod_ref.uid) {
                continue;
            }
            let mut claim = (*existing).clone();
            let references = claim.metadata.owner_references.get_or_insert_with(Vec::new);
            references.retain(|r| r.uid != self.uid());
            references.push(pod_ref.clone());
            self.replace_claim(&claim).await?;
        }
        Ok(())
    }

    async fn update_status(&self, pods: &[Member], revisions: &Revisions) -> anyhow::Result<()> {
        let now = self.r.ctx.now();
        let current_name = revisions.current.metadata.name.clone().unwrap_or_default();
        let update_name = revisions.update.metadata.name.clone().unwrap_or_default();
        let old = self.set.status.clone().unwrap_or_default();
        let mut status = StatefulSetStatus {
            observed_generation: self.set.metadata.generation,
            collision_count: Some(revisions.collision_count),
            current_revision: Some(current_name.clone()),
            update_revision: Some(update_name.clone()),
            conditions: old.conditions.clone(),
            ..Default::default()
        };
        let (mut current, mut updated, mut ready, mut available) = (0, 0, 0, 0);
        for pod in pods {
            status.replicas += 1;
            if pod.lifecycle.is_running_and_ready() {
                ready += 1;
                if pod.lifecycle.is_available(self.min_ready_seconds(), now) {
                    available += 1;
                }
            }
            if !pod.lifecycle.is_terminating() {
                let revision = pod.revision.as_deref();
                if revision == Some(current_name.as_str()) {
                    current += 1;
                }
                if revision == Some(update_name.as_str()) {
                    updated += 1;
                }
            }
        }
        status.ready_replicas = Some(ready);
        status.available_replicas = Some(available);
        status.current_replicas = Some(current);
        status.updated_replicas = Some(updated);
        // A finished rollout makes the update revision current.
        let replicas = self.spec.replicas.unwrap_or(1);
        let rolling = self
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_deref())
            .unwrap_or("RollingUpdate")
            == "RollingUpdate";
        let complete = if rolling {
            updated == replicas && ready == replicas && status.replicas == replicas
        } else {
            updated == replicas && status.replicas == replicas
        };
        if complete && current_name != update_name {
            status.current_revision = Some(update_name);
            status.current_replicas = Some(updated);
        }
        if status == old {
            return Ok(());
        }
        let mut set = self.set.clone();
        set.status = Some(status);
        let api: Api<StatefulSet> = Api::namespaced(self.r.client.clone(), self.namespace());
        match api
            .replace_status(self.name(), &PostParams::default(), &set)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(error) => Err(error).context("updating the status"),
        }
    }
}

/// What an API error says (its Status message), as Kubernetes' events quote it.
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}
