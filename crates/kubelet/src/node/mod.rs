//! The Node: its registration, status and Lease ([`NodeAgent`]), the machine's resources
//! ([`resources`]), eviction under memory, disk and PID pressure ([`eviction`]), container
//! and image garbage collection ([`gc`]) and static pods with their mirror pods
//! ([`static_pods`]), as the kubelet does them.
//!
//! # Modules
//!
//! - [`options`]: the node's settings (`--node-ip`, `--node-labels`,
//!   `--register-with-taints`, `--max-pods`, reservations, `--eviction-hard`, periods) and
//!   their flag parsers.
//! - [`thresholds`]: eviction signals and `--eviction-hard` thresholds.
//! - [`resources`]: capacity from the machine, allocatable.
//! - [`status`]: conditions, addresses, images, change detection.
//! - [`register`]: the initial Node and its registration.
//! - [`lease`]: the node's heartbeat Lease in `kube-node-lease`.
//! - [`agent`]: [`NodeAgent`], the loop that registers, renews and reports.
//! - [`eviction`]: the eviction manager.
//! - [`gc`]: container and image garbage collection over CRI.
//! - [`static_pods`]: pods from `--pod-manifest-path` and their mirror pods.

pub mod agent;
pub mod eviction;
pub mod gc;
pub mod lease;
pub mod local_storage;
pub mod options;
pub mod register;
pub mod resources;
pub mod static_pods;
pub mod status;
pub mod thresholds;

pub use agent::{NodeAgent, NodeResources, PressureHandle};
pub use options::NodeOptions;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ContainerImage;

/// One of the runtime's conditions (CRI `RuntimeCondition`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeCondition {
    pub status: bool,
    pub reason: String,
    pub message: String,
}

impl RuntimeCondition {
    /// A condition that holds.
    pub fn ready() -> RuntimeCondition {
        RuntimeCondition {
            status: true,
            ..Default::default()
        }
    }

    /// The kubelet's text for a condition (`NetworkReady=false reason:X message:Y`).
    pub fn describe(&self, kind: &str) -> String {
        format!(
            "{kind}={} reason:{} message:{}",
            self.status, self.reason, self.message
        )
    }
}

/// The runtime's readiness (CRI `Status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStatus {
    /// `RuntimeReady`.
    pub runtime_ready: RuntimeCondition,
    /// `NetworkReady`.
    pub network_ready: RuntimeCondition,
}

/// What the node status needs from the container runtime; the agent's wiring implements
/// it over CRI.
#[async_trait]
pub trait RuntimeInfo: Send + Sync {
    /// The runtime's name and version (`containerd`, `1.6.20`), reported as
    /// `containerd://1.6.20`.
    async fn version(&self) -> anyhow::Result<(String, String)>;
    /// The images on the node, with their names (tags and digests) and sizes.
    async fn images(&self) -> anyhow::Result<Vec<ContainerImage>>;
    /// The runtime's and its network's readiness.
    async fn status(&self) -> anyhow::Result<RuntimeStatus>;
}
