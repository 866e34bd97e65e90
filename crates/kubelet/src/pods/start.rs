//! Creating a pod's sandbox and starting its containers through CRI, with the events
//! kubelet records (`Pulling`, `Pulled`, `Created`, `Started`, `Failed`, ...) and the
//! waiting reasons a failure leaves (`ErrImagePull`, `CreateContainerConfigError`, ...).

use super::Shared;
use super::status::Waiting;
use crate::container::{ContainerFiles, ContainerKind, ImageInfo};
use crate::probes::CriExec;
use crate::probes::Target;
use crate::volumes::MountedVolumes;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::path::PathBuf;

/// A running sandbox to start containers in.
pub struct SandboxHandle {
    pub id: String,
    pub config: cri::PodSandboxConfig,
    pub ips: Vec<String>,
}

/// The hash of a container's spec as its instances are annotated with it: a running
/// container whose hash differs is restarted.
pub fn spec_hash(container: &Container) -> String {
    format!("{:x}", crate::container::container_hash(container))
}

/// The sandbox configuration of `pod` for its `attempt`-th sandbox.
pub fn sandbox_config(
    shared: &Shared,
    pod: &Pod,
    attempt: u32,
    pod_ips: &[String],
) -> Result<cri::PodSandboxConfig, Waiting> {
    let parts = shared.context_parts(pod);
    let ctx = shared.context(pod, pod_ips, &parts);
    crate::container::sandbox_config(&ctx, attempt)
        .map(|(config, warnings)| {
            for warning in warnings {
                shared.event(pod, None, true, warning.reason, warning.message);
            }
            config
        })
        .map_err(|e| Waiting {
            reason: e.reason.to_string(),
            message: e.message,
        })
}

/// The RuntimeClass handler of the pod (`""` for the runtime's default).
async fn runtime_handler(shared: &Shared, pod: &Pod) -> Result<String, String> {
    let Some(class) = pod
        .spec
        .as_ref()
        .and_then(|s| s.runtime_class_name.as_deref())
    else {
        return Ok(String::new());
    };
    let api: kube::Api<k8s_openapi::api::node::v1::RuntimeClass> =
        kube::Api::all(shared.client.clone());
    match api.get(class).await {
        Ok(found) => Ok(found.handler),
        Err(e) => Err(format!("failed to get RuntimeClass \"{class}\": {e}")),
    }
}

/// The pod's cgroup with its limits, before its sandbox and containers go in it, as
/// kubelet's pod container manager makes it (cgroupfs only: with systemd, the runtime
/// creates the slice).
fn ensure_pod_cgroup(shared: &Shared, pod: &Pod) -> Result<(), String> {
    use kyb_node_sys::cgroup;
    if shared.cgroup_driver != cgroup::Driver::Cgroupfs || !kyb_node_sys::privileges::is_root() {
        return Ok(());
    }
    let Ok(version) = cgroup::version() else {
        return Ok(());
    };
    let parent = crate::container::cgroup_parent(pod, shared.cgroup_driver);
    let limits = crate::container::resources::pod_cgroup_limits(pod);
    cgroup::apply(&parent, version, &limits).map_err(|e| {
        format!(
            "unable to ensure pod container exists: failed to create container for {parent}: {e}"
        )
    })
}

