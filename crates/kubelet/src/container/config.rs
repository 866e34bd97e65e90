//! A container as a CRI `ContainerConfig` (`generateContainerConfig`): its image, command
//! and arguments with `$(VAR)` references expanded, working directory, environment,
//! mounts (the volumes', the pod's managed `/etc/hosts`, the termination-message file),
//! log path (`<container>/<restart count>.log`), stdin/tty, labels and annotations, and
//! its Linux resources and security context.

use super::env::environment;
use super::expansion::expand;
use super::labels::{container_annotations, container_labels};
use super::resources::container_resources;
use super::security::{SeccompSettings, container_security_context};
use super::{ConfigError, ContainerKind, ImageInfo, PodContext};
use crate::sources::Sources;
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, ImageSpec, KeyValue, LinuxContainerConfig, Mount,
};
use k8s_openapi::api::core::v1::Container;
use std::collections::HashMap;
use std::path::Path;

/// Where the pod's managed hosts file is mounted.
pub const ETC_HOSTS_PATH: &str = "/etc/hosts";

/// Files on the node the caller prepared for one container.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContainerFiles<'a> {
    /// The file the container's termination message is written to (created empty, mode
    /// 0666, under the pod's directory, one per container instance), bound at the
    /// container's `terminationMessagePath`; None: not mounted.
    pub termination_message: Option<&'a Path>,
    /// The pod's hosts file (written from [`super::hosts_file`]); mounted at `/etc/hosts`
    /// once the pod has IPs, unless the container mounts a volume there.
    pub etc_hosts: Option<&'a Path>,
}

/// The log file of a container instance, relative to the pod's log directory.
pub fn container_log_path(container_name: &str, restart_count: u32) -> String {
    format!("{container_name}/{restart_count}.log")
}

