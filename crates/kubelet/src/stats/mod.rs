//! Resource usage of the node, its pods and their containers, as the kubelet's API serves
//! it: the Summary API (`/stats/summary`, `stats/v1alpha1`) and the resource metrics
//! (`/metrics/resource`) that the metrics API scrapes.
//!
//! [`CriStats`] implements [`NodeStats`] over CRI and the machine (`cri`); `summary` holds
//! the Summary API's types, `rate` the CPU rates from cumulative counters, and
//! `resource_metrics` writes the Prometheus text.

pub mod cri;
pub mod rate;
pub mod resource_metrics;
pub mod summary;

pub use cri::CriStats;

use async_trait::async_trait;

/// What the kubelet's server asks for the two stats endpoints.
#[async_trait]
pub trait NodeStats: Send + Sync {
    /// `/stats/summary` as JSON; `only_cpu_and_memory` for `?only_cpu_and_memory=true`.
    async fn summary(&self, only_cpu_and_memory: bool) -> anyhow::Result<serde_json::Value>;

    /// `/metrics/resource` in the Prometheus text format (version 0.0.4).
    async fn resource_metrics(&self) -> anyhow::Result<String>;
}
