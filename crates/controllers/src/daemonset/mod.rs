//! The DaemonSet controller (kube-controller-manager's `daemonset-controller`, acting as
//! the `daemon-set-controller` service account): one pod per eligible node.
//!
//! Each reconcile claims the set's pods and ControllerRevisions, makes sure a revision of
//! the current template exists, then — once earlier creations and deletions have been
//! seen (expectations) —
//! - creates a pod (`<ds>-xxxxx`) on every eligible node lacking one (see [`placement`]):
//!   pinned with a required node affinity `metadata.name In [<node>]` for the scheduler
//!   to bind, with the automatic daemon tolerations, labelled with the revision's
//!   `controller-revision-hash` and `pod-template-generation`; in slow-start batches;
//! - deletes Failed pods (`FailedDaemonPod`), extra pods on a node (keeping the oldest),
//!   pods on nodes that should no longer run them (selector or NoExecute taint) and pods
//!   pinned to nodes that no longer exist;
//! - under `RollingUpdate`, replaces old-revision pods: with `maxSurge: 0` by deleting at
//!   most `maxUnavailable` available old pods beyond those already unavailable; with
//!   `maxSurge` by starting the new pod beside the old one and deleting the old one once
//!   the new one is available. `OnDelete` leaves replacing to users;
//! - writes the status (desired/current/misscheduled/ready/available/updated/unavailable
//!   counts, observedGeneration, collisionCount) and deletes revisions beyond
//!   `revisionHistoryLimit`.
//!
//! The set's pods are read one at a time and kept as [`pods::Member`]s (only pods to
//! adopt or release are held whole).
//!
//! Events are Kubernetes' pod-control events: `SuccessfulCreate` "Created pod: <name>",
//! `SuccessfulDelete` "Deleted pod: <name>", `FailedCreate` "Error creating: <error>",
//! `FailedDelete` "Error deleting: <error>".

mod expectations;
pub mod placement;
mod pods;

use crate::context::Context;
use crate::history::{self, HASH_LABEL, History, POD_REVISION_LABEL};
use crate::ownership::{self, ORPHANS, controller_of, controller_reference};
use crate::selector;
use anyhow::Context as _;
use expectations::Expectations;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetSpec, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use pods::Member;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "daemonset-controller";
/// The service account (and bootstrap role) the controller acts as.
const SERVICE_ACCOUNT: &str = "daemon-set-controller";
use crate::ownership::CONTROLLER_UID as CONTROLLER_UID_INDEX;
/// The label daemon pods carry with their set's generation.
const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

