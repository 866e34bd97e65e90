//! Security settings as the runtime applies them, as Kubernetes' kubelet derives them:
//! the pod's namespaces (host network/PID/IPC, a shared process namespace), the sandbox's
//! security context, and each container's effective security context — the pod's
//! defaults overridden by the container's (`DetermineEffectiveSecurityContext`): user and
//! group, the `runAsNonRoot` check against the image's user, capabilities, privileged
//! mode, a read-only root, no_new_privs, seccomp and AppArmor profiles, the masked and
//! read-only `/proc` paths, supplemental groups (with `fsGroup`); and which sysctls a pod
//! may set.

use super::{ImageInfo, format_pod};
use k8s_cri::v1::security_profile::ProfileType;
use k8s_cri::v1::{
    Capability, Int64Value, LinuxContainerSecurityContext, LinuxSandboxSecurityContext,
    NamespaceMode, NamespaceOption, SeLinuxOption, SecurityProfile, SupplementalGroupsPolicy,
    UserNamespace,
};
use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, Pod, PodSecurityContext, SELinuxOptions, SeccompProfile,
    SecurityContext,
};
use std::path::Path;

/// The `/proc` and `/sys` paths masked in a container unless its `procMount` is
/// `Unmasked` (or it is privileged).
pub const DEFAULT_MASKED_PATHS: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];

/// The `/proc` paths mounted read-only in a container unless its `procMount` is
/// `Unmasked` (or it is privileged).
pub const DEFAULT_READONLY_PATHS: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// The sysctls any pod may set (namespaced, and safe to share a kernel with), as
/// Kubernetes' kubelet allows them by default.
pub const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// The pod's namespaces (`NamespacesForPod`): the node's for `hostNetwork`, `hostPID`,
/// `hostIPC`; a PID namespace shared by the pod with `shareProcessNamespace`, else one
/// per container; the node's user namespace.
pub fn namespace_options(pod: &Pod) -> NamespaceOption {
    let spec = pod.spec.as_ref();
    let flag = |f: fn(&k8s_openapi::api::core::v1::PodSpec) -> Option<bool>| {
        spec.and_then(f).unwrap_or(false)
    };
    let node_or_pod = |host: bool| {
        if host {
            NamespaceMode::Node
        } else {
            NamespaceMode::Pod
        }
    };
    let pid = if flag(|s| s.host_pid) {
        NamespaceMode::Node
    } else if flag(|s| s.share_process_namespace) {
        NamespaceMode::Pod
    } else {
        NamespaceMode::Container
    };
    NamespaceOption {
        network: node_or_pod(flag(|s| s.host_network)) as i32,
        pid: pid as i32,
        ipc: node_or_pod(flag(|s| s.host_ipc)) as i32,
        target_id: String::new(),
        userns_options: Some(UserNamespace {
            mode: NamespaceMode::Node as i32,
            ..Default::default()
        }),
    }
}

fn all_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    let spec = pod.spec.as_ref();
    spec.into_iter()
        .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
}

/// Whether any container of the pod is privileged.
pub fn has_privileged_container(pod: &Pod) -> bool {
    all_containers(pod).any(|c| {
        c.security_context
            .as_ref()
            .and_then(|s| s.privileged)
            .unwrap_or(false)
    }) || pod.spec.as_ref().is_some_and(|s| {
        s.ephemeral_containers.iter().flatten().any(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.privileged)
                .unwrap_or(false)
        })
    })
}

fn selinux(options: Option<&SELinuxOptions>) -> Option<SeLinuxOption> {
    options.map(|o| SeLinuxOption {
        user: o.user.clone().unwrap_or_default(),
        role: o.role.clone().unwrap_or_default(),
        r#type: o.type_.clone().unwrap_or_default(),
        level: o.level.clone().unwrap_or_default(),
    })
}

fn supplemental_groups_policy(pod_sc: &PodSecurityContext) -> Result<i32, String> {
    match pod_sc.supplemental_groups_policy.as_deref() {
        None | Some("Merge") => Ok(SupplementalGroupsPolicy::Merge as i32),
        Some("Strict") => Ok(SupplementalGroupsPolicy::Strict as i32),
        Some(other) => Err(format!("unsupported supplementalGroupsPolicy: {other}")),
    }
}

