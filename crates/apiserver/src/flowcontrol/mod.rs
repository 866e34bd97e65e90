//! API Priority and Fairness in the API server: the configuration from the FlowSchema and
//! PriorityLevelConfiguration objects, followed live, classifying every request for
//! `kyb-serving`'s priority-and-fairness filter (which does the queuing).
//!
//! - `config`: the objects digested — schemas in matching order, levels' seats, matching.
//! - `bootstrap`: the mandatory and suggested objects, and the keeper that recreates and
//!   restores them and maintains the FlowSchemas' `Dangling` condition.
//!
//! Seats: the server's concurrency limit (`--max-requests-inflight` +
//! `--max-mutating-requests-inflight`, 600 by default) is split among the levels by their
//! nominal concurrency shares, `ceil(limit * shares / total shares)`. Kubernetes then lets
//! levels lend (`lendablePercent`) and borrow (`borrowingLimitPercent`) seats by current
//! demand; here each level keeps its nominal seats (no lending or borrowing), so a level
//! never runs more than its nominal limit even when others are idle.

pub mod bootstrap;
mod config;

use crate::cache::WatchCache;
use config::Configuration;
use kyb_serving::filters::{Classification, Classify};
use kyb_serving::{RequestInfo, User};
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast::error::RecvError;

/// The live flow-control configuration.
pub struct FlowControl {
    cache: Arc<WatchCache>,
    server_limit: usize,
    config: RwLock<Arc<Configuration>>,
}

impl FlowControl {
    /// Digests the current objects and follows their changes for as long as the cache
    /// runs. `server_limit`: the server's concurrency limit, split among the levels.
    pub fn start(cache: &Arc<WatchCache>, server_limit: usize) -> Arc<FlowControl> {
        let flow_control = Arc::new(FlowControl {
            cache: cache.clone(),
            server_limit,
            config: RwLock::new(Arc::new(Configuration::default())),
        });
        let mut changes = cache.changes();
        flow_control.reload();
        let follower = flow_control.clone();
        tokio::spawn(async move {
            loop {
                match changes.recv().await {
                    Ok(change) if change.def.group == bootstrap::GROUP => {
                        while let Ok(_more) = changes.try_recv() {}
                        follower.reload();
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => follower.reload(),
                    Err(RecvError::Closed) => return,
                }
            }
        });
        flow_control
    }

    /// Rebuilds the configuration from the cached objects.
    fn reload(&self) {
        let schemas = self.cache.objects(bootstrap::GROUP, "flowschemas", None);
        let levels = self
            .cache
            .objects(bootstrap::GROUP, "prioritylevelconfigurations", None);
        let current = self.current();
        let config = Configuration::build(&schemas, &levels, self.server_limit, &current);
        if let Ok(mut slot) = self.config.write() {
            *slot = Arc::new(config);
        }
    }

    fn current(&self) -> Arc<Configuration> {
        self.config
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }
}

impl Classify for FlowControl {
    fn classify(&self, info: &RequestInfo, user: &User) -> Option<Classification> {
        self.current().classify(info, user)
    }
}
