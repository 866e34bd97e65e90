//! The controller loop: workers take keys from a [`WorkQueue`] and reconcile them.
//!
//! A [`Reconciler`] looks at the full current state of the object a key names (from
//! informers) and moves the cluster toward what it asks for; it never acts on an event
//! alone, so a repeated or missed event changes nothing. A failed reconcile is retried
//! with the queue's rate-limited backoff; a successful one clears the key's backoff and may
//! ask to be run again later (for time-based work such as `minReadySeconds`).

use crate::informer::ObjectKey;
use crate::metrics::{QueueMetrics, ReconcileMetrics, Registry};
use crate::queue::{RateLimits, WorkQueue};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to do with a key after reconciling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing until something changes.
    Done,
    /// Reconcile again after this long (unless a change comes first).
    RequeueAfter(Duration),
}

/// One controller's logic.
pub trait Reconciler: Send + Sync + 'static {
    /// Brings the object `key` names (which may be gone) to its desired state.
    fn reconcile(&self, key: &ObjectKey) -> impl Future<Output = anyhow::Result<Action>> + Send;
}

/// A reconciler with its queue and workers.
pub struct Controller<R> {
    name: String,
    reconciler: Arc<R>,
    queue: Arc<WorkQueue<ObjectKey>>,
    metrics: Arc<ReconcileMetrics>,
}

impl<R: Reconciler> Controller<R> {
    /// A controller named `name` (its queue's and metrics' label).
    pub fn new(name: &str, reconciler: Arc<R>, registry: &Registry) -> Controller<R> {
        Controller {
            name: name.to_string(),
            reconciler,
            queue: WorkQueue::new(
                RateLimits::default(),
                QueueMetrics::register(registry, name),
            ),
            metrics: ReconcileMetrics::register(registry, name),
        }
    }

    /// The queue (informer handlers add keys to it).
    pub fn queue(&self) -> Arc<WorkQueue<ObjectKey>> {
        self.queue.clone()
    }

    /// Runs `workers` workers until the queue is shut down.
    pub async fn run(self, workers: usize) {
        let mut tasks = tokio::task::JoinSet::new();
        let this = Arc::new(self);
        for _ in 0..workers.max(1) {
            let this = this.clone();
            tasks.spawn(async move { this.work().await });
        }
        while tasks.join_next().await.is_some() {}
    }

    async fn work(&self) {
        while let Some(key) = self.queue.get().await {
            let started = Instant::now();
            let result = self.reconciler.reconcile(&key).await;
            let took = started.elapsed();
            self.metrics.total.inc();
            self.metrics.duration.observe(took);
            match result {
                Ok(action) => {
                    self.queue.forget(&key);
                    if let Action::RequeueAfter(delay) = action {
                        self.queue.add_after(key.clone(), delay);
                    }
                }
                Err(error) => {
                    self.metrics.errors.inc();
                    let retries = self.queue.retries(&key);
                    // Conflicts are the expected outcome of optimistic concurrency.
                    if retries < 3 || is_conflict(&error) {
                        tracing::debug!(controller = %self.name, %key, error = %format!("{error:#}"), "reconcile failed; retrying");
                    } else {
                        tracing::warn!(controller = %self.name, %key, retries, error = %format!("{error:#}"), "reconcile failed; retrying");
                    }
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
    }
}

/// Whether `error` is (caused by) a 409 Conflict from the API.
pub fn is_conflict(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(cause.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 409)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex;

    struct Flaky {
        calls: Mutex<Vec<String>>,
    }

    impl Reconciler for Flaky {
        async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
            let mut calls = self.calls.lock().unwrap();
            calls.push(key.to_string());
            let tries = calls.iter().filter(|k| **k == key.to_string()).count();
            if key.name == "flaky" && tries < 3 {
                anyhow::bail!("not yet");
            }
            Ok(Action::Done)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_until_they_succeed() {
        let registry = Registry::default();
        let reconciler = Arc::new(Flaky {
            calls: Mutex::new(vec![]),
        });
        let controller = Controller::new("test", reconciler.clone(), &registry);
        let queue = controller.queue();
        queue.add(ObjectKey::new("ns", "flaky"));
        queue.add(ObjectKey::new("ns", "fine"));
        let run = tokio::spawn(controller.run(2));
        tokio::time::sleep(Duration::from_secs(1)).await;
        queue.shut_down();
        run.await.unwrap();
        let calls = reconciler.calls.lock().unwrap().clone();
        assert_eq!(calls.iter().filter(|c| *c == "ns/flaky").count(), 3);
        assert_eq!(calls.iter().filter(|c| *c == "ns/fine").count(), 1);
        let text = registry.render();
        assert!(text.contains("controller_reconcile_errors_total{controller=\"test\"} 2"));
        assert!(text.contains("controller_reconcile_total{controller=\"test\"} 4"));
    }
}
