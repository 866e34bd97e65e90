//! The Job controller (kube-controller-manager's `job-controller`): runs a Job's pods to
//! completion.
//!
//! - Pods come from `spec.template` with the `batch.kubernetes.io/controller-uid` and
//!   `batch.kubernetes.io/job-name` labels (and the legacy `controller-uid`/`job-name`), a
//!   controller reference and the `batch.kubernetes.io/job-tracking` finalizer; Indexed
//!   Jobs' pods carry `batch.kubernetes.io/job-completion-index` (annotation and label),
//!   hostname `<job>-<index>` and `JOB_COMPLETION_INDEX`.
//! - Finished pods are counted as Kubernetes tracks them: first recorded by UID in
//!   `status.uncountedTerminatedPods`, then their finalizer is removed, then they move into
//!   `status.succeeded`/`failed` (and `completedIndexes`).
//! - `parallelism`/`completions` decide how many pods run; replacements for failed pods
//!   wait out the pod-failure backoff (10 s doubling, at most 6 minutes).
//! - Failure: more than `backoffLimit` failed pods (BackoffLimitExceeded), running longer
//!   than `activeDeadlineSeconds` (DeadlineExceeded), or a `podFailurePolicy` FailJob rule
//!   (PodFailurePolicy; Ignore rules leave the pod uncounted). Success: `completions`
//!   succeeded pods (or indexes), or for Jobs without completions one success and no
//!   active pods. As in 1.33 the controller first adds FailureTarget / SuccessCriteriaMet,
//!   removes the remaining pods, and adds Failed / Complete once none is left.
//! - `suspend` deletes active pods and sets the Suspended condition; resuming resets
//!   `startTime`.
//! - Events: SuccessfulCreate "Created pod: …", FailedCreate, SuccessfulDelete
//!   "Deleted pod: …", Completed "Job completed", BackoffLimitExceeded, DeadlineExceeded,
//!   PodFailurePolicy, Suspended, Resumed.
//!
//! A sync reads the Job's pods one at a time (by the controller-UID index) and keeps
//! each as a [`member::Member`]; a deleted Job's orphans are found by visiting its
//! namespace.

mod indexes;
mod member;
mod pods;

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use member::{Member, Phase};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const NAME: &str = "job-controller";

/// The index of pods by their controller reference's UID (shared with other controllers).
pub use crate::ownership::CONTROLLER_UID as CONTROLLER_UID_INDEX;

/// How long unfulfilled expectations hold a Job back (as Kubernetes' 5 minutes).
const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Expected {
    creations: i64,
    deletions: i64,
    since: Option<Instant>,
}

/// Bookkeeping against a stale cache, per Job UID.
#[derive(Default)]
struct Tracking {
    expected: HashMap<String, Expected>,
    /// Pods whose tracking finalizer this controller removed, until the cache agrees.
    finalizers_removed: HashMap<String, HashSet<String>>,
    /// The Job as last written by this controller.
    written: HashMap<String, Arc<Job>>,
}

pub struct JobReconciler {
    jobs: Arc<Informer<Job>>,
    pods: Arc<Informer<Pod, Compacted>>,
    client: kube::Client,
    recorder: Recorder,
    ctx: Arc<Context>,
    tracking: Arc<Mutex<Tracking>>,
}

