//! The CronJob controller (kube-controller-manager's `cronjob-controller`): creates a Job
//! from `spec.jobTemplate` at each scheduled time.
//!
//! - Schedules: see [`schedule`]; `spec.timeZone` names an IANA zone (the system's tz
//!   database), else UTC (or a `TZ=` prefix). Unparseable schedules and unknown zones get
//!   Warning events (UnparseableSchedule, UnknownTimeZone).
//! - Each due time gives one Job named `<cronjob>-<scheduled minutes since the epoch>`,
//!   annotated `batch.kubernetes.io/cronjob-scheduled-timestamp` (RFC 3339 in the zone),
//!   owned by the CronJob. Only the most recent missed time runs; more than 100 missed
//!   times get a TooManyMissedTimes warning; a time older than `startingDeadlineSeconds`
//!   is skipped (MissSchedule).
//! - `concurrencyPolicy`: Allow; Forbid (JobAlreadyActive, nothing started while a Job
//!   runs); Replace (active Jobs deleted first).
//! - `suspend` stops new Jobs. `status.active` lists running Jobs; finished ones leave it
//!   (SawCompletedJob) and set `lastSuccessfulTime`; vanished ones too (MissingJob).
//!   `lastScheduleTime` is the latest scheduled time run.
//! - Finished Jobs beyond `successfulJobsHistoryLimit` (3) / `failedJobsHistoryLimit` (1)
//!   are deleted, oldest first (SuccessfulDelete "Deleted job …").
//! - The CronJob is requeued for its next scheduled time by the controller's clock.

pub mod schedule;

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, DeleteParams, PostParams};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Informer, ObjectKey};
use schedule::Schedule;
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "cronjob-controller";

/// Jobs by their controller reference's UID.
const JOBS_BY_OWNER: &str = "controller-uid";

pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

