//! Shared informers: one list+watch per resource for every controller in the process.
//!
//! An [`Informer`] keeps the objects of one kind (all namespaces) in memory, with optional
//! secondary indexes, and tells registered handlers of each change as client-go's
//! `ResourceEventHandler`s are told: added, updated (old and new) and deleted. It watches
//! with kube-runtime's `watcher`, which resumes from the last resourceVersion and re-lists
//! after `410 Gone`; a re-list is diffed against what the informer holds, so objects
//! deleted while the watch was down are reported deleted. Objects are read without
//! `metadata.managedFields` (see [`crate::slim`]) where the kind allows. Pods, the kind a
//! cluster has most of, are kept trimmed and compressed, parsed again on each read
//! ([`crate::compact`]); other kinds are kept parsed.
//!
//! [`SharedInformers`] hands out one informer per kind: every controller asking for pods
//! shares the same watch and store.

use crate::slim::Slim;
use futures::StreamExt;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use std::any::{Any, TypeId};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::watch;

/// `namespace/name` (an empty namespace for cluster-scoped objects), ordered by namespace
/// then name so one namespace's objects are a range.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ObjectKey {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a (namespaced or cluster-scoped) object.
    pub fn of<K: kube::Resource>(object: &K) -> ObjectKey {
        let meta = object.meta();
        ObjectKey {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// A kind an informer can keep: how it is read off the wire.
pub trait Informable:
    kube::Resource<DynamicType = ()> + Clone + fmt::Debug + Send + Sync + 'static
{
    /// What the watch deserializes (the kind itself, or [`Slim`] of it).
    type Wire: kube::Resource<DynamicType = ()>
        + DeserializeOwned
        + Clone
        + fmt::Debug
        + Send
        + Sync
        + 'static;
    /// How the store keeps objects of this kind (see [`Stowage`]).
    type Stowed: Stowage<Self>;
    fn from_wire(wire: Self::Wire) -> Self;
}

/// How an informer's store keeps an object between reads.
pub trait Stowage<K>: Clone + Send + Sync + Sized + 'static {
    fn stow(object: &Arc<K>) -> Self;
    /// The object again (`None` only if a compact form could not be read back).
    fn unstow(&self) -> Option<Arc<K>>;
}

/// Most kinds are kept as they are: reads share the one parsed object.
impl<K: Send + Sync + 'static> Stowage<K> for Arc<K> {
    fn stow(object: &Arc<K>) -> Self {
        object.clone()
    }

    fn unstow(&self) -> Option<Arc<K>> {
        Some(self.clone())
    }
}

use crate::compact::{Compact, trim_pod};

/// Kinds read with [`Slim`]: managed fields skipped while parsing.
macro_rules! slim_informable {
    ($($kind:ty),* $(,)?) => {$(
        impl Informable for $kind {
            type Wire = Slim<$kind>;
            type Stowed = Arc<$kind>;
            fn from_wire(wire: Slim<$kind>) -> $kind {
                wire.0
            }
        }
    )*};
}

/// Kinds parsed whole; managed fields are dropped after parsing.
macro_rules! plain_informable {
    ($($kind:ty),* $(,)?) => {$(
        impl Informable for $kind {
            type Wire = $kind;
            type Stowed = Arc<$kind>;
            fn from_wire(mut wire: $kind) -> $kind {
                wire.metadata.managed_fields = None;
                wire
            }
        }
    )*};
}

use k8s_openapi::api::{apps, autoscaling, batch, core, discovery, policy, rbac, storage};
/// Pods: read slim, trimmed ([`trim_pod`]) and kept [`Compact`].
impl Informable for core::v1::Pod {
    type Wire = Slim<core::v1::Pod>;
    type Stowed = Compact;
    fn from_wire(wire: Slim<core::v1::Pod>) -> core::v1::Pod {
        let mut pod = wire.0;
        trim_pod(&mut pod);
        pod
    }
}

