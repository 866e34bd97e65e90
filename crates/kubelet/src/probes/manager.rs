//! The probe manager: the probe workers of every running container, the results the pod
//! worker reads (ready? started? failed liveness?), and a channel that wakes the pod
//! worker when a result changes, as kubelet's prober manager and results managers.

use super::worker::Worker;
use super::{Exec, ProbeKind};
use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Where the probe workers record their events (on the container's pod, type Warning).
pub trait ProbeEvents: Send + Sync + 'static {
    /// Reason `Unhealthy`: `Liveness probe failed: <output>`, `Readiness probe errored
    /// and resulted in unknown state: <error>`, ...
    fn unhealthy(&self, pod: &Pod, container: &str, message: String);
    /// Reason `ProbeWarning`: `Readiness probe warning: Probe terminated redirects, …`.
    /// By default only logged.
    fn probe_warning(&self, pod: &Pod, container: &str, message: String) {
        tracing::warn!(
            pod = pod.metadata.name.as_deref().unwrap_or_default(),
            container,
            message,
            "probe warning"
        );
    }
}

/// A container whose liveness or startup probe failed `failureThreshold` times in a row:
/// the pod worker kills it (with the probe's grace period when set) and restarts it as its
/// restart policy says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedProbe {
    pub container: String,
    /// The runtime ID of the instance that failed.
    pub container_id: String,
    /// [`ProbeKind::Liveness`] or [`ProbeKind::Startup`].
    pub kind: ProbeKind,
    /// Kubelet's message of the kill: `Container app failed liveness probe, will be
    /// restarted`.
    pub message: String,
    /// The probe's `terminationGracePeriodSeconds`, which overrides the pod's for this
    /// kill.
    pub grace_period_seconds: Option<i64>,
}

/// A probe's current result for the running container instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeResult {
    Unknown,
    Success,
    Failure,
}

/// Runs the probes of the containers on this node and keeps their results.
///
/// Call [`container_started`](Self::container_started) for every container that runs
/// (with or without probes: its readiness and startup are only known through it),
/// [`container_stopped`](Self::container_stopped) when it exits, and
/// [`remove_pod`](Self::remove_pod) when the pod is gone. Workers are tokio tasks: the
/// manager must be used inside a runtime. Dropping it stops them.
pub struct ProbeManager {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub exec: Arc<dyn Exec>,
    pub events: Arc<dyn ProbeEvents>,
    /// When the manager started: workers started within one period of it wait a random
    /// part of their period first, so that probes after a restart are spread out.
    pub start: Instant,
    state: Mutex<State>,
    updates: Mutex<Option<mpsc::UnboundedSender<String>>>,
    /// `prober_probe_total`.
    pub counters: super::metrics::ProbeCounters,
}

#[derive(Default)]
pub(crate) struct State {
    pub containers: HashMap<Key, Record>,
}

/// (pod UID, container name).
pub(crate) type Key = (String, String);

/// One container of a pod: its running instance, probe results and workers.
pub(crate) struct Record {
    pub pod: Arc<Pod>,
    pub instance: Option<Instance>,
    pub readiness: ProbeResult,
    pub liveness: ProbeResult,
    pub startup: ProbeResult,
    pub failed: Option<FailedProbe>,
    /// The pod is being deleted: liveness and startup probes stop.
    pub terminating: bool,
    /// How many instances of the container have started.
    generations: u64,
    workers: Vec<WorkerHandle>,
}

/// The running instance of a container.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub container_id: String,
    pub started_at: Instant,
    pub pod_ip: Option<IpAddr>,
    /// Counts the instances of this container, so that a worker notices a restart.
    pub generation: u64,
}

struct WorkerHandle {
    kind: ProbeKind,
    task: JoinHandle<()>,
    trigger: Arc<Notify>,
}

impl Record {
    /// Whether a worker of `kind` runs for this container.
    fn has(&self, kind: ProbeKind) -> bool {
        self.workers.iter().any(|w| w.kind == kind)
    }

    /// Started: running, and its startup probe succeeded (or it has none).
    pub fn started(&self) -> bool {
        self.instance.is_some()
            && (!self.has(ProbeKind::Startup) || self.startup == ProbeResult::Success)
    }

    /// Ready: started, and its readiness probe succeeded (or it has none).
    pub fn ready(&self) -> bool {
        self.started()
            && (!self.has(ProbeKind::Readiness) || self.readiness == ProbeResult::Success)
    }

