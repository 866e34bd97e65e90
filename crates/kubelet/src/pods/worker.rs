//! One pod's worker: a loop that syncs the pod against the runtime whenever something
//! changed (its spec, its containers, its probes) or a timer fell due (a back-off, a
//! retry), and that terminates it once it is deleted: containers stopped within the grace
//! period, the status written, the pod object deleted, then containers, sandboxes and
//! volumes removed.

use super::Shared;
use super::kill::{grace_period, kill_container, kill_pod, remove_pod};
use super::runtime::{Instance, PodRuntime, State, StatusCache, observe};
use super::start::{SandboxHandle, run_sandbox, sandbox_config, spec_hash, start_container};
use super::status::{Inputs, Waiting, generate};
use crate::container::ContainerKind;
use k8s_openapi::api::core::v1::{Container, Pod, PodStatus};
use kyb_component_helpers::resource::is_sidecar;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How often a pod is synced when nothing happens (kubelet's sync frequency is 1 minute;
/// this also refreshes configMap and secret volumes).
const RESYNC: Duration = Duration::from_secs(10);
/// How soon a failed step (a sandbox, a volume, the API) is tried again.
const RETRY: Duration = Duration::from_secs(2);

/// What the manager hands a worker: the latest pod, whether it is gone from the API, and
/// a wake-up.
pub struct Slot {
    pod: Mutex<Arc<Pod>>,
    gone: AtomicBool,
    pub wake: Notify,
}

impl Slot {
    pub fn new(pod: Arc<Pod>) -> Arc<Slot> {
        Arc::new(Slot {
            pod: Mutex::new(pod),
            gone: AtomicBool::new(false),
            wake: Notify::new(),
        })
    }

    /// A newer version of the pod.
    pub fn update(&self, pod: Arc<Pod>) {
        *self.pod.lock().unwrap_or_else(|e| e.into_inner()) = pod;
        self.wake.notify_one();
    }

    /// The pod is no longer in the API (deleted for good): stop and remove it.
    pub fn remove(&self) {
        self.gone.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// The pod's (namespace, name).
    pub fn key(&self) -> (Option<String>, Option<String>) {
        let pod = self.pod.lock().unwrap_or_else(|e| e.into_inner());
        (pod.metadata.namespace.clone(), pod.metadata.name.clone())
    }

    fn get(&self) -> (Arc<Pod>, bool) {
        (
            self.pod.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            self.gone.load(Ordering::SeqCst),
        )
    }
}

/// One pod's worker.
pub struct Worker {
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    uid: String,
    cache: StatusCache,
    /// Why each container is waiting, as the last sync left it (kubelet's reason cache).
    waiting: HashMap<String, Waiting>,
    /// Exited instances' termination messages by container ID, read once.
    messages: HashMap<String, String>,
    /// The message of the last FailedMount event, not to repeat it every sync.
    mount_failure: Option<String>,
    /// Admission refused the pod: it is Failed and never starts.
    rejected: bool,
}

/// What a sync leaves for the loop: when to sync again, or that the worker is done.
enum Next {
    After(Duration),
    Done,
}

fn now_ns() -> i64 {
    jiff::Timestamp::now().as_nanosecond() as i64
}

fn spec_containers(pod: &Pod) -> (Vec<Container>, Vec<Container>) {
    let spec = pod.spec.clone().unwrap_or_default();
    (spec.init_containers.unwrap_or_default(), spec.containers)
}

fn restart_policy(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.clone())
        .unwrap_or_else(|| "Always".into())
}

fn is_terminal(status: Option<&PodStatus>) -> bool {
    matches!(
        status.and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Whether a regular container that exited is to be started again, per the pod's
/// `restartPolicy`.
fn should_restart(policy: &str, instance: &Instance) -> bool {
    match policy {
        "Always" => true,
        "OnFailure" => instance.exit_code != 0,
        _ => false,
    }
}

impl Worker {
    pub fn new(shared: Arc<Shared>, slot: Arc<Slot>, uid: String) -> Worker {
        Worker {
            shared,
            slot,
            uid,
            cache: StatusCache::default(),
            waiting: HashMap::new(),
            messages: HashMap::new(),
            mount_failure: None,
            rejected: false,
        }
    }

    /// Runs until the pod is terminated and removed, or `cancel` (the agent stops: the
    /// pod's containers keep running for the next agent to find).
    pub async fn run(mut self, cancel: CancellationToken) {
        loop {
            let (pod, gone) = self.slot.get();
            let next = if gone || pod.metadata.deletion_timestamp.is_some() {
                self.terminate(&pod, gone).await
            } else {
                self.sync(&pod).await
            };
            let wait = match next {
                Next::Done => break,
                Next::After(wait) => wait,
            };
            tokio::select! {
                () = self.slot.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = cancel.cancelled() => return,
            }
        }
        tracing::debug!(uid = %self.uid, "pod worker done");
    }

    async fn observe(&mut self) -> anyhow::Result<PodRuntime> {
        let mut runtime = observe(&self.shared.cri, &self.uid, &mut self.cache).await?;
        self.read_termination_messages(&mut runtime).await;
        Ok(runtime)
    }

    /// Fills in the termination messages of exited instances from their message files
    /// (`terminationMessagePath`, at most 4 KiB).
    async fn read_termination_messages(&mut self, runtime: &mut PodRuntime) {
        let (pod, _) = self.slot.get();
        self.messages
            .retain(|id, _| runtime.instances.iter().any(|i| &i.id == id));
        for instance in &mut runtime.instances {
            if instance.state != State::Exited || !instance.message.is_empty() {
                continue;
            }
            if let Some(message) = self.messages.get(&instance.id) {
                instance.message = message.clone();
                continue;
            }
            let file = self
                .shared
                .pods_dir
                .join(&self.uid)
                .join("containers")
                .join(&instance.name)
                .join(instance.restart_count.to_string());
            if let Ok(bytes) = tokio::fs::read(&file).await {
                let bytes = &bytes[..bytes.len().min(MAX_TERMINATION_MESSAGE)];
                instance.message = String::from_utf8_lossy(bytes).into_owned();
            }
            // `FallbackToLogsOnError`: a failed container without a message gets the end
            // of its log.
            let fallback = super::container_spec(&pod, &instance.name).is_some_and(|c| {
                c.termination_message_policy.as_deref() == Some("FallbackToLogsOnError")
            });
            if instance.message.is_empty() && instance.exit_code != 0 && fallback {
                let path = std::path::Path::new(&instance.log_path);
                let path = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    self.shared
                        .logs_dir
                        .join(super::log_dir_name(&pod))
                        .join(path)
                };
                if let Ok(log) = tokio::fs::read(&path).await {
                    instance.message = log_tail(&log);
                }
            }
            self.messages
                .insert(instance.id.clone(), instance.message.clone());
        }
    }

    fn status(&self, pod: &Pod, runtime: &PodRuntime) -> PodStatus {
        let probes = &self.shared.probes;
        let uid = self.uid.clone();
        // The probes follow the containers the runtime reports, also those an earlier
        // agent started (the same instance again changes nothing).
        let pod_ip = self
            .shared
            .pod_ip(pod, runtime.sandbox().map(|s| s.ips.as_slice()));
        let (init, regular) = spec_containers(pod);
        for container in init.iter().chain(&regular) {
            match runtime.latest(&container.name) {
                Some(i) if i.state == State::Running => {
                    let age =
                        Duration::from_nanos(now_ns().saturating_sub(i.started_at).max(0) as u64);
                    let started_at = std::time::Instant::now()
                        .checked_sub(age)
                        .unwrap_or_else(std::time::Instant::now);
                    probes.container_started(pod, &container.name, &i.id, started_at, pod_ip);
                }
                Some(_) => probes.container_stopped(&uid, &container.name),
                None => {}
            }
        }
        let ready = |name: &str| probes.readiness(&uid, name);
        let started = |name: &str| probes.started(&uid, name);
        generate(
            pod,
            &Inputs {
                runtime,
                waiting: &self.waiting,
                ready: &ready,
                started: &started,
                host_ips: &self.shared.host_ips,
                runtime_name: &self.shared.runtime_name,
                now: jiff::Timestamp::now(),
            },
        )
    }

    async fn write_status(&self, pod: &Pod, status: &PodStatus) -> bool {
        // A static pod's status goes to its mirror pod, the API's copy of it.
        let mirror;
        let target = if crate::node::static_pods::is_static(pod) {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            match self.shared.pods.get(namespace, name) {
                Some(found) if crate::node::static_pods::is_mirror(&found) => {
                    mirror = found;
                    &*mirror
                }
                // No mirror pod yet: nothing to write to.
                _ => return true,
            }
        } else {
            pod
        };
        match self.shared.status.set(target, status).await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "pod status");
                false
            }
        }
    }

    /// One sync of a live pod (kubelet's `SyncPod`).
    async fn sync(&mut self, pod: &Pod) -> Next {
        let runtime = match self.observe().await {
            Ok(runtime) => runtime,
            Err(error) => {
                tracing::warn!(uid = %self.uid, error = %format!("{error:#}"), "reading the pod from the runtime");
                return Next::After(RETRY);
            }
        };
        if is_terminal(pod.status.as_ref()) || self.rejected {
            self.shared.admitted.forget(&self.uid);
            // Finished: nothing runs again; stop what still runs (sidecars, the sandbox).
            if runtime.any_running() || runtime.sandboxes.iter().any(|s| s.ready) {
                kill_pod(&self.shared, pod, &runtime, grace_period(pod)).await;
            }
            return Next::After(RESYNC * 6);
        }
        if !self.admit(pod, &runtime).await {
            return Next::After(RESYNC * 6);
        }
        if let Some(next) = self.deadline_exceeded(pod, &runtime).await {
            return next;
        }

        let mut wait = RESYNC.min(deadline_remaining(pod).unwrap_or(RESYNC));
        self.shared.volumes.set_node_allocatable(
            self.shared
                .resources
                .allocatable()
                .into_iter()
                .map(|(name, q)| {
                    (
                        name,
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity(q.canonical()),
                    )
                })
                .collect(),
        );
        let volumes = match self.shared.volumes.setup(pod).await {
            Ok(volumes) => {
                self.mount_failure = None;
                volumes
            }
            Err(error) => {
                let message = error.to_string();
                if self.mount_failure.as_deref() != Some(&message) {
                    self.shared.event(pod, None, true, "FailedMount", &message);
                    self.mount_failure = Some(message);
                }
                let status = self.status(pod, &runtime);
                self.write_status(pod, &status).await;
                return Next::After(RETRY);
            }
        };

        // The sandbox: a new one when there is none ready.
        let sandbox = match self.ensure_sandbox(pod, &runtime).await {
            Ok(Some(sandbox)) => sandbox,
            Ok(None) => {
                let status = self.status(pod, &runtime);
                self.write_status(pod, &status).await;
                return Next::After(RESYNC);
            }
            Err(()) => {
                let runtime = self.observe().await.unwrap_or(runtime);
                let status = self.status(pod, &runtime);
                self.write_status(pod, &status).await;
                return Next::After(RETRY);
            }
        };
        let fresh_sandbox = runtime.sandbox().is_none_or(|s| s.id != sandbox.id);
        // Whether this sync changed the runtime, so that it must be read again for the
        // status.
        let mut acted = fresh_sandbox;
        let runtime = if fresh_sandbox {
            self.observe().await.unwrap_or(runtime)
        } else {
            runtime
        };

        // Liveness failures restart their containers.
        for crate::probes::FailedProbe {
            container: name,
            message,
            grace_period_seconds,
            ..
        } in self.shared.probes.take_failed_liveness(&self.uid)
        {
            if let Some(instance) = runtime.latest(&name).filter(|i| i.state == State::Running) {
                // The probe's own terminationGracePeriodSeconds, else the pod's.
                let grace = grace_period_seconds
                    .map(|s| Duration::from_secs(s.max(0) as u64))
                    .unwrap_or_else(|| grace_period(pod));
                acted = true;
                kill_container(&self.shared, pod, &runtime, instance, grace, Some(message)).await;
            }
        }

        let (init, regular) = spec_containers(pod);
        let policy = restart_policy(pod);
        // Init containers, in order: each regular one must have succeeded before the next
        // starts; sidecars keep running and must have started.
        let mut initialized = true;
        for container in &init {
            let latest = runtime
                .latest(&container.name)
                .filter(|i| i.sandbox_id == sandbox.id);
            let sidecar = is_sidecar(container);
            let state = latest.map(|i| (i.state, i.exit_code));
            let start = match state {
                Some((State::Running, _)) if sidecar => {
                    if self.shared.probes.started(&self.uid, &container.name) {
                        continue;
                    }
                    false
                }
                _ if sidecar => true,
                Some((State::Exited, 0)) => continue,
                Some((State::Running | State::Created, _)) => false,
                // Under `restartPolicy: Never` the pod fails; its status says so from the
                // exited init container.
                Some((State::Exited, _)) if policy == "Never" => false,
                _ => true,
            };
            if start {
                let kind = if sidecar {
                    ContainerKind::Sidecar
                } else {
                    ContainerKind::Init
                };
                acted = true;
                if let Some(after) = self
                    .start(pod, &sandbox, &volumes, container, kind, latest)
                    .await
                {
                    wait = wait.min(after);
                }
            }
            initialized = false;
            break;
        }

        if initialized {
            for container in &regular {
                let latest = runtime.latest(&container.name);
                let current = latest.filter(|i| i.sandbox_id == sandbox.id);
                match current {
                    Some(i) if i.state == State::Running => {
                        if !i.hash.is_empty() && i.hash != spec_hash(container) {
                            acted = true;
                            kill_container(
                                &self.shared,
                                pod,
                                &runtime,
                                i,
                                grace_period(pod),
                                Some(format!(
                                    "Container {} definition changed, will be restarted",
                                    container.name
                                )),
                            )
                            .await;
                            wait = Duration::ZERO;
                        }
                        continue;
                    }
                    Some(i) if i.state == State::Exited && !should_restart(&policy, i) => {
                        self.waiting.remove(&container.name);
                        continue;
                    }
                    _ => {}
                }
                acted = true;
                if let Some(after) = self
                    .start(
                        pod,
                        &sandbox,
                        &volumes,
                        container,
                        ContainerKind::Regular,
                        latest,
                    )
                    .await
                {
                    wait = wait.min(after);
                }
            }
        }

        let runtime = if acted {
            self.observe().await.unwrap_or(runtime)
        } else {
            runtime
        };
        let status = self.status(pod, &runtime);
        // The pod ends with a container that exited a moment ago: its status may still
        // change (an OOM kill reported after the exit), and a terminal phase is final.
        let unsettled = runtime
            .instances
            .iter()
            .any(|i| i.state == State::Exited && !i.settled());
        if is_terminal(Some(&status)) && unsettled {
            return Next::After(super::runtime::EXIT_SETTLE);
        }
        if !self.write_status(pod, &status).await {
            wait = wait.min(RETRY);
        }
        self.prune(&runtime).await;
        Next::After(wait)
    }

    /// Removes exited instances older than each container's newest two (the newest is the
    /// status, the one before it the last state and `logs --previous`), as kubelet's
    /// container garbage collection keeps one dead instance per container.
    async fn prune(&mut self, runtime: &PodRuntime) {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for instance in &runtime.instances {
            let count = seen.entry(instance.name.as_str()).or_default();
            *count += 1;
            if *count <= 2 || instance.state != State::Exited {
                continue;
            }
            let removed = self
                .shared
                .cri
                .runtime
                .clone()
                .remove_container(k8s_cri::v1::RemoveContainerRequest {
                    container_id: instance.id.clone(),
                })
                .await;
            if let Err(error) = removed {
                tracing::debug!(container = %instance.id, error = %error.message(), "removing an old container");
            }
            let file = self
                .shared
                .pods_dir
                .join(&self.uid)
                .join("containers")
                .join(&instance.name)
                .join(instance.restart_count.to_string());
            let _ = tokio::fs::remove_file(file).await;
            // Its log, rotated files included (kubelet's removeContainerLog).
            if std::path::Path::new(&instance.log_path).is_absolute() {
                crate::logs::rotation::remove_log(std::path::Path::new(&instance.log_path)).await;
            }
        }
    }

    /// Starts `container` (a new instance after `latest`), unless its restart back-off
    /// is running; returns when to look again if it cannot start now.
    async fn start(
        &mut self,
        pod: &Pod,
        sandbox: &SandboxHandle,
        volumes: &crate::volumes::MountedVolumes,
        container: &Container,
        kind: ContainerKind,
        latest: Option<&Instance>,
    ) -> Option<Duration> {
        let key = format!("{}/{}", self.uid, container.name);
        let restart_count = latest.map_or(0, |i| i.restart_count + 1);
        if let Some(exited) = latest.filter(|i| i.state == State::Exited) {
            let remaining = self
                .shared
                .backoff
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remaining(&key, exited.finished_at, now_ns());
            if let Some(remaining) = remaining {
                let delay = self
                    .shared
                    .backoff
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .delay(&key)
                    .unwrap_or_default();
                let message = format!(
                    "back-off {} restarting failed container={} pod={}_{}({})",
                    humanize(delay),
                    container.name,
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    self.uid
                );
                if self.waiting.get(&container.name).map(|w| w.reason.as_str())
                    != Some("CrashLoopBackOff")
                {
                    self.shared.event(
                        pod,
                        Some(super::field_path(pod, &container.name)),
                        true,
                        "BackOff",
                        format!(
                            "Back-off restarting failed container {} in pod {}_{}({})",
                            container.name,
                            pod.metadata.name.as_deref().unwrap_or_default(),
                            pod.metadata.namespace.as_deref().unwrap_or_default(),
                            self.uid
                        ),
                    );
                }
                self.waiting.insert(
                    container.name.clone(),
                    Waiting {
                        reason: "CrashLoopBackOff".into(),
                        message,
                    },
                );
                return Some(remaining);
            }
            self.shared
                .backoff
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .restarted(&key, exited.started_at, exited.finished_at);
        }
        match start_container(
            &self.shared,
            pod,
            sandbox,
            volumes,
            container,
            kind,
            restart_count,
        )
        .await
        {
            Ok(_) => {
                self.waiting.remove(&container.name);
                None
            }
            Err(waiting) => {
                self.waiting.insert(container.name.clone(), waiting);
                Some(RETRY)
            }
        }
    }

    /// The pod's ready sandbox, a new one if it has none (killing what ran in the old),
    /// or `None` when the pod must not get a new one (it ran to completion under
    /// `restartPolicy: Never`). `Err` when the sandbox could not be created.
    async fn ensure_sandbox(
        &mut self,
        pod: &Pod,
        runtime: &PodRuntime,
    ) -> Result<Option<SandboxHandle>, ()> {
        if let Some(current) = runtime.sandbox().filter(|s| s.ready) {
            let config =
                sandbox_config(&self.shared, pod, current.attempt, &current.ips).map_err(|_| ())?;
            return Ok(Some(SandboxHandle {
                id: current.id.clone(),
                config,
                ips: current.ips.clone(),
            }));
        }
        let ran = !runtime.instances.is_empty();
        if ran && restart_policy(pod) == "Never" {
            return Ok(None);
        }
        let attempt = runtime.sandbox().map_or(0, |s| s.attempt + 1);
        if runtime.sandbox().is_some() {
            self.shared.event(
                pod,
                None,
                false,
                "SandboxChanged",
                "Pod sandbox changed, it will be killed and re-created.",
            );
            kill_pod(&self.shared, pod, runtime, grace_period(pod)).await;
        }
        match run_sandbox(&self.shared, pod, attempt).await {
            Ok(sandbox) => {
                self.waiting.retain(|_, w| w.reason != "ContainerCreating");
                Ok(Some(sandbox))
            }
            Err(message) => {
                self.shared.event(
                    pod,
                    None,
                    true,
                    "FailedCreatePodSandBox",
                    format!("Failed to create pod sandbox: {message}"),
                );
                Err(())
            }
        }
    }

    /// Admits the pod onto the node unless it does not fit beside the others (see
    /// `admission`); a refused pod is written `Failed` with kubelet's reason and message.
    /// A pod that started before (under an earlier agent) is counted without a check.
    async fn admit(&mut self, pod: &Pod, runtime: &PodRuntime) -> bool {
        let admitted = &self.shared.admitted;
        let started_before = pod.status.as_ref().is_some_and(|s| s.start_time.is_some())
            || !runtime.sandboxes.is_empty();
        if started_before {
            admitted.register(&self.uid, pod);
            return true;
        }
        let allocatable = self.shared.resources.allocatable();
        let Err(rejection) = admitted.admit(&self.uid, pod, &allocatable) else {
            return true;
        };
        self.rejected = true;
        self.shared
            .event(pod, None, true, &rejection.reason, &rejection.message);
        let mut status = pod.status.clone().unwrap_or_default();
        status.phase = Some("Failed".into());
        status.reason = Some(rejection.reason);
        status.message = Some(format!("Pod was rejected: {}", rejection.message));
        self.write_status(pod, &status).await;
        false
    }

    /// `activeDeadlineSeconds`: a pod active longer fails (`DeadlineExceeded`).
    async fn deadline_exceeded(&mut self, pod: &Pod, runtime: &PodRuntime) -> Option<Next> {
        let deadline = pod.spec.as_ref()?.active_deadline_seconds?;
        let start = pod.status.as_ref()?.start_time.as_ref()?.0;
        let elapsed = jiff::Timestamp::now().duration_since(start);
        if elapsed.as_secs() < deadline {
            return None;
        }
        let message = "Pod was active on the node longer than the specified deadline";
        self.shared
            .event(pod, None, true, "DeadlineExceeded", message);
        kill_pod(&self.shared, pod, runtime, grace_period(pod)).await;
        let runtime = self.observe().await.unwrap_or_default();
        let mut status = self.status(pod, &runtime);
        status.phase = Some("Failed".into());
        status.reason = Some("DeadlineExceeded".into());
        status.message = Some(message.into());
        self.write_status(pod, &status).await;
        Some(Next::After(RESYNC))
    }

    /// Terminates the pod: stops its containers within the grace period, writes the
    /// final status, deletes the pod object (unless it is gone already), and removes its
    /// containers, sandboxes and volumes.
    async fn terminate(&mut self, pod: &Pod, gone: bool) -> Next {
        let runtime = match self.observe().await {
            Ok(runtime) => runtime,
            Err(error) => {
                tracing::warn!(uid = %self.uid, error = %format!("{error:#}"), "reading the pod from the runtime");
                return Next::After(RETRY);
            }
        };
        let grace = if gone {
            // Deleted without waiting (force): a short grace, as kubelet's minimum.
            grace_period(pod).min(Duration::from_secs(2))
        } else {
            grace_period(pod)
        };
        if runtime.any_running() || runtime.sandboxes.iter().any(|s| s.ready) {
            kill_pod(&self.shared, pod, &runtime, grace).await;
        }
        if !gone {
            let runtime = self.observe().await.unwrap_or_default();
            self.waiting.clear();
            let mut status = self.status(pod, &runtime);
            if !is_terminal(Some(&status)) {
                let all_succeeded = status.container_statuses.iter().flatten().all(|s| {
                    s.state
                        .as_ref()
                        .and_then(|s| s.terminated.as_ref())
                        .is_some_and(|t| t.exit_code == 0)
                });
                let policy = restart_policy(pod);
                status.phase = Some(
                    if all_succeeded && policy != "Always" {
                        "Succeeded"
                    } else {
                        "Failed"
                    }
                    .into(),
                );
            }
            if !self.write_status(pod, &status).await {
                return Next::After(RETRY);
            }
            if let Err(error) = self.shared.status.delete(pod).await {
                tracing::warn!(error = %format!("{error:#}"), "deleting a pod");
                return Next::After(RETRY);
            }
        }
        let runtime = self.observe().await.unwrap_or(runtime);
        remove_pod(&self.shared, &runtime).await;
        if let Err(error) = self.shared.volumes.teardown(&self.uid).await {
            tracing::warn!(uid = %self.uid, error = %format!("{error:#}"), "removing the pod's volumes");
        }
        let log_dir = self.shared.logs_dir.join(super::log_dir_name(pod));
        let _ = tokio::fs::remove_dir_all(&log_dir).await;
        // The pod's cgroup (its containers' parent), as kubelet's pod container manager
        // removes it.
        if self.shared.cgroup_driver == kyb_node_sys::cgroup::Driver::Cgroupfs {
            for cgroup in kyb_node_sys::cgroup::pod_cgroups(&self.uid) {
                kyb_node_sys::cgroup::remove(&cgroup);
            }
        }
        self.shared.probes.remove_pod(&self.uid);
        self.shared.status.forget(&self.uid);
        self.shared
            .backoff
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget_prefix(&format!("{}/", self.uid));
        self.shared.admitted.forget(&self.uid);
        Next::Done
    }
}

