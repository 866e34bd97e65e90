//! A pod as the container runtime holds it: its sandboxes and containers, found by the
//! labels the agent puts on them, so that a restarted agent recovers every pod from the
//! runtime alone.

use crate::container::labels::{CONTAINER_HASH, CONTAINER_NAME, CONTAINER_RESTART_COUNT, POD_UID};
use crate::cri::Cri;
use anyhow::Context as _;
use k8s_cri::v1 as cri;
use std::collections::HashMap;

/// One of a pod's sandboxes.
#[derive(Clone, Debug)]
pub struct Sandbox {
    pub id: String,
    pub attempt: u32,
    pub ready: bool,
    pub created_at: i64,
    /// The pod's addresses in this sandbox (empty until it is ready, and for host-network pods).
    pub ips: Vec<String>,
}

/// Where a container instance is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Created,
    Running,
    Exited,
    Unknown,
}

/// One instance of one of a pod's containers.
#[derive(Clone, Debug)]
pub struct Instance {
    pub id: String,
    pub name: String,
    pub sandbox_id: String,
    pub state: State,
    /// Nanoseconds since the epoch (0: not yet).
    pub created_at: i64,
    pub started_at: i64,
    pub finished_at: i64,
    pub exit_code: i32,
    pub reason: String,
    pub message: String,
    /// The image as the pod named it, and the image ID the runtime ran.
    pub image: String,
    pub image_id: String,
    pub restart_count: u32,
    pub hash: String,
    pub log_path: String,
}

impl Instance {
    /// Whether the instance exited longer than [`EXIT_SETTLE`] ago (its status final).
    pub fn settled(&self) -> bool {
        let now = jiff::Timestamp::now().as_nanosecond() as i64;
        self.state == State::Exited
            && now.saturating_sub(self.finished_at) > EXIT_SETTLE.as_nanos() as i64
    }

    /// Whether the instance finished with a failure.
    pub fn failed(&self) -> bool {
        self.state == State::Exited && self.exit_code != 0
    }
}

/// A pod's sandboxes and container instances, newest first.
#[derive(Clone, Debug, Default)]
pub struct PodRuntime {
    pub sandboxes: Vec<Sandbox>,
    pub instances: Vec<Instance>,
}

impl PodRuntime {
    /// The newest sandbox.
    pub fn sandbox(&self) -> Option<&Sandbox> {
        self.sandboxes.first()
    }

    /// The newest instance of container `name`.
    pub fn latest(&self, name: &str) -> Option<&Instance> {
        self.instances.iter().find(|i| i.name == name)
    }

    /// The instance before the newest one of container `name`.
    pub fn previous(&self, name: &str) -> Option<&Instance> {
        self.instances.iter().filter(|i| i.name == name).nth(1)
    }

    /// Whether any instance is running.
    pub fn any_running(&self) -> bool {
        self.instances.iter().any(|i| i.state == State::Running)
    }
}

/// How long after its exit a container's status may still change: the runtime's OOM
/// event can follow the exit event, turning the reason from `Error` into `OOMKilled`.
pub const EXIT_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// Container statuses already read, by container ID: an exited container's status never
/// changes once settled (see [`EXIT_SETTLE`]), so it is read from the runtime once.
#[derive(Default)]
pub struct StatusCache {
    exited: HashMap<String, Instance>,
}

