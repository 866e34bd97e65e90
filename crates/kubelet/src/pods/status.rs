//! A pod's status as kubelet computes it from what the runtime holds: the phase, the
//! conditions the kubelet owns, each container's state, last state, restart count,
//! readiness and image, and the pod's addresses.

use super::runtime::{Instance, PodRuntime, State};
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kyb_component_helpers::resource::is_sidecar;
use std::collections::HashMap;

/// Why a container is waiting, as the last sync left it (kubelet's reason cache):
/// `CrashLoopBackOff`, `ErrImagePull`, `CreateContainerConfigError`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub reason: String,
    pub message: String,
}

/// The condition types the kubelet owns; others (PodScheduled, DisruptionTarget, readiness
/// gates) are kept as the API holds them.
const OWNED: [&str; 4] = [
    "PodReadyToStartContainers",
    "Initialized",
    "ContainersReady",
    "Ready",
];

/// What a pod's status is computed from besides the pod.
pub struct Inputs<'a> {
    pub runtime: &'a PodRuntime,
    /// Waiting reasons by container name.
    pub waiting: &'a HashMap<String, Waiting>,
    /// Whether a running container passed its readiness probe (true without one).
    pub ready: &'a dyn Fn(&str) -> bool,
    /// Whether a running container passed its startup probe (true without one).
    pub started: &'a dyn Fn(&str) -> bool,
    pub host_ips: &'a [String],
    /// The runtime's name, prefixing container IDs (`containerd://…`).
    pub runtime_name: &'a str,
    pub now: jiff::Timestamp,
}

fn time(ns: i64) -> Option<Time> {
    (ns > 0)
        .then(|| jiff::Timestamp::from_nanosecond(i128::from(ns)).ok())
        .flatten()
        .map(Time)
}

fn terminated(instance: &Instance, runtime_name: &str) -> ContainerState {
    let reason = if !instance.reason.is_empty() {
        instance.reason.clone()
    } else if instance.exit_code == 0 {
        "Completed".into()
    } else {
        "Error".into()
    };
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: instance.exit_code,
            reason: Some(reason),
            message: (!instance.message.is_empty()).then(|| instance.message.clone()),
            started_at: time(instance.started_at),
            finished_at: time(instance.finished_at),
            container_id: Some(format!("{runtime_name}://{}", instance.id)),
            signal: None,
        }),
        ..Default::default()
    }
}

fn waiting(reason: &str, message: &str) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_string()),
            message: (!message.is_empty()).then(|| message.to_string()),
        }),
        ..Default::default()
    }
}

/// One container's status. `default_waiting` is the reason shown before it first runs.
fn container_status(
    container: &Container,
    inputs: &Inputs<'_>,
    default_waiting: &str,
) -> ContainerStatus {
    let name = &container.name;
    let latest = inputs.runtime.latest(name);
    let previous = inputs.runtime.previous(name);
    let last_state = previous
        .filter(|p| p.state == State::Exited)
        .map(|p| terminated(p, inputs.runtime_name));
    let pending = inputs.waiting.get(name);
    let (state, last_state) = match latest {
        None => (
            pending.map_or_else(
                || waiting(default_waiting, ""),
                |w| waiting(&w.reason, &w.message),
            ),
            None,
        ),
        Some(instance) => match instance.state {
            State::Running => (
                ContainerState {
                    running: Some(ContainerStateRunning {
                        started_at: time(instance.started_at),
                    }),
                    ..Default::default()
                },
                last_state,
            ),
            State::Exited => match pending {
                // To be restarted: waiting, the instance that exited as the last state.
                Some(w) => (
                    waiting(&w.reason, &w.message),
                    Some(terminated(instance, inputs.runtime_name)),
                ),
                None => (terminated(instance, inputs.runtime_name), last_state),
            },
            State::Created | State::Unknown => (
                pending.map_or_else(
                    || waiting("ContainerCreating", ""),
                    |w| waiting(&w.reason, &w.message),
                ),
                last_state,
            ),
        },
    };
    let running = state.running.is_some();
    let started = running && (inputs.started)(name);
    ContainerStatus {
        name: name.clone(),
        state: Some(state),
        last_state: Some(last_state.unwrap_or_default()),
        ready: started && (inputs.ready)(name),
        restart_count: latest.map_or(0, |i| i.restart_count as i32),
        image: latest
            .map(|i| i.image.clone())
            .filter(|i| !i.is_empty())
            .or_else(|| container.image.clone())
            .unwrap_or_default(),
        image_id: latest.map(|i| i.image_id.clone()).unwrap_or_default(),
        container_id: latest.map(|i| format!("{}://{}", inputs.runtime_name, i.id)),
        started: Some(started),
        ..Default::default()
    }
}

