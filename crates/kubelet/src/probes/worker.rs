//! One probe worker: a container's startup, liveness or readiness probe run every
//! `periodSeconds` (after a random part of a period when the agent just started), not
//! before `initialDelaySeconds` of the instance, liveness and readiness held until the
//! container has started, results changed only after `successThreshold` successes or
//! `failureThreshold` failures in a row, and a failed liveness or startup probe held
//! until the next instance of the container, as kubelet's probe worker.

use super::handlers::{positive, run_probe};
use super::manager::{FailedProbe, Inner, Key, ProbeResult, find_container, probe_of};
use super::{Outcome, ProbeKind, Target};
use k8s_openapi::api::core::v1::Probe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};

/// How many times a probe that errors is run before its error is reported (kubelet's
/// `maxProbeRetries`).
const MAX_PROBE_RETRIES: usize = 3;

pub(crate) struct Worker {
    inner: Arc<Inner>,
    key: Key,
    kind: ProbeKind,
    period: Duration,
    initial_delay: u64,
    success_threshold: usize,
    failure_threshold: usize,
    trigger: Arc<Notify>,
    /// The instance the counters below are about.
    generation: u64,
    last_result: ProbeResult,
    result_run: usize,
    /// After a liveness or startup failure: wait for the next instance.
    on_hold: bool,
}

/// What a probe run needs, copied out of the manager's state.
struct Snapshot {
    probe: Probe,
    target: Target,
    pod: Arc<k8s_openapi::api::core::v1::Pod>,
    generation: u64,
}

impl Worker {
    pub fn new(
        inner: Arc<Inner>,
        key: Key,
        kind: ProbeKind,
        probe: &Probe,
        trigger: Arc<Notify>,
    ) -> Worker {
        Worker {
            inner,
            key,
            kind,
            period: Duration::from_secs(positive(probe.period_seconds, 10)),
            initial_delay: positive(probe.initial_delay_seconds, 0),
            success_threshold: positive(probe.success_threshold, 1) as usize,
            failure_threshold: positive(probe.failure_threshold, 3) as usize,
            trigger,
            generation: 0,
            last_result: ProbeResult::Unknown,
            result_run: 0,
            on_hold: false,
        }
    }

    /// Probes until the container is removed.
    pub async fn run(mut self) {
        if self.inner.start.elapsed() < self.period {
            let jitter = self.period.mul_f64(fastrand::f64());
            tokio::time::sleep(jitter).await;
        }
        let mut ticker = tokio::time::interval_at(Instant::now() + self.period, self.period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        while self.do_probe().await {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = self.trigger.notified() => {}
            }
        }
    }

    /// One round; false when the worker should stop.
    async fn do_probe(&mut self) -> bool {
        let snapshot = match self.snapshot() {
            Ok(Some(snapshot)) => snapshot,
            Ok(None) => return true,
            Err(()) => return false,
        };
        let container = self.key.1.clone();
        let mut outcome = Outcome::Unknown(String::new());
        for _ in 0..MAX_PROBE_RETRIES {
            outcome = run_probe(&snapshot.probe, &snapshot.target, self.inner.exec.as_ref()).await;
            if !matches!(outcome, Outcome::Unknown(_)) {
                break;
            }
        }
        let kind = self.kind;
        self.inner.counters.count(super::metrics::ProbeLabels {
            probe_type: kind,
            result: match outcome {
                Outcome::Success | Outcome::Warning(_) => "successful",
                Outcome::Failure(_) => "failed",
                Outcome::Unknown(_) => "unknown",
            },
            container: container.clone(),
            pod: snapshot.pod.metadata.name.clone().unwrap_or_default(),
            namespace: snapshot.pod.metadata.namespace.clone().unwrap_or_default(),
            pod_uid: self.key.0.clone(),
        });
        let events = &self.inner.events;
        let result = match outcome {
            Outcome::Success => ProbeResult::Success,
            Outcome::Warning(message) => {
                events.probe_warning(
                    &snapshot.pod,
                    &container,
                    format!("{kind} probe warning: {message}"),
                );
                ProbeResult::Success
            }
            Outcome::Failure(output) => {
                events.unhealthy(
                    &snapshot.pod,
                    &container,
                    format!("{kind} probe failed: {output}"),
                );
                ProbeResult::Failure
            }
            Outcome::Unknown(err) => {
                // The result is thrown away: the previous one stands.
                events.unhealthy(
                    &snapshot.pod,
                    &container,
                    format!("{kind} probe errored and resulted in unknown state: {err}"),
                );
                return true;
            }
        };
        if self.last_result == result {
            self.result_run += 1;
        } else {
            self.last_result = result;
            self.result_run = 1;
        }
        if (result == ProbeResult::Failure && self.result_run < self.failure_threshold)
            || (result == ProbeResult::Success && self.result_run < self.success_threshold)
        {
            return true;
        }
        self.set_result(&snapshot, result);
        true
    }