fn controller_uid(pod: &Pod) -> Option<String> {
    crate::ownership::controller_of(&pod.metadata)
        .filter(|r| r.kind == "Job")
        .map(|r| r.uid.clone())
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let jobs = ctx.informers.get::<Job>();
    let pods = ctx.informers.compacted::<Pod>();
    pods.add_index(CONTROLLER_UID_INDEX, |p: &Pod| {
        crate::ownership::controller_uid(&p.metadata)
    });
    let client = ctx.client_for(NAME).await?;
    let tracking: Arc<Mutex<Tracking>> = Default::default();
    let reconciler = Arc::new(JobReconciler {
        jobs: jobs.clone(),
        pods: pods.clone(),
        client,
        recorder: ctx.recorder(NAME),
        ctx: ctx.clone(),
        tracking: tracking.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    jobs.on_change({
        let queue = queue.clone();
        let tracking = tracking.clone();
        move |change| {
            if let Change::Deleted(job) = change {
                let uid = job.metadata.uid.clone().unwrap_or_default();
                let mut t = tracking.lock().unwrap_or_else(|e| e.into_inner());
                t.expected.remove(&uid);
                t.written.remove(&uid);
                t.finalizers_removed.remove(&uid);
            }
            queue.add(ObjectKey::of(change.object().as_ref()))
        }
    });
    pods.on_change(move |change| {
        let pod = change.object();
        let Some(owner) = crate::ownership::controller_of(&pod.metadata) else {
            return;
        };
        if owner.kind != "Job" {
            return;
        }
        {
            let mut t = tracking.lock().unwrap_or_else(|e| e.into_inner());
            let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
            match change {
                Change::Added(_) => {
                    if let Some(e) = t.expected.get_mut(&owner.uid) {
                        e.creations -= 1;
                    }
                }
                Change::Updated { old, new } => {
                    if old.metadata.deletion_timestamp.is_none()
                        && new.metadata.deletion_timestamp.is_some()
                        && let Some(e) = t.expected.get_mut(&owner.uid)
                    {
                        e.deletions -= 1;
                    }
                }
                Change::Deleted(old) => {
                    if old.metadata.deletion_timestamp.is_none()
                        && let Some(e) = t.expected.get_mut(&owner.uid)
                    {
                        e.deletions -= 1;
                    }
                }
            }
            if (matches!(change, Change::Deleted(_)) || !pods::has_finalizer(pod))
                && let Some(set) = t.finalizers_removed.get_mut(&owner.uid)
            {
                set.remove(&pod_uid);
            }
        }
        queue.add(ObjectKey::new(
            pod.metadata.namespace.clone().unwrap_or_default(),
            owner.name.clone(),
        ));
    });
    jobs.wait_synced().await;
    pods.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

fn condition_true(status: &JobStatus, type_: &str) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == type_ && c.status == "True")
}

fn find_condition<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// Sets a condition, keeping its transition time when the status does not change.
fn set_condition(
    status: &mut JobStatus,
    type_: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let now = Time(now);
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_) {
        if c.status != value {
            c.last_transition_time = Some(now.clone());
        }
        c.status = value.to_string();
        c.reason = Some(reason.to_string());
        c.message = Some(message.to_string());
        c.last_probe_time = Some(now);
    } else {
        conditions.push(JobCondition {
            type_: type_.to_string(),
            status: value.to_string(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            last_probe_time: Some(now.clone()),
            last_transition_time: Some(now),
        });
    }
}

/// Whether resourceVersion `a` is newer than `b` (our store's are integers).
fn newer(a: &Job, b: &Job) -> bool {
    let rv = |j: &Job| {
        j.metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    matches!((rv(a), rv(b)), (Some(a), Some(b)) if a > b)
}

impl Reconciler for JobReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(cached) = self.jobs.get_key(key) else {
            self.release_orphans(key).await?;
            return Ok(Action::Done);
        };
        let uid = cached.metadata.uid.clone().unwrap_or_default();
        let job: Job = {
            let t = self.tracking.lock().unwrap_or_else(|e| e.into_inner());
            match t.written.get(&uid) {
                Some(w) if newer(w, &cached) => (**w).clone(),
                _ => (*cached).clone(),
            }
        };
        if job
            .spec
            .as_ref()
            .and_then(|s| s.managed_by.as_deref())
            .is_some_and(|m| m != "kubernetes.io/job-controller")
        {
            return Ok(Action::Done);
        }
        self.sync(job, &uid).await
    }
}

