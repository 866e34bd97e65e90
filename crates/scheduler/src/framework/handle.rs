//! What plugins get from the scheduler when they are built: the API (through a narrow
//! trait, so plugins and the framework are testable without a server), read access to the
//! informers' objects, and the pods waiting at Permit.

use super::pod_info::PodInfo;
use super::status::Status;
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The writes the scheduler and its plugins make.
#[async_trait]
pub trait ApiClient: Send + Sync {
    /// `POST pods/<name>/binding`.
    async fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String>;
    /// Deletes a pod gracefully (preemption's victims).
    async fn delete_pod(&self, pod: &PodInfo) -> Result<(), String>;
    /// Sets `status.nominatedNodeName` (empty: clears it).
    async fn nominate(&self, pod: &PodInfo, node: &str) -> Result<(), String>;
    /// Records that the pod could not be scheduled: the `PodScheduled=False` condition
    /// with `reason` (`Unschedulable`, `SchedulerError`) and `message`, and a
    /// `FailedScheduling` event.
    async fn unschedulable(&self, pod: &PodInfo, reason: &str, message: &str)
    -> Result<(), String>;
}

/// Objects the scheduler's informers hold besides pods and nodes.
pub trait Lister: Send + Sync {
    /// The labels of a namespace (pod affinity's namespace selectors, topology spread).
    fn namespace_labels(&self, namespace: &str) -> Option<Map<String, Value>>;
    /// Every object of a watched resource (`policy/poddisruptionbudgets`,
    /// `scheduling.x-k8s.io/podgroups`, …), as JSON.
    fn objects(&self, group: &str, resource: &str) -> Vec<Arc<Value>>;
    /// Every pod the scheduler knows, scheduled or not (gangs count their members).
    fn pods(&self) -> Vec<Arc<PodInfo>>;
}

/// What becomes of a pod waiting at Permit.
#[derive(Clone, Debug)]
enum Verdict {
    Waiting,
    Decided(Status),
}

/// A pod held at Permit by one or more plugins.
pub struct WaitingPod {
    pub pod: Arc<PodInfo>,
    pub node: String,
    /// The plugins still holding it, with their deadlines.
    pending: Mutex<HashMap<&'static str, tokio::time::Instant>>,
    verdict: watch::Sender<Verdict>,
}

impl WaitingPod {
    /// Allows the pod on behalf of `plugin`; once every plugin has, it proceeds.
    pub fn allow(&self, plugin: &str) {
        let done = match self.pending.lock() {
            Ok(mut pending) => {
                pending.remove(plugin);
                pending.is_empty()
            }
            Err(_) => false,
        };
        if done {
            self.verdict.send_if_modified(|v| match v {
                Verdict::Waiting => {
                    *v = Verdict::Decided(Status::success());
                    true
                }
                Verdict::Decided(_) => false,
            });
        }
    }

    /// Rejects the pod: its reservation is released and it goes back to the queue.
    pub fn reject(&self, plugin: &'static str, message: &str) {
        self.verdict.send_if_modified(|v| match v {
            Verdict::Waiting => {
                *v = Verdict::Decided(Status::unschedulable(message).with_plugin(plugin));
                true
            }
            Verdict::Decided(_) => false,
        });
    }

    /// The plugins still holding the pod.
    pub fn pending_plugins(&self) -> Vec<&'static str> {
        self.pending
            .lock()
            .map(|p| p.keys().copied().collect())
            .unwrap_or_default()
    }
}

/// The pods waiting at Permit, by UID.
#[derive(Default)]
pub struct WaitingPods {
    pods: Mutex<HashMap<String, Arc<WaitingPod>>>,
}

impl WaitingPods {
    /// Holds `pod` on `node` for `plugins` until each allows it or its deadline passes.
    pub fn add(
        &self,
        pod: Arc<PodInfo>,
        node: &str,
        plugins: HashMap<&'static str, tokio::time::Instant>,
    ) -> Arc<WaitingPod> {
        let (verdict, _) = watch::channel(Verdict::Waiting);
        let waiting = Arc::new(WaitingPod {
            pod: pod.clone(),
            node: node.to_string(),
            pending: Mutex::new(plugins),
            verdict,
        });
        if let Ok(mut pods) = self.pods.lock() {
            pods.insert(pod.uid.clone(), waiting.clone());
        }
        waiting
    }

    pub fn get(&self, uid: &str) -> Option<Arc<WaitingPod>> {
        self.pods.lock().ok()?.get(uid).cloned()
    }

    /// Every waiting pod.
    pub fn all(&self) -> Vec<Arc<WaitingPod>> {
        self.pods
            .lock()
            .map(|p| p.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Waits for the verdict on a held pod (success, a rejection, or the first deadline
    /// passing); the pod is no longer waiting afterwards.
    pub async fn wait(&self, waiting: &Arc<WaitingPod>) -> Status {
        let deadline = waiting
            .pending
            .lock()
            .ok()
            .and_then(|p| p.values().min().copied());
        let mut receiver = waiting.verdict.subscribe();
        let verdict = async {
            loop {
                if let Verdict::Decided(status) = receiver.borrow_and_update().clone() {
                    return status;
                }
                if receiver.changed().await.is_err() {
                    return Status::error("the waiting pod was dropped");
                }
            }
        };
        let status = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, verdict).await {
                Ok(status) => status,
                Err(_) => {
                    let plugins = waiting.pending_plugins();
                    Status::unschedulable(format!(
                        "rejected due to timeout after waiting at permit (plugins {})",
                        plugins.join(", ")
                    ))
                }
            },
            None => verdict.await,
        };
        if let Ok(mut pods) = self.pods.lock() {
            pods.remove(&waiting.pod.uid);
        }
        status
    }
}

/// What plugins are built with.
pub struct Handle {
    pub client: Arc<dyn ApiClient>,
    pub lister: Arc<dyn Lister>,
    pub waiting_pods: Arc<WaitingPods>,
}
