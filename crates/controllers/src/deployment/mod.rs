//! The Deployment controller (kube-controller-manager's `deployment-controller`).
//!
//! A Deployment owns ReplicaSets named `<deployment>-<pod-template-hash>`
//! ([`revision::template_hash`]), whose selector and template carry the
//! `pod-template-hash` label; the one whose template equals the Deployment's (ignoring
//! that label) is the new ReplicaSet, the rest are old. It claims ReplicaSets by selector
//! (adopting orphans — so `kubectl rollout undo`, which copies an old ReplicaSet's template
//! back, finds that ReplicaSet again and raises its revision rather than making a new one)
//! and then, as Kubernetes does:
//! - paused (`spec.paused`) or resized: only scales (proportionally across the ReplicaSets
//!   of an unfinished rollout, [`rollout::proportional_sizes`]), no rollout;
//! - `RollingUpdate`: grows the new ReplicaSet within `maxSurge` extra pods and shrinks old
//!   ones within `maxUnavailable` unavailable pods (unhealthy old pods first);
//! - `Recreate`: scales old ReplicaSets to zero, waits for their pods to be gone, then
//!   creates/scales the new one.
//!
//! It keeps the revision annotations, deletes old empty ReplicaSets beyond
//! `revisionHistoryLimit` once a rollout completes (or while paused), and writes the
//! status and conditions of [`status`]. Events: `ScalingReplicaSet` "Scaled up replica set
//! <rs> from 0 to 3" / "Scaled down replica set <rs> from 3 to 2", `SelectingAll`.

pub mod revision;
pub mod rollout;
pub mod status;

use crate::context::Context;
use crate::ownership::{self, Claim};
use crate::ownership::{CONTROLLER_UID, ORPHANS, controller_uid, orphan_namespace};
use anyhow::Context as _;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, DeleteParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use kyb_runtime::queue::WorkQueue;
use revision::HASH_LABEL;
use rollout::{is_recreate, max_surge, replicas, rs_available, rs_replicas, rs_status_replicas};
use std::sync::Arc;