impl JobReconciler {
    fn api_pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Removes the tracking finalizer from pods whose Job is gone (the namespace's pods
    /// are read one at a time; only those to release are kept, reduced).
    async fn release_orphans(&self, key: &ObjectKey) -> anyhow::Result<()> {
        let mut orphans: Vec<(Member, Option<String>)> = vec![];
        self.pods.visit_namespace(&key.namespace, |p| {
            if pods::has_finalizer(&p)
                && crate::ownership::controller_of(&p.metadata)
                    .is_some_and(|r| r.kind == "Job" && r.name == key.name)
            {
                orphans.push((Member::of(&p, None), controller_uid(&p)));
            }
        });
        for (pod, job_uid) in orphans {
            if let Some(uid) = &job_uid {
                let mut t = self.tracking.lock().unwrap_or_else(|e| e.into_inner());
                t.expected.remove(uid);
                t.written.remove(uid);
                t.finalizers_removed.remove(uid);
            }
            self.remove_finalizer(&pod, job_uid.as_deref()).await?;
        }
        Ok(())
    }

    /// Removes the tracking finalizer from `pod` (a pod of the Job `job_uid`).
    async fn remove_finalizer(&self, pod: &Member, job_uid: Option<&str>) -> anyhow::Result<()> {
        if !pod.has_finalizer {
            return Ok(());
        }
        let name = &pod.name;
        let patch = serde_json::json!({"metadata": {
            "$deleteFromPrimitiveList/finalizers": [pods::TRACKING_FINALIZER],
        }});
        let api = self.api_pods(&pod.namespace);
        match api
            .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(e).with_context(|| format!("removing the finalizer of pod {name}"));
            }
        }
        if let Some(job_uid) = job_uid {
            self.tracking
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .finalizers_removed
                .entry(job_uid.to_string())
                .or_default()
                .insert(pod.uid.clone());
        }
        Ok(())
    }
}

fn non_empty(v: Vec<String>) -> Option<Vec<String>> {
    if v.is_empty() { None } else { Some(v) }
}

fn positive(n: i32) -> Option<i32> {
    if n > 0 { Some(n) } else { None }
}

/// Why a Job ends: (condition, reason, message).
struct Ending {
    failed: bool,
    reason: String,
    message: String,
}

impl JobReconciler {
    fn expectations_satisfied(&self, uid: &str) -> bool {
        let t = self.tracking.lock().unwrap_or_else(|e| e.into_inner());
        t.expected.get(uid).is_none_or(|e| {
            (e.creations <= 0 && e.deletions <= 0)
                || e.since.is_some_and(|s| s.elapsed() > EXPECTATIONS_TIMEOUT)
        })
    }

    fn expect(&self, uid: &str, creations: i64, deletions: i64) {
        let mut t = self.tracking.lock().unwrap_or_else(|e| e.into_inner());
        let e = t.expected.entry(uid.to_string()).or_default();
        e.creations = e.creations.max(0) + creations;
        e.deletions = e.deletions.max(0) + deletions;
        e.since = Some(Instant::now());
    }

    fn lower(&self, uid: &str, creations: i64, deletions: i64) {
        let mut t = self.tracking.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = t.expected.get_mut(uid) {
            e.creations -= creations;
            e.deletions -= deletions;
        }
    }

    /// Writes `status` when it differs from the Job's, returning the Job as stored.
    async fn write_status(&self, mut job: Job, status: JobStatus) -> anyhow::Result<Job> {
        if job.status.as_ref() == Some(&status) {
            return Ok(job);
        }
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        let name = job.metadata.name.clone().unwrap_or_default();
        job.status = Some(status);
        let api: Api<Job> = Api::namespaced(self.client.clone(), &namespace);
        let stored = api
            .replace_status(&name, &PostParams::default(), &job)
            .await
            .with_context(|| format!("updating the status of job {namespace}/{name}"))?;
        let uid = stored.metadata.uid.clone().unwrap_or_default();
        self.tracking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .written
            .insert(uid, Arc::new(stored.clone()));
        Ok(stored)
    }

