//! A pod's sandbox and containers as CRI configurations. (Interim: the essentials only;
//! the full translation — env sources, security contexts, resources, DNS — replaces it.)

use crate::sources::Sources;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::HashMap;
use std::path::Path;

/// What a pod's CRI configurations are built from besides the pod itself.
pub struct PodContext<'a> {
    pub pod: &'a Pod,
    pub node_name: &'a str,
    pub pod_ips: &'a [String],
    pub pod_log_dir: &'a Path,
}

/// Which of a pod's lists a container is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerKind {
    Init,
    Sidecar,
    Regular,
}

/// The image a container runs, as the runtime resolved it.
#[derive(Clone, Debug, Default)]
pub struct ImageInfo {
    pub image_ref: String,
    pub uid: Option<i64>,
    pub username: String,
}

/// Why a container's configuration cannot be built (`CreateContainerConfigError`).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    pub reason: &'static str,
    pub message: String,
}

pub const POD_NAME_LABEL: &str = "io.kubernetes.pod.name";
pub const POD_NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";

fn pod_labels(pod: &Pod) -> HashMap<String, String> {
    let meta = &pod.metadata;
    let mut labels: HashMap<String, String> = meta
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    labels.insert(POD_NAME_LABEL.into(), meta.name.clone().unwrap_or_default());
    labels.insert(
        POD_NAMESPACE_LABEL.into(),
        meta.namespace.clone().unwrap_or_default(),
    );
    labels.insert(POD_UID_LABEL.into(), meta.uid.clone().unwrap_or_default());
    labels
}

pub fn sandbox_config(
    ctx: &PodContext,
    attempt: u32,
) -> Result<cri::PodSandboxConfig, ConfigError> {
    let meta = &ctx.pod.metadata;
    Ok(cri::PodSandboxConfig {
        metadata: Some(cri::PodSandboxMetadata {
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            attempt,
        }),
        hostname: meta.name.clone().unwrap_or_default(),
        log_directory: ctx.pod_log_dir.display().to_string(),
        labels: pod_labels(ctx.pod),
        linux: Some(cri::LinuxPodSandboxConfig::default()),
        ..Default::default()
    })
}

#[allow(clippy::too_many_arguments)]
pub async fn container_config(
    ctx: &PodContext<'_>,
    container: &Container,
    _kind: ContainerKind,
    restart_count: u32,
    mounts: Vec<cri::Mount>,
    image: &ImageInfo,
    _sources: &dyn Sources,
) -> Result<ContainerConfig, ConfigError> {
    let mut labels = HashMap::new();
    let pod = &ctx.pod.metadata;
    labels.insert(POD_NAME_LABEL.into(), pod.name.clone().unwrap_or_default());
    labels.insert(
        POD_NAMESPACE_LABEL.into(),
        pod.namespace.clone().unwrap_or_default(),
    );
    labels.insert(POD_UID_LABEL.into(), pod.uid.clone().unwrap_or_default());
    labels.insert(CONTAINER_NAME_LABEL.into(), container.name.clone());
    Ok(cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata {
            name: container.name.clone(),
            attempt: restart_count,
        }),
        image: Some(cri::ImageSpec {
            image: image.image_ref.clone(),
            user_specified_image: container.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command: container.command.clone().unwrap_or_default(),
        args: container.args.clone().unwrap_or_default(),
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs: container
            .env
            .iter()
            .flatten()
            .map(|e| cri::KeyValue {
                key: e.name.clone(),
                value: e.value.clone().unwrap_or_default(),
            })
            .collect(),
        mounts,
        labels,
        log_path: format!("{}/{restart_count}.log", container.name),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        linux: Some(cri::LinuxContainerConfig::default()),
        ..Default::default()
    })
}

pub type ContainerConfig = cri::ContainerConfig;
