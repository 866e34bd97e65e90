//! Following one resource from the cache, for indexes built from its objects (the RBAC
//! policy, the Node authorizer's graph): the current objects first, then every change; if
//! the follower falls behind the cache's event stream, or the cache reloads, it is told to
//! forget everything and is given the full state again, so it never silently misses a
//! change.

use super::object::Filter;
use super::{CacheEvent, ResourceCache};
use kyb_api::Resource;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// What a follower does with the objects of one resource.
pub trait Follower: Send + Sync + 'static {
    /// Applies events (`initial`: the objects present when following (re)started).
    fn apply(&self, def: &Resource, events: &[Arc<CacheEvent>], initial: bool);
    /// Forgets every object of `def` (before the full state comes again).
    fn forget(&self, def: &Resource);
}

/// Applies the current objects of `def` now (before returning), then follows changes on a
/// task for as long as the process runs.
pub fn follow<F: Follower>(cache: &Arc<ResourceCache>, def: Arc<Resource>, follower: Arc<F>) {
    let subscribe = {
        let cache = cache.clone();
        let prefix = def.list_prefix(None);
        move || cache.subscribe_with_state(&prefix, &Filter::default(), 0)
    };
    let mut subscription = subscribe();
    follower.apply(&def, &subscription.initial, true);
    tokio::spawn(async move {
        loop {
            match subscription.events.recv().await {
                Ok(event) => follower.apply(&def, std::slice::from_ref(&event), false),
                Err(RecvError::Lagged(_)) => {
                    tracing::warn!(resource = %def.plural, "a cache follower lagged; reloading");
                    subscription = subscribe();
                    follower.forget(&def);
                    follower.apply(&def, &subscription.initial, true);
                }
                Err(RecvError::Closed) => {
                    // The cache restarts its streams on reload: start over.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    subscription = subscribe();
                    follower.forget(&def);
                    follower.apply(&def, &subscription.initial, true);
                }
            }
        }
    });
}