    /// What to probe now: `Ok(None)` when this round is skipped, `Err` when the
    /// container is gone.
    fn snapshot(&mut self) -> Result<Option<Snapshot>, ()> {
        let mut state = self.inner.lock();
        let record = state.containers.get_mut(&self.key).ok_or(())?;
        let Some(instance) = record.instance.clone() else {
            return Ok(None);
        };
        if instance.generation != self.generation {
            // A new instance: fresh counters, probing resumes.
            self.generation = instance.generation;
            self.last_result = ProbeResult::Unknown;
            self.result_run = 0;
            self.on_hold = false;
        }
        if self.on_hold {
            return Ok(None);
        }
        if record.terminating && self.kind != ProbeKind::Readiness {
            return Err(());
        }
        if instance.started_at.elapsed().as_secs() < self.initial_delay {
            return Ok(None);
        }
        let started = record.started();
        if (self.kind == ProbeKind::Startup) == started {
            // Startup probes stop once started; the others wait for it.
            return Ok(None);
        }
        let pod = record.pod.clone();
        let Some(container) = find_container(&pod, &self.key.1) else {
            return Err(());
        };
        let Some(probe) = probe_of(container, self.kind) else {
            return Err(());
        };
        Ok(Some(Snapshot {
            probe: probe.clone(),
            target: Target::new(&pod, container, &instance.container_id, instance.pod_ip),
            pod,
            generation: instance.generation,
        }))
    }

    /// Records a result that passed its threshold, for the instance that was probed.
    fn set_result(&mut self, snapshot: &Snapshot, result: ProbeResult) {
        let mut state = self.inner.lock();
        let Some(record) = state.containers.get_mut(&self.key) else {
            return;
        };
        let current = record.instance.as_ref().map(|i| i.generation);
        if current != Some(snapshot.generation) {
            return;
        }
        let was_ready = record.ready();
        let was_started = record.started();
        *record.result_mut(self.kind) = result;
        let fails_container = result == ProbeResult::Failure
            && matches!(self.kind, ProbeKind::Liveness | ProbeKind::Startup);
        if fails_container {
            let what = if self.kind == ProbeKind::Liveness {
                "liveness"
            } else {
                "startup"
            };
            record.failed = Some(FailedProbe {
                container: self.key.1.clone(),
                container_id: snapshot.target.container_id.clone(),
                kind: self.kind,
                message: format!(
                    "Container {} failed {what} probe, will be restarted",
                    self.key.1
                ),
                grace_period_seconds: snapshot.probe.termination_grace_period_seconds,
            });
            // Hold until the container is restarted.
            self.on_hold = true;
            self.result_run = 0;
        }
        let started = record.started();
        if started && !was_started {
            // Kubelet probes readiness right away once the container has started.
            record.trigger(ProbeKind::Readiness);
        }
        let changed = fails_container || was_ready != record.ready() || was_started != started;
        drop(state);
        if changed {
            self.inner.notify(&self.key.0);
        }
    }
}
