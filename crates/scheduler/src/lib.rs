//! The Kybernetes scheduler: Kubernetes' scheduling framework and its default plugins,
//! with preemption, gang (coscheduling) and capacity scheduling, as a client of the API
//! server.
//!
//! - [`framework`]: the extension points, cycle state, pod and node views, registry,
//!   profiles' plugin runner.
//! - [`plugins`]: the in-tree plugins and [`plugins::registry`].
//! - [`config`]: the `KubeSchedulerConfiguration` file.

pub mod config;
pub mod framework;
pub mod plugins;