pub struct CronJobReconciler {
    cronjobs: Arc<Informer<CronJob>>,
    jobs: Arc<Informer<Job>>,
    client: kube::Client,
    recorder: Recorder,
    ctx: Arc<Context>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let cronjobs = ctx.informers.get::<CronJob>();
    let jobs = ctx.informers.get::<Job>();
    jobs.add_index(JOBS_BY_OWNER, |j: &Job| {
        crate::ownership::controller_of(&j.metadata)
            .map(|r| r.uid.clone())
            .into_iter()
            .collect()
    });
    let client = ctx.client_for(NAME).await?;
    let reconciler = Arc::new(CronJobReconciler {
        cronjobs: cronjobs.clone(),
        jobs: jobs.clone(),
        client,
        recorder: ctx.recorder(NAME),
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    cronjobs.on_change({
        let queue = queue.clone();
        move |change| queue.add(ObjectKey::of(change.object().as_ref()))
    });
    jobs.on_change(move |change| {
        let job = change.object();
        if let Some(owner) = crate::ownership::controller_of(&job.metadata)
            && owner.kind == "CronJob"
        {
            queue.add(ObjectKey::new(
                job.metadata.namespace.clone().unwrap_or_default(),
                owner.name.clone(),
            ));
        }
    });
    cronjobs.wait_synced().await;
    jobs.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

/// The finished condition of a Job (`Complete` or `Failed`), if it has finished.
fn finished(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    ["Complete", "Failed"].into_iter().find(|type_| {
        conditions
            .iter()
            .any(|c| c.type_ == *type_ && c.status == "True")
    })
}

/// The name of the Job for the time `scheduled`.
pub fn job_name(cronjob: &str, scheduled: jiff::Timestamp) -> String {
    format!("{cronjob}-{}", scheduled.as_second().div_euclid(60))
}

fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".to_string()),
        kind: Some("Job".to_string()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// The Job to create for `cronjob` at `scheduled` (`stamp` in the schedule's zone).
fn job_for(cronjob: &CronJob, scheduled: jiff::Timestamp, stamp: String) -> Job {
    let template = cronjob
        .spec
        .as_ref()
        .map(|s| s.job_template.clone())
        .unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP.to_string(), stamp);
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(
                cronjob.metadata.name.as_deref().unwrap_or_default(),
                scheduled,
            )),
            namespace: cronjob.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![crate::ownership::controller_reference(cronjob)]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

impl Reconciler for CronJobReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(cronjob) = self.cronjobs.get_key(key) else {
            return Ok(Action::Done);
        };
        let mut cronjob = (*cronjob).clone();
        let old_status = cronjob.status.clone().unwrap_or_default();
        let mut status = old_status.clone();
        let (action, changed) = self.sync(&mut cronjob, &mut status, key).await?;
        if changed || status != old_status {
            cronjob.status = Some(status);
            let api: Api<CronJob> = Api::namespaced(self.client.clone(), &key.namespace);
            api.replace_status(&key.name, &PostParams::default(), &cronjob)
                .await
                .with_context(|| format!("updating the status of cronjob {key}"))?;
        }
        Ok(action)
    }
}

impl CronJobReconciler {
    async fn sync(
        &self,
        cronjob: &mut CronJob,
        status: &mut CronJobStatus,
        key: &ObjectKey,
    ) -> anyhow::Result<(Action, bool)> {
        let uid = cronjob.metadata.uid.clone().unwrap_or_default();
        let spec = cronjob.spec.clone().unwrap_or_default();
        let jobs_api: Api<Job> = Api::namespaced(self.client.clone(), &key.namespace);
        let children: Vec<Arc<Job>> = self
            .jobs
            .by_index(JOBS_BY_OWNER, &uid)
            .into_iter()
            .filter(|j| crate::ownership::controller_of(&j.metadata).is_some_and(|r| r.uid == uid))
            .collect();

        // Reconcile status.active with the Jobs.
        let mut active = status.active.take().unwrap_or_default();
        for job in &children {
            let job_uid = job.metadata.uid.clone().unwrap_or_default();
            let listed = active
                .iter()
                .any(|r| r.uid.as_deref() == Some(job_uid.as_str()));
            match (listed, finished(job)) {
                (true, Some(condition)) => {
                    active.retain(|r| r.uid.as_deref() != Some(job_uid.as_str()));
                    self.recorder.normal(
                        &*cronjob,
                        "SawCompletedJob",
                        format!(
                            "Saw completed job: {}, condition: {condition}",
                            job.metadata.name.as_deref().unwrap_or_default()
                        ),
                    );
                }
                (false, None) => {
                    // A Job this controller created but whose status update was lost.
                    let scheduled = job
                        .metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(SCHEDULED_TIMESTAMP));
                    if scheduled && job.metadata.deletion_timestamp.is_none() {
                        active.push(reference(job));
                    } else {
                        self.recorder.warning(
                            &*cronjob,
                            "UnexpectedJob",
                            format!(
                                "Saw a job that the controller did not create or forgot: {}",
                                job.metadata.name.as_deref().unwrap_or_default()
                            ),
                        );
                    }
                }
                _ => {}
            }
            if finished(job) == Some("Complete")
                && let Some(done) = job.status.as_ref().and_then(|s| s.completion_time.clone())
                && status
                    .last_successful_time
                    .as_ref()
                    .is_none_or(|t| t.0 < done.0)
            {
                status.last_successful_time = Some(done);
            }
        }
        // Active entries whose Job is gone (asked of the API: the cache may lag).
        let mut kept = vec![];
        for entry in active {
            let known = children
                .iter()
                .any(|j| j.metadata.uid.is_some() && j.metadata.uid == entry.uid);
            if known {
                kept.push(entry);
                continue;
            }
            let name = entry.name.clone().unwrap_or_default();
            match jobs_api
                .get_opt(&name)
                .await
                .context("reading an active job")?
            {
                Some(job) if job.metadata.uid == entry.uid => kept.push(entry),
                _ => self.recorder.normal(
                    &*cronjob,
                    "MissingJob",
                    format!("Active job went missing: {name}"),
                ),
            }
        }
        status.active = Some(kept).filter(|a| !a.is_empty());

