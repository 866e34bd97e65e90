//! The agent's settings, as `kyb kubelet`'s flags give them.

use std::path::PathBuf;

/// The agent's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The Node's name (`--hostname-override`; the host name by default).
    pub node_name: String,
    /// The agent's state: `<data-dir>/agent` (pods' directories, containerd's root, state
    /// and socket, CNI configuration).
    pub root_dir: PathBuf,
    /// `--container-runtime-endpoint`: an existing runtime instead of our own containerd.
    pub container_runtime_endpoint: Option<String>,
}
