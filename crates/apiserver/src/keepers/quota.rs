//! The quota status keeper: recalculates `status.used` (and copies `spec.hard` to
//! `status.hard`) of the ResourceQuotas in every namespace where something a quota counts
//! changed, and of every quota now and then (pods stop counting when their deletion grace
//! passes, which no event announces).
//!
//! It never races quota admission: a namespace with a write charged to its quotas but not
//! stored yet is left for the next round ([`Inflight`]), and every status write is a
//! compare-and-swap on the quota it was computed from.

use crate::cache::EventType;
use crate::request::Verb;
use crate::server::Server;
use kyb_api::meta;
use kyb_api::registry::Subresource;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// How long changes gather before a round.
const BATCH: Duration = Duration::from_millis(50);
/// How often every quota is recalculated regardless.
const RESYNC: Duration = Duration::from_secs(30);

/// Writes charged to a namespace's quotas by admission and not finished yet.
#[derive(Default)]
pub struct Inflight {
    namespaces: Mutex<HashMap<String, usize>>,
}

/// Held by a request whose write was charged to its namespace's quotas, until it ends.
pub struct Charge {
    inflight: Arc<Inflight>,
    namespace: String,
}

impl Inflight {
    /// Records a charged write in `namespace` until the returned guard is dropped.
    pub fn charge(self: &Arc<Self>, namespace: &str) -> Charge {
        if let Ok(mut namespaces) = self.namespaces.lock() {
            *namespaces.entry(namespace.to_string()).or_default() += 1;
        }
        Charge {
            inflight: self.clone(),
            namespace: namespace.to_string(),
        }
    }

    fn busy(&self, namespace: &str) -> bool {
        self.namespaces
            .lock()
            .map(|n| n.get(namespace).is_some_and(|c| *c > 0))
            .unwrap_or(false)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Ok(mut namespaces) = self.inflight.namespaces.lock()
            && let Some(count) = namespaces.get_mut(&self.namespace)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                namespaces.remove(&self.namespace);
            }
        }
    }
}

/// Keeps quota statuses current for as long as the server runs.
pub async fn run(server: Arc<Server>) {
    let mut changes = server.cache.changes();
    let mut dirty: BTreeSet<String> = all_quota_namespaces(&server);
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    loop {
        if !dirty.is_empty() {
            dirty = reconcile(&server, dirty).await;
        }
        let wait = if dirty.is_empty() {
            Duration::from_secs(3600)
        } else {
            BATCH
        };
        tokio::select! {
            change = changes.recv() => match change {
                Ok(change) => {
                    note(&server, &mut dirty, change.def, change.namespace.as_deref(), change.kind);
                    // Take whatever else is waiting, then work after a short gathering.
                    tokio::time::sleep(BATCH).await;
                    loop {
                        match changes.try_recv() {
                            Ok(change) => note(&server, &mut dirty, change.def, change.namespace.as_deref(), change.kind),
                            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => dirty.extend(all_quota_namespaces(&server)),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvError::Lagged(_)) => dirty.extend(all_quota_namespaces(&server)),
                Err(RecvError::Closed) => return,
            },
            _ = resync.tick() => dirty.extend(all_quota_namespaces(&server)),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Marks a namespace whose quotas a change may affect.
fn note(
    server: &Server,
    dirty: &mut BTreeSet<String>,
    def: &kyb_api::ResourceDef,
    namespace: Option<&str>,
    _kind: EventType,
) {
    let Some(namespace) = namespace else { return };
    if dirty.contains(namespace) {
        return;
    }
    if def.group.is_empty() && def.plural == "resourcequotas" {
        dirty.insert(namespace.to_string());
        return;
    }
    let quotas = server.cache.objects("", "resourcequotas", Some(namespace));
    if !quotas.is_empty() && kyb_quota::may_affect(&quotas, def.group, def.plural) {
        dirty.insert(namespace.to_string());
    }
}

fn all_quota_namespaces(server: &Server) -> BTreeSet<String> {
    server
        .cache
        .objects("", "resourcequotas", None)
        .iter()
        .filter_map(|q| meta::namespace(q).map(str::to_string))
        .collect()
}

/// Recalculates the quotas of `dirty` namespaces; returns those to try again.
async fn reconcile(server: &Server, dirty: BTreeSet<String>) -> BTreeSet<String> {
    let mut again = BTreeSet::new();
    let Some(def) = kyb_api::registry::find_stored("", "resourcequotas") else {
        return again;
    };
    for namespace in dirty {
        if server.quota_inflight.busy(&namespace) {
            again.insert(namespace);
            continue;
        }
        let Ok(call) = crate::rest::internal_call(
            server,
            def,
            Verb::Update,
            Some(&namespace),
            Some(Subresource::Status),
        ) else {
            continue;
        };
        for quota in server.cache.objects("", "resourcequotas", Some(&namespace)) {
            let used = kyb_quota::recalculate(&quota, |group, resource| {
                server.cache.objects(group, resource, Some(&namespace))
            });
            let status = kyb_quota::status(&quota, &used);
            if !kyb_quota::status_changed(&quota, &status) {
                continue;
            }
            // A charge may have started while recalculating: then the sum is stale.
            if server.quota_inflight.busy(&namespace) {
                again.insert(namespace.clone());
                break;
            }
            let name = meta::name(&quota).unwrap_or_default().to_string();
            let precondition = meta::resource_version(&quota).map(str::to_string);
            match crate::rest::update_status(&call, &name, precondition.as_deref(), status).await {
                Ok(_) => {}
                Err(status) if status.code == 409 || status.code == 404 => {
                    again.insert(namespace.clone());
                }
                Err(status) => {
                    tracing::warn!(%namespace, quota = %name, error = %status.message, "cannot update quota status");
                }
            }
        }
    }
    again
}