        let mut changed = false;
        if cronjob.metadata.deletion_timestamp.is_some() {
            return Ok((Action::Done, changed));
        }
        self.clean_up_history(cronjob, &spec, &children, &jobs_api)
            .await?;
        if spec.suspend == Some(true) {
            return Ok((Action::Done, changed));
        }
        let zone_name = spec.time_zone.clone();
        let parsed = match Schedule::parse(&spec.schedule, zone_name.is_some()) {
            Ok(s) => s,
            Err(e) => {
                self.recorder.warning(
                    &*cronjob,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {:?} : {e}", spec.schedule),
                );
                return Ok((Action::Done, changed));
            }
        };
        let tz = match zone_name.as_deref().or(parsed.zone.as_deref()) {
            None => jiff::tz::TimeZone::UTC,
            Some(name) => match schedule::time_zone(name) {
                Ok(tz) => tz,
                Err(e) => {
                    self.recorder.warning(
                        &*cronjob,
                        "UnknownTimeZone",
                        format!("invalid timeZone: {name:?}: {e}"),
                    );
                    return Ok((Action::Done, changed));
                }
            },
        };
        let now = self.ctx.now();
        let mut earliest = status
            .last_schedule_time
            .as_ref()
            .map(|t| t.0)
            .or_else(|| cronjob.metadata.creation_timestamp.as_ref().map(|t| t.0))
            .unwrap_or(now);
        if let Some(seconds) = spec.starting_deadline_seconds
            && let Ok(deadline) = now.checked_sub(jiff::SignedDuration::from_secs(seconds))
            && deadline > earliest
        {
            earliest = deadline;
        }
        let requeue = |now: jiff::Timestamp| {
            parsed
                .next(now, &tz)
                .and_then(|next| Duration::try_from(next.duration_since(now)).ok())
                .map_or(Action::Done, |d| {
                    Action::RequeueAfter(d + Duration::from_millis(100))
                })
        };
        let (scheduled, missed) = schedule::most_recent(&parsed, &tz, earliest, now);
        let Some(scheduled) = scheduled else {
            return Ok((requeue(now), changed));
        };
        if missed > 100 {
            self.recorder.warning(
                &*cronjob,
                "TooManyMissedTimes",
                format!("too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew"),
            );
        }
        if let Some(seconds) = spec.starting_deadline_seconds
            && scheduled + jiff::SignedDuration::from_secs(seconds) < now
        {
            self.recorder.warning(
                &*cronjob,
                "MissSchedule",
                format!(
                    "Missed scheduled time to start a job: {}",
                    jiff::fmt::rfc2822::to_string(&scheduled.to_zoned(jiff::tz::TimeZone::UTC))
                        .unwrap_or_default()
                ),
            );
            return Ok((requeue(now), changed));
        }
        let name = job_name(key.name.as_str(), scheduled);
        let active = status.active.clone().unwrap_or_default();
        if active
            .iter()
            .any(|r| r.name.as_deref() == Some(name.as_str()))
            || status
                .last_schedule_time
                .as_ref()
                .is_some_and(|t| t.0 == scheduled)
        {
            // Already started (its status update may have been lost).
            if status
                .last_schedule_time
                .as_ref()
                .is_none_or(|t| t.0 < scheduled)
            {
                status.last_schedule_time = Some(Time(scheduled));
            }
            return Ok((requeue(now), changed));
        }
        match spec.concurrency_policy.as_deref() {
            Some("Forbid") if !active.is_empty() => {
                self.recorder.normal(
                    &*cronjob,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                );
                return Ok((requeue(now), changed));
            }
            Some("Replace") => {
                for entry in &active {
                    let job_name = entry.name.clone().unwrap_or_default();
                    match jobs_api
                        .delete(&job_name, &DeleteParams::background())
                        .await
                    {
                        Ok(_) => self.recorder.normal(
                            &*cronjob,
                            "SuccessfulDelete",
                            format!("Deleted job {job_name}"),
                        ),
                        Err(kube::Error::Api(s)) if s.code == 404 => {}
                        Err(e) => {
                            self.recorder.warning(
                                &*cronjob,
                                "FailedDelete",
                                format!("Deleted job: {e}"),
                            );
                            return Err(e).context("replacing an active job");
                        }
                    }
                }
                status.active = None;
                changed = true;
            }
            _ => {}
        }
        let stamp = scheduled
            .to_zoned(tz.clone())
            .strftime("%Y-%m-%dT%H:%M:%S%:z")
            .to_string();
        let stamp = stamp.replace("+00:00", "Z");
        let job = job_for(cronjob, scheduled, stamp);
        let created = match jobs_api.create(&PostParams::default(), &job).await {
            Ok(created) => {
                self.recorder
                    .normal(&*cronjob, "SuccessfulCreate", format!("Created job {name}"));
                created
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                match jobs_api
                    .get_opt(&name)
                    .await
                    .context("reading an existing job")?
                {
                    Some(existing)
                        if crate::ownership::controller_of(&existing.metadata)
                            .is_some_and(|r| r.uid == uid) =>
                    {
                        existing
                    }
                    _ => return Ok((requeue(now), changed)),
                }
            }
            Err(e) => {
                let message = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                };
                self.recorder.warning(
                    &*cronjob,
                    "FailedCreate",
                    format!("Error creating job: {message}"),
                );
                return Err(e).context("creating a job");
            }
        };
        let mut active = status.active.take().unwrap_or_default();
        if finished(&created).is_none() && !active.iter().any(|r| r.uid == created.metadata.uid) {
            active.push(reference(&created));
        }
        status.active = Some(active).filter(|a| !a.is_empty());
        status.last_schedule_time = Some(Time(scheduled));
        changed = true;
        Ok((requeue(now), changed))
    }

    /// Deletes finished Jobs beyond the history limits, oldest first.
    async fn clean_up_history(
        &self,
        cronjob: &CronJob,
        spec: &k8s_openapi::api::batch::v1::CronJobSpec,
        children: &[Arc<Job>],
        api: &Api<Job>,
    ) -> anyhow::Result<()> {
        let limits = [
            ("Complete", spec.successful_jobs_history_limit.unwrap_or(3)),
            ("Failed", spec.failed_jobs_history_limit.unwrap_or(1)),
        ];
        for (condition, limit) in limits {
            let mut done: Vec<&Arc<Job>> = children
                .iter()
                .filter(|j| {
                    j.metadata.deletion_timestamp.is_none() && finished(j) == Some(condition)
                })
                .collect();
            let limit = limit.max(0) as usize;
            if done.len() <= limit {
                continue;
            }
            done.sort_by_key(|j| {
                (
                    j.status
                        .as_ref()
                        .and_then(|s| s.start_time.as_ref())
                        .map(|t| t.0),
                    j.metadata.creation_timestamp.as_ref().map(|t| t.0),
                    j.metadata.name.clone(),
                )
            });
            let excess = done.len() - limit;
            for job in done.into_iter().take(excess) {
                let name = job.metadata.name.clone().unwrap_or_default();
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => self.recorder.normal(
                        cronjob,
                        "SuccessfulDelete",
                        format!("Deleted job {name}"),
                    ),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(e).with_context(|| format!("deleting job {name}")),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn job_names_count_minutes() {
        let t: jiff::Timestamp = "2026-11-24T02:00:00Z".parse().unwrap();
        assert_eq!(
            job_name("hello", t),
            format!("hello-{}", t.as_second() / 60)
        );
        assert_eq!(job_name("hello", t), "hello-29924760");
    }
}