/// The container's configuration for its `restart_count`-th run. `mounts` are its
/// volumes' mounts; `image` the image as the runtime has it. The caller creates the
/// container's log directory (`<pod log dir>/<container>`). Errors have the reason
/// `CreateContainerConfigError` and kubelet's messages.
#[allow(clippy::too_many_arguments)]
pub async fn container_config(
    ctx: &PodContext<'_>,
    container: &Container,
    kind: ContainerKind,
    restart_count: u32,
    mounts: Vec<Mount>,
    image: &ImageInfo,
    files: ContainerFiles<'_>,
    sources: &dyn Sources,
) -> Result<ContainerConfig, ConfigError> {
    let pod = ctx.pod;
    let envs = environment(ctx, container, sources)
        .await
        .map_err(ConfigError::container)?;
    let security_context = container_security_context(
        pod,
        container,
        image,
        SeccompSettings {
            profile_root: ctx.seccomp_profile_root,
            default_runtime_default: ctx.seccomp_default,
        },
    )
    .map_err(ConfigError::container)?;

    let vars: HashMap<&str, &str> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let expand_all = |list: &Option<Vec<String>>| -> Vec<String> {
        list.iter()
            .flatten()
            .map(|s| expand(s, |name| vars.get(name).copied()))
            .collect()
    };
    let command = expand_all(&container.command);
    let args = expand_all(&container.args);

    let mut all_mounts = mounts;
    if let Some(hosts) = files.etc_hosts
        && !ctx.pod_ips.is_empty()
        && !all_mounts
            .iter()
            .any(|m| m.container_path == ETC_HOSTS_PATH)
    {
        all_mounts.push(Mount {
            container_path: ETC_HOSTS_PATH.to_string(),
            host_path: hosts.to_string_lossy().into_owned(),
            selinux_relabel: true,
            ..Default::default()
        });
    }
    if let Some(file) = files.termination_message
        && let Some(path) = container
            .termination_message_path
            .as_deref()
            .filter(|p| !p.is_empty())
    {
        all_mounts.push(Mount {
            container_path: path.to_string(),
            host_path: file.to_string_lossy().into_owned(),
            ..Default::default()
        });
    }

    Ok(ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: container.name.clone(),
            attempt: restart_count,
        }),
        image: Some(ImageSpec {
            image: image.image_ref.clone(),
            user_specified_image: container.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command,
        args,
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs: envs
            .into_iter()
            .map(|(key, value)| KeyValue { key, value })
            .collect(),
        mounts: all_mounts,
        labels: container_labels(pod, container),
        annotations: container_annotations(pod, container, restart_count),
        log_path: container_log_path(&container.name, restart_count),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        linux: Some(LinuxContainerConfig {
            resources: Some(container_resources(
                pod,
                container,
                kind,
                ctx.node_memory_capacity,
            )),
            security_context: Some(security_context),
        }),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::{MapSources, context_for, pod};
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn image() -> ImageInfo {
        ImageInfo::new("sha256:abc", "busybox:1.36", Some(0), "")
    }

    async fn build(
        p: &Pod,
        files: ContainerFiles<'_>,
        mounts: Vec<Mount>,
    ) -> Result<ContainerConfig, ConfigError> {
        let ctx = context_for(p);
        let container = &p.spec.as_ref().unwrap().containers[0];
        let mut sources = MapSources::default();
        sources.add_config_map("prod", "cfg", json!({"GREETING": "hello"}));
        container_config(
            &ctx,
            container,
            ContainerKind::Regular,
            1,
            mounts,
            &image(),
            files,
            &sources,
        )
        .await
    }

    #[tokio::test]
    async fn a_container_config() {
        let p = pod(
            json!({"containers": [{"name": "app", "image": "busybox:1.36",
            "command": ["sh", "-c"], "args": ["echo $(GREETING) $(NAME) $$(GREETING) $(MISSING)"],
            "workingDir": "/srv", "stdin": true, "tty": true,
            "terminationMessagePath": "/dev/termination-log",
            "env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "GREETING"}}},
                    {"name": "NAME", "value": "kyb"}],
            "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "250m", "memory": "64Mi"}}}]}),
        );
        let files = ContainerFiles {
            termination_message: Some(Path::new("/var/lib/kyb/pods/u1/containers/app/x1")),
            etc_hosts: Some(Path::new("/var/lib/kyb/pods/u1/etc-hosts")),
        };
        let volume = Mount {
            container_path: "/data".into(),
            host_path: "/var/lib/kyb/pods/u1/volumes/data".into(),
            ..Default::default()
        };
        let config = build(&p, files, vec![volume]).await.unwrap();
        assert_eq!(config.metadata.as_ref().unwrap().attempt, 1);
        let image = config.image.as_ref().unwrap();
        assert_eq!(
            (image.image.as_str(), image.user_specified_image.as_str()),
            ("sha256:abc", "busybox:1.36")
        );
        assert_eq!(config.command, ["sh", "-c"]);
        assert_eq!(config.args, ["echo hello kyb $(GREETING) $(MISSING)"]);
        assert_eq!(config.working_dir, "/srv");
        assert_eq!(
            config.envs[0],
            KeyValue {
                key: "GREETING".into(),
                value: "hello".into()
            }
        );
        assert_eq!(config.log_path, "app/1.log");
        assert!(config.stdin && config.tty && !config.stdin_once);
        let paths: Vec<&str> = config
            .mounts
            .iter()
            .map(|m| m.container_path.as_str())
            .collect();
        assert_eq!(paths, ["/data", "/etc/hosts", "/dev/termination-log"]);
        assert_eq!(
            config.mounts[2].host_path,
            "/var/lib/kyb/pods/u1/containers/app/x1"
        );
        assert_eq!(config.labels["io.kubernetes.container.name"], "app");
        assert_eq!(
            config.annotations["io.kubernetes.container.restartCount"],
            "1"
        );
        let linux = config.linux.unwrap();
        let resources = linux.resources.unwrap();
        assert_eq!(
            (
                resources.cpu_shares,
                resources.cpu_quota,
                resources.cpu_period
            ),
            (256, 25_000, 100_000)
        );
        assert_eq!(resources.memory_limit_in_bytes, 64 << 20);
        // Burstable (no memory request): 999.
        assert_eq!(resources.oom_score_adj, 999);
        assert_eq!(
            linux.security_context.unwrap().run_as_user.unwrap().value,
            0
        );
    }

    #[tokio::test]
    async fn etc_hosts_is_not_mounted_over_a_volume_or_before_ips() {
        let p = pod(json!({"containers": [{"name": "app"}]}));
        let files = ContainerFiles {
            termination_message: None,
            etc_hosts: Some(Path::new("/hosts")),
        };
        let volume = Mount {
            container_path: "/etc/hosts".into(),
            host_path: "/mine".into(),
            ..Default::default()
        };
        let config = build(&p, files, vec![volume]).await.unwrap();
        assert_eq!(config.mounts.len(), 1);
        assert_eq!(config.mounts[0].host_path, "/mine");
        let mut ctx = context_for(&p);
        ctx.pod_ips = &[];
        let config = container_config(
            &ctx,
            &p.spec.as_ref().unwrap().containers[0],
            ContainerKind::Init,
            0,
            vec![],
            &image(),
            files,
            &MapSources::default(),
        )
        .await
        .unwrap();
        assert!(config.mounts.is_empty());
    }

    #[tokio::test]
    async fn config_errors() {
        let p = pod(json!({"containers": [{"name": "app", "env": [
            {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "x"}}}]}]}));
        let err = build(&p, ContainerFiles::default(), vec![])
            .await
            .unwrap_err();
        assert_eq!(err.reason, "CreateContainerConfigError");
        assert_eq!(err.message, "couldn't find key x in ConfigMap prod/cfg");
        let p = pod(
            json!({"securityContext": {"runAsNonRoot": true}, "containers": [{"name": "app"}]}),
        );
        let err = build(&p, ContainerFiles::default(), vec![])
            .await
            .unwrap_err();
        assert_eq!(err.reason, "CreateContainerConfigError");
        assert_eq!(
            err.message,
            "container has runAsNonRoot and image will run as root (pod: \"web_prod(u1)\", container: app)"
        );
    }
}
