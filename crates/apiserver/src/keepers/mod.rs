//! Keepers: loops inside the API server that keep some objects current from others, for
//! what admission and authentication depend on. Each is a client of the watch cache's
//! change feed and writes through the same REST paths (strategy, validation, admission)
//! as any client, as `system:apiserver`.
//!
//! - [`quota`]: ResourceQuota `status.hard`/`status.used` recalculated from the objects a
//!   quota counts (admission only ever raises usage; this brings it down again).
//!
//! In Kubernetes these belong to the controller manager; they move there when it lands
//! (issue 7), and stay until then because admission needs them now.

pub mod quota;

use crate::server::Server;
use std::sync::Arc;

/// Starts every keeper; they run until the process ends.
pub fn start(server: &Arc<Server>) {
    tokio::spawn(quota::run(server.clone()));
}