/// Counts of a pod's regular containers by state, for the phase.
#[derive(Default)]
struct Counts {
    running: usize,
    waiting: usize,
    /// Exited and not to be restarted, or waiting to restart after exiting.
    stopped: usize,
    succeeded: usize,
    failed: usize,
}

fn exited_code(status: &ContainerStatus) -> Option<i32> {
    let state = status.state.as_ref()?;
    if let Some(t) = &state.terminated {
        return Some(t.exit_code);
    }
    if state.waiting.is_some() {
        return status
            .last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
            .map(|t| t.exit_code);
    }
    None
}

/// Whether every init container is done: regular ones exited 0, sidecars started.
fn initialization(statuses: &[ContainerStatus], specs: &[Container]) -> (Vec<String>, bool) {
    let mut incomplete = vec![];
    let mut failed = false;
    for (spec, status) in specs.iter().zip(statuses) {
        let state = status.state.as_ref();
        if is_sidecar(spec) {
            if !status.started.unwrap_or(false) {
                incomplete.push(spec.name.clone());
            }
            continue;
        }
        match state.and_then(|s| s.terminated.as_ref()) {
            Some(t) if t.exit_code == 0 => {}
            Some(_) => {
                failed = true;
                incomplete.push(spec.name.clone());
            }
            None => {
                if exited_code(status).is_some_and(|c| c != 0) {
                    failed = true;
                }
                incomplete.push(spec.name.clone());
            }
        }
    }
    (incomplete, failed)
}

/// The pod's phase, as kubelet's `getPhase` decides it.
fn phase(pod: &Pod, init: &[ContainerStatus], regular: &[ContainerStatus]) -> &'static str {
    let spec = pod.spec.as_ref();
    let restart_policy = spec
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always");
    let init_specs = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    let (incomplete, init_failed) = initialization(init, init_specs);
    if init_failed && restart_policy == "Never" {
        return "Failed";
    }
    let mut counts = Counts::default();
    for status in regular {
        let state = status.state.clone().unwrap_or_default();
        if state.running.is_some() {
            counts.running += 1;
        } else if let Some(t) = &state.terminated {
            counts.stopped += 1;
            if t.exit_code == 0 {
                counts.succeeded += 1;
            } else {
                counts.failed += 1;
            }
        } else if let Some(code) = exited_code(status) {
            counts.stopped += 1;
            if code == 0 {
                counts.succeeded += 1;
            } else {
                counts.failed += 1;
            }
        } else {
            counts.waiting += 1;
        }
    }
    if !incomplete.is_empty() {
        return "Pending";
    }
    if counts.waiting > 0 {
        return "Pending";
    }
    if counts.running > 0 {
        return "Running";
    }
    if counts.stopped > 0 {
        return match restart_policy {
            "Always" => "Running",
            "OnFailure" if counts.failed > 0 => "Running",
            "OnFailure" => "Succeeded",
            _ if counts.failed > 0 => "Failed",
            _ => "Succeeded",
        };
    }
    "Pending"
}

fn condition(type_: &str, ok: bool, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.to_string(),
        status: if ok { "True" } else { "False" }.to_string(),
        reason: reason.map(str::to_string),
        message,
        ..Default::default()
    }
}