slim_informable!(
    core::v1::Node,
    core::v1::Namespace,
    core::v1::Service,
    core::v1::ReplicationController,
    core::v1::PersistentVolume,
    core::v1::PersistentVolumeClaim,
    core::v1::ResourceQuota,
    apps::v1::Deployment,
    apps::v1::ReplicaSet,
    apps::v1::StatefulSet,
    apps::v1::DaemonSet,
    batch::v1::Job,
    batch::v1::CronJob,
    policy::v1::PodDisruptionBudget,
    autoscaling::v2::HorizontalPodAutoscaler,
);
plain_informable!(
    core::v1::ConfigMap,
    core::v1::Endpoints,
    core::v1::LimitRange,
    core::v1::Secret,
    core::v1::ServiceAccount,
    apps::v1::ControllerRevision,
    discovery::v1::EndpointSlice,
    k8s_openapi::api::coordination::v1::Lease,
    rbac::v1::ClusterRole,
    storage::v1::StorageClass,
);

/// One change, as handlers see it.
#[derive(Debug)]
pub enum Change<'a, K> {
    Added(&'a Arc<K>),
    Updated { old: &'a Arc<K>, new: &'a Arc<K> },
    Deleted(&'a Arc<K>),
}

impl<'a, K> Change<'a, K> {
    /// The object after the change (for a deletion, its last state).
    pub fn object(&self) -> &'a Arc<K> {
        match self {
            Change::Added(o) | Change::Deleted(o) => o,
            Change::Updated { new, .. } => new,
        }
    }
}

