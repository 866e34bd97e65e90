//! A pod's sandbox and containers as CRI configurations, translated from the pod as
//! Kubernetes' kubelet does it (`kuberuntime_sandbox.go`, `kuberuntime_container.go`,
//! `kubelet_pods.go`): pure code with no I/O except reading through [`Sources`](crate::sources::Sources) (and the
//! node's resolv.conf), so that every rule is unit-tested against hand-written pods.
//!
//! - [`sandbox_config`]: the `PodSandboxConfig` (metadata, host name, DNS, port mappings,
//!   cgroup parent, namespaces, security context, sysctls, resources and overhead).
//! - [`container_config`]: a `ContainerConfig` (command and arguments with `$(VAR)`
//!   expansion, environment, mounts, log path, resources, security context).
//! - [`labels`]: the labels and annotations that let a restarted agent recover its pods
//!   and containers from the runtime, and [`container_hash`].
//! - [`hosts_file`], [`cgroup_parent`], [`check_sysctls`]: what the caller writes,
//!   creates or admits before it asks for a sandbox.
//!
//! Submodules: `env` (the environment), `expansion` (`$(VAR)`), `dns`, `hosts`,
//! `resources`, `security`, `sandbox`, `config`.

mod config;
pub mod dns;
mod env;
mod expansion;
mod hosts;
pub mod labels;
pub mod resources;
mod sandbox;
pub mod security;

pub use config::{ContainerFiles, ETC_HOSTS_PATH, container_config, container_log_path};
pub use env::{format_map, service_environment, sort_pod_ips};
pub use expansion::expand;
pub use hosts::{hosts_file, kernel_hostname, pod_hostname_and_domain};
pub use kyb_component_helpers::resource::ContainerKind;
pub use labels::container_hash;
pub use resources::cgroup_parent;
pub use sandbox::{port_mappings, sandbox_config};
pub use security::check_sysctls;

use k8s_openapi::api::core::v1::Pod;
use std::net::IpAddr;
use std::path::Path;

/// What the translation needs besides the pod: the node's facts and settings, and what
/// the caller already knows of the pod (its IPs once the sandbox runs, its cgroup).
#[derive(Clone, Copy, Debug)]
pub struct PodContext<'a> {
    pub pod: &'a Pod,
    /// The Node's name (`spec.nodeName` when the pod has none, as static pods).
    pub node_name: &'a str,
    /// The node's IPs, the preferred family first (`status.hostIPs`).
    pub host_ips: &'a [String],
    /// The pod's IPs (empty until its sandbox runs).
    pub pod_ips: &'a [String],
    /// The pod's cgroup, from [`cgroup_parent`].
    pub cgroup_parent: &'a str,
    /// The pod's log directory (`<logs>/<namespace>_<name>_<uid>`).
    pub pod_log_dir: &'a Path,
    /// `--cluster-dns`.
    pub cluster_dns: &'a [IpAddr],
    /// `--cluster-domain`.
    pub cluster_domain: &'a str,
    /// `--resolv-conf` (the node's resolver configuration; empty for none).
    pub resolv_conf: &'a Path,
    /// The node's allocatable CPU (millicores) and memory (bytes): the limits a
    /// `resourceFieldRef` reads when the container sets none.
    pub node_allocatable: (i64, i64),
    /// The node's memory capacity in bytes (for Burstable containers' OOM score).
    pub node_memory_capacity: i64,
    /// The directory of Localhost seccomp profiles (`<root-dir>/seccomp`).
    pub seccomp_profile_root: &'a Path,
    /// `--seccomp-default`: RuntimeDefault rather than Unconfined when a pod sets none.
    pub seccomp_default: bool,
}

/// Why a sandbox or container configuration could not be made: the waiting reason
/// (`CreateContainerConfigError`, `CreatePodSandboxError`) and kubelet's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    pub reason: &'static str,
    pub message: String,
}

impl ConfigError {
    /// A container's configuration error (`CreateContainerConfigError`).
    pub fn container(message: impl Into<String>) -> ConfigError {
        ConfigError {
            reason: "CreateContainerConfigError",
            message: message.into(),
        }
    }

    /// A sandbox's configuration error (`CreatePodSandboxError`).
    pub fn sandbox(message: impl Into<String>) -> ConfigError {
        ConfigError {
            reason: "CreatePodSandboxError",
            message: message.into(),
        }
    }
}

/// A Warning event kubelet records on the pod while configuring it (`MissingClusterDNS`,
/// `DNSConfigForming`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub reason: &'static str,
    pub message: String,
}

/// An image as the runtime has it (from CRI `ImageStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageInfo {
    /// The runtime's reference to the image (its ID), used to create containers.
    pub image_ref: String,
    /// The image as the pod names it.
    pub user_specified_image: String,
    /// The image's numeric user, when it has one.
    pub uid: Option<i64>,
    /// The image's user name, when it has a non-numeric one.
    pub username: String,
}