/// The most of a termination message kept (kubelet's 4 KiB from the file).
const MAX_TERMINATION_MESSAGE: usize = 4096;

/// The last 80 lines, at most 2 KiB, of a container's log in the CRI format
/// (`<time> <stream> <P|F> <text>`: partial lines joined), as kubelet's
/// `FallbackToLogsOnError` message.
fn log_tail(log: &[u8]) -> String {
    const LINES: usize = 80;
    const BYTES: usize = 2048;
    let text = String::from_utf8_lossy(log);
    let mut out = String::new();
    for line in text.lines() {
        let mut fields = line.splitn(4, ' ');
        let (Some(_time), Some(_stream), Some(tag), content) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        out.push_str(content.unwrap_or_default());
        if tag != "P" {
            out.push('\n');
        }
    }
    let lines: Vec<&str> = out.lines().collect();
    let kept = lines[lines.len().saturating_sub(LINES)..].join("\n");
    let mut kept = if out.ends_with('\n') && !kept.is_empty() {
        kept + "\n"
    } else {
        kept
    };
    if kept.len() > BYTES {
        let mut start = kept.len() - BYTES;
        while !kept.is_char_boundary(start) {
            start += 1;
        }
        kept = kept[start..].to_string();
    }
    kept
}

/// The time left until the pod's `activeDeadlineSeconds` passes.
fn deadline_remaining(pod: &Pod) -> Option<Duration> {
    let deadline = pod.spec.as_ref()?.active_deadline_seconds?;
    let start = pod.status.as_ref()?.start_time.as_ref()?.0;
    let elapsed = jiff::Timestamp::now().duration_since(start).as_secs_f64();
    Some(Duration::from_secs_f64(
        (deadline as f64 - elapsed).max(0.0),
    ))
}

/// `10s`, `1m20s`, `5m0s`: a duration as Go prints it.
fn humanize(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 {
        format!("{}m{}s", seconds / 60, seconds % 60)
    } else {
        format!("{seconds}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_tail_joins_partial_lines_and_keeps_the_last_80() {
        let log = "2026-01-01T00:00:00Z stdout P hel\n2026-01-01T00:00:00Z stdout F lo\n2026-01-01T00:00:01Z stderr F bad thing\n";
        assert_eq!(log_tail(log.as_bytes()), "hello\nbad thing\n");
        let many: String = (0..100)
            .map(|i| format!("2026-01-01T00:00:00Z stdout F line {i}\n"))
            .collect();
        let tail = log_tail(many.as_bytes());
        assert!(tail.starts_with("line 20\n"), "{tail}");
        assert!(tail.ends_with("line 99\n"));
    }
}