struct DaemonSetReconciler {
    ctx: Arc<Context>,
    client: kube::Client,
    recorder: Recorder,
    sets: Arc<Informer<DaemonSet>>,
    pods: Arc<Informer<Pod, Compacted>>,
    nodes: Arc<Informer<Node>>,
    revisions: Arc<Informer<ControllerRevision>>,
    expectations: Arc<Expectations>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let sets = ctx.informers.get::<DaemonSet>();
    let pods = ctx.informers.compacted::<Pod>();
    let nodes = ctx.informers.get::<Node>();
    let revisions = ctx.informers.get::<ControllerRevision>();
    pods.add_index(CONTROLLER_UID_INDEX, |p: &Pod| {
        crate::ownership::controller_uid(&p.metadata)
    });
    pods.add_index(ORPHANS, |p: &Pod| {
        crate::ownership::orphan_namespace(&p.metadata)
    });
    let expectations = Arc::new(Expectations::default());
    let reconciler = Arc::new(DaemonSetReconciler {
        client: ctx.client_for(SERVICE_ACCOUNT).await?,
        recorder: ctx.recorder("daemonset-controller"),
        ctx: ctx.clone(),
        sets: sets.clone(),
        pods: pods.clone(),
        nodes: nodes.clone(),
        revisions: revisions.clone(),
        expectations: expectations.clone(),
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
        pods.on_change(move |change| {
            for key in pod_owners(&sets, change) {
                match change {
                    Change::Added(_) => expectations.created(&key),
                    Change::Updated { old, new }
                        if old.metadata.deletion_timestamp.is_none()
                            && new.metadata.deletion_timestamp.is_some() =>
                    {
                        expectations.deleted(&key);
                    }
                    Change::Deleted(last) if last.metadata.deletion_timestamp.is_none() => {
                        expectations.deleted(&key);
                    }
                    _ => {}
                }
                queue.add(key);
            }
        });
    }
    {
        let queue = queue.clone();
        let sets = sets.clone();
        nodes.on_change(move |change| {
            if let Change::Updated { old, new } = change
                && old.metadata.labels == new.metadata.labels
                && old.spec == new.spec
            {
                return;
            }
            for key in sets.keys() {
                queue.add(key);
            }
        });
    }
    {
        let queue = queue.clone();
        revisions.on_change(move |change| {
            if let Some((namespace, name)) = history::owner_key(change.object(), "DaemonSet") {
                queue.add(ObjectKey::new(namespace, name));
            }
        });
    }
    sets.wait_synced().await;
    pods.wait_synced().await;
    nodes.wait_synced().await;
    revisions.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

/// The sets a pod change concerns: its controller, or for an orphan every set selecting it.
fn pod_owners(sets: &Informer<DaemonSet>, change: &Change<'_, Pod>) -> Vec<ObjectKey> {
    let pod = change.object();
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let mut owners = vec![];
    if let Change::Updated { old, .. } = change
        && let Some(r) = controller_of(&old.metadata)
        && r.kind == "DaemonSet"
        && controller_of(&pod.metadata).is_none_or(|n| n.uid != r.uid)
    {
        owners.push(ObjectKey::new(&namespace, &r.name));
    }
    match controller_of(&pod.metadata) {
        Some(r) if r.kind == "DaemonSet" => owners.push(ObjectKey::new(&namespace, &r.name)),
        Some(_) => {}
        None if matches!(change, Change::Deleted(_)) => {}
        None => {
            for set in sets.list_namespace(&namespace) {
                if set
                    .spec
                    .as_ref()
                    .is_some_and(|s| selector::matches(&s.selector, pod.metadata.labels.as_ref()))
                {
                    owners.push(ObjectKey::of(set.as_ref()));
                }
            }
        }
    }
    owners
}

impl Reconciler for DaemonSetReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(set) = self.sets.get_key(key) else {
            self.expectations.forget(key);
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
            key,
            set: &set,
            spec,
            pods_api: Api::namespaced(self.client.clone(), &key.namespace),
        }
        .run()
        .await
        .with_context(|| format!("syncing DaemonSet {key}"))
    }
}

struct Sync<'a> {
    r: &'a DaemonSetReconciler,
    key: &'a ObjectKey,
    set: &'a DaemonSet,
    spec: &'a DaemonSetSpec,
    pods_api: Api<Pod>,
}

/// The set's live (not terminating) pods per node, oldest first.
type PodsByNode<'p> = BTreeMap<String, Vec<&'p Member>>;

/// What one pass decided to do.
#[derive(Default)]
struct Plan<'p> {
    create_on: Vec<String>,
    delete: Vec<&'p Member>,
}