    /// Creates `count` pods (with `indexes` for Indexed Jobs) in slow-start batches.
    async fn create_pods(
        &self,
        job: &Job,
        uid: &str,
        count: usize,
        indexes: &[i32],
    ) -> anyhow::Result<usize> {
        if count == 0 {
            return Ok(0);
        }
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        self.expect(uid, count as i64, 0);
        let mut created = 0;
        let mut batch = 1usize;
        let mut error = None;
        while created < count {
            let size = batch.min(count - created);
            let results = futures::future::join_all((created..created + size).map(|i| {
                let pod = pods::from_template(job, indexes.get(i).copied());
                let namespace = namespace.clone();
                async move { crate::pod_creation::create(&self.client, &namespace, &pod).await }
            }))
            .await;
            for result in results {
                match result {
                    Ok(name) => {
                        self.recorder.normal(
                            job,
                            "SuccessfulCreate",
                            format!("Created pod: {name}"),
                        );
                    }
                    Err(e) => {
                        self.lower(uid, 1, 0);
                        let message = match &e {
                            kube::Error::Api(s) => s.message.clone(),
                            other => other.to_string(),
                        };
                        self.recorder.warning(
                            job,
                            "FailedCreate",
                            format!("Error creating: {message}"),
                        );
                        error = Some(e);
                    }
                }
            }
            created += size;
            if error.is_some() {
                self.lower(uid, (count - created) as i64, 0);
                break;
            }
            batch = (batch * 2).min(500);
        }
        match error {
            Some(e) => Err(e).context("creating pods"),
            None => Ok(count),
        }
    }

    /// Deletes `victims`, returning how many were deleted.
    async fn delete_pods(
        &self,
        job: &Job,
        uid: &str,
        victims: &[&Member],
    ) -> anyhow::Result<usize> {
        if victims.is_empty() {
            return Ok(0);
        }
        self.expect(uid, 0, victims.len() as i64);
        let results = futures::future::join_all(victims.iter().map(|pod| async move {
            let api = self.api_pods(&pod.namespace);
            let name = pod.name.clone();
            (
                name.clone(),
                api.delete(&name, &DeleteParams::background()).await,
            )
        }))
        .await;
        let mut deleted = 0;
        let mut error = None;
        for (name, result) in results {
            match result {
                Ok(_) => {
                    deleted += 1;
                    self.recorder
                        .normal(job, "SuccessfulDelete", format!("Deleted pod: {name}"));
                }
                Err(kube::Error::Api(s)) if s.code == 404 => self.lower(uid, 0, 1),
                Err(e) => {
                    self.lower(uid, 0, 1);
                    self.recorder
                        .warning(job, "FailedDelete", format!("Error deleting: {e}"));
                    error = Some(e);
                }
            }
        }
        match error {
            Some(e) => Err(e).context("deleting pods"),
            None => Ok(deleted),
        }
    }

