//! The Kybernetes scheduler: Kubernetes' scheduling framework and its default plugins,
//! with preemption, gang (coscheduling) and capacity scheduling, as a client of the API
//! server.
//!
//! - [`framework`]: the extension points, cycle state, pod and node views, registry,
//!   profiles' plugin runner.
//! - [`plugins`]: the in-tree plugins and [`plugins::registry`].
//! - [`config`]: the `KubeSchedulerConfiguration` file.
//! - [`queue`] (active, backoff, unschedulable), [`cache`] (nodes, pods, assumed pods),
//!   [`schedule`] (one decision), [`scheduler`] (the loop and the binding cycle).
//! - [`informers`] (kyb-runtime's shared informers feeding the cache, the queue and the
//!   lister; [`slim`] objects: no managed fields), [`client`] (the API), [`leader`]
//!   (leader election), [`run`] (all of it wired together).

pub mod cache;
pub mod client;
pub mod config;
pub mod framework;
pub mod informers;
pub mod plugins;
pub mod queue;
pub mod run;
pub mod schedule;
pub mod scheduler;

pub use kyb_runtime::{leader, slim};
pub use run::{RunError, run};
