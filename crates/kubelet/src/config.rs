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
