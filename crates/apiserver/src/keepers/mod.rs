//! Keepers: loops inside the API server that keep some objects current from others, for
//! what admission and authentication depend on. Each is a client of the watch cache's
//! change feed and writes through the same REST paths (strategy, validation, admission)
//! as any client, as `system:apiserver`.
//!
//! - [`quota`]: ResourceQuota `status.hard`/`status.used` recalculated from the objects a
//!   quota counts (admission only ever raises usage; this brings it down again).
//! - [`aggregation`]: the rules of aggregated ClusterRoles (`admin`, `edit`, `view`, ...).
//!
//! In Kubernetes these belong to the controller manager; they move there when it lands
//! (issue 7), and stay until then because admission needs them now. The `default`
//! ServiceAccount and `kube-root-ca.crt` ConfigMap of every namespace have moved: the
//! controller manager's `serviceaccount-controller` and
//! `root-ca-certificate-publisher-controller` keep them.

pub mod aggregation;
pub mod quota;

use crate::server::Server;
use std::sync::Arc;

/// Starts the keepers; they run until the process ends.
pub async fn start(server: &Arc<Server>) {
    tokio::spawn(quota::run(server.clone()));
    tokio::spawn(aggregation::run(server.clone()));
}
