//! Stopping a pod's containers as kubelet does: the preStop hook first (within the grace
//! period), then the runtime's stop (SIGTERM, and SIGKILL once what is left of the grace
//! period has passed); regular containers together, then sidecars in reverse order; then
//! the pod's sandboxes.

use super::Shared;
use super::runtime::{Instance, PodRuntime, State};
use crate::probes::CriExec;
use crate::probes::Target;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::Pod;
use std::time::{Duration, Instant};

/// The shortest time the runtime gets to stop a container after its preStop hook ran.
const MIN_AFTER_HOOK: Duration = Duration::from_secs(2);

/// The grace period of a pod being stopped: the deletion's, else the spec's (30 s default).
pub fn grace_period(pod: &Pod) -> Duration {
    let seconds = pod
        .metadata
        .deletion_grace_period_seconds
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
        .unwrap_or(30)
        .max(0);
    Duration::from_secs(seconds as u64)
}

/// Stops one running container: its preStop hook, then the runtime's stop with what is
/// left of `grace`. `message` is the `Killing` event's (default `Stopping container x`).
pub async fn kill_container(
    shared: &Shared,
    pod: &Pod,
    runtime: &PodRuntime,
    instance: &Instance,
    grace: Duration,
    message: Option<String>,
) {
    let started = Instant::now();
    let name = &instance.name;
    shared.event(
        pod,
        Some(super::field_path(pod, name)),
        false,
        "Killing",
        message.unwrap_or_else(|| format!("Stopping container {name}")),
    );
    let mut remaining = grace;
    if let Some(container) = super::container_spec(pod, name)
        && let Some(pre_stop) = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_stop.as_ref())
        && !grace.is_zero()
    {
        let target = Target {
            pod_ip: shared.pod_ip(pod, runtime.sandbox().map(|s| s.ips.as_slice())),
            container_id: instance.id.clone(),
            container: container.clone(),
            pod: crate::probes::format_pod(pod),
        };
        let exec = CriExec::new(shared.cri.runtime.clone());
        let hook = crate::probes::run_hook(pre_stop, &target, &exec, grace);
        match tokio::time::timeout(grace, hook).await {
            Ok(Ok(())) => {}
            Ok(Err(message)) => shared.event(
                pod,
                Some(super::field_path(pod, name)),
                true,
                "FailedPreStopHook",
                message,
            ),
            Err(_) => shared.event(
                pod,
                Some(super::field_path(pod, name)),
                true,
                "FailedPreStopHook",
                format!(
                    "PreStop hook for container {name} did not complete in {}s",
                    grace.as_secs()
                ),
            ),
        }
        remaining = grace.saturating_sub(started.elapsed()).max(MIN_AFTER_HOOK);
    }
    shared
        .probes
        .container_stopped(pod.metadata.uid.as_deref().unwrap_or_default(), name);
    let stop = cri::StopContainerRequest {
        container_id: instance.id.clone(),
        timeout: remaining.as_secs() as i64,
    };
    if let Err(error) = shared.cri.runtime.clone().stop_container(stop).await {
        tracing::warn!(container = %instance.id, error = %error.message(), "stopping a container");
    }
}

/// Stops every running container of the pod (regular ones together, then sidecars and
/// init containers one by one in reverse order), then its sandboxes.
pub async fn kill_pod(shared: &Shared, pod: &Pod, runtime: &PodRuntime, grace: Duration) {
    let deadline = Instant::now() + grace;
    let spec = pod.spec.clone().unwrap_or_default();
    let init_names: Vec<&str> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    let running: Vec<&Instance> = runtime
        .instances
        .iter()
        .filter(|i| matches!(i.state, State::Running | State::Created | State::Unknown))
        .collect();
    let (init, regular): (Vec<&Instance>, Vec<&Instance>) = running
        .into_iter()
        .partition(|i| init_names.contains(&i.name.as_str()));
    futures::future::join_all(
        regular
            .iter()
            .map(|i| kill_container(shared, pod, runtime, i, grace, None)),
    )
    .await;
    let mut init = init;
    init.sort_by_key(|i| {
        std::cmp::Reverse(init_names.iter().position(|n| *n == i.name).unwrap_or(0))
    });
    for instance in init {
        let left = deadline.saturating_duration_since(Instant::now());
        kill_container(shared, pod, runtime, instance, left, None).await;
    }
    for sandbox in runtime.sandboxes.iter().filter(|s| s.ready) {
        let stop = cri::StopPodSandboxRequest {
            pod_sandbox_id: sandbox.id.clone(),
        };
        if let Err(error) = shared.cri.runtime.clone().stop_pod_sandbox(stop).await {
            tracing::warn!(sandbox = %sandbox.id, error = %error.message(), "stopping a sandbox");
        }
    }
}

/// Removes the pod's containers and sandboxes from the runtime.
pub async fn remove_pod(shared: &Shared, runtime: &PodRuntime) {
    for sandbox in &runtime.sandboxes {
        let mut client = shared.cri.runtime.clone();
        let _ = client
            .stop_pod_sandbox(cri::StopPodSandboxRequest {
                pod_sandbox_id: sandbox.id.clone(),
            })
            .await;
        if let Err(error) = client
            .remove_pod_sandbox(cri::RemovePodSandboxRequest {
                pod_sandbox_id: sandbox.id.clone(),
            })
            .await
        {
            tracing::warn!(sandbox = %sandbox.id, error = %error.message(), "removing a sandbox");
        }
    }
}