/// The pod's `fsGroup` then its `supplementalGroups`.
fn pod_groups(pod_sc: &PodSecurityContext) -> Vec<i64> {
    pod_sc
        .fs_group
        .into_iter()
        .chain(pod_sc.supplemental_groups.iter().flatten().copied())
        .collect()
}

/// The sandbox's security context: privileged when a container is, the runtime's
/// default seccomp profile, the pod's user, group, namespaces and groups.
pub fn sandbox_security_context(pod: &Pod) -> Result<LinuxSandboxSecurityContext, String> {
    let pod_sc = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.clone())
        .unwrap_or_default();
    Ok(LinuxSandboxSecurityContext {
        namespace_options: Some(namespace_options(pod)),
        selinux_options: selinux(pod_sc.se_linux_options.as_ref()),
        run_as_user: pod_sc.run_as_user.map(|value| Int64Value { value }),
        run_as_group: pod_sc.run_as_group.map(|value| Int64Value { value }),
        supplemental_groups: pod_groups(&pod_sc),
        supplemental_groups_policy: supplemental_groups_policy(&pod_sc)?,
        privileged: has_privileged_container(pod),
        seccomp: Some(SecurityProfile {
            profile_type: ProfileType::RuntimeDefault as i32,
            localhost_ref: String::new(),
        }),
        ..Default::default()
    })
}

/// The container's effective security context: the pod's settings that apply to
/// containers, overridden field by field by the container's own.
pub fn effective_security_context(pod: &Pod, container: &Container) -> SecurityContext {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let mut effective = SecurityContext {
        se_linux_options: pod_sc.and_then(|s| s.se_linux_options.clone()),
        windows_options: pod_sc.and_then(|s| s.windows_options.clone()),
        run_as_user: pod_sc.and_then(|s| s.run_as_user),
        run_as_group: pod_sc.and_then(|s| s.run_as_group),
        run_as_non_root: pod_sc.and_then(|s| s.run_as_non_root),
        ..Default::default()
    };
    let Some(c) = container.security_context.as_ref() else {
        return effective;
    };
    macro_rules! over {
        ($($field:ident),*) => {$(
            if c.$field.is_some() {
                effective.$field = c.$field.clone();
            }
        )*};
    }
    over!(
        se_linux_options,
        windows_options,
        capabilities,
        privileged,
        run_as_user,
        run_as_group,
        run_as_non_root,
        read_only_root_filesystem,
        allow_privilege_escalation,
        proc_mount,
        seccomp_profile,
        app_armor_profile
    );
    effective
}

/// Refuses a container that must not run as root but would (`verifyRunAsNonRoot`), with
/// kubelet's messages.
pub fn verify_run_as_non_root(
    pod: &Pod,
    container: &Container,
    image: &ImageInfo,
) -> Result<(), String> {
    let effective = effective_security_context(pod, container);
    if effective.run_as_non_root != Some(true) {
        return Ok(());
    }
    let pod_name = format_pod(pod);
    let name = &container.name;
    if let Some(uid) = effective.run_as_user {
        if uid == 0 {
            return Err(format!(
                "container's runAsUser breaks non-root policy (pod: {pod_name:?}, container: {name})"
            ));
        }
        return Ok(());
    }
    match image.user() {
        (Some(0), _) => Err(format!(
            "container has runAsNonRoot and image will run as root (pod: {pod_name:?}, container: {name})"
        )),
        (None, username) if !username.is_empty() => Err(format!(
            "container has runAsNonRoot and image has non-numeric user ({username}), cannot verify user is non-root (pod: {pod_name:?}, container: {name})"
        )),
        _ => Ok(()),
    }
}

/// The seccomp profile of a container: its own, else the pod's, else unconfined (or the
/// runtime's default with `seccomp_default`). Localhost profiles are files under
/// `profile_root`.
pub fn seccomp_profile(
    pod: &Pod,
    container: &Container,
    profile_root: &Path,
    seccomp_default: bool,
) -> Result<SecurityProfile, String> {
    let from_container = container
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref());
    let from_pod = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.seccomp_profile.as_ref());
    let profile = |profile_type: ProfileType, localhost_ref: String| SecurityProfile {
        profile_type: profile_type as i32,
        localhost_ref,
    };
    match from_container.or(from_pod) {
        None if seccomp_default => Ok(profile(ProfileType::RuntimeDefault, String::new())),
        None => Ok(profile(ProfileType::Unconfined, String::new())),
        Some(SeccompProfile {
            type_,
            localhost_profile,
        }) => match type_.as_str() {
            "RuntimeDefault" => Ok(profile(ProfileType::RuntimeDefault, String::new())),
            "Localhost" => match localhost_profile.as_deref().filter(|p| !p.is_empty()) {
                Some(file) => Ok(profile(
                    ProfileType::Localhost,
                    profile_root.join(file).to_string_lossy().into_owned(),
                )),
                None => Err(
                    "localhostProfile must be set if seccompProfile type is Localhost.".to_string(),
                ),
            },
            _ => Ok(profile(ProfileType::Unconfined, String::new())),
        },
    }
}