/// Creates the pod's `attempt`-th sandbox and reads its addresses.
pub async fn run_sandbox(
    shared: &Shared,
    pod: &Pod,
    attempt: u32,
) -> Result<SandboxHandle, String> {
    let log_dir = shared.logs_dir.join(super::log_dir_name(pod));
    tokio::fs::create_dir_all(&log_dir).await.map_err(|e| {
        format!(
            "creating the pod's log directory {}: {e}",
            log_dir.display()
        )
    })?;
    ensure_pod_cgroup(shared, pod)?;
    let config = sandbox_config(shared, pod, attempt, &[]).map_err(|w| w.message)?;
    let handler = runtime_handler(shared, pod).await?;
    let mut runtime = shared.cri.runtime.clone();
    let id = runtime
        .run_pod_sandbox(cri::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: handler,
        })
        .await
        .map_err(|e| format!("rpc error: code = {:?} desc = {}", e.code(), e.message()))?
        .into_inner()
        .pod_sandbox_id;
    let status = runtime
        .pod_sandbox_status(cri::PodSandboxStatusRequest {
            pod_sandbox_id: id.clone(),
            verbose: false,
        })
        .await
        .map_err(|e| e.message().to_string())?
        .into_inner()
        .status;
    let mut ips = vec![];
    if let Some(network) = status.and_then(|s| s.network) {
        if !network.ip.is_empty() {
            ips.push(network.ip);
        }
        ips.extend(network.additional_ips.into_iter().map(|ip| ip.ip));
    }
    Ok(SandboxHandle { id, config, ips })
}

/// The host file bound to the container's termination-message path.
fn termination_message_file(shared: &Shared, pod: &Pod, container: &str, restart: u32) -> PathBuf {
    shared
        .pods_dir
        .join(pod.metadata.uid.as_deref().unwrap_or_default())
        .join("containers")
        .join(container)
        .join(restart.to_string())
}

