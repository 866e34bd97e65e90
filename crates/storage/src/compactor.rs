//! Periodic automatic compaction, the way kube-apiserver does it: every interval, compact
//! to the revision that was current one interval ago, so that at least one interval of
//! history is always kept for watchers to resume from.

use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Kubernetes' default: keep five minutes of history.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Runs until the task is dropped or aborted.
pub async fn run_compactor(store: Arc<dyn Store>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await; // the first tick fires at once
    let mut previous = None;
    loop {
        match store.current_revision().await {
            Ok(current) => {
                if let Some(target) = previous.filter(|&rev| rev > 0) {
                    match store.compact(target).await {
                        Ok(()) => tracing::debug!(revision = target, "compacted the store"),
                        Err(error) => {
                            tracing::warn!(%error, revision = target, "compaction failed")
                        }
                    }
                }
                previous = Some(current);
            }
            Err(error) => tracing::warn!(%error, "cannot read the store revision for compaction"),
        }
        ticker.tick().await;
    }
}