pub const NAME: &str = "deployment-controller";

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let deployments = ctx.informers.get::<Deployment>();
    let replica_sets = ctx.informers.get::<ReplicaSet>();
    let pods = ctx.informers.compacted::<Pod>();
    replica_sets.add_index(CONTROLLER_UID, |rs: &ReplicaSet| {
        controller_uid(&rs.metadata)
    });
    replica_sets.add_index(ORPHANS, |rs: &ReplicaSet| orphan_namespace(&rs.metadata));
    pods.add_index(CONTROLLER_UID, |p: &Pod| controller_uid(&p.metadata));
    let reconciler = Arc::new(Deployments {
        deployments: deployments.clone(),
        replica_sets: replica_sets.clone(),
        pods: pods.clone(),
        client: ctx.client_for(NAME).await?,
        recorder: ctx.recorder(NAME),
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    {
        let queue = queue.clone();
        deployments.on_change(move |change| queue.add(ObjectKey::of(change.object().as_ref())));
    }
    {
        let queue = queue.clone();
        let deployments = deployments.clone();
        replica_sets.on_change(move |change| on_rs_change(change, &deployments, &queue));
    }
    {
        let deployments = deployments.clone();
        let replica_sets = replica_sets.clone();
        pods.on_change(move |change| {
            // Recreate waits for old pods to be gone.
            if let Change::Deleted(pod) = change
                && let Some(rs_ref) = ownership::controller_of(&pod.metadata)
                && rs_ref.kind == "ReplicaSet"
                && let Some(rs) = replica_sets.get(
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    &rs_ref.name,
                )
                && let Some(key) = owner_of(&rs, &deployments)
                && deployments.get_key(&key).is_some_and(|d| is_recreate(&d))
            {
                queue.add(key);
            }
        });
    }
    deployments.wait_synced().await;
    replica_sets.wait_synced().await;
    pods.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

fn owner_of(rs: &ReplicaSet, deployments: &Informer<Deployment>) -> Option<ObjectKey> {
    let r = ownership::controller_of(&rs.metadata)?;
    if r.kind != "Deployment" {
        return None;
    }
    let namespace = rs.metadata.namespace.clone().unwrap_or_default();
    let d = deployments.get(&namespace, &r.name)?;
    (d.metadata.uid.as_deref() == Some(r.uid.as_str())).then(|| ObjectKey::new(namespace, &r.name))
}

fn selects(d: &Deployment, labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    d.spec.as_ref().is_some_and(|s| {
        !crate::selector::is_empty(&s.selector) && crate::selector::matches(&s.selector, labels)
    })
}

fn on_rs_change(
    change: &Change<'_, ReplicaSet>,
    deployments: &Informer<Deployment>,
    queue: &WorkQueue<ObjectKey>,
) {
    let rs = change.object();
    let mut keys = vec![];
    if let Change::Updated { old, .. } = change
        && let Some(key) = owner_of(old, deployments)
    {
        keys.push(key);
    }
    match owner_of(rs, deployments) {
        Some(key) => keys.push(key),
        None if ownership::controller_of(&rs.metadata).is_none()
            && !matches!(change, Change::Deleted(_)) =>
        {
            let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
            for d in deployments.list_namespace(namespace) {
                if selects(&d, rs.metadata.labels.as_ref()) {
                    keys.push(ObjectKey::of(d.as_ref()));
                }
            }
        }
        None => {}
    }
    for key in keys {
        queue.add(key);
    }
}

pub struct Deployments {
    deployments: Arc<Informer<Deployment>>,
    replica_sets: Arc<Informer<ReplicaSet>>,
    pods: Arc<Informer<Pod, Compacted>>,
    client: kube::Client,
    recorder: Recorder,
    ctx: Arc<Context>,
}

impl Reconciler for Deployments {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(d) = self.deployments.get_key(key) else {
            return Ok(Action::Done);
        };
        let now = jiff::Timestamp::from_second(self.ctx.now().as_second()).unwrap_or_default();
        let mut sync = Sync {
            this: self,
            d: (*d).clone(),
            rss: vec![],
            now,
            key,
        };
        sync.run().await
    }
}

/// One sync of one Deployment: its current copy and its ReplicaSets (oldest first),
/// updated as writes return.
struct Sync<'a> {
    this: &'a Deployments,
    d: Deployment,
    rss: Vec<ReplicaSet>,
    now: jiff::Timestamp,
    key: &'a ObjectKey,
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 404)
}

