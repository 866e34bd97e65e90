//! The scheduling framework: the extension points as traits ([`plugin`]), the per-cycle
//! state ([`CycleState`]), plugin outcomes ([`Status`]), the scheduler's views of pods and
//! nodes ([`PodInfo`], [`NodeInfo`], [`Snapshot`]), resource arithmetic ([`resources`]),
//! what plugins are built with ([`Handle`]), the registry of plugins by name
//! ([`Registry`]), and one profile's plugins run point by point ([`Framework`]).

pub mod cycle_state;
pub mod handle;
pub mod node_info;
pub mod plugin;
pub mod pod_info;
pub mod registry;
pub mod resources;
mod runtime;
pub mod snapshot;
pub mod status;
#[cfg(test)]
pub mod testing;

pub use cycle_state::{CycleState, StateData};
pub use handle::{ApiClient, Handle, Lister, WaitingPod, WaitingPods};
pub use node_info::{ImageState, NodeImages, NodeInfo};
pub use plugin::*;
pub use pod_info::{AffinityTerm, HostPort, PodInfo};
pub use registry::{PluginFactory, Registry};
pub use resources::Resources;
pub use runtime::{Framework, QueuedPod};
pub use snapshot::Snapshot;
pub use status::{Code, Status};

/// The profile pods without `spec.schedulerName` go to.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