    async fn sync(&self, job: Job, uid: &str) -> anyhow::Result<Action> {
        let now = self.ctx.now();
        let spec = job.spec.clone().unwrap_or_default();
        let mut status = job.status.clone().unwrap_or_default();
        let removed: HashSet<String> = self
            .tracking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finalizers_removed
            .get(uid)
            .cloned()
            .unwrap_or_default();
        // The Job's pods, read one at a time and reduced.
        let policy = spec.pod_failure_policy.as_ref();
        let mut all: Vec<Member> = vec![];
        self.pods.visit_index(CONTROLLER_UID_INDEX, uid, |p| {
            if controller_uid(&p).as_deref() == Some(uid) {
                all.push(Member::of(&p, policy));
            }
        });
        let tracked = |p: &Member| p.has_finalizer && !removed.contains(&p.uid);
        if condition_true(&status, "Complete") || condition_true(&status, "Failed") {
            for pod in all.iter().filter(|p| tracked(p)) {
                self.remove_finalizer(pod, Some(uid)).await?;
            }
            return Ok(Action::Done);
        }
        if !self.expectations_satisfied(uid) {
            return Ok(Action::Done);
        }
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let completions = spec.completions;
        let parallelism = spec.parallelism.unwrap_or(1).max(0) as usize;
        let backoff_limit = spec.backoff_limit.unwrap_or(6);
        let suspended = spec.suspend == Some(true);
        let has_policy = spec.pod_failure_policy.is_some();
        let index_of = |p: &Member| p.index.filter(|i| *i < completions.unwrap_or(0));

        // Count finished pods: record them as uncounted, release them, then count them.
        let mut uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        let mut pending_succeeded = uncounted.succeeded.take().unwrap_or_default();
        let mut pending_failed = uncounted.failed.take().unwrap_or_default();
        let mut completed = indexes::parse(
            status.completed_indexes.as_deref().unwrap_or_default(),
            completions.unwrap_or(0),
        );
        let mut ending: Option<Ending> = find_condition(&status, "FailureTarget")
            .filter(|c| c.status == "True")
            .map(|c| Ending {
                failed: true,
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
            });
        let mut release: Vec<&Member> = vec![];
        let mut new_target = false;
        for pod in all.iter().filter(|p| tracked(p)) {
            let pod_uid = pod.uid.clone();
            if pending_succeeded.contains(&pod_uid) || pending_failed.contains(&pod_uid) {
                release.push(pod);
                continue;
            }
            match pod.phase {
                Phase::Succeeded => {
                    let counts = !indexed || index_of(pod).is_some_and(|i| !completed.contains(&i));
                    if counts {
                        pending_succeeded.push(pod_uid);
                    }
                    release.push(pod);
                }
                phase if phase == Phase::Failed || (pod.is_terminating() && !has_policy) => {
                    let matched = if phase == Phase::Failed {
                        pod.failure_policy.clone()
                    } else {
                        None
                    };
                    match matched {
                        Some((action, _)) if action == "Ignore" => {}
                        Some((action, message)) if action == "FailJob" => {
                            if ending.is_none() {
                                ending = Some(Ending {
                                    failed: true,
                                    reason: "PodFailurePolicy".to_string(),
                                    message,
                                });
                                new_target = true;
                            }
                            pending_failed.push(pod_uid);
                        }
                        _ => {
                            if !(suspended && pod.is_terminating()) {
                                pending_failed.push(pod_uid);
                            }
                        }
                    }
                    release.push(pod);
                }
                _ => {}
            }
        }
        if !release.is_empty() || new_target {
            status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
                succeeded: non_empty(pending_succeeded.clone()),
                failed: non_empty(pending_failed.clone()),
            });
            if new_target && let Some(e) = &ending {
                set_condition(
                    &mut status,
                    "FailureTarget",
                    "True",
                    &e.reason,
                    &e.message,
                    now,
                );
            }
            let stored = self.write_status(job.clone(), status.clone()).await?;
            status = stored.status.clone().unwrap_or_default();
            let results = futures::future::join_all(
                release.iter().map(|p| self.remove_finalizer(p, Some(uid))),
            )
            .await;
            for result in results {
                result?;
            }
        }
        // Move released pods out of the uncounted lists.
        let removed: HashSet<String> = self
            .tracking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finalizers_removed
            .get(uid)
            .cloned()
            .unwrap_or_default();
        let by_uid: HashMap<&str, &Member> = all.iter().map(|p| (p.uid.as_str(), p)).collect();
        let still_tracked = |pod_uid: &String| {
            by_uid
                .get(pod_uid.as_str())
                .is_some_and(|p| p.has_finalizer && !removed.contains(pod_uid))
        };
        let mut succeeded = status.succeeded.unwrap_or(0);
        let mut failed = status.failed.unwrap_or(0);
        pending_succeeded.retain(|u| {
            if still_tracked(u) {
                return true;
            }
            succeeded += 1;
            if indexed && let Some(i) = by_uid.get(u.as_str()).and_then(|p| index_of(p)) {
                completed.insert(i);
            }
            false
        });
        pending_failed.retain(|u| {
            if still_tracked(u) {
                return true;
            }
            failed += 1;
            false
        });
        if indexed {
            succeeded = completed.len() as i32;
            status.completed_indexes = Some(indexes::format(&completed)).filter(|s| !s.is_empty());
        }
        status.succeeded = positive(succeeded);
        status.failed = positive(failed);
        status.uncounted_terminated_pods = Some(UncountedTerminatedPods {
            succeeded: non_empty(pending_succeeded.clone()),
            failed: non_empty(pending_failed.clone()),
        });

        let mut active: Vec<&Member> = all
            .iter()
            .filter(|p| !p.is_finished() && !p.deleting)
            .collect();
        let mut terminating = all.iter().filter(|p| p.is_terminating()).count();
        let mut requeue: Option<Duration> = None;
        let mut wait = |d: Duration| requeue = Some(requeue.map_or(d, |r: Duration| r.min(d)));

        // Has the Job failed or succeeded?
        if ending.is_none() && !condition_true(&status, "SuccessCriteriaMet") {
            if failed > backoff_limit {
                ending = Some(Ending {
                    failed: true,
                    reason: "BackoffLimitExceeded".to_string(),
                    message: "Job has reached the specified backoff limit".to_string(),
                });
            } else if let (Some(seconds), Some(start), false) =
                (spec.active_deadline_seconds, &status.start_time, suspended)
            {
                let deadline = start.0 + jiff::SignedDuration::from_secs(seconds);
                if now >= deadline {
                    ending = Some(Ending {
                        failed: true,
                        reason: "DeadlineExceeded".to_string(),
                        message: "Job was active longer than specified deadline".to_string(),
                    });
                } else if let Ok(left) = Duration::try_from(deadline.duration_since(now)) {
                    wait(left);
                }
            }
            if ending.is_some() {
                new_target = true;
            }
        }
        if ending.is_none() {
            let pending = pending_succeeded.len() as i32;
            let done = match (indexed, completions) {
                (true, Some(c)) => completed.len() as i32 >= c,
                (_, Some(c)) => succeeded >= c,
                (_, None) => succeeded > 0 && active.is_empty() && pending == 0,
            } || condition_true(&status, "SuccessCriteriaMet");
            if done {
                ending = Some(Ending {
                    failed: false,
                    reason: "CompletionsReached".to_string(),
                    message: "Reached expected number of succeeded pods".to_string(),
                });
            }
        }

        let mut created = 0usize;
        if let Some(e) = &ending {
            let target = if e.failed {
                "FailureTarget"
            } else {
                "SuccessCriteriaMet"
            };
            if !condition_true(&status, target) || new_target {
                set_condition(&mut status, target, "True", &e.reason, &e.message, now);
            }
            let deleted = self.delete_pods(&job, uid, &active).await?;
            terminating += deleted;
            active.clear();
            let uncounted_left = !pending_succeeded.is_empty() || !pending_failed.is_empty();
            if terminating == 0 && !uncounted_left {
                let type_ = if e.failed { "Failed" } else { "Complete" };
                set_condition(&mut status, type_, "True", &e.reason, &e.message, now);
                if e.failed {
                    self.recorder.warning(&job, &e.reason, e.message.clone());
                } else {
                    status.completion_time = Some(Time(now));
                    self.recorder.normal(&job, "Completed", "Job completed");
                }
            }
        } else if suspended {
            let deleted = self.delete_pods(&job, uid, &active).await?;
            terminating += deleted;
            active.clear();
            if !condition_true(&status, "Suspended") {
                set_condition(
                    &mut status,
                    "Suspended",
                    "True",
                    "JobSuspended",
                    "Job suspended",
                    now,
                );
                self.recorder.normal(&job, "Suspended", "Job suspended");
            }
        } else {
            if condition_true(&status, "Suspended") {
                set_condition(
                    &mut status,
                    "Suspended",
                    "False",
                    "JobResumed",
                    "Job resumed",
                    now,
                );
                self.recorder.normal(&job, "Resumed", "Job resumed");
                status.start_time = Some(Time(now));
            }
            if status.start_time.is_none() {
                status.start_time = Some(Time(now));
                if let Some(seconds) = spec.active_deadline_seconds {
                    wait(Duration::from_secs(seconds.max(0) as u64));
                }
            }
            // How many pods should run, and which indexes.
            let mut excess: Vec<&Member> = vec![];
            let mut missing: Vec<i32> = vec![];
            let running: usize;
            if indexed {
                let mut seen = BTreeSet::new();
                for pod in &active {
                    match index_of(pod) {
                        Some(i) if !completed.contains(&i) && seen.insert(i) => {}
                        _ => excess.push(pod),
                    }
                }
                let succeeded_now: BTreeSet<i32> = all
                    .iter()
                    .filter(|p| p.phase == Phase::Succeeded)
                    .filter_map(index_of)
                    .collect();
                missing = (0..completions.unwrap_or(0))
                    .filter(|i| {
                        !completed.contains(i) && !seen.contains(i) && !succeeded_now.contains(i)
                    })
                    .collect();
                running = seen.len();
                if running > parallelism {
                    let mut extra: Vec<&Member> = active
                        .iter()
                        .filter(|p| index_of(p).is_some_and(|i| seen.contains(&i)))
                        .copied()
                        .collect();
                    extra.sort_by_key(|p| std::cmp::Reverse(index_of(p)));
                    excess.extend(extra.into_iter().take(running - parallelism));
                }
                missing.truncate(parallelism.saturating_sub(running));
            } else {
                let done = (succeeded + pending_succeeded.len() as i32).max(0) as usize;
                let want = match completions {
                    Some(c) => parallelism.min((c.max(0) as usize).saturating_sub(done)),
                    None if done > 0 => active.len().min(parallelism),
                    None => parallelism,
                };
                if active.len() > want {
                    let mut sorted = active.clone();
                    sorted.sort_by_key(|p| (p.ready, std::cmp::Reverse(p.created)));
                    excess = sorted.into_iter().take(active.len() - want).collect();
                }
                running = active.len();
                missing = vec![-1; want.saturating_sub(running)];
            }
            if !excess.is_empty() {
                let deleted = self.delete_pods(&job, uid, &excess).await?;
                terminating += deleted;
                let gone: HashSet<&str> = excess.iter().map(|p| p.uid.as_str()).collect();
                active.retain(|p| !gone.contains(p.uid.as_str()));
            }
            if !missing.is_empty() {
                // The pod-failure backoff before replacing failed pods.
                let failures = failed + pending_failed.len() as i32;
                let last_failure = all
                    .iter()
                    .filter(|p| p.phase == Phase::Failed)
                    .filter_map(|p| p.finished)
                    .max();
                let delay = pods::backoff(failures);
                let ready_at = last_failure
                    .map(|t| t + jiff::SignedDuration::try_from(delay).unwrap_or_default());
                match ready_at {
                    Some(at) if failures > 0 && at > now => {
                        if let Ok(left) = Duration::try_from(at.duration_since(now)) {
                            wait(left);
                        }
                    }
                    _ => {
                        let indexes: Vec<i32> = if indexed { missing.clone() } else { vec![] };
                        status = self
                            .write_status(job.clone(), status.clone())
                            .await?
                            .status
                            .unwrap_or_default();
                        created = self.create_pods(&job, uid, missing.len(), &indexes).await?;
                    }
                }
            }
        }
        let ready = active.iter().filter(|p| p.ready).count();
        status.active = positive((active.len() + created) as i32);
        status.ready = Some(ready as i32);
        status.terminating = Some(terminating as i32);
        let latest = self
            .tracking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .written
            .get(uid)
            .cloned();
        let base = match latest {
            Some(w) if newer(&w, &job) => (*w).clone(),
            _ => job,
        };
        self.write_status(base, status).await?;
        Ok(requeue.map_or(Action::Done, Action::RequeueAfter))
    }
}