impl ImageInfo {
    pub fn new(
        image_ref: impl Into<String>,
        user_specified_image: impl Into<String>,
        uid: Option<i64>,
        username: impl Into<String>,
    ) -> ImageInfo {
        ImageInfo {
            image_ref: image_ref.into(),
            user_specified_image: user_specified_image.into(),
            uid,
            username: username.into(),
        }
    }

    /// From the runtime's `ImageStatus` of the image the pod names `user_specified_image`.
    pub fn from_status(user_specified_image: &str, image: &k8s_cri::v1::Image) -> ImageInfo {
        ImageInfo {
            image_ref: image.id.clone(),
            user_specified_image: user_specified_image.to_string(),
            uid: image.uid.as_ref().map(|u| u.value),
            username: image.username.clone(),
        }
    }

    /// The user the image runs as (`getImageUser`): its uid, else its user name, else
    /// root.
    pub fn user(&self) -> (Option<i64>, &str) {
        match (self.uid, self.username.as_str()) {
            (Some(uid), _) => (Some(uid), ""),
            (None, "") => (Some(0), ""),
            (None, name) => (None, name),
        }
    }
}

/// A pod as kubelet names it in messages: `name_namespace(uid)`.
pub fn format_pod(pod: &Pod) -> String {
    let meta = &pod.metadata;
    format!(
        "{}_{}({})",
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
pub(crate) mod tests {
    //! A map-backed [`Sources`] and a test [`PodContext`].

    use super::*;
    use crate::sources::{IssuedToken, SourceError, Sources};
    use async_trait::async_trait;
    use k8s_openapi::api::core::v1::{
        ConfigMap, PersistentVolume, PersistentVolumeClaim, Secret, Service,
    };
    use std::collections::HashMap;
    use std::sync::Arc;

    /// A pod from its metadata and spec as JSON; one container `c` unless the spec has
    /// containers.
    pub fn pod_from(metadata: serde_json::Value, spec: serde_json::Value) -> Pod {
        let mut spec = spec;
        if spec.get("containers").is_none() {
            spec["containers"] = serde_json::json!([{"name": "c"}]);
        }
        from_json(serde_json::json!({"metadata": metadata, "spec": spec}))
    }

    /// The pod `prod/web` (uid `u1`) with `spec`.
    pub fn pod(spec: serde_json::Value) -> Pod {
        pod_from(
            serde_json::json!({"name": "web", "namespace": "prod", "uid": "u1"}),
            spec,
        )
    }

    /// The pod `prod/web` (uid `u1`) with labels `app=web`, `tier=front` and an
    /// annotation `note` that needs quoting.
    pub fn labelled_pod(spec: serde_json::Value) -> Pod {
        pod_from(
            serde_json::json!({"name": "web", "namespace": "prod", "uid": "u1",
                "labels": {"app": "web", "tier": "front"},
                "annotations": {"note": "a \"quoted\"\nline"}}),
            spec,
        )
    }

    /// ConfigMaps, Secrets and Services in maps keyed by `namespace/name`.
    #[derive(Default)]
    pub struct MapSources {
        config_maps: HashMap<String, Arc<ConfigMap>>,
        secrets: HashMap<String, Arc<Secret>>,
        services: Vec<Arc<Service>>,
        /// Every ConfigMap read fails as an unreachable API would.
        pub fail_config_maps: bool,
        /// Listing services fails.
        pub fail_services: bool,
    }

    fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
        match serde_json::from_value(value) {
            Ok(object) => object,
            Err(e) => panic!("a test object does not decode: {e}"),
        }
    }

    impl MapSources {
        pub fn add_config_map(&mut self, namespace: &str, name: &str, data: serde_json::Value) {
            let map = from_json(serde_json::json!({
                "metadata": {"name": name, "namespace": namespace}, "data": data}));
            self.config_maps
                .insert(format!("{namespace}/{name}"), Arc::new(map));
        }

        /// A Secret with `data` given as plain strings.
        pub fn add_secret(&mut self, namespace: &str, name: &str, data: serde_json::Value) {
            let secret = from_json(serde_json::json!({
                "metadata": {"name": name, "namespace": namespace}, "stringData": data}));
            let mut secret: Secret = secret;
            secret.data = secret.string_data.take().map(|m| {
                m.into_iter()
                    .map(|(k, v)| (k, k8s_openapi::ByteString(v.into_bytes())))
                    .collect()
            });
            self.secrets
                .insert(format!("{namespace}/{name}"), Arc::new(secret));
        }

        pub fn add_service(
            &mut self,
            namespace: &str,
            name: &str,
            cluster_ip: &str,
            ports: serde_json::Value,
        ) {
            self.services.push(Arc::new(from_json(serde_json::json!({
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"clusterIP": cluster_ip, "ports": ports}}))));
        }
    }

    #[async_trait]
    impl Sources for MapSources {
        async fn config_map(
            &self,
            namespace: &str,
            name: &str,
        ) -> Result<Arc<ConfigMap>, SourceError> {
            if self.fail_config_maps {
                return Err(SourceError::Failed("the API is unreachable".into()));
            }
            self.config_maps
                .get(&format!("{namespace}/{name}"))
                .cloned()
                .ok_or_else(|| SourceError::NotFound(format!("configmap \"{name}\" not found")))
        }

        async fn secret(&self, namespace: &str, name: &str) -> Result<Arc<Secret>, SourceError> {
            self.secrets
                .get(&format!("{namespace}/{name}"))
                .cloned()
                .ok_or_else(|| SourceError::NotFound(format!("secret \"{name}\" not found")))
        }

        async fn services(&self, namespace: &str) -> Result<Vec<Arc<Service>>, SourceError> {
            if self.fail_services {
                return Err(SourceError::Failed("the API is unreachable".into()));
            }
            Ok(self
                .services
                .iter()
                .filter(|s| {
                    let ns = s.metadata.namespace.as_deref().unwrap_or_default();
                    let name = s.metadata.name.as_deref().unwrap_or_default();
                    ns == namespace || (ns == "default" && name == "kubernetes")
                })
                .cloned()
                .collect())
        }

        async fn service_account_token(
            &self,
            _pod: &Pod,
            service_account: &str,
            _audience: &str,
            _expiration_seconds: i64,
        ) -> Result<IssuedToken, SourceError> {
            Err(SourceError::NotFound(format!(
                "serviceaccounts \"{service_account}\" not found"
            )))
        }

        async fn persistent_volume_claim(
            &self,
            _namespace: &str,
            name: &str,
        ) -> Result<Arc<PersistentVolumeClaim>, SourceError> {
            Err(SourceError::NotFound(format!(
                "persistentvolumeclaims \"{name}\" not found"
            )))
        }

        async fn persistent_volume(
            &self,
            name: &str,
        ) -> Result<Arc<PersistentVolume>, SourceError> {
            Err(SourceError::NotFound(format!(
                "persistentvolumes \"{name}\" not found"
            )))
        }
    }

    static NODE_IPS: std::sync::LazyLock<[String; 2]> =
        std::sync::LazyLock::new(|| ["192.168.1.10".to_string(), "fd00::1".to_string()]);
    static POD_IPS: std::sync::LazyLock<[String; 2]> =
        std::sync::LazyLock::new(|| ["fd00:10:244::5".to_string(), "10.244.0.5".to_string()]);
    static CLUSTER_DNS: [IpAddr; 1] = [IpAddr::V4(std::net::Ipv4Addr::new(10, 96, 0, 10))];
    static LOG_DIRS: std::sync::Mutex<Vec<&'static Path>> = std::sync::Mutex::new(Vec::new());

    /// A context for `pod` on node `node-1` (192.168.1.10, fd00::1; 2 CPUs and 4 GiB
    /// allocatable, 8 GiB of memory), the pod at 10.244.0.5 and fd00:10:244::5, cluster
    /// DNS 10.96.0.10 in `cluster.local`, the resolv.conf of `testdata/`.
    pub fn context_for(pod: &Pod) -> PodContext<'_> {
        let meta = &pod.metadata;
        let log_dir = format!(
            "/var/log/pods/{}_{}_{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
            meta.uid.as_deref().unwrap_or_default()
        );
        // Test contexts live for the test run; each distinct directory is leaked once.
        let pod_log_dir: &'static Path = {
            let mut dirs = LOG_DIRS.lock().unwrap_or_else(|e| e.into_inner());
            match dirs.iter().find(|d| d.as_os_str() == log_dir.as_str()) {
                Some(dir) => dir,
                None => {
                    let dir: &'static Path = Box::leak(Path::new(&log_dir).into());
                    dirs.push(dir);
                    dir
                }
            }
        };
        PodContext {
            pod,
            node_name: "node-1",
            host_ips: &NODE_IPS[..],
            pod_ips: &POD_IPS[..],
            cgroup_parent: Box::leak(
                cgroup_parent(pod, kyb_node_sys::cgroup::Driver::Cgroupfs).into_boxed_str(),
            ),
            pod_log_dir,
            cluster_dns: &CLUSTER_DNS,
            cluster_domain: "cluster.local",
            resolv_conf: Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/container/testdata/resolv.conf"
            )),
            node_allocatable: (2000, 4 << 30),
            node_memory_capacity: 8 << 30,
            seccomp_profile_root: Path::new("/var/lib/kyb/agent/seccomp"),
            seccomp_default: false,
        }
    }

    #[test]
    fn image_users() {
        assert_eq!(ImageInfo::new("i", "b", Some(5), "x").user(), (Some(5), ""));
        assert_eq!(ImageInfo::new("i", "b", None, "www").user(), (None, "www"));
        assert_eq!(ImageInfo::new("i", "b", None, "").user(), (Some(0), ""));
        let status = k8s_cri::v1::Image {
            id: "sha256:1".into(),
            uid: Some(k8s_cri::v1::Int64Value { value: 7 }),
            ..Default::default()
        };
        assert_eq!(
            ImageInfo::from_status("busybox", &status),
            ImageInfo::new("sha256:1", "busybox", Some(7), "")
        );
    }
}
