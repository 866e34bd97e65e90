//! The agent's settings, as `kyb kubelet`'s flags give them.

use std::net::IpAddr;
use std::path::PathBuf;

/// The agent's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The Node's name (`--hostname-override`; the host name by default).
    pub node_name: String,
    /// The agent's state: `<data-dir>/agent` (pods' directories, containers' logs,
    /// containerd's root, state and socket, CNI configuration).
    pub root_dir: PathBuf,
    /// `--container-runtime-endpoint`: an existing runtime instead of our own containerd.
    pub container_runtime_endpoint: Option<String>,
    /// `--node-ip`: the node's address (else the first address of the machine's default
    /// route's interface, else loopback).
    pub node_ip: Option<IpAddr>,
    /// `--pod-manifest-path`: a directory of static pod manifests.
    pub pod_manifest_path: Option<PathBuf>,
    /// The Node's registration and resources: `--node-labels`, `--register-with-taints`,
    /// `--max-pods`, `--system-reserved`, `--kube-reserved`, `--eviction-hard` (applied
    /// over [`crate::node::NodeOptions::new`]'s defaults).
    pub node: NodeFlags,
    /// The kubelet's API (port 10250); `None`: not served.
    pub server: Option<crate::server::ServerConfig>,
    /// `--client-ca-file` (its contents are in `server`).
    pub client_ca_file: Option<PathBuf>,
    /// `--container-log-max-size` and `--container-log-max-files`.
    pub log_rotation: crate::logs::LogRotation,
}

/// The node flags a user may set; `None`/empty keeps kubelet's default.
#[derive(Clone, Debug, Default)]
pub struct NodeFlags {
    pub labels: std::collections::BTreeMap<String, String>,
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
    pub max_pods: Option<i64>,
    pub system_reserved: Option<crate::node::resources::ResourceList>,
    pub kube_reserved: Option<crate::node::resources::ResourceList>,
    pub eviction_hard: Option<crate::node::thresholds::Thresholds>,
}

impl NodeFlags {
    /// Parses the flags as kubelet does, with its messages.
    pub fn parse(
        labels: Option<&str>,
        taints: Option<&str>,
        max_pods: Option<i64>,
        system_reserved: Option<&str>,
        kube_reserved: Option<&str>,
        eviction_hard: Option<&str>,
    ) -> Result<NodeFlags, String> {
        use crate::node::options::{parse_labels, parse_reserved, parse_taints};
        Ok(NodeFlags {
            labels: labels.map(parse_labels).transpose()?.unwrap_or_default(),
            taints: taints.map(parse_taints).transpose()?.unwrap_or_default(),
            max_pods,
            system_reserved: system_reserved.map(parse_reserved).transpose()?,
            kube_reserved: kube_reserved.map(parse_reserved).transpose()?,
            eviction_hard: eviction_hard
                .map(crate::node::thresholds::Thresholds::parse)
                .transpose()?,
        })
    }

    /// Applies the flags to `options`.
    pub fn apply(&self, options: &mut crate::node::NodeOptions) {
        options.labels.extend(self.labels.clone());
        options.taints.extend(self.taints.clone());
        if let Some(max_pods) = self.max_pods {
            options.max_pods = max_pods;
        }
        if let Some(reserved) = &self.system_reserved {
            options.system_reserved = reserved.clone();
        }
        if let Some(reserved) = &self.kube_reserved {
            options.kube_reserved = reserved.clone();
        }
        if let Some(thresholds) = &self.eviction_hard {
            options.eviction_hard = thresholds.clone();
        }
    }
}

impl Config {
    /// `<root>/pods`.
    pub fn pods_dir(&self) -> PathBuf {
        self.root_dir.join("pods")
    }

    /// `<root>/logs`: the containers' logs (`/var/log/pods` on a Kubernetes node).
    pub fn logs_dir(&self) -> PathBuf {
        self.root_dir.join("logs")
    }
}