type Handler<K> = Arc<dyn Fn(&Change<'_, K>) + Send + Sync>;
type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

struct Store<K: Informable> {
    objects: BTreeMap<ObjectKey, K::Stowed>,
    indexers: Vec<(&'static str, IndexFn<K>)>,
    indexes: HashMap<&'static str, HashMap<String, BTreeSet<ObjectKey>>>,
}

impl<K: Informable> Store<K> {
    fn index(&mut self, key: &ObjectKey, object: &K, add: bool) {
        for (name, indexer) in &self.indexers {
            let index = self.indexes.entry(name).or_default();
            for value in indexer(object) {
                if add {
                    index.entry(value).or_default().insert(key.clone());
                } else if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }

    /// Stores `object` (`stowed` is its stowed form, made before taking the lock),
    /// returning what it replaced.
    fn insert(&mut self, key: ObjectKey, object: &Arc<K>, stowed: K::Stowed) -> Option<Arc<K>> {
        let old = self
            .objects
            .insert(key.clone(), stowed)
            .and_then(|old| old.unstow());
        if let Some(old) = &old {
            self.index(&key, old, false);
        }
        self.index(&key, object, true);
        old
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = self.objects.remove(key)?.unstow()?;
        self.index(key, &old, false);
        Some(old)
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.objects.get(key).and_then(Stowage::unstow)
    }
}

/// The objects of one kind, kept current by a watch (see the module docs).
pub struct Informer<K: Informable> {
    store: RwLock<Store<K>>,
    handlers: RwLock<Vec<Handler<K>>>,
    synced: watch::Sender<bool>,
}

impl<K: Informable> Informer<K> {
    fn new() -> Informer<K> {
        Informer {
            store: RwLock::new(Store {
                objects: BTreeMap::new(),
                indexers: vec![],
                indexes: HashMap::new(),
            }),
            handlers: RwLock::new(vec![]),
            synced: watch::channel(false).0,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Store<K>> {
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Store<K>> {
        self.store.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The object at `namespace/name` (an empty namespace for cluster-scoped kinds).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.read().get(&ObjectKey::new(namespace, name))
    }

    pub fn get_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().get(key)
    }

    /// Every object.
    pub fn list(&self) -> Vec<Arc<K>> {
        let stowed: Vec<K::Stowed> = self.read().objects.values().cloned().collect();
        stowed.iter().filter_map(Stowage::unstow).collect()
    }

    /// Every key.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().objects.keys().cloned().collect()
    }

    /// The objects of one namespace.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        let mut found = vec![];
        self.visit_namespace(namespace, |object| found.push(object));
        found
    }

    /// Calls `visit` with each object of one namespace, one at a time (in name order):
    /// for compactly kept kinds, only one object is parsed at once, where
    /// [`Self::list_namespace`] would hold all of them. The store's lock is not held
    /// while visiting.
    pub fn visit_namespace(&self, namespace: &str, mut visit: impl FnMut(Arc<K>)) {
        let start = ObjectKey::new(namespace, "");
        let stowed: Vec<K::Stowed> = self
            .read()
            .objects
            .range(start..)
            .take_while(|(k, _)| k.namespace == namespace)
            .map(|(_, o)| o.clone())
            .collect();
        for object in stowed.iter().filter_map(Stowage::unstow) {
            visit(object);
        }
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a secondary index: `indexer` gives the values an object is found under by
    /// [`Informer::by_index`]. Objects already held are indexed at once.
    pub fn add_index(
        &self,
        name: &'static str,
        indexer: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) {
        let mut store = self.write();
        if store.indexers.iter().any(|(n, _)| *n == name) {
            return;
        }
        let indexer: IndexFn<K> = Arc::new(indexer);
        let mut index: HashMap<String, BTreeSet<ObjectKey>> = HashMap::new();
        for (key, object) in &store.objects {
            let Some(object) = object.unstow() else {
                continue;
            };
            for value in indexer(&object) {
                index.entry(value).or_default().insert(key.clone());
            }
        }
        store.indexes.insert(name, index);
        store.indexers.push((name, indexer));
    }

    /// The objects indexed under `value` by the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Vec<Arc<K>> {
        let mut found = vec![];
        self.visit_index(name, value, |object| found.push(object));
        found
    }

    /// Calls `visit` with each object indexed under `value` by the index `name`, one at a
    /// time: for compactly kept kinds, only one object is parsed at once, where
    /// [`Self::by_index`] would hold all of them.
    pub fn visit_index(&self, name: &str, value: &str, mut visit: impl FnMut(Arc<K>)) {
        let stowed: Vec<K::Stowed> = {
            let store = self.read();
            let Some(keys) = store.indexes.get(name).and_then(|i| i.get(value)) else {
                return;
            };
            keys.iter()
                .filter_map(|k| store.objects.get(k).cloned())
                .collect()
        };
        for object in stowed.iter().filter_map(Stowage::unstow) {
            visit(object);
        }
    }

    /// Registers a handler for changes. It is told of every object already held (as
    /// added) first. Handlers run on the watch's task: keep them quick (queue a key).
    pub fn on_change(&self, handler: impl Fn(&Change<'_, K>) + Send + Sync + 'static) {
        let handler: Handler<K> = Arc::new(handler);
        let mut handlers = self.handlers.write().unwrap_or_else(|e| e.into_inner());
        for object in self.list() {
            handler(&Change::Added(&object));
        }
        handlers.push(handler);
    }

    /// Whether the first list has been loaded.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits for the first list.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    fn dispatch(&self, change: &Change<'_, K>) {
        let handlers: Vec<Handler<K>> = self
            .handlers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for handler in handlers {
            handler(change);
        }
    }

    /// Stores an object from the watch and tells the handlers.
    pub fn apply(&self, object: K) {
        let key = ObjectKey::of(&object);
        let object = Arc::new(object);
        let stowed = K::Stowed::stow(&object);
        let old = self.write().insert(key, &object, stowed);
        match &old {
            Some(old) => self.dispatch(&Change::Updated { old, new: &object }),
            None => self.dispatch(&Change::Added(&object)),
        }
    }

    /// Removes an object the watch says is deleted and tells the handlers.
    pub fn delete(&self, object: K) {
        let key = ObjectKey::of(&object);
        let removed = self.write().remove(&key);
        let last = Arc::new(object);
        self.dispatch(&Change::Deleted(removed.as_ref().unwrap_or(&last)));
    }

    /// Replaces everything with a fresh list: what is gone is reported deleted, the rest
    /// added or updated.
    fn replace(&self, listed: Vec<K>) {
        // (before, after) per object.
        type Pair<K> = (Option<Arc<K>>, Option<Arc<K>>);
        let mut changes: Vec<Pair<K>> = vec![];
        let listed: Vec<(ObjectKey, Arc<K>, K::Stowed)> = listed
            .into_iter()
            .map(|object| {
                let object = Arc::new(object);
                (
                    ObjectKey::of(object.as_ref()),
                    object.clone(),
                    K::Stowed::stow(&object),
                )
            })
            .collect();
        {
            let mut store = self.write();
            let mut seen = BTreeSet::new();
            for (key, object, stowed) in listed {
                seen.insert(key.clone());
                let old = store.insert(key, &object, stowed);
                changes.push((old, Some(object)));
            }
            let gone: Vec<ObjectKey> = store
                .objects
                .keys()
                .filter(|k| !seen.contains(*k))
                .cloned()
                .collect();
            for key in gone {
                changes.push((store.remove(&key), None));
            }
        }
        for change in changes {
            match change {
                (Some(old), Some(new)) => self.dispatch(&Change::Updated {
                    old: &old,
                    new: &new,
                }),
                (None, Some(new)) => self.dispatch(&Change::Added(&new)),
                (Some(old), None) => self.dispatch(&Change::Deleted(&old)),
                (None, None) => {}
            }
        }
        let _ = self.synced.send(true);
    }

    /// Keeps the informer current until the process ends.
    async fn run(self: Arc<Self>, api: Api<K::Wire>) {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listing: Option<Vec<K>> = None;
        while let Some(event) = stream.next().await {
            match event {
                Err(error) => {
                    tracing::debug!(%error, kind = %K::kind(&()), "watch");
                }
                Ok(Event::Init) => listing = Some(vec![]),
                Ok(Event::InitApply(wire)) => {
                    listing
                        .get_or_insert_with(Vec::new)
                        .push(K::from_wire(wire));
                }
                Ok(Event::InitDone) => self.replace(listing.take().unwrap_or_default()),
                Ok(Event::Apply(wire)) => self.apply(K::from_wire(wire)),
                Ok(Event::Delete(wire)) => self.delete(K::from_wire(wire)),
            }
        }
    }
}

/// A standalone informer (not watching anything): for tests of code that reads informers.
pub fn detached<K: Informable>() -> Arc<Informer<K>> {
    let informer = Arc::new(Informer::new());
    let _ = informer.synced.send(true);
    informer
}

type Starter = Box<dyn FnOnce() + Send>;

/// One informer per kind, shared by every controller of the process.
pub struct SharedInformers {
    client: kube::Client,
    informers: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    pending: Mutex<Vec<Starter>>,
    started: std::sync::atomic::AtomicBool,
    synced: Mutex<Vec<(String, watch::Receiver<bool>)>>,
}

impl SharedInformers {
    pub fn new(client: kube::Client) -> Arc<SharedInformers> {
        Arc::new(SharedInformers {
            client,
            informers: Mutex::new(HashMap::new()),
            pending: Mutex::new(vec![]),
            started: std::sync::atomic::AtomicBool::new(false),
            synced: Mutex::new(vec![]),
        })
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The informer of `K`, created on first use; it watches once [`Self::start`] has
    /// been called (at once, if it has).
    pub fn get<K: Informable>(&self) -> Arc<Informer<K>> {
        let mut informers = self.informers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = informers.get(&TypeId::of::<K>())
            && let Ok(informer) = existing.clone().downcast::<Informer<K>>()
        {
            return informer;
        }
        let informer: Arc<Informer<K>> = Arc::new(Informer::new());
        informers.insert(TypeId::of::<K>(), informer.clone());
        drop(informers);
        self.synced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((K::kind(&()).to_string(), informer.synced.subscribe()));
        let api: Api<K::Wire> = Api::all(self.client.clone());
        let run = informer.clone();
        let starter: Starter = Box::new(move || {
            tokio::spawn(run.run(api));
        });
        if self.started.load(std::sync::atomic::Ordering::SeqCst) {
            starter();
        } else {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(starter);
        }
        informer
    }

    /// Starts every informer asked for so far (and any asked for later).
    pub fn start(&self) {
        self.started
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for starter in pending {
            starter();
        }
    }

    /// Waits until every informer has loaded its first list.
    pub async fn wait_for_sync(&self) {
        let receivers: Vec<(String, watch::Receiver<bool>)> = self
            .synced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (kind, mut rx) in receivers {
            let _ = rx.wait_for(|s| *s).await;
            tracing::debug!(%kind, "informer synced");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod(ns: &str, name: &str, node: &str, rv: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"namespace": ns, "name": name, "resourceVersion": rv},
            "spec": {"nodeName": node, "containers": []},
        }))
        .unwrap()
    }

    fn node_of(p: &Pod) -> Vec<String> {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect()
    }

    #[test]
    fn pods_are_kept_trimmed_and_compact_and_read_back_whole() {
        let informer = detached::<Pod>();
        let wire: Pod = serde_json::from_value(json!({
            "metadata": {"namespace": "a", "name": "p", "labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "10m"}},
                    "volumeMounts": [{"name": "token", "mountPath": "/var/run"}]}],
                "volumes": [
                    {"name": "token", "projected": {"sources": []}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-p"}},
                ],
            },
            "status": {"phase": "Running", "podIP": "10.42.0.5"},
        }))
        .unwrap();
        informer.apply(<Pod as Informable>::from_wire(Slim(wire)));
        let pod = informer.get("a", "p").unwrap();
        let spec = pod.spec.as_ref().unwrap();
        let volumes: Vec<&str> = spec
            .volumes
            .iter()
            .flatten()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(volumes, ["data"]);
        assert!(spec.containers[0].volume_mounts.is_none());
        assert_eq!(spec.containers[0].image.as_deref(), Some("busybox"));
        assert_eq!(
            pod.status.as_ref().unwrap().pod_ip.as_deref(),
            Some("10.42.0.5")
        );
        assert_eq!(pod.metadata.labels.as_ref().unwrap()["app"], "web");
    }

    #[test]
    fn lists_by_namespace_and_index() {
        let informer = detached::<Pod>();
        informer.add_index("node", node_of);
        informer.apply(pod("a", "p1", "n1", "1"));
        informer.apply(pod("a", "p2", "n2", "2"));
        informer.apply(pod("ab", "p3", "n1", "3"));
        informer.apply(pod("b", "p4", "n1", "4"));
        let names = |v: Vec<Arc<Pod>>| {
            v.iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(informer.list_namespace("a")), ["p1", "p2"]);
        assert_eq!(names(informer.by_index("node", "n1")), ["p1", "p3", "p4"]);
        // Moving and deleting update the index.
        informer.apply(pod("a", "p1", "n2", "5"));
        informer.delete(pod("b", "p4", "n1", "6"));
        assert_eq!(names(informer.by_index("node", "n1")), ["p3"]);
        assert_eq!(names(informer.by_index("node", "n2")), ["p1", "p2"]);
        assert!(informer.get("b", "p4").is_none());
    }

    #[test]
    fn visits_a_namespace_and_an_index_one_object_at_a_time() {
        let informer = detached::<Pod>();
        informer.add_index("node", node_of);
        informer.apply(pod("a", "p2", "n1", "1"));
        informer.apply(pod("a", "p1", "n2", "2"));
        informer.apply(pod("ab", "p3", "n1", "3"));
        informer.apply(pod("", "p0", "n1", "4"));
        let mut seen = vec![];
        informer.visit_namespace("a", |p| {
            // The store is not locked while visiting: writing to it does not deadlock, and
            // the visit goes over what the namespace held when it began.
            informer.apply(pod("a", "p9", "n1", "5"));
            seen.push(p.metadata.name.clone().unwrap());
        });
        assert_eq!(seen, ["p1", "p2"]);
        seen.clear();
        informer.visit_namespace("b", |p| seen.push(p.metadata.name.clone().unwrap()));
        assert!(seen.is_empty());
        informer.visit_namespace("", |p| seen.push(p.metadata.name.clone().unwrap()));
        assert_eq!(seen, ["p0"]);
        seen.clear();
        informer.visit_index("node", "n1", |p| {
            informer.delete(pod("ab", "p3", "n1", "6"));
            seen.push(p.metadata.name.clone().unwrap());
        });
        assert_eq!(seen, ["p0", "p2", "p9", "p3"]);
        assert!(informer.get("ab", "p3").is_none());
    }

    #[test]
    fn handlers_see_adds_updates_deletes_and_what_a_relist_dropped() {
        let informer = detached::<Pod>();
        informer.apply(pod("a", "before", "n", "1"));
        let seen = Arc::new(Mutex::new(vec![]));
        let log = seen.clone();
        informer.on_change(move |change| {
            let name = change.object().metadata.name.clone().unwrap();
            let what = match change {
                Change::Added(_) => "add",
                Change::Updated { old, new } => {
                    assert_eq!(old.metadata.name, new.metadata.name);
                    "update"
                }
                Change::Deleted(_) => "delete",
            };
            log.lock().unwrap().push(format!("{what} {name}"));
        });
        informer.apply(pod("a", "x", "n", "2"));
        informer.apply(pod("a", "x", "n", "3"));
        informer.replace(vec![pod("a", "x", "n", "4"), pod("a", "y", "n", "5")]);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "add before",
                "add x",
                "update x",
                "update x",
                "add y",
                "delete before"
            ]
        );
    }
}