fn template(d: &Deployment) -> k8s_openapi::api::core::v1::PodTemplateSpec {
    d.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

impl Sync<'_> {
    fn rs_api(&self) -> Api<ReplicaSet> {
        Api::namespaced(self.this.client.clone(), &self.key.namespace)
    }

    fn d_api(&self) -> Api<Deployment> {
        Api::namespaced(self.this.client.clone(), &self.key.namespace)
    }

    async fn run(&mut self) -> anyhow::Result<Action> {
        let spec = self.d.spec.clone().unwrap_or_default();
        if crate::selector::is_empty(&spec.selector) {
            let status = self.d.status.clone().unwrap_or_default();
            if self.d.metadata.generation > status.observed_generation {
                self.this.recorder.warning(
                    &self.d,
                    "SelectingAll",
                    "This deployment is selecting all pods. A non-empty selector is required.",
                );
                let mut status = status;
                status.observed_generation = self.d.metadata.generation;
                self.update_status(status).await?;
            }
            return Ok(Action::Done);
        }
        self.claim().await?;
        if self.d.metadata.deletion_timestamp.is_some() {
            let new = self.find_new();
            let status = status::calculate(
                &self.d,
                &self.rss.iter().collect::<Vec<_>>(),
                new.map(|i| &self.rss[i]),
                self.now,
            );
            self.update_status(status).await?;
            return Ok(Action::Done);
        }
        self.check_paused().await?;
        if spec.paused == Some(true) || self.scaling_event() {
            return self.sync_only().await;
        }
        if is_recreate(&self.d) {
            self.rollout_recreate().await
        } else {
            self.rollout_rolling().await
        }
    }

    /// Adopts matching orphan ReplicaSets, releases owned ones that no longer match.
    async fn claim(&mut self) -> anyhow::Result<()> {
        let uid = self.d.metadata.uid.clone().unwrap_or_default();
        let mut candidates = self.this.replica_sets.by_index(CONTROLLER_UID, &uid);
        candidates.extend(
            self.this
                .replica_sets
                .by_index(ORPHANS, &self.key.namespace),
        );
        let api = self.rs_api();
        let reference = ownership::controller_reference(&self.d);
        let deleting = self.d.metadata.deletion_timestamp.is_some();
        for rs in candidates {
            let selected = selects(&self.d, rs.metadata.labels.as_ref());
            let name = rs.metadata.name.clone().unwrap_or_default();
            match ownership::claim(&uid, &rs.metadata, selected) {
                Claim::Owned => self.rss.push((*rs).clone()),
                Claim::Adopt if !deleting => {
                    match ownership::adopt(&api, &rs.metadata, &reference).await {
                        Ok(adopted) => self.rss.push(adopted),
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => {
                            return Err(e).with_context(|| format!("adopting replica set {name}"));
                        }
                    }
                }
                Claim::Release => match ownership::release(&api, &rs.metadata, &uid).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        return Err(e).with_context(|| format!("releasing replica set {name}"));
                    }
                },
                Claim::Adopt | Claim::Ignore => {}
            }
        }
        self.rss.sort_by(|a, b| {
            let t = |rs: &ReplicaSet| rs.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        Ok(())
    }

    /// The index of the new ReplicaSet: the oldest whose template is the Deployment's.
    fn find_new(&self) -> Option<usize> {
        let t = template(&self.d);
        self.rss.iter().position(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|rt| revision::equal_ignoring_hash(rt, &t))
        })
    }

    fn olds(&self, new: Option<usize>) -> Vec<usize> {
        (0..self.rss.len()).filter(|i| Some(*i) != new).collect()
    }

    fn all(&self) -> Vec<&ReplicaSet> {
        self.rss.iter().collect()
    }

    /// Whether an active ReplicaSet was sized for another replica count.
    fn scaling_event(&self) -> bool {
        let want = replicas(&self.d);
        self.rss.iter().filter(|rs| rs_replicas(rs) > 0).any(|rs| {
            revision::int_annotation(rs, revision::DESIRED_REPLICAS).is_some_and(|d| d != want)
        })
    }

    async fn update_status(
        &mut self,
        status: k8s_openapi::api::apps::v1::DeploymentStatus,
    ) -> anyhow::Result<()> {
        if self.d.status.as_ref() == Some(&status) {
            return Ok(());
        }
        let mut copy = self.d.clone();
        copy.status = Some(status);
        self.d = self
            .d_api()
            .replace_status(&self.key.name, &PostParams::default(), &copy)
            .await
            .with_context(|| format!("updating the status of deployment {}", self.key))?;
        Ok(())
    }

    /// Copies the new ReplicaSet's revision onto the Deployment.
    async fn set_revision(&mut self, rev: Option<String>) -> anyhow::Result<()> {
        let Some(rev) = rev else { return Ok(()) };
        let annotations = self.d.metadata.annotations.clone().unwrap_or_default();
        if annotations.get(revision::REVISION) == Some(&rev) {
            return Ok(());
        }
        let mut copy = self.d.clone();
        copy.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(revision::REVISION.to_string(), rev);
        self.d = self
            .d_api()
            .replace(&self.key.name, &PostParams::default(), &copy)
            .await
            .with_context(|| format!("updating the revision of deployment {}", self.key))?;
        Ok(())
    }

    async fn update_rs(&mut self, i: usize, rs: ReplicaSet) -> anyhow::Result<()> {
        let name = rs.metadata.name.clone().unwrap_or_default();
        self.rss[i] = self
            .rs_api()
            .replace(&name, &PostParams::default(), &rs)
            .await
            .with_context(|| format!("updating replica set {name}"))?;
        Ok(())
    }

    /// Scales ReplicaSet `i` to `to` (and refreshes its replica annotations); whether its
    /// size changed.
    async fn scale(&mut self, i: usize, to: i32) -> anyhow::Result<bool> {
        let mut copy = self.rss[i].clone();
        let from = rs_replicas(&copy);
        let want = replicas(&self.d);
        let annotations =
            revision::set_replicas_annotations(&mut copy, want, want + max_surge(&self.d));
        if from == to && !annotations {
            return Ok(false);
        }
        copy.spec
            .get_or_insert_with(ReplicaSetSpec::default)
            .replicas = Some(to);
        self.update_rs(i, copy).await?;
        if from != to {
            let direction = if to > from { "up" } else { "down" };
            let name = self.rss[i].metadata.name.clone().unwrap_or_default();
            self.this.recorder.normal(
                &self.d,
                "ScalingReplicaSet",
                format!("Scaled {direction} replica set {name} from {from} to {to}"),
            );
        }
        Ok(from != to)
    }

    /// The new ReplicaSet, its annotations and revision brought up to date; created if
    /// missing and `create`.
    async fn new_rs(&mut self, create: bool) -> anyhow::Result<Option<usize>> {
        let new = self.find_new();
        let max_old = self
            .olds(new)
            .iter()
            .map(|i| revision::revision(&self.rss[*i]))
            .max()
            .unwrap_or(0);
        let new_revision = max_old + 1;
        let min_ready = self.d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        if let Some(i) = new {
            let mut copy = self.rss[i].clone();
            let annotations = revision::set_new_rs_annotations(&self.d, &mut copy, new_revision);
            let spec = copy.spec.get_or_insert_with(ReplicaSetSpec::default);
            let min_ready_changed = spec.min_ready_seconds.unwrap_or(0) != min_ready.unwrap_or(0);
            if annotations || min_ready_changed {
                spec.min_ready_seconds = min_ready;
                self.update_rs(i, copy).await?;
            }
            self.set_revision(revision_of(&self.rss[i])).await?;
            let status = self.d.status.clone().unwrap_or_default();
            if status::progress_deadline(&self.d).is_some()
                && status::get(&status, status::PROGRESSING).is_none()
            {
                let mut status = status;
                let name = self.rss[i].metadata.name.clone().unwrap_or_default();
                status::set(
                    &mut status,
                    status::condition(
                        status::PROGRESSING,
                        "True",
                        status::FOUND_NEW_RS,
                        format!("Found new replica set \"{name}\""),
                        self.now,
                    ),
                );
                self.update_status(status).await?;
            }
            return Ok(Some(i));
        }
        if !create {
            return Ok(None);
        }
        let collisions = self.d.status.as_ref().and_then(|s| s.collision_count);
        let mut t = template(&self.d);
        let hash = revision::template_hash(&t, collisions);
        t.metadata
            .get_or_insert_with(ObjectMeta::default)
            .labels
            .get_or_insert_with(Default::default)
            .insert(HASH_LABEL.to_string(), hash.clone());
        let mut selector: LabelSelector = self
            .d
            .spec
            .as_ref()
            .map(|s| s.selector.clone())
            .unwrap_or_default();
        selector
            .match_labels
            .get_or_insert_with(Default::default)
            .insert(HASH_LABEL.to_string(), hash.clone());
        let name = format!("{}-{hash}", self.key.name);
        let mut rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(self.key.namespace.clone()),
                labels: t.metadata.as_ref().and_then(|m| m.labels.clone()),
                owner_references: Some(vec![ownership::controller_reference(&self.d)]),
                ..ObjectMeta::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: min_ready,
                selector,
                template: Some(t),
            }),
            status: None,
        };
        let count = rollout::new_rs_replicas(&self.d, &self.all(), &rs);
        if let Some(spec) = rs.spec.as_mut() {
            spec.replicas = Some(count);
        }
        revision::set_new_rs_annotations(&self.d, &mut rs, new_revision);
        let want = replicas(&self.d);
        revision::set_replicas_annotations(&mut rs, want, want + max_surge(&self.d));
        let created = match self.rs_api().create(&PostParams::default(), &rs).await {
            Ok(created) => created,
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let existing = self
                    .rs_api()
                    .get(&name)
                    .await
                    .with_context(|| format!("reading replica set {name}"))?;
                let ours = ownership::controller_of(&existing.metadata)
                    .is_some_and(|r| Some(&r.uid) == self.d.metadata.uid.as_ref());
                let same = existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|rt| revision::equal_ignoring_hash(rt, &template(&self.d)));
                if ours && same {
                    self.rss.push(existing);
                    return Ok(Some(self.rss.len() - 1));
                }
                let mut status = self.d.status.clone().unwrap_or_default();
                status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                self.update_status(status).await?;
                anyhow::bail!(
                    "found a hash collision for deployment {}: replica set {name} exists",
                    self.key
                );
            }
            Err(e) => {
                if status::progress_deadline(&self.d).is_some() {
                    let mut status = self.d.status.clone().unwrap_or_default();
                    status::set(
                        &mut status,
                        status::condition(
                            status::PROGRESSING,
                            "False",
                            "ReplicaSetCreateError",
                            format!("Failed to create new replica set \"{name}\": {e}"),
                            self.now,
                        ),
                    );
                    self.update_status(status).await?;
                }
                return Err(e).with_context(|| format!("creating replica set {name}"));
            }
        };
        if count > 0 {
            self.this.recorder.normal(
                &self.d,
                "ScalingReplicaSet",
                format!("Scaled up replica set {name} from 0 to {count}"),
            );
        }
        let rev = revision_of(&created);
        self.rss.push(created);
        self.set_revision(rev).await?;
        if status::progress_deadline(&self.d).is_some() {
            let mut status = self.d.status.clone().unwrap_or_default();
            status::set(
                &mut status,
                status::condition(
                    status::PROGRESSING,
                    "True",
                    status::NEW_RS_CREATED,
                    format!("Created new replica set \"{name}\""),
                    self.now,
                ),
            );
            self.update_status(status).await?;
        }
        Ok(Some(self.rss.len() - 1))
    }

    async fn check_paused(&mut self) -> anyhow::Result<()> {
        if status::progress_deadline(&self.d).is_none() {
            return Ok(());
        }
        let paused = self.d.spec.as_ref().and_then(|s| s.paused) == Some(true);
        let mut status = self.d.status.clone().unwrap_or_default();
        let reason = status::get(&status, status::PROGRESSING).and_then(|c| c.reason.clone());
        let condition = if paused && reason.as_deref() != Some(status::PAUSED) {
            (status::PAUSED, "Deployment is paused")
        } else if !paused && reason.as_deref() == Some(status::PAUSED) {
            (status::RESUMED, "Deployment is resumed")
        } else {
            return Ok(());
        };
        status::set(
            &mut status,
            status::condition(
                status::PROGRESSING,
                "Unknown",
                condition.0,
                condition.1.to_string(),
                self.now,
            ),
        );
        self.update_status(status).await
    }

    /// Paused or resized: scale only.
    async fn sync_only(&mut self) -> anyhow::Result<Action> {
        let new = self.new_rs(false).await?;
        self.scale_all(new).await?;
        if self.d.spec.as_ref().and_then(|s| s.paused) == Some(true) {
            self.cleanup(new).await?;
        }
        let status = status::calculate(&self.d, &self.all(), new.map(|i| &self.rss[i]), self.now);
        self.update_status(status).await?;
        Ok(Action::Done)
    }

    async fn scale_all(&mut self, new: Option<usize>) -> anyhow::Result<()> {
        let want = replicas(&self.d);
        let active: Vec<usize> = (0..self.rss.len())
            .filter(|i| rs_replicas(&self.rss[*i]) > 0)
            .collect();
        let target = match active.len() {
            0 => new.or_else(|| self.olds(new).last().copied()),
            1 => active.first().copied(),
            _ => None,
        };
        if let Some(i) = target {
            if rs_replicas(&self.rss[i]) != want {
                self.scale(i, want).await?;
            }
            return Ok(());
        }
        if let Some(i) = new {
            let rs = &self.rss[i];
            if rs_replicas(rs) == want
                && revision::int_annotation(rs, revision::DESIRED_REPLICAS) == Some(want)
                && rs_available(rs) == want
            {
                for j in self.olds(new) {
                    if rs_replicas(&self.rss[j]) > 0 {
                        self.scale(j, 0).await?;
                    }
                }
                return Ok(());
            }
        }
        if is_recreate(&self.d) {
            return Ok(());
        }
        let current: i32 = active.iter().map(|i| rs_replicas(&self.rss[*i])).sum();
        let allowed = if want > 0 {
            want + max_surge(&self.d)
        } else {
            0
        };
        let growing = allowed > current;
        let mut order = active;
        order.sort_by(|a, b| {
            let (ra, rb) = (&self.rss[*a], &self.rss[*b]);
            let by_age = a.cmp(b); // rss are oldest first
            rs_replicas(rb).cmp(&rs_replicas(ra)).then(if growing {
                by_age.reverse()
            } else {
                by_age
            })
        });
        let sizes = rollout::proportional_sizes(
            &self.d,
            &order.iter().map(|i| &self.rss[*i]).collect::<Vec<_>>(),
        );
        for (i, size) in order.into_iter().zip(sizes) {
            self.scale(i, size).await?;
        }
        Ok(())
    }

    async fn rollout_rolling(&mut self) -> anyhow::Result<Action> {
        let new = self.new_rs(true).await?;
        if self.reconcile_new(new).await? {
            return self.sync_rollout_status(new).await;
        }
        if self.reconcile_old(new).await? {
            return self.sync_rollout_status(new).await;
        }
        if status::complete(&self.d, &self.d.status.clone().unwrap_or_default()) {
            self.cleanup(new).await?;
        }
        self.sync_rollout_status(new).await
    }

    async fn reconcile_new(&mut self, new: Option<usize>) -> anyhow::Result<bool> {
        let Some(i) = new else { return Ok(false) };
        let want = replicas(&self.d);
        let have = rs_replicas(&self.rss[i]);
        if have == want {
            return Ok(false);
        }
        if have > want {
            return self.scale(i, want).await;
        }
        let count = rollout::new_rs_replicas(&self.d, &self.all(), &self.rss[i]);
        self.scale(i, count).await
    }

    async fn reconcile_old(&mut self, new: Option<usize>) -> anyhow::Result<bool> {
        let olds = self.olds(new);
        let old_pods: i32 = olds.iter().map(|i| rs_replicas(&self.rss[*i])).sum();
        if old_pods == 0 {
            return Ok(false);
        }
        let all_pods: i32 = self.rss.iter().map(rs_replicas).sum();
        let min_available = replicas(&self.d) - rollout::max_unavailable(&self.d);
        let new_unavailable = new
            .map(|i| rs_replicas(&self.rss[i]) - rollout::available_within_size(&self.rss[i]))
            .unwrap_or(0);
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // Unhealthy old replicas go first: they count for nothing.
        let mut cleaned = 0;
        for &i in &olds {
            if cleaned >= max_scaled_down {
                break;
            }
            let (spec, available) = (rs_replicas(&self.rss[i]), rs_available(&self.rss[i]));
            let down = rollout::unhealthy_to_remove(spec, available, max_scaled_down - cleaned);
            if down == 0 {
                continue;
            }
            self.scale(i, spec - down).await?;
            cleaned += down;
        }
        // Then healthy ones, as far as availability allows.
        let available: i32 = self.rss.iter().map(rollout::available_within_size).sum();
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for &i in &olds {
                if scaled >= total {
                    break;
                }
                let spec = rs_replicas(&self.rss[i]);
                if spec == 0 {
                    continue;
                }
                let down = spec.min(total - scaled);
                self.scale(i, spec - down).await?;
                scaled += down;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    async fn rollout_recreate(&mut self) -> anyhow::Result<Action> {
        let mut new = self.new_rs(false).await?;
        let mut scaled_down = false;
        for i in self.olds(new) {
            if rs_replicas(&self.rss[i]) > 0 {
                scaled_down |= self.scale(i, 0).await?;
            }
        }
        if scaled_down || self.old_pods_running(new) {
            return self.sync_rollout_status(new).await;
        }
        if new.is_none() {
            new = self.new_rs(true).await?;
        }
        if let Some(i) = new {
            self.scale(i, replicas(&self.d)).await?;
        }
        if status::complete(&self.d, &self.d.status.clone().unwrap_or_default()) {
            self.cleanup(new).await?;
        }
        self.sync_rollout_status(new).await
    }

    /// Whether any pod of an old ReplicaSet is still there and not finished.
    fn old_pods_running(&self, new: Option<usize>) -> bool {
        let olds = self.olds(new);
        if olds.iter().any(|i| rs_status_replicas(&self.rss[*i]) > 0) {
            return true;
        }
        // The pods are read one at a time.
        olds.iter().any(|i| {
            let uid = self.rss[*i].metadata.uid.clone().unwrap_or_default();
            let mut running = false;
            self.this.pods.visit_index(CONTROLLER_UID, &uid, |p| {
                running |= !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                );
            });
            running
        })
    }

    async fn sync_rollout_status(&mut self, new: Option<usize>) -> anyhow::Result<Action> {
        let (status, wait) =
            status::rollout(&self.d, &self.all(), new.map(|i| &self.rss[i]), self.now);
        self.update_status(status).await?;
        Ok(match wait {
            Some(wait) => Action::RequeueAfter(wait + std::time::Duration::from_secs(1)),
            None => Action::Done,
        })
    }

    /// Deletes the oldest empty old ReplicaSets beyond `revisionHistoryLimit`.
    async fn cleanup(&mut self, new: Option<usize>) -> anyhow::Result<()> {
        let Some(limit) = self.d.spec.as_ref().and_then(|s| s.revision_history_limit) else {
            return Ok(());
        };
        let mut cleanable: Vec<usize> = self
            .olds(new)
            .into_iter()
            .filter(|i| self.rss[*i].metadata.deletion_timestamp.is_none())
            .collect();
        let excess = cleanable.len() as i64 - i64::from(limit);
        if excess <= 0 {
            return Ok(());
        }
        cleanable.sort_by_key(|i| (revision::revision(&self.rss[*i]), *i));
        for &i in cleanable.iter().take(excess as usize) {
            let rs = &self.rss[i];
            let observed = rs.status.as_ref().and_then(|s| s.observed_generation);
            if rs_status_replicas(rs) != 0
                || rs_replicas(rs) != 0
                || rs.metadata.generation > observed
            {
                continue;
            }
            let name = rs.metadata.name.clone().unwrap_or_default();
            match self.rs_api().delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("deleting old replica set {name}"));
                }
            }
        }
        Ok(())
    }
}

fn revision_of(rs: &ReplicaSet) -> Option<String> {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(revision::REVISION).cloned())
}