/// Reads the sandboxes and containers of the pod with `uid` from the runtime.
pub async fn observe(cri: &Cri, uid: &str, cache: &mut StatusCache) -> anyhow::Result<PodRuntime> {
    let selector: HashMap<String, String> = [(POD_UID.to_string(), uid.to_string())].into();
    let mut runtime = cri.runtime.clone();
    let sandboxes = runtime
        .list_pod_sandbox(cri::ListPodSandboxRequest {
            filter: Some(cri::PodSandboxFilter {
                label_selector: selector.clone(),
                ..Default::default()
            }),
        })
        .await
        .context("listing the pod's sandboxes")?
        .into_inner()
        .items;
    let mut observed = PodRuntime::default();
    for sandbox in sandboxes {
        let ready = sandbox.state == cri::PodSandboxState::SandboxReady as i32;
        let mut ips = vec![];
        if ready {
            let status = runtime
                .pod_sandbox_status(cri::PodSandboxStatusRequest {
                    pod_sandbox_id: sandbox.id.clone(),
                    verbose: false,
                })
                .await
                .context("reading a sandbox's status")?
                .into_inner()
                .status;
            if let Some(network) = status.and_then(|s| s.network) {
                if !network.ip.is_empty() {
                    ips.push(network.ip);
                }
                ips.extend(network.additional_ips.into_iter().map(|ip| ip.ip));
            }
        }
        observed.sandboxes.push(Sandbox {
            id: sandbox.id,
            attempt: sandbox.metadata.map_or(0, |m| m.attempt),
            ready,
            created_at: sandbox.created_at,
            ips,
        });
    }
    observed
        .sandboxes
        .sort_by_key(|s| std::cmp::Reverse(s.created_at));

    let containers = runtime
        .list_containers(cri::ListContainersRequest {
            filter: Some(cri::ContainerFilter {
                label_selector: selector,
                ..Default::default()
            }),
        })
        .await
        .context("listing the pod's containers")?
        .into_inner()
        .containers;
    for container in containers {
        if let Some(known) = cache.exited.get(&container.id) {
            observed.instances.push(known.clone());
            continue;
        }
        let status = match runtime
            .container_status(cri::ContainerStatusRequest {
                container_id: container.id.clone(),
                verbose: false,
            })
            .await
        {
            Ok(response) => response.into_inner().status,
            // Removed between the list and the status read.
            Err(status) if status.code() == tonic::Code::NotFound => continue,
            Err(status) => {
                return Err(anyhow::anyhow!(status.message().to_string()))
                    .context("reading a container's status");
            }
        };
        let Some(status) = status else { continue };
        let instance = instance(&container, status);
        if instance.state == State::Exited && instance.settled() {
            cache.exited.insert(instance.id.clone(), instance.clone());
        }
        observed.instances.push(instance);
    }
    observed
        .instances
        .sort_by_key(|i| std::cmp::Reverse(i.created_at));
    // Containers removed since are forgotten.
    cache
        .exited
        .retain(|id, _| observed.instances.iter().any(|i| &i.id == id));
    Ok(observed)
}

fn instance(container: &cri::Container, status: cri::ContainerStatus) -> Instance {
    let state = match cri::ContainerState::try_from(status.state) {
        Ok(cri::ContainerState::ContainerCreated) => State::Created,
        Ok(cri::ContainerState::ContainerRunning) => State::Running,
        Ok(cri::ContainerState::ContainerExited) => State::Exited,
        _ => State::Unknown,
    };
    let annotations = &status.annotations;
    Instance {
        id: container.id.clone(),
        name: container
            .labels
            .get(CONTAINER_NAME)
            .cloned()
            .or_else(|| container.metadata.as_ref().map(|m| m.name.clone()))
            .unwrap_or_default(),
        sandbox_id: container.pod_sandbox_id.clone(),
        state,
        created_at: status.created_at,
        started_at: status.started_at,
        finished_at: status.finished_at,
        exit_code: status.exit_code,
        reason: status.reason,
        message: status.message,
        image: status
            .image
            .map(|i| {
                if i.user_specified_image.is_empty() {
                    i.image
                } else {
                    i.user_specified_image
                }
            })
            .unwrap_or_default(),
        image_id: status.image_ref,
        restart_count: annotations
            .get(CONTAINER_RESTART_COUNT)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        hash: annotations.get(CONTAINER_HASH).cloned().unwrap_or_default(),
        log_path: status.log_path,
    }
}
