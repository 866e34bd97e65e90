//! Keepers: loops inside the API server that keep some objects current from others, for
//! what admission and authentication depend on. Each is a client of the watch cache's
//! change feed and writes through the same REST paths (strategy, validation, admission)
//! as any client, as `system:apiserver`.
//!
//! - [`quota`]: ResourceQuota `status.hard`/`status.used` recalculated from the objects a
//!   quota counts (admission only ever raises usage; this brings it down again).
//! - [`service_accounts`]: the `default` ServiceAccount and the `kube-root-ca.crt`
//!   ConfigMap in every namespace (pods are refused without their account).
//! - [`aggregation`]: the rules of aggregated ClusterRoles (`admin`, `edit`, `view`, ...).
//!
//! In Kubernetes these belong to the controller manager; they move there when it lands
//! (issue 7), and stay until then because admission needs them now.

pub mod aggregation;
pub mod quota;
pub mod service_accounts;

use crate::server::Server;
use std::sync::Arc;

/// Brings what the keepers keep up to date, then starts them; they run until the process
/// ends.
pub async fn start(server: &Arc<Server>) {
    service_accounts::ensure_all(server).await;
    tokio::spawn(service_accounts::run(server.clone()));
    tokio::spawn(quota::run(server.clone()));
    tokio::spawn(aggregation::run(server.clone()));
}
