//! Where the resource quota controller reads what quotas count, and which changes send a
//! quota back to its queue.
//!
//! The kinds with their own evaluators or legacy names (pods, services, claims,
//! ConfigMaps, Secrets, ReplicationControllers, ResourceQuotas) are read from shared
//! informers; an informer is asked for only once some quota tracks its kind (pods and
//! quotas always). Their deletions — and the updates [`super::replenish`] names — requeue
//! the namespace's quotas that track the kind; their creations requeue only quotas whose
//! status is not complete yet (admission charges the others). Any other `count/<resource>.<group>` is
//! counted by a metadata-only list through the API at each sync (found by discovery), and
//! once found, a metadata-only watch of it (nothing kept) requeues the quotas that count it
//! when one is deleted, as Kubernetes' quota monitor replenishes on the deletion of every
//! kind it counts.
//!
//! Informed objects are handed to the counting as JSON a chunk of [`CHUNK`] at a time,
//! read one by one from the informer: counting a namespace of thousands of pods holds a
//! few dozen of them at once, not thousands.

use super::replenish;
use crate::clock::Clock;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota, Secret, Service,
};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::Scope;
use kyb_quota::GroupResource;
use kyb_runtime::compact::Compacted;
use kyb_runtime::informer::{Change, Informable, Informer, ObjectKey, SharedInformers, Storage};
use kyb_runtime::queue::WorkQueue;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How many informed objects are held as JSON at once while counting.
pub const CHUNK: usize = 32;