/// Pulls (if needed), creates and starts one container in `sandbox`, runs its postStart
/// hook and starts its probes. A failure is the waiting reason and message to report.
#[allow(clippy::too_many_arguments)]
pub async fn start_container(
    shared: &Shared,
    pod: &Pod,
    sandbox: &SandboxHandle,
    volumes: &MountedVolumes,
    container: &Container,
    kind: ContainerKind,
    restart_count: u32,
) -> Result<String, Waiting> {
    let field = Some(super::field_path(pod, &container.name));
    let mut pull_secrets = vec![];
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    for reference in pod
        .spec
        .as_ref()
        .and_then(|s| s.image_pull_secrets.as_ref())
        .into_iter()
        .flatten()
    {
        // A missing pull secret is skipped, as kubelet does (the pull may not need it).
        if let Ok(secret) = shared.sources.secret(namespace, &reference.name).await {
            pull_secrets.push((*secret).clone());
        }
    }
    let record = |events: Vec<crate::images::ImageEvent>| {
        for event in events {
            let warning = event.event_type == crate::images::EventType::Warning;
            shared.event(pod, field.clone(), warning, event.reason, event.message);
        }
    };
    let image = match shared.images.ensure(pod, container, &pull_secrets).await {
        Ok(ensured) => {
            record(ensured.events);
            ensured.image_ref
        }
        Err(error) => {
            record(error.events);
            shared.event(
                pod,
                field.clone(),
                true,
                "Failed",
                format!("Error: {}", error.reason),
            );
            return Err(Waiting {
                reason: error.reason.to_string(),
                message: error.message,
            });
        }
    };
    // A failed step: kubelet's `Failed` event (`Error: <message>`) and the waiting reason.
    let failed = |reason: &str, message: String| {
        shared.event(
            pod,
            field.clone(),
            true,
            "Failed",
            format!("Error: {message}"),
        );
        Waiting {
            reason: reason.to_string(),
            message,
        }
    };
    let config_error = |message: String| failed("CreateContainerConfigError", message);
    let privileged = container
        .security_context
        .as_ref()
        .and_then(|s| s.privileged)
        .unwrap_or(false);
    let mounts = crate::volumes::container_mounts(pod, container, volumes, privileged)
        .map_err(config_error)?;
    let message_file = termination_message_file(shared, pod, &container.name, restart_count);
    if let Some(dir) = message_file.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| config_error(format!("creating {}: {e}", dir.display())))?;
    }
    tokio::fs::write(&message_file, b"")
        .await
        .map_err(|e| config_error(format!("creating {}: {e}", message_file.display())))?;
    // The file is written by whatever user the container runs as.
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(&message_file, std::fs::Permissions::from_mode(0o666));
    }
    let pod_dir = shared
        .pods_dir
        .join(pod.metadata.uid.as_deref().unwrap_or_default());
    let etc_hosts = pod_dir.join("etc-hosts");
    let node_hosts = if pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
    {
        tokio::fs::read_to_string("/etc/hosts")
            .await
            .unwrap_or_default()
    } else {
        String::new()
    };
    let hosts =
        crate::container::hosts_file(pod, &sandbox.ips, &shared.cluster_domain, &node_hosts)
            .map_err(|e| config_error(e.message))?;
    tokio::fs::write(&etc_hosts, hosts)
        .await
        .map_err(|e| config_error(format!("writing {}: {e}", etc_hosts.display())))?;
    let log_dir = shared.logs_dir.join(super::log_dir_name(pod));
    let _ = tokio::fs::create_dir_all(log_dir.join(&container.name)).await;
    let user_image = container.image.clone().unwrap_or_default();
    let info = match shared
        .cri
        .images
        .clone()
        .image_status(cri::ImageStatusRequest {
            image: Some(cri::ImageSpec {
                image: image.clone(),
                ..Default::default()
            }),
            verbose: false,
        })
        .await
        .ok()
        .and_then(|r| r.into_inner().image)
    {
        Some(found) => ImageInfo::from_status(&user_image, &found),
        None => ImageInfo::new(image, user_image, None, ""),
    };
    let files = ContainerFiles {
        termination_message: Some(&message_file),
        etc_hosts: (!pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false))
        .then_some(etc_hosts.as_path()),
    };
    let parts = shared.context_parts(pod);
    let ctx = shared.context(pod, &sandbox.ips, &parts);
    let config = crate::container::container_config(
        &ctx,
        container,
        kind,
        restart_count,
        mounts,
        &info,
        files,
        shared.sources.as_ref(),
    )
    .await
    .map_err(|e| config_error(e.message))?;
    let grace = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(30);
    let mut runtime = shared.cri.runtime.clone();
    let id = match runtime
        .create_container(cri::CreateContainerRequest {
            pod_sandbox_id: sandbox.id.clone(),
            config: Some(config),
            sandbox_config: Some(sandbox.config.clone()),
        })
        .await
    {
        Ok(response) => response.into_inner().container_id,
        Err(status) => return Err(failed("CreateContainerError", status.message().to_string())),
    };
    shared.event(
        pod,
        field.clone(),
        false,
        "Created",
        format!("Created container: {}", container.name),
    );
    if let Err(status) = runtime
        .start_container(cri::StartContainerRequest {
            container_id: id.clone(),
        })
        .await
    {
        return Err(failed("RunContainerError", status.message().to_string()));
    }
    shared.event(
        pod,
        field.clone(),
        false,
        "Started",
        format!("Started container {}", container.name),
    );
    let pod_ip = shared.pod_ip(pod, Some(&sandbox.ips));
    if let Some(post_start) = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.post_start.as_ref())
    {
        let target = Target {
            pod_ip,
            container_id: id.clone(),
            container: container.clone(),
            pod: crate::probes::format_pod(pod),
        };
        let exec = CriExec::new(shared.cri.runtime.clone());
        let timeout = std::time::Duration::from_secs(grace.max(1) as u64);
        if let Err(message) = crate::probes::run_hook(post_start, &target, &exec, timeout).await {
            shared.event(
                pod,
                field.clone(),
                true,
                "FailedPostStartHook",
                "PostStartHook failed",
            );
            let _ = runtime
                .stop_container(cri::StopContainerRequest {
                    container_id: id.clone(),
                    timeout: grace,
                })
                .await;
            return Err(Waiting {
                reason: "PostStartHookError".into(),
                message,
            });
        }
    }
    shared
        .probes
        .container_started(pod, &container.name, &id, std::time::Instant::now(), pod_ip);
    Ok(id)
}