impl Sync<'_> {
    fn name(&self) -> &str {
        self.set.metadata.name.as_deref().unwrap_or_default()
    }

    fn namespace(&self) -> &str {
        self.set.metadata.namespace.as_deref().unwrap_or_default()
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec.min_ready_seconds.unwrap_or(0)
    }

    fn available(&self, pod: &Member) -> bool {
        pod.lifecycle
            .is_available(self.min_ready_seconds(), self.r.ctx.now())
    }

    async fn run(&self) -> anyhow::Result<Action> {
        let pods = self.claim_pods().await?;
        let history = History::new(self.r.client.clone(), self.namespace());
        let owner = history::Owner::of(self.set, &self.spec.selector, &self.spec.template);
        let mut revisions = history.claim(&self.r.revisions, &owner).await?;
        let status = self.set.status.clone().unwrap_or_default();
        let mut collision_count = status.collision_count.unwrap_or(0);
        let data = history::template_patch(&self.spec.template)?;
        let update = history
            .ensure(&owner, &data, &mut revisions, &mut collision_count)
            .await?;
        let hash = update
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .cloned()
            .unwrap_or_default();

        let nodes = self.r.nodes.list();
        let mut by_node: PodsByNode = BTreeMap::new();
        let mut orphaned = vec![];
        for pod in &pods {
            if pod.lifecycle.is_terminating() {
                continue;
            }
            match &pod.node {
                Some(node) => by_node.entry(node.clone()).or_default().push(pod),
                None => orphaned.push(pod),
            }
        }
        for list in by_node.values_mut() {
            list.sort_by_key(|p| p.created);
        }

        if self.r.expectations.satisfied(self.key) {
            let mut plan = self.manage(&nodes, &by_node, &hash);
            plan.delete.extend(orphaned);
            if plan.create_on.is_empty() && plan.delete.is_empty() {
                plan = self.rolling_update(&nodes, &by_node, &hash);
            }
            self.execute(plan, &hash).await?;
        }

        let requeue = self
            .update_status(&nodes, &by_node, &hash, collision_count)
            .await?;
        let mut live: HashSet<String> = pods.iter().filter_map(|p| p.revision.clone()).collect();
        live.insert(hash);
        let live_names: HashSet<String> = revisions
            .iter()
            .filter(|r| {
                r.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(HASH_LABEL))
                    .is_some_and(|h| live.contains(h))
            })
            .filter_map(|r| r.metadata.name.clone())
            .collect();
        history
            .truncate(
                &revisions,
                &live_names,
                self.spec.revision_history_limit.unwrap_or(10),
            )
            .await?;
        Ok(requeue)
    }

    /// The set's pods: owned ones still selected, plus adopted orphans. Pods are read one
    /// at a time (controller-UID and orphans indexes) and reduced; only the few to adopt or
    /// release are kept whole.
    async fn claim_pods(&self) -> anyhow::Result<Vec<Member>> {
        let mut result = vec![];
        ownership::claim_pods(
            &self.r.pods,
            &self.pods_api,
            &self.set.metadata,
            &controller_reference(self.set),
            |pod| selector::matches(&self.spec.selector, pod.metadata.labels.as_ref()),
            |pod| result.push(Member::of(pod)),
        )
        .await?;
        Ok(result)
    }

    fn surging(&self) -> bool {
        self.rolling().is_some_and(|(surge, _)| surge > 0)
    }

    /// `(maxSurge, maxUnavailable)` of a RollingUpdate set, scaled to `desired` nodes.
    fn rolling_limits(&self, desired: i32) -> Option<(i32, i32)> {
        let strategy = self.spec.update_strategy.clone().unwrap_or_default();
        if strategy.type_.as_deref().unwrap_or("RollingUpdate") != "RollingUpdate" {
            return None;
        }
        let rolling = strategy.rolling_update.unwrap_or_default();
        let surge = scaled(rolling.max_surge.as_ref(), desired, 0);
        let mut unavailable = scaled(rolling.max_unavailable.as_ref(), desired, 1);
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        Some((surge, unavailable))
    }

    fn rolling(&self) -> Option<(i32, i32)> {
        self.rolling_limits(1)
    }

    /// Creations and deletions that bring each node to one pod where it belongs.
    fn manage<'p>(&self, nodes: &[Arc<Node>], by_node: &PodsByNode<'p>, hash: &str) -> Plan<'p> {
        let template = self.spec.template.spec.clone().unwrap_or_default();
        let mut plan = Plan::default();
        let mut known = HashSet::new();
        for node in nodes {
            let node_name = node.metadata.name.clone().unwrap_or_default();
            known.insert(node_name.clone());
            let fit = placement::fit(&template, node);
            let pods = by_node
                .get(&node_name)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if fit.should_run {
                let (failed, running): (Vec<&Member>, Vec<&Member>) = pods
                    .iter()
                    .partition(|p| p.lifecycle.is_failed() || p.lifecycle.is_succeeded());
                for pod in failed {
                    self.r.recorder.warning(
                        self.set,
                        "FailedDaemonPod",
                        format!(
                            "Found failed daemon pod {}/{} on node {node_name}, will try to kill it",
                            self.namespace(),
                            pod.name
                        ),
                    );
                    plan.delete.push(pod);
                }
                match running.len() {
                    0 => plan.create_on.push(node_name),
                    1 => {}
                    2 if self.surging()
                        && running.iter().filter(|p| p.is_updated(hash)).count() == 1 => {}
                    _ => plan.delete.extend(running.into_iter().skip(1)),
                }
            } else if !fit.should_continue_running {
                plan.delete.extend(pods.iter().copied());
            }
        }
        for (node, pods) in by_node {
            if !known.contains(node) {
                plan.delete.extend(pods.iter().copied());
            }
        }
        plan
    }

    /// The next step of a RollingUpdate.
    fn rolling_update<'p>(
        &self,
        nodes: &[Arc<Node>],
        by_node: &PodsByNode<'p>,
        hash: &str,
    ) -> Plan<'p> {
        let template = self.spec.template.spec.clone().unwrap_or_default();
        let desired: Vec<String> = nodes
            .iter()
            .filter(|n| placement::fit(&template, n).should_run)
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let mut plan = Plan::default();
        let Some((max_surge, max_unavailable)) =
            self.rolling_limits(i32::try_from(desired.len()).unwrap_or(i32::MAX))
        else {
            return plan;
        };
        let empty = vec![];
        if max_surge == 0 {
            let mut unavailable = 0;
            let mut candidates = vec![];
            for node in &desired {
                let pods = by_node.get(node).unwrap_or(&empty);
                let (new, old): (Vec<&Member>, Vec<&Member>) =
                    pods.iter().partition(|p| p.is_updated(hash));
                match (old.as_slice(), new.as_slice()) {
                    ([], [new]) => {
                        if !self.available(new) {
                            unavailable += 1;
                        }
                    }
                    ([old], []) => {
                        if self.available(old) {
                            candidates.push(*old);
                        } else {
                            plan.delete.push(*old);
                            unavailable += 1;
                        }
                    }
                    _ => unavailable += 1,
                }
            }
            let room = usize::try_from(max_unavailable - unavailable).unwrap_or(0);
            plan.delete.extend(candidates.into_iter().take(room));
        } else {
            let mut surging = 0;
            let mut candidates = vec![];
            for node in &desired {
                let pods = by_node.get(node).unwrap_or(&empty);
                let (new, old): (Vec<&Member>, Vec<&Member>) =
                    pods.iter().partition(|p| p.is_updated(hash));
                match (old.as_slice(), new.as_slice()) {
                    ([old], []) => {
                        if self.available(old) {
                            candidates.push(node.clone());
                        } else {
                            plan.create_on.push(node.clone());
                        }
                    }
                    ([old], [new]) => {
                        if self.available(new) {
                            plan.delete.push(*old);
                        } else {
                            surging += 1;
                        }
                    }
                    _ => {}
                }
            }
            let room = usize::try_from(max_surge - surging).unwrap_or(0);
            plan.create_on.extend(candidates.into_iter().take(room));
        }
        plan
    }

    /// The pod for `node`.
    fn new_pod(&self, node: &str, hash: &str) -> Pod {
        let template = &self.spec.template;
        let meta = template.metadata.clone().unwrap_or_default();
        let mut labels = meta.labels.unwrap_or_default();
        labels.insert(POD_REVISION_LABEL.into(), hash.to_string());
        if let Some(generation) = self.set.metadata.generation {
            labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
        }
        let mut spec = template.spec.clone().unwrap_or_default();
        placement::pin_to_node(&mut spec, node);
        placement::add_automatic_tolerations(&mut spec);
        Pod {
            metadata: ObjectMeta {
                generate_name: Some(format!("{}-", self.name())),
                namespace: Some(self.namespace().to_string()),
                labels: Some(labels),
                annotations: meta.annotations,
                finalizers: meta.finalizers,
                owner_references: Some(vec![controller_reference(self.set)]),
                ..Default::default()
            },
            spec: Some(spec),
            status: None,
        }
    }

    async fn execute(&self, plan: Plan<'_>, hash: &str) -> anyhow::Result<()> {
        if plan.create_on.is_empty() && plan.delete.is_empty() {
            return Ok(());
        }
        let adds = i64::try_from(plan.create_on.len()).unwrap_or(i64::MAX);
        let deletes = i64::try_from(plan.delete.len()).unwrap_or(i64::MAX);
        self.r.expectations.expect(self.key, adds, deletes);
        let mut first_error: Option<anyhow::Error> = None;

        let deletions = futures::future::join_all(plan.delete.iter().map(|pod| async move {
            let name = pod.name.as_str();
            let result = self.pods_api.delete(name, &DeleteParams::default()).await;
            (name, result)
        }))
        .await;
        for (name, result) in deletions {
            match result {
                Ok(_) => self.r.recorder.normal(
                    self.set,
                    "SuccessfulDelete",
                    format!("Deleted pod: {name}"),
                ),
                Err(kube::Error::Api(s)) if s.code == 404 => self.r.expectations.deleted(self.key),
                Err(error) => {
                    self.r.expectations.deleted(self.key);
                    self.r.recorder.warning(
                        self.set,
                        "FailedDelete",
                        format!("Error deleting: {}", api_message(&error)),
                    );
                    first_error.get_or_insert(
                        anyhow::Error::new(error).context(format!("deleting pod {name}")),
                    );
                }
            }
        }

        // Slow start: 1, 2, 4, … pods at a time, stopping at the first failing batch.
        let mut batch = 1;
        let mut rest = plan.create_on.as_slice();
        while !rest.is_empty() {
            let (now, later) = rest.split_at(batch.min(rest.len()));
            rest = later;
            let results = futures::future::join_all(now.iter().map(|node| {
                let pod = self.new_pod(node, hash);
                async move {
                    crate::pod_creation::create(&self.r.client, self.key.namespace.as_str(), &pod)
                        .await
                }
            }))
            .await;
            let mut failed = false;
            for result in results {
                match result {
                    Ok(name) => self.r.recorder.normal(
                        self.set,
                        "SuccessfulCreate",
                        format!("Created pod: {name}"),
                    ),
                    Err(error) => {
                        failed = true;
                        self.r.expectations.created(self.key);
                        self.r.recorder.warning(
                            self.set,
                            "FailedCreate",
                            format!("Error creating: {}", api_message(&error)),
                        );
                        first_error
                            .get_or_insert(anyhow::Error::new(error).context("creating a pod"));
                    }
                }
            }
            if failed {
                for _ in rest {
                    self.r.expectations.created(self.key);
                }
                break;
            }
            batch *= 2;
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    async fn update_status(
        &self,
        nodes: &[Arc<Node>],
        by_node: &PodsByNode<'_>,
        hash: &str,
        collision_count: i32,
    ) -> anyhow::Result<Action> {
        let template = self.spec.template.spec.clone().unwrap_or_default();
        let now = self.r.ctx.now();
        let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
        let (mut ready, mut available, mut updated) = (0, 0, 0);
        let mut requeue: Option<Duration> = None;
        for node in nodes {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let pods = by_node.get(name).map(Vec::as_slice).unwrap_or_default();
            let fit = placement::fit(&template, node);
            if fit.should_run {
                desired += 1;
                if pods.is_empty() {
                    continue;
                }
                current += 1;
                let newest = pods.iter().find(|p| p.is_updated(hash));
                let pod = newest.unwrap_or(&pods[0]);
                if pod.lifecycle.is_ready() {
                    ready += 1;
                    match pod.lifecycle.until_available(self.min_ready_seconds(), now) {
                        Some(wait) if wait.is_zero() => available += 1,
                        Some(wait) => {
                            let wait = wait + Duration::from_secs(1);
                            requeue = Some(requeue.map_or(wait, |r| r.min(wait)));
                        }
                        None => {}
                    }
                }
                if newest.is_some() {
                    updated += 1;
                }
            } else if !pods.is_empty() {
                misscheduled += 1;
            }
        }
        let old = self.set.status.clone().unwrap_or_default();
        let status = DaemonSetStatus {
            collision_count: Some(collision_count)
                .filter(|c| *c != 0)
                .or(old.collision_count.map(|_| collision_count)),
            conditions: old.conditions.clone(),
            current_number_scheduled: current,
            desired_number_scheduled: desired,
            number_available: Some(available),
            number_misscheduled: misscheduled,
            number_ready: ready,
            number_unavailable: Some((desired - available).max(0)),
            observed_generation: self.set.metadata.generation,
            updated_number_scheduled: Some(updated),
        };
        let action = requeue.map_or(Action::Done, Action::RequeueAfter);
        if status == old {
            return Ok(action);
        }
        let mut set = self.set.clone();
        set.status = Some(status);
        let api: Api<DaemonSet> = Api::namespaced(self.r.client.clone(), self.namespace());
        match api
            .replace_status(self.name(), &PostParams::default(), &set)
            .await
        {
            Ok(_) => Ok(action),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(action),
            Err(error) => Err(error).context("updating the status"),
        }
    }
}

/// An int-or-percent of `total` (percentages rounded up), `default` when unset.
fn scaled(value: Option<&IntOrString>, total: i32, default: i32) -> i32 {
    match value {
        None => default,
        Some(IntOrString::Int(n)) => (*n).max(0),
        Some(IntOrString::String(s)) => {
            let percent: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            i32::try_from((percent * i64::from(total) + 99) / 100).unwrap_or(i32::MAX)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn scaling() {
        assert_eq!(scaled(None, 10, 1), 1);
        assert_eq!(scaled(Some(&IntOrString::String("25%".into())), 10, 1), 3);
        assert_eq!(scaled(Some(&IntOrString::Int(2)), 10, 1), 2);
        assert_eq!(scaled(Some(&IntOrString::String("0%".into())), 10, 0), 0);
    }
}
