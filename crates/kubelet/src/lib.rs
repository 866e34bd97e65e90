//! The node agent (`kyb kubelet`, and in-process in `kyb server`): it runs the pods bound
//! to its node through the Container Runtime Interface (a containerd it starts and
//! supervises, or any CRI runtime at `--container-runtime-endpoint`), mounts their
//! volumes, probes their containers, and reports the node's and the pods' status, as
//! Kubernetes' kubelet does.
//!
//! # Modules
//!
//! - [`agent`]: the agent as a whole (the runtime, the pod workers).
//! - [`config`]: the agent's settings (flags of `kyb kubelet`).
//! - [`containerd`]: the containerd the agent starts (its generated configuration under
//!   the data dir, supervised and restarted).
//! - [`cri`]: the CRI v1 client (runtime and image services) over the runtime's unix socket.
//! - [`images`]: image pulls (`imagePullPolicy`, `imagePullSecrets`, back-off) and the
//!   project's own images (the sandbox "pause" image, busybox) built as OCI archives.
//! - [`housekeeping`]: container and image garbage collection, and the eviction manager.
//! - [`sources`]: what the agent reads from the API besides its pods (ConfigMaps, secrets,
//!   services, service-account tokens, claims), shared by containers and volumes.
//! - [`container`]: a pod's sandbox and containers as CRI configurations (command, env,
//!   security context, resources, mounts, labels).
//! - [`volumes`]: a pod's volumes on the node (emptyDir, hostPath, configMap, secret,
//!   downwardAPI, projected, persistentVolumeClaim).
//! - [`logs`]: containers' logs: reading, following, rotation.
//! - [`probes`]: startup, liveness and readiness probes, and lifecycle hooks.
//! - [`pods`]: the pod workers: each pod's sync loop against the runtime, its status, its
//!   termination.
//! - [`server`]: the kubelet's API on port 10250 (logs, exec, attach, port-forward, pods,
//!   metrics, stats), authenticated and authorized through the API server.
//! - [`node`]: the Node object (registration, status, Lease), eviction, garbage
//!   collection and static pods.

pub mod agent;
pub mod config;
pub mod container;
pub mod containerd;
pub mod cri;
pub mod housekeeping;
pub mod images;
pub mod logs;
pub mod node;
pub mod pods;
pub mod probes;
pub mod server;
pub mod sources;
pub mod stats;
pub mod volumes;

pub use config::Config;