/// The AppArmor profile of a container (its own, the pod's, or the deprecated
/// `container.apparmor.security.beta.kubernetes.io/<name>` annotation) as the CRI profile
/// and the deprecated profile string; None when none is set (the runtime's default).
pub fn apparmor_profile(
    pod: &Pod,
    container: &Container,
) -> Result<Option<(SecurityProfile, String)>, String> {
    let from_fields = container
        .security_context
        .as_ref()
        .and_then(|s| s.app_armor_profile.clone())
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.security_context.as_ref())
                .and_then(|s| s.app_armor_profile.clone())
        });
    let from_annotation = || {
        let key = format!(
            "container.apparmor.security.beta.kubernetes.io/{}",
            container.name
        );
        let value = pod.metadata.annotations.as_ref()?.get(&key)?;
        Some(match value.as_str() {
            "runtime/default" => AppArmorProfile {
                type_: "RuntimeDefault".into(),
                localhost_profile: None,
            },
            "unconfined" => AppArmorProfile {
                type_: "Unconfined".into(),
                localhost_profile: None,
            },
            other => AppArmorProfile {
                type_: "Localhost".into(),
                localhost_profile: other.strip_prefix("localhost/").map(str::to_string),
            },
        })
    };
    let Some(profile) = from_fields.or_else(from_annotation) else {
        return Ok(None);
    };
    let cri = |profile_type: ProfileType, localhost_ref: &str| SecurityProfile {
        profile_type: profile_type as i32,
        localhost_ref: localhost_ref.to_string(),
    };
    match profile.type_.as_str() {
        "RuntimeDefault" => Ok(Some((
            cri(ProfileType::RuntimeDefault, ""),
            "runtime/default".into(),
        ))),
        "Unconfined" => Ok(Some((
            cri(ProfileType::Unconfined, ""),
            "unconfined".into(),
        ))),
        "Localhost" => match profile.localhost_profile.as_deref() {
            Some(name) => Ok(Some((
                cri(ProfileType::Localhost, name),
                format!("localhost/{name}"),
            ))),
            None => Err("missing localhost apparmor profile name".to_string()),
        },
        other => Err(format!("unknown apparmor profile type: {other:?}")),
    }
}

/// The node's settings that container security contexts depend on.
#[derive(Clone, Copy, Debug)]
pub struct SeccompSettings<'a> {
    /// The directory of Localhost seccomp profiles (`<root-dir>/seccomp`).
    pub profile_root: &'a Path,
    /// `--seccomp-default`: RuntimeDefault rather than Unconfined when a pod sets none.
    pub default_runtime_default: bool,
}