    pub fn result_mut(&mut self, kind: ProbeKind) -> &mut ProbeResult {
        match kind {
            ProbeKind::Startup => &mut self.startup,
            ProbeKind::Liveness => &mut self.liveness,
            ProbeKind::Readiness => &mut self.readiness,
        }
    }

    /// Wakes the worker of `kind` for an immediate probe.
    pub fn trigger(&self, kind: ProbeKind) {
        for worker in self.workers.iter().filter(|w| w.kind == kind) {
            worker.trigger.notify_one();
        }
    }
}

/// The container `name` of `pod`: a regular container or an init container (restartable
/// init containers, sidecars, have probes too).
pub(crate) fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
}

/// The probe of `kind` of `container`.
pub(crate) fn probe_of(container: &Container, kind: ProbeKind) -> Option<&Probe> {
    match kind {
        ProbeKind::Startup => container.startup_probe.as_ref(),
        ProbeKind::Liveness => container.liveness_probe.as_ref(),
        ProbeKind::Readiness => container.readiness_probe.as_ref(),
    }
}

impl Inner {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A worker panicking while holding the lock leaves consistent data behind (every
        // update is a plain assignment), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells the subscriber that `pod_uid`'s results changed.
    pub fn notify(&self, pod_uid: &str) {
        let updates = self
            .updates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sender) = updates.as_ref() {
            // A dropped receiver only means nobody listens any more.
            let _ = sender.send(pod_uid.to_owned());
        }
    }
}

impl ProbeManager {
    /// A manager running commands through `exec` and recording events through `events`.
    pub fn new(exec: Arc<dyn Exec>, events: Arc<dyn ProbeEvents>) -> ProbeManager {
        ProbeManager {
            inner: Arc::new(Inner {
                exec,
                events,
                start: Instant::now(),
                state: Mutex::new(State::default()),
                updates: Mutex::new(None),
                counters: Default::default(),
            }),
        }
    }

    /// A container of `pod` runs as `container_id` since `started_at` (a tokio or std
    /// `Instant`), reachable at
    /// `pod_ip`. The first time, starts a worker per probe it has; for a new instance
    /// (a restart), resets its results (not ready, not started, live) and resumes workers
    /// held after a liveness failure. The same instance again only updates the pod IP.
    pub fn container_started(
        &self,
        pod: &Pod,
        container_name: &str,
        container_id: &str,
        started_at: impl Into<Instant>,
        pod_ip: Option<IpAddr>,
    ) {
        let started_at = started_at.into();
        let Some(uid) = pod.metadata.uid.clone() else {
            tracing::warn!(
                container = container_name,
                "a pod without a UID is not probed"
            );
            return;
        };
        let key = (uid.clone(), container_name.to_owned());
        let mut state = self.inner.lock();
        let known = state.containers.contains_key(&key);
        let record = state.containers.entry(key.clone()).or_insert_with(|| {
            let pod = Arc::new(pod.clone());
            let workers = self.spawn_workers(&pod, &key);
            Record {
                pod,
                instance: None,
                readiness: ProbeResult::Failure,
                liveness: ProbeResult::Success,
                startup: ProbeResult::Unknown,
                failed: None,
                terminating: false,
                generations: 0,
                workers,
            }
        });
        if let Some(instance) = record.instance.as_mut()
            && instance.container_id == container_id
        {
            instance.pod_ip = pod_ip;
            return;
        }
        record.generations += 1;
        record.instance = Some(Instance {
            container_id: container_id.to_owned(),
            started_at,
            pod_ip,
            generation: record.generations,
        });
        record.readiness = ProbeResult::Failure;
        record.liveness = ProbeResult::Success;
        record.startup = ProbeResult::Unknown;
        record.failed = None;
        // Kubelet probes readiness as soon as it sees a container without a readiness
        // result; the others wait for their period. (New workers probe at once anyway.)
        if known {
            record.trigger(ProbeKind::Readiness);
        }
        drop(state);
        self.inner.notify(&uid);
    }

