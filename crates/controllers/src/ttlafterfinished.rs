//! The TTL-after-finished controller (kube-controller-manager's
//! `ttl-after-finished-controller`): deletes a Job whose `spec.ttlSecondsAfterFinished`
//! has passed since it finished (its Complete or Failed condition became true, or its
//! `completionTime`), requeueing it for the time left. Before deleting it re-reads the Job
//! from the API, so a TTL changed meanwhile is honoured, and deletes it guarded by its UID,
//! with background propagation (the garbage collector removes its pods).

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Preconditions};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Informer, ObjectKey};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "ttl-after-finished-controller";

pub struct TtlReconciler {
    jobs: Arc<Informer<Job>>,
    client: kube::Client,
    ctx: Arc<Context>,
}

/// When `job` finished, if it has: the transition time of its true Complete or Failed
/// condition, else its completion time.
pub fn finished_at(job: &Job) -> Option<jiff::Timestamp> {
    let status = job.status.as_ref()?;
    let condition = status
        .conditions
        .iter()
        .flatten()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")?;
    condition
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
        .or_else(|| status.completion_time.as_ref().map(|t| t.0))
}

/// How long until `job` expires (zero when it has), or `None` when it never will (no TTL,
/// not finished, already being deleted).
pub fn time_left(job: &Job, now: jiff::Timestamp) -> Option<Duration> {
    if job.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    let finished = finished_at(job)?;
    let expires = finished + jiff::SignedDuration::from_secs(i64::from(ttl.max(0)));
    Some(Duration::try_from(expires.duration_since(now)).unwrap_or(Duration::ZERO))
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let jobs = ctx.informers.get::<Job>();
    let client = ctx.client_for(NAME).await?;
    let reconciler = Arc::new(TtlReconciler {
        jobs: jobs.clone(),
        client,
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    jobs.on_change(move |change| {
        let job = change.object();
        let candidate = job
            .spec
            .as_ref()
            .is_some_and(|s| s.ttl_seconds_after_finished.is_some())
            && job.metadata.deletion_timestamp.is_none()
            && finished_at(job).is_some();
        if candidate {
            queue.add(ObjectKey::of(job.as_ref()));
        }
    });
    jobs.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Reconciler for TtlReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(job) = self.jobs.get_key(key) else {
            return Ok(Action::Done);
        };
        match time_left(&job, self.ctx.now()) {
            None => return Ok(Action::Done),
            Some(left) if !left.is_zero() => return Ok(Action::RequeueAfter(left)),
            Some(_) => {}
        }
        // The cache may be stale: decide again on the Job as stored.
        let api: Api<Job> = Api::namespaced(self.client.clone(), &key.namespace);
        let fresh = match api.get_opt(&key.name).await {
            Ok(Some(fresh)) => fresh,
            Ok(None) => return Ok(Action::Done),
            Err(e) => return Err(e).with_context(|| format!("reading job {key}")),
        };
        match time_left(&fresh, self.ctx.now()) {
            None => return Ok(Action::Done),
            Some(left) if !left.is_zero() => return Ok(Action::RequeueAfter(left)),
            Some(_) => {}
        }
        tracing::debug!(job = %key, "deleting a finished job whose TTL expired");
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: fresh.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match api.delete(&key.name, &params).await {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(Action::Done),
            Err(e) => Err(e).with_context(|| format!("deleting job {key}")),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn job(ttl: Option<i32>, finished: Option<&str>) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "j"},
            "spec": {"ttlSecondsAfterFinished": ttl, "template": {}},
            "status": {"conditions": finished.map(|t| vec![json!({
                "type": "Complete", "status": "True", "lastTransitionTime": t,
            })])},
        }))
        .unwrap()
    }

    #[test]
    fn expiry_counts_from_the_finish() {
        let now: jiff::Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        assert_eq!(time_left(&job(Some(30), None), now), None);
        assert_eq!(
            time_left(&job(None, Some("2026-01-01T00:00:00Z")), now),
            None
        );
        assert_eq!(
            time_left(&job(Some(30), Some("2026-01-01T00:00:00Z")), now),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            time_left(&job(Some(5), Some("2026-01-01T00:00:00Z")), now),
            Some(Duration::ZERO)
        );
    }
}