/// The container's security context as the runtime applies it
/// (`determineEffectiveSecurityContext`), after [`verify_run_as_non_root`]. Capability
/// names go as the pod spells them (`NET_ADMIN`, `ALL`): the runtime adds the `CAP_`
/// prefix. Without a user of its own the container runs as the image's.
pub fn container_security_context(
    pod: &Pod,
    container: &Container,
    image: &ImageInfo,
    seccomp: SeccompSettings,
) -> Result<LinuxContainerSecurityContext, String> {
    verify_run_as_non_root(pod, container, image)?;
    let effective = effective_security_context(pod, container);
    let privileged = effective.privileged.unwrap_or(false);
    let unmasked = effective.proc_mount.as_deref() == Some("Unmasked");
    let paths = |list: &[&str]| -> Vec<String> {
        if privileged || unmasked {
            Vec::new()
        } else {
            list.iter().map(|p| p.to_string()).collect()
        }
    };
    let mut context = LinuxContainerSecurityContext {
        capabilities: effective.capabilities.as_ref().map(|caps| Capability {
            add_capabilities: caps.add.clone().unwrap_or_default(),
            drop_capabilities: caps.drop.clone().unwrap_or_default(),
            add_ambient_capabilities: Vec::new(),
        }),
        privileged,
        selinux_options: selinux(effective.se_linux_options.as_ref()),
        run_as_user: effective.run_as_user.map(|value| Int64Value { value }),
        run_as_group: effective.run_as_group.map(|value| Int64Value { value }),
        readonly_rootfs: effective.read_only_root_filesystem.unwrap_or(false),
        no_new_privs: effective.allow_privilege_escalation == Some(false),
        masked_paths: paths(DEFAULT_MASKED_PATHS),
        readonly_paths: paths(DEFAULT_READONLY_PATHS),
        seccomp: Some(seccomp_profile(
            pod,
            container,
            seccomp.profile_root,
            seccomp.default_runtime_default,
        )?),
        namespace_options: Some(namespace_options(pod)),
        ..Default::default()
    };
    if let Some((profile, deprecated)) = apparmor_profile(pod, container)? {
        context.apparmor = Some(profile);
        #[allow(deprecated)]
        {
            context.apparmor_profile = deprecated;
        }
    }
    if context.run_as_user.is_none() {
        let (uid, username) = image.user();
        context.run_as_user = uid.map(|value| Int64Value { value });
        context.run_as_username = username.to_string();
    }
    if let Some(pod_sc) = pod.spec.as_ref().and_then(|s| s.security_context.as_ref()) {
        context.supplemental_groups = pod_groups(pod_sc);
        context.supplemental_groups_policy = supplemental_groups_policy(pod_sc)?;
    }
    Ok(context)
}

/// A sysctl name with `.` separators: `net/ipv4/conf/eth0.100/rp_filter` (first
/// separator a `/`) has its `.` and `/` swapped, as Kubernetes' `NormalizeName` does.
pub fn normalize_sysctl(name: &str) -> String {
    match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => name.to_string(),
    }
}

