//! The garbage collector (kube-controller-manager's `garbage-collector-controller`):
//! deletes objects whose owners are all gone and carries out the `orphan` and
//! `foregroundDeletion` propagation finalizers the API server sets on delete.
//!
//! Every collectable resource (see [`resources`]) is watched as metadata only by a
//! [`monitor`]; the [`graph`] keeps each object's owners, namespace, and deletion state by
//! UID with the reverse owner → dependents edges. Changes point the work queue at UIDs,
//! and [`collect`] decides, from the graph and (for owners the graph has not seen) a lookup
//! of the owner by apiVersion/kind/name, as Kubernetes documents:
//! - an object with owners, none of which exists any more (404, or another UID) → deleted
//!   in the background (foreground if it is itself marked so, orphan if it carries the
//!   `orphan` finalizer); an object with some owners gone and others alive loses the
//!   references to the gone ones;
//! - an owner being deleted with `orphan` → its UID is removed from every dependent's
//!   ownerReferences, then the finalizer;
//! - an owner being deleted with `foregroundDeletion` → its dependents are deleted
//!   (foreground in turn when they have dependents of their own), and once no dependent
//!   with `blockOwnerDeletion: true` remains the finalizer is removed; a dependent whose
//!   own dependent also waits (an ownership cycle) first has its owner references made
//!   non-blocking, so the cycle cannot hold every member forever;
//! - an owner reference to a namespaced owner that lives in another namespace is invalid:
//!   the owner counts as absent there and a `OwnerRefInvalidNamespace` event is recorded on
//!   the dependent.
//!
//! The first list of every resource builds the graph before work starts, so dependents of
//! owners deleted while the collector was down are found then.

pub mod collect;
pub mod graph;
pub mod monitor;
pub mod resources;

use crate::context::Context;
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "garbage-collector-controller";
/// The service account the collector writes as (its bootstrap role is
/// `system:controller:generic-garbage-collector`).
pub const SERVICE_ACCOUNT: &str = "generic-garbage-collector";
/// How often resources are re-discovered (CRDs come and go).
const REDISCOVERY: Duration = Duration::from_secs(30);
/// How long to wait for every monitor's first list before collecting anyway.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let client = ctx.client_for(SERVICE_ACCOUNT).await?;
    let collector = Arc::new(collect::Collector::new(
        ctx.client.clone(),
        client,
        ctx.recorder(NAME),
    ));
    let controller = ctx.controller(NAME, collector.clone());
    collector.set_queue(controller.queue());
    // Discover until it works once, then watch; re-discover periodically.
    loop {
        match monitor::rediscover(&collector).await {
            Ok(()) => break,
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "garbage collector discovery failed; retrying");
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    }
    let started = tokio::time::Instant::now();
    while !collector.synced() {
        if started.elapsed() > SYNC_TIMEOUT {
            tracing::warn!(
                "garbage collector: not every resource listed in time; collecting anyway"
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::info!(objects = collector.objects(), "garbage collector synced");
    let rediscovering = collector.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(REDISCOVERY).await;
            if let Err(error) = monitor::rediscover(&rediscovering).await {
                tracing::warn!(error = %format!("{error:#}"), "garbage collector re-discovery failed");
            }
        }
    });
    controller.run(ctx.options.workers.max(1) * 4).await;
    Ok(())
}