/// The kinds read from informers, by their core-group resource name.
const INFORMED: &[&str] = &[
    "pods",
    "services",
    "persistentvolumeclaims",
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

/// The controller's view of the objects quotas count.
pub struct Sources {
    informers: Arc<SharedInformers>,
    pub quotas: Arc<Informer<ResourceQuota>>,
    pods: Arc<Informer<Pod, Compacted>>,
    client: kube::Client,
    clock: Arc<dyn Clock>,
    queue: OnceLock<Arc<WorkQueue<ObjectKey>>>,
    /// What each quota can be charged for, and whether its status is complete.
    tracked: Mutex<BTreeMap<ObjectKey, Tracked>>,
    /// The informed kinds whose changes are followed already.
    watched: Mutex<BTreeSet<&'static str>>,
    /// Discovery's answer per counted resource found (an unknown one is looked up again).
    discovered: Mutex<HashMap<GroupResource, ApiResource>>,
    /// The deletion watches of discovered resources, stopped with the controller.
    followers: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// A quota as the handlers know it.
struct Tracked {
    /// The (group, resource) pairs it can be charged for.
    affected: BTreeSet<GroupResource>,
    /// Whether its `status.hard` is its `spec.hard` with a `status.used` for each name.
    /// Until then admission charges nothing to it, so a creation must recount it too.
    complete: bool,
}

/// Whether the quota's status is complete (see [`Tracked::complete`]).
fn complete(quota: &ResourceQuota) -> bool {
    let hard = quota.spec.as_ref().and_then(|s| s.hard.as_ref());
    let status = quota.status.as_ref();
    hard == status.and_then(|s| s.hard.as_ref())
        && hard.into_iter().flatten().all(|(name, _)| {
            status
                .and_then(|s| s.used.as_ref())
                .is_some_and(|used| used.contains_key(name))
        })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sources {
    pub fn new(
        informers: Arc<SharedInformers>,
        client: kube::Client,
        clock: Arc<dyn Clock>,
    ) -> Arc<Sources> {
        Arc::new(Sources {
            quotas: informers.get::<ResourceQuota>(),
            pods: informers.compacted::<Pod>(),
            informers,
            client,
            clock,
            queue: OnceLock::new(),
            tracked: Mutex::default(),
            watched: Mutex::default(),
            discovered: Mutex::default(),
            followers: Mutex::default(),
        })
    }

    /// Connects the handlers to the controller's queue.
    pub fn start(self: &Arc<Self>, queue: Arc<WorkQueue<ObjectKey>>) {
        let _ = self.queue.set(queue);
        let sources = self.clone();
        self.quotas
            .on_change(move |change| sources.quota_changed(change));
        self.watch("pods");
        self.watch("resourcequotas");
    }

    fn queue(&self) -> Option<&Arc<WorkQueue<ObjectKey>>> {
        self.queue.get()
    }

    /// A quota added, updated or deleted: track what it counts; sync it when it is new or
    /// its `spec.hard` is not (yet) its `status.hard`.
    fn quota_changed(self: &Arc<Self>, change: &Change<'_, ResourceQuota>) {
        let quota = change.object();
        let key = ObjectKey::of(quota.as_ref());
        if let Change::Deleted(_) = change {
            lock(&self.tracked).remove(&key);
            self.replenish(&key.namespace, "", "resourcequotas", None);
            return;
        }
        let affected = serde_json::to_value(quota.as_ref())
            .map(|json| kyb_quota::affected_resources(&json))
            .unwrap_or_default();
        for gr in &affected {
            if gr.group.is_empty()
                && let Some(kind) = INFORMED.iter().find(|k| **k == gr.resource)
            {
                self.watch(kind);
            }
        }
        let tracked = Tracked {
            affected,
            complete: complete(quota),
        };
        lock(&self.tracked).insert(key.clone(), tracked);
        let hard = |q: &ResourceQuota| q.spec.as_ref().and_then(|s| s.hard.clone());
        let sync = match change {
            Change::Updated { old, new } => {
                hard(old) != hard(new)
                    || hard(new) != new.status.as_ref().and_then(|s| s.hard.clone())
            }
            _ => true,
        };
        if sync && let Some(queue) = self.queue() {
            queue.add(key);
        }
    }

    /// Follows the changes of an informed kind (once).
    fn watch(self: &Arc<Self>, kind: &'static str) {
        if !lock(&self.watched).insert(kind) {
            return;
        }
        match kind {
            "pods" => {
                let sources = self.clone();
                self.pods
                    .on_change(move |change| sources.pod_changed(change));
            }
            "services" => self.follow::<Service>(kind, replenish::service_update),
            "persistentvolumeclaims" => {
                self.follow::<PersistentVolumeClaim>(kind, replenish::claim_update)
            }
            "configmaps" => self.follow::<ConfigMap>(kind, |_, _| false),
            "secrets" => self.follow::<Secret>(kind, |_, _| false),
            "replicationcontrollers" => self.follow::<ReplicationController>(kind, |_, _| false),
            // Quotas' own changes are handled in `quota_changed`.
            _ => {}
        }
    }

    /// Replenishes on deletions and on the updates `updated` says lower usage.
    fn follow<K: Informable<DynamicType = ()>>(
        self: &Arc<Self>,
        resource: &'static str,
        updated: fn(&K, &K) -> bool,
    ) {
        let sources = self.clone();
        self.informers.get::<K>().on_change(move |change| {
            let object = change.object();
            let Some(namespace) = object.meta().namespace.as_deref() else {
                return;
            };
            match change {
                Change::Added(_) => sources.created(namespace, resource),
                Change::Updated { old, new } if updated(old, new) => {
                    sources.replenish(namespace, "", resource, None);
                }
                Change::Updated { .. } => {}
                Change::Deleted(_) => sources.replenish(namespace, "", resource, None),
            }
        });
    }

    fn pod_changed(&self, change: &Change<'_, Pod>) {
        let pod = change.object();
        let Some(namespace) = pod.metadata.namespace.as_deref() else {
            return;
        };
        match change {
            Change::Added(_) => self.created(namespace, "pods"),
            Change::Deleted(_) => self.replenish(namespace, "", "pods", None),
            Change::Updated { old, new } => {
                let now = self.clock.now();
                if replenish::pod_update(old, new, now) {
                    self.replenish(namespace, "", "pods", None);
                } else if replenish::pod_counts(new, now)
                    && let Some(left) = replenish::grace_left(new, now)
                {
                    // Nothing announces the end of a deletion's grace period.
                    let after = left + Duration::from_secs(1);
                    self.replenish(namespace, "", "pods", Some(after));
                }
            }
        }
    }

    /// A core-group object created: admission charged it to every quota with a complete
    /// status; the others (being synced for the first time) are recounted.
    fn created(&self, namespace: &str, resource: &str) {
        let Some(queue) = self.queue() else { return };
        for key in self.quotas_for(namespace, "", resource, true) {
            queue.add(key);
        }
    }

    /// The namespace's quotas that can be charged for (group, resource) (only those
    /// without a complete status, with `incomplete`).
    fn quotas_for(
        &self,
        namespace: &str,
        group: &str,
        resource: &str,
        incomplete: bool,
    ) -> Vec<ObjectKey> {
        let start = ObjectKey::new(namespace, "");
        lock(&self.tracked)
            .range(start..)
            .take_while(|(k, _)| k.namespace == namespace)
            .filter(|(_, t)| !(incomplete && t.complete))
            .filter(|(_, t)| {
                t.affected
                    .iter()
                    .any(|gr| gr.group == group && gr.resource == resource)
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Queues the namespace's quotas that can be charged for (group, resource).
    fn replenish(&self, namespace: &str, group: &str, resource: &str, after: Option<Duration>) {
        let Some(queue) = self.queue() else { return };
        let keys = self.quotas_for(namespace, group, resource, false);
        for key in keys {
            match after {
                Some(delay) => queue.add_after(key, delay),
                None => queue.add(key),
            }
        }
    }

    /// Hands the objects of (group, resource) in `namespace` to `count`, as JSON for
    /// the evaluators, in chunks (of at most [`CHUNK`] for informed kinds).
    pub async fn visit<F>(
        self: &Arc<Self>,
        namespace: &str,
        gr: &GroupResource,
        count: F,
    ) -> anyhow::Result<()>
    where
        F: FnMut(&[Value]) + Send,
    {
        if gr.group.is_empty()
            && let Some(kind) = INFORMED.iter().find(|k| **k == gr.resource)
        {
            self.watch(kind);
            match *kind {
                "pods" => from_informer(&self.pods, namespace, count).await,
                "services" => {
                    from_informer(&self.informers.get::<Service>(), namespace, count).await
                }
                "persistentvolumeclaims" => {
                    let informer = self.informers.get::<PersistentVolumeClaim>();
                    from_informer(&informer, namespace, count).await
                }
                "configmaps" => {
                    from_informer(&self.informers.get::<ConfigMap>(), namespace, count).await
                }
                "secrets" => from_informer(&self.informers.get::<Secret>(), namespace, count).await,
                "replicationcontrollers" => {
                    let informer = self.informers.get::<ReplicationController>();
                    from_informer(&informer, namespace, count).await
                }
                _ => from_informer(&self.quotas, namespace, count).await,
            }
            return Ok(());
        }
        let mut count = count;
        count(&self.listed(namespace, gr).await?);
        Ok(())
    }

    /// Counts any other resource by a metadata-only list (only names are kept: the
    /// evaluator counts objects).
    async fn listed(
        self: &Arc<Self>,
        namespace: &str,
        gr: &GroupResource,
    ) -> anyhow::Result<Vec<Value>> {
        let Some(resource) = self.discover(gr).await? else {
            return Ok(Vec::new());
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &resource);
        let list = match api.list_metadata(&ListParams::default()).await {
            Ok(list) => list,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                // The resource went away: look it up again next time.
                lock(&self.discovered).remove(gr);
                return Ok(Vec::new());
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("listing {}.{} in {namespace}", gr.resource, gr.group)
                });
            }
        };
        Ok(list
            .items
            .into_iter()
            .map(|o| serde_json::json!({"metadata": {"name": o.metadata.name}}))
            .collect())
    }

    /// The API resource of (group, resource), if the server serves it namespaced.
    async fn discover(self: &Arc<Self>, gr: &GroupResource) -> anyhow::Result<Option<ApiResource>> {
        if let Some(found) = lock(&self.discovered).get(gr) {
            return Ok(Some(found.clone()));
        }
        let group = match kube::discovery::oneshot::group(&self.client, &gr.group).await {
            Ok(group) => group,
            Err(kube::Error::Discovery(_)) => return Ok(None),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("discovering group {:?}", gr.group)),
        };
        let found = group
            .recommended_resources()
            .into_iter()
            .find(|(r, caps)| r.plural == gr.resource && caps.scope == Scope::Namespaced)
            .map(|(r, _)| r);
        if let Some(found) = &found
            && lock(&self.discovered)
                .insert(gr.clone(), found.clone())
                .is_none()
        {
            self.follow_deletions(gr, found);
        }
        Ok(found)
    }

    /// Watches (group, resource) for deletions, keeping nothing: each requeues the
    /// namespace's quotas that count the resource.
    fn follow_deletions(self: &Arc<Self>, gr: &GroupResource, resource: &ApiResource) {
        use futures::StreamExt as _;
        use kube::runtime::WatchStreamExt as _;
        use kube::runtime::watcher::{self, Event};
        let api: Api<kube::core::PartialObjectMeta<DynamicObject>> =
            Api::all_with(self.client.clone(), resource);
        let sources = Arc::downgrade(self);
        let gr = gr.clone();
        let task = tokio::spawn(async move {
            let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
            futures::pin_mut!(stream);
            while let Some(event) = stream.next().await {
                let Some(sources) = sources.upgrade() else {
                    return;
                };
                if let Ok(Event::Delete(object)) = event
                    && let Some(namespace) = object.metadata.namespace.as_deref()
                {
                    sources.replenish(namespace, &gr.group, &gr.resource, None);
                }
            }
        });
        lock(&self.followers).push(task.abort_handle());
    }
}

impl Drop for Sources {
    fn drop(&mut self) {
        for follower in lock(&self.followers).drain(..) {
            follower.abort();
        }
    }
}

/// Hands an informer's objects of one namespace to `count` as JSON, [`CHUNK`] at a time
/// (objects are read one at a time), once the informer has its first list.
async fn from_informer<K, S, F>(informer: &Informer<K, S>, namespace: &str, mut count: F)
where
    K: Informable + serde::Serialize,
    S: Storage<K>,
    F: FnMut(&[Value]) + Send,
{
    informer.wait_synced().await;
    let mut chunk: Vec<Value> = Vec::with_capacity(CHUNK);
    informer.visit_namespace(namespace, |object| {
        if let Ok(json) = serde_json::to_value(object.as_ref()) {
            chunk.push(json);
        }
        if chunk.len() >= CHUNK {
            count(&chunk);
            chunk.clear();
        }
    });
    if !chunk.is_empty() {
        count(&chunk);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_status_is_complete_with_every_hard_name_used() {
        let quota = |status: Value| -> ResourceQuota {
            serde_json::from_value(json!({
                "metadata": {"name": "q", "namespace": "n"},
                "spec": {"hard": {"pods": "2", "configmaps": "3"}},
                "status": status,
            }))
            .unwrap()
        };
        assert!(!complete(&quota(json!({}))));
        assert!(!complete(&quota(
            json!({"hard": {"pods": "2", "configmaps": "3"}, "used": {"pods": "1"}})
        )));
        assert!(!complete(&quota(
            json!({"hard": {"pods": "1", "configmaps": "3"}, "used": {"pods": "1", "configmaps": "0"}})
        )));
        assert!(complete(&quota(
            json!({"hard": {"pods": "2", "configmaps": "3"}, "used": {"pods": "1", "configmaps": "0"}})
        )));
    }
}