/// Whether the pod's sysctls may be set on this node: safe ones always, others when
/// listed in `allowed_unsafe` (`--allowed-unsafe-sysctls`, a trailing `*` matching a
/// prefix); never a network sysctl in the host's network namespace nor an IPC one in its
/// IPC namespace. The error is kubelet's admission message (reason `SysctlForbidden`).
pub fn check_sysctls(pod: &Pod, allowed_unsafe: &[String]) -> Result<(), String> {
    let spec = pod.spec.as_ref();
    let host_net = spec.and_then(|s| s.host_network).unwrap_or(false);
    let host_ipc = spec.and_then(|s| s.host_ipc).unwrap_or(false);
    let sysctls = spec
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.sysctls.as_deref())
        .unwrap_or_default();
    for sysctl in sysctls {
        let name = normalize_sysctl(&sysctl.name);
        let allowed = SAFE_SYSCTLS.contains(&name.as_str())
            || allowed_unsafe
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => *pattern == name,
                });
        if !allowed {
            return Err(format!("forbidden sysctl: \"{name}\" not allowlisted"));
        }
        let namespace = if name.starts_with("net.") {
            "net"
        } else if ["kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue."]
            .iter()
            .any(|p| name.starts_with(p))
        {
            "ipc"
        } else {
            ""
        };
        if (namespace == "net" && host_net) || (namespace == "ipc" && host_ipc) {
            return Err(format!(
                "forbidden sysctl: \"{name}\" not allowed with host {namespace} enabled"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::pod;
    use super::*;
    use serde_json::json;

    fn root_image() -> ImageInfo {
        ImageInfo::new("sha256:1", "busybox", Some(0), "")
    }

    fn seccomp() -> SeccompSettings<'static> {
        SeccompSettings {
            profile_root: Path::new("/var/lib/kyb/seccomp"),
            default_runtime_default: false,
        }
    }

    fn first(pod: &Pod) -> &Container {
        &pod.spec.as_ref().unwrap().containers[0]
    }

    #[test]
    fn run_as_non_root_refusals() {
        let p = pod(json!({"securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "c"}]}));
        assert_eq!(
            verify_run_as_non_root(&p, first(&p), &root_image()).unwrap_err(),
            "container has runAsNonRoot and image will run as root (pod: \"web_prod(u1)\", container: c)"
        );
        let named = ImageInfo::new("sha256:1", "busybox", None, "nobody");
        assert_eq!(
            verify_run_as_non_root(&p, first(&p), &named).unwrap_err(),
            "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: \"web_prod(u1)\", container: c)"
        );
        // An image with no user runs as root.
        let none = ImageInfo::new("sha256:1", "busybox", None, "");
        assert!(verify_run_as_non_root(&p, first(&p), &none).is_err());
        let non_root = ImageInfo::new("sha256:1", "busybox", Some(1000), "");
        assert!(verify_run_as_non_root(&p, first(&p), &non_root).is_ok());
        // The container's runAsUser decides; 0 breaks the policy.
        let p = pod(json!({"securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "c", "securityContext": {"runAsUser": 0}}]}));
        assert_eq!(
            verify_run_as_non_root(&p, first(&p), &root_image()).unwrap_err(),
            "container's runAsUser breaks non-root policy (pod: \"web_prod(u1)\", container: c)"
        );
        let p = pod(
            json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 0},
            "containers": [{"name": "c", "securityContext": {"runAsUser": 1000}}]}),
        );
        assert!(verify_run_as_non_root(&p, first(&p), &root_image()).is_ok());
        // The container may lift the pod's policy.
        let p = pod(json!({"securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "c", "securityContext": {"runAsNonRoot": false}}]}));
        assert!(verify_run_as_non_root(&p, first(&p), &root_image()).is_ok());
    }

    #[test]
    fn container_context_merges_pod_and_container() {
        let p = pod(json!({
            "securityContext": {"runAsUser": 1000, "runAsGroup": 2000, "fsGroup": 3000,
                "supplementalGroups": [4000], "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {
                "runAsUser": 1001, "readOnlyRootFilesystem": true,
                "allowPrivilegeEscalation": false,
                "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}}}]}));
        let sc = container_security_context(&p, first(&p), &root_image(), seccomp()).unwrap();
        assert_eq!(sc.run_as_user.unwrap().value, 1001);
        assert_eq!(sc.run_as_group.unwrap().value, 2000);
        assert_eq!(sc.supplemental_groups, [3000, 4000]);
        assert!(sc.readonly_rootfs && sc.no_new_privs && !sc.privileged);
        let caps = sc.capabilities.unwrap();
        assert_eq!(caps.add_capabilities, ["NET_ADMIN"]);
        assert_eq!(caps.drop_capabilities, ["ALL"]);
        assert_eq!(
            sc.seccomp.unwrap().profile_type,
            ProfileType::RuntimeDefault as i32
        );
        assert_eq!(sc.masked_paths.len(), DEFAULT_MASKED_PATHS.len());
        assert_eq!(sc.readonly_paths, DEFAULT_READONLY_PATHS);
        let ns = sc.namespace_options.unwrap();
        assert_eq!(ns.pid, NamespaceMode::Container as i32);
        assert_eq!(ns.network, NamespaceMode::Pod as i32);
    }

    #[test]
    fn image_user_fills_in_and_privileged_unmasks() {
        let p = pod(json!({"containers": [{"name": "c",
            "securityContext": {"privileged": true}}]}));
        let named = ImageInfo::new("sha256:1", "busybox", None, "www");
        let sc = container_security_context(&p, first(&p), &named, seccomp()).unwrap();
        assert!(sc.run_as_user.is_none());
        assert_eq!(sc.run_as_username, "www");
        assert!(sc.privileged);
        assert!(sc.masked_paths.is_empty() && sc.readonly_paths.is_empty());
        assert!(!sc.no_new_privs);
        assert_eq!(
            sc.seccomp.unwrap().profile_type,
            ProfileType::Unconfined as i32
        );
        let image = ImageInfo::new("sha256:1", "busybox", Some(33), "");
        let sc = container_security_context(&p, first(&p), &image, seccomp()).unwrap();
        assert_eq!(sc.run_as_user.unwrap().value, 33);
        // A sandbox with a privileged container is privileged.
        assert!(sandbox_security_context(&p).unwrap().privileged);
    }

    #[test]
    fn seccomp_and_apparmor_profiles() {
        let p = pod(
            json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {
                "seccompProfile": {"type": "Localhost", "localhostProfile": "audit.json"},
                "appArmorProfile": {"type": "Unconfined"}}}]}),
        );
        let profile = seccomp_profile(&p, first(&p), seccomp().profile_root, false).unwrap();
        assert_eq!(profile.profile_type, ProfileType::Localhost as i32);
        assert_eq!(profile.localhost_ref, "/var/lib/kyb/seccomp/audit.json");
        let (apparmor, deprecated) = apparmor_profile(&p, first(&p)).unwrap().unwrap();
        assert_eq!(apparmor.profile_type, ProfileType::Unconfined as i32);
        assert_eq!(deprecated, "unconfined");
        let p = pod(json!({"containers": [{"name": "c", "securityContext": {
                "seccompProfile": {"type": "Localhost"}}}]}));
        assert_eq!(
            seccomp_profile(&p, first(&p), seccomp().profile_root, false).unwrap_err(),
            "localhostProfile must be set if seccompProfile type is Localhost."
        );
        let p = pod(json!({"containers": [{"name": "c"}]}));
        assert!(apparmor_profile(&p, first(&p)).unwrap().is_none());
        let profile = seccomp_profile(&p, first(&p), seccomp().profile_root, true).unwrap();
        assert_eq!(profile.profile_type, ProfileType::RuntimeDefault as i32);
    }

    #[test]
    fn namespaces_and_sandbox_context() {
        let p = pod(
            json!({"hostNetwork": true, "hostIPC": true, "shareProcessNamespace": true,
            "securityContext": {"runAsUser": 5, "fsGroup": 7, "supplementalGroups": [8],
                "supplementalGroupsPolicy": "Strict"},
            "containers": [{"name": "c"}]}),
        );
        let sc = sandbox_security_context(&p).unwrap();
        let ns = sc.namespace_options.unwrap();
        assert_eq!(ns.network, NamespaceMode::Node as i32);
        assert_eq!(ns.ipc, NamespaceMode::Node as i32);
        assert_eq!(ns.pid, NamespaceMode::Pod as i32);
        assert_eq!(sc.run_as_user.unwrap().value, 5);
        assert_eq!(sc.supplemental_groups, [7, 8]);
        assert_eq!(
            sc.supplemental_groups_policy,
            SupplementalGroupsPolicy::Strict as i32
        );
        assert_eq!(
            sc.seccomp.unwrap().profile_type,
            ProfileType::RuntimeDefault as i32
        );
        assert!(!sc.privileged);
        let p = pod(json!({"hostPID": true, "shareProcessNamespace": true,
            "containers": [{"name": "c"}]}));
        assert_eq!(namespace_options(&p).pid, NamespaceMode::Node as i32);
    }

    #[test]
    fn sysctls_safe_unsafe_and_host_namespaces() {
        let p = pod(json!({"securityContext": {"sysctls": [
            {"name": "net.ipv4.ip_local_port_range", "value": "1024 2048"}]},
            "containers": [{"name": "c"}]}));
        assert!(check_sysctls(&p, &[]).is_ok());
        let p = pod(json!({"securityContext": {"sysctls": [
            {"name": "net.core.somaxconn", "value": "1024"}]},
            "containers": [{"name": "c"}]}));
        assert_eq!(
            check_sysctls(&p, &[]).unwrap_err(),
            "forbidden sysctl: \"net.core.somaxconn\" not allowlisted"
        );
        assert!(check_sysctls(&p, &["net.core.*".into()]).is_ok());
        assert!(check_sysctls(&p, &["net.core.somaxconn".into()]).is_ok());
        assert_eq!(
            normalize_sysctl("net/ipv4/conf/eth0.100/rp_filter"),
            "net.ipv4.conf.eth0/100.rp_filter"
        );
        assert_eq!(
            normalize_sysctl("kernel.shm_rmid_forced"),
            "kernel.shm_rmid_forced"
        );
        let p = pod(json!({"hostIPC": true, "securityContext": {"sysctls": [
            {"name": "kernel/shm_rmid_forced", "value": "1"}]},
            "containers": [{"name": "c"}]}));
        assert_eq!(
            check_sysctls(&p, &[]).unwrap_err(),
            "forbidden sysctl: \"kernel.shm_rmid_forced\" not allowed with host ipc enabled"
        );
        let p = pod(json!({"hostNetwork": true, "securityContext": {"sysctls": [
            {"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
            "containers": [{"name": "c"}]}));
        assert_eq!(
            check_sysctls(&p, &[]).unwrap_err(),
            "forbidden sysctl: \"net.ipv4.tcp_syncookies\" not allowed with host net enabled"
        );
    }
}