/// The pod's status now. Conditions keep their transition times while their status does
/// not change; a terminal phase never changes.
pub fn generate(pod: &Pod, inputs: &Inputs<'_>) -> PodStatus {
    let old = pod.status.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let init_specs = spec.init_containers.clone().unwrap_or_default();
    let sandbox_ready = inputs.runtime.sandbox().is_some_and(|s| s.ready);
    // Before they first run, containers wait as `ContainerCreating`, or as
    // `PodInitializing` in a pod with init containers (kubelet's default waiting state).
    let default_waiting = if init_specs.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let init: Vec<ContainerStatus> = init_specs
        .iter()
        .map(|c| container_status(c, inputs, default_waiting))
        .collect();
    let (incomplete, _) = initialization(&init, &init_specs);
    let regular: Vec<ContainerStatus> = spec
        .containers
        .iter()
        .map(|c| container_status(c, inputs, default_waiting))
        .collect();

    let mut phase = phase(pod, &init, &regular).to_string();
    if matches!(old.phase.as_deref(), Some("Succeeded" | "Failed")) {
        phase = old.phase.clone().unwrap_or_default();
    }

    let host_network = spec.host_network.unwrap_or(false);
    let pod_ips: Vec<String> = if host_network {
        inputs.host_ips.to_vec()
    } else {
        inputs
            .runtime
            .sandbox()
            .filter(|s| s.ready)
            .map(|s| s.ips.clone())
            .unwrap_or_default()
    };

    let mut unready: Vec<String> = init_specs
        .iter()
        .zip(&init)
        .filter(|(spec, status)| is_sidecar(spec) && !status.ready)
        .map(|(spec, _)| spec.name.clone())
        .collect();
    unready.extend(regular.iter().filter(|s| !s.ready).map(|s| s.name.clone()));
    let containers_ready = unready.is_empty();
    let completed = phase == "Succeeded";
    let not_ready = |completed: bool| {
        if completed {
            (Some("PodCompleted"), None)
        } else {
            (
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        }
    };
    let gates_ready = spec.readiness_gates.iter().flatten().all(|gate| {
        old.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == gate.condition_type && c.status == "True")
    });
    let mut owned = vec![
        condition(
            "PodReadyToStartContainers",
            sandbox_ready && (host_network || !pod_ips.is_empty()),
            None,
            None,
        ),
        if incomplete.is_empty() {
            condition(
                "Initialized",
                true,
                completed.then_some("PodCompleted"),
                None,
            )
        } else {
            condition(
                "Initialized",
                false,
                Some("ContainersNotInitialized"),
                Some(format!(
                    "containers with incomplete status: [{}]",
                    incomplete.join(" ")
                )),
            )
        },
    ];
    if containers_ready && !completed {
        owned.push(condition("ContainersReady", true, None, None));
    } else {
        let (reason, message) = not_ready(completed);
        owned.push(condition("ContainersReady", false, reason, message));
    }
    if containers_ready && gates_ready && !completed {
        owned.push(condition("Ready", true, None, None));
    } else if containers_ready && !completed {
        owned.push(condition(
            "Ready",
            false,
            Some("ReadinessGatesNotReady"),
            Some("the status of pod readiness gate is not \"True\"".into()),
        ));
    } else {
        let (reason, message) = not_ready(completed);
        owned.push(condition("Ready", false, reason, message));
    }

    let now = Time(inputs.now);
    let mut conditions: Vec<PodCondition> = old
        .conditions
        .iter()
        .flatten()
        .filter(|c| !OWNED.contains(&c.type_.as_str()))
        .cloned()
        .collect();
    for mut new in owned {
        let previous = old
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == new.type_);
        new.last_transition_time = match previous {
            Some(p) if p.status == new.status => p.last_transition_time.clone(),
            _ => Some(now.clone()),
        };
        new.last_probe_time = None;
        conditions.push(new);
    }

    let qos = serde_json::to_value(&spec)
        .map(|spec| kyb_component_helpers::qos::compute_pod_qos_json(&spec))
        .unwrap_or("BestEffort");
    PodStatus {
        phase: Some(phase),
        conditions: Some(conditions),
        host_ip: inputs.host_ips.first().cloned(),
        host_ips: (!inputs.host_ips.is_empty()).then(|| {
            inputs
                .host_ips
                .iter()
                .map(|ip| HostIP { ip: ip.clone() })
                .collect()
        }),
        pod_ip: pod_ips.first().cloned(),
        pod_ips: (!pod_ips.is_empty())
            .then(|| pod_ips.iter().map(|ip| PodIP { ip: ip.clone() }).collect()),
        start_time: old.start_time.clone().or(Some(now)),
        qos_class: Some(qos.to_string()),
        init_container_statuses: (!init.is_empty()).then_some(init),
        container_statuses: Some(regular),
        ..old
    }
}