    fn spawn_workers(&self, pod: &Arc<Pod>, key: &Key) -> Vec<WorkerHandle> {
        let Some(container) = find_container(pod, &key.1) else {
            return Vec::new();
        };
        let mut workers = Vec::new();
        for kind in [
            ProbeKind::Startup,
            ProbeKind::Liveness,
            ProbeKind::Readiness,
        ] {
            let Some(probe) = probe_of(container, kind) else {
                continue;
            };
            let trigger = Arc::new(Notify::new());
            let worker = Worker::new(
                self.inner.clone(),
                key.clone(),
                kind,
                probe,
                trigger.clone(),
            );
            workers.push(WorkerHandle {
                kind,
                task: tokio::spawn(worker.run()),
                trigger,
            });
        }
        workers
    }

    /// The container stopped (exited or was killed): not ready, not started, until a new
    /// instance starts. Its workers wait for that instance.
    pub fn container_stopped(&self, pod_uid: &str, container_name: &str) {
        let mut state = self.inner.lock();
        let key = (pod_uid.to_owned(), container_name.to_owned());
        let Some(record) = state.containers.get_mut(&key) else {
            return;
        };
        let was_ready = record.ready();
        let was_started = record.started();
        record.instance = None;
        record.readiness = ProbeResult::Failure;
        record.startup = ProbeResult::Failure;
        record.failed = None;
        drop(state);
        if was_ready || was_started {
            self.inner.notify(pod_uid);
        }
    }

    /// The pod is being deleted: its liveness and startup probes stop (a container is
    /// not restarted while it terminates); readiness probes go on.
    pub fn pod_terminating(&self, pod_uid: &str) {
        let mut state = self.inner.lock();
        for ((uid, _), record) in state.containers.iter_mut() {
            if uid == pod_uid {
                record.terminating = true;
                record.liveness = ProbeResult::Success;
                record.failed = None;
            }
        }
    }

    /// Stops the workers of the pod's containers and forgets their results.
    pub fn remove_pod(&self, pod_uid: &str) {
        self.inner.counters.remove_pod(pod_uid);
        let mut state = self.inner.lock();
        state.containers.retain(|(uid, _), record| {
            if uid != pod_uid {
                return true;
            }
            for worker in &record.workers {
                worker.task.abort();
            }
            false
        });
    }

    /// The probes' counters (`/metrics/probes`).
    pub fn counters(&self) -> &super::metrics::ProbeCounters {
        &self.inner.counters
    }

    /// Whether the container is ready: running, started, and its readiness probe
    /// succeeded `successThreshold` times since its last failures (always, without a
    /// readiness probe). False for a container not known to be running.
    pub fn readiness(&self, pod_uid: &str, container_name: &str) -> bool {
        self.check(pod_uid, container_name, Record::ready)
    }

    /// Whether the container has started: running and its startup probe succeeded
    /// (always, without a startup probe). False for a container not known to be running.
    pub fn started(&self, pod_uid: &str, container_name: &str) -> bool {
        self.check(pod_uid, container_name, Record::started)
    }

    /// `test` of the container's record; false for an unknown container.
    fn check(&self, pod_uid: &str, container_name: &str, test: fn(&Record) -> bool) -> bool {
        let state = self.inner.lock();
        state
            .containers
            .get(&(pod_uid.to_owned(), container_name.to_owned()))
            .is_some_and(test)
    }

    /// The containers of the pod whose liveness or startup probe failed past its
    /// threshold since the last call: each is reported once; its workers then wait for
    /// the next instance ([`container_started`](Self::container_started) with a new ID).
    pub fn take_failed_liveness(&self, pod_uid: &str) -> Vec<FailedProbe> {
        let mut state = self.inner.lock();
        let mut failed: Vec<FailedProbe> = state
            .containers
            .iter_mut()
            .filter(|((uid, _), _)| uid == pod_uid)
            .filter_map(|(_, record)| record.failed.take())
            .collect();
        failed.sort_by(|a, b| a.container.cmp(&b.container));
        failed
    }

    /// A channel that receives a pod's UID whenever one of its results changes
    /// (readiness, started, a liveness failure), for the pod worker to resync it. There
    /// is one subscriber: subscribing again replaces the previous channel.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<String> {
        let (sender, receiver) = mpsc::unbounded_channel();
        *self
            .inner
            .updates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sender);
        receiver
    }
}

impl Drop for ProbeManager {
    fn drop(&mut self) {
        let state = self.inner.lock();
        for record in state.containers.values() {
            for worker in &record.workers {
                worker.task.abort();
            }
        }
    }
}
