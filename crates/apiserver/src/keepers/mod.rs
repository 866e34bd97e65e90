//! Keepers: loops inside the API server that keep some objects current from others, for
//! what admission and authentication depend on. Each is a client of the watch cache's
//! change feed and writes through the same REST paths (strategy, validation, admission)
//! as any client, as `system:apiserver`.
//!
//! - [`aggregation`]: the rules of aggregated ClusterRoles (`admin`, `edit`, `view`, ...).
//! - `flowcontrol::bootstrap::run`: the bootstrap FlowSchemas and priority levels, and
//!   the FlowSchemas' `Dangling` condition (Kubernetes: the API server's own controller).
//! - [`service_cidrs`]: the ClusterIP allocator's ServiceCIDRs and IPAddresses (the default
//!   ServiceCIDR, finalizers and conditions, repair of leaked and missing IPAddresses).
//!
//! In Kubernetes this belongs to the controller manager; it moves there in time, and
//! stays until then because authorization needs it now. The others have moved: quota
//! status is the controller manager's `resourcequota-controller`'s, and the `default`
//! ServiceAccount and `kube-root-ca.crt` ConfigMap of every namespace are kept by its
//! `serviceaccount-controller` and `root-ca-certificate-publisher-controller`.

pub mod aggregation;
pub mod service_cidrs;

use crate::engine::Engine;
use std::sync::Arc;

/// Starts the keepers; they run until the process ends.
pub async fn start(engine: &Arc<Engine>) {
    tokio::spawn(aggregation::run(engine.clone()));
    tokio::spawn(crate::flowcontrol::bootstrap::run(engine.clone()));
    tokio::spawn(service_cidrs::run(engine.clone()));
}
