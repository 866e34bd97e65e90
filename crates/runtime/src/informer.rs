//! Shared informers: one list+watch per resource and watch configuration for every
//! controller in the process.
//!
//! An [`Informer`] keeps the objects of one kind in memory — every object, or those of one
//! namespace, label selector or field selector ([`Selection`]) — with optional secondary
//! indexes, and tells registered handlers of each change as client-go's
//! `ResourceEventHandler`s are told: added, updated (old and new) and deleted. It watches
//! with kube-runtime's `watcher`, which resumes from the last resourceVersion and re-lists
//! after `410 Gone`; a re-list is diffed against what the informer holds, so objects
//! deleted while the watch was down are reported deleted. Objects are read without
//! `metadata.managedFields` ([`crate::slim`]).
//!
//! Any kind can be informed on ([`Informable`]: every k8s-openapi kind, a custom resource's
//! type, or [`DynamicObject`] for a resource known only at run time, through
//! [`SharedInformers::dynamic`]). How the store keeps objects is the informer's second type
//! parameter ([`Storage`]): [`Parsed`] by default, or
//! [`Compacted`](crate::compact::Compacted) — pods, the kind a cluster has most of, trimmed
//! and compressed, parsed again on each read.
//!
//! [`SharedInformers`] hands out one informer per kind, storage and [`Selection`]: every
//! controller asking for the same shares one watch and one store; a different selector is a
//! different watch. They watch from [`SharedInformers::start`] until the [`Watching`] it
//! returns is dropped, so they stop with the component that started them.

use crate::slim::Slim;
use futures::StreamExt;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use std::any::{Any, TypeId};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::marker::PhantomData;
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

/// A kind an informer can keep: any kube-rs resource that can be read from JSON — every
/// k8s-openapi kind, a custom resource's type, [`DynamicObject`]. Nothing is implemented
/// per kind: a new crate informs on a new kind by asking for it.
pub trait Informable:
    kube::Resource + DeserializeOwned + Clone + fmt::Debug + Send + Sync + 'static
{
}

impl<K> Informable for K where
    K: kube::Resource + DeserializeOwned + Clone + fmt::Debug + Send + Sync + 'static
{
}

/// How an informer's store keeps objects of `K` between reads; the informer's second type
/// parameter: [`Parsed`] (the default) or [`Compacted`](crate::compact::Compacted).
pub trait Storage<K>: Send + Sync + 'static {
    /// What the store holds per object.
    type Stowed: Clone + Send + Sync + 'static;
    /// Called on each object as it arrives, before it is stored and handlers see it.
    fn prepare(object: &mut K) {
        let _ = object;
    }
    fn stow(object: &Arc<K>) -> Self::Stowed;
    /// The object again (`None` only if a compact form could not be read back).
    fn unstow(stowed: &Self::Stowed) -> Option<Arc<K>>;
}

/// Objects kept as they were parsed: reads share the one object.
#[derive(Debug)]
pub enum Parsed {}

impl<K: Send + Sync + 'static> Storage<K> for Parsed {
    type Stowed = Arc<K>;

    fn stow(object: &Arc<K>) -> Arc<K> {
        object.clone()
    }

    fn unstow(stowed: &Arc<K>) -> Option<Arc<K>> {
        Some(stowed.clone())
    }
}

/// What an informer watches of its resource: all of it, or one namespace, and the objects
/// a label and a field selector select (as `kubectl get -n NS -l LABELS
/// --field-selector FIELDS` would list). Part of what [`SharedInformers`] keys informers by.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selection {
    /// One namespace (namespaced kinds only), or every namespace.
    pub namespace: Option<String>,
    /// A label selector (`app=web,tier!=cache`).
    pub label_selector: Option<String>,
    /// A field selector (`spec.nodeName=node-1`).
    pub field_selector: Option<String>,
}

impl Selection {
    /// Every object of the resource.
    pub fn all() -> Selection {
        Selection::default()
    }

    /// Only the objects of `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Selection {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only the objects `selector` (a label selector) selects.
    pub fn labels(mut self, selector: impl Into<String>) -> Selection {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only the objects `selector` (a field selector) selects.
    pub fn fields(mut self, selector: impl Into<String>) -> Selection {
        self.field_selector = Some(selector.into());
        self
    }

    fn watcher_config(&self) -> watcher::Config {
        let mut config = watcher::Config::default();
        if let Some(labels) = &self.label_selector {
            config = config.labels(labels);
        }
        if let Some(fields) = &self.field_selector {
            config = config.fields(fields);
        }
        config
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![];
        if let Some(namespace) = &self.namespace {
            parts.push(format!("namespace {namespace}"));
        }
        if let Some(labels) = &self.label_selector {
            parts.push(format!("labels {labels}"));
        }
        if let Some(fields) = &self.field_selector {
            parts.push(format!("fields {fields}"));
        }
        if parts.is_empty() {
            f.write_str("all")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

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

struct Store<K: Informable, S: Storage<K>> {
    objects: BTreeMap<ObjectKey, S::Stowed>,
    indexers: Vec<(&'static str, IndexFn<K>)>,
    indexes: HashMap<&'static str, HashMap<String, BTreeSet<ObjectKey>>>,
}

impl<K: Informable, S: Storage<K>> Store<K, S> {
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
    fn insert(&mut self, key: ObjectKey, object: &Arc<K>, stowed: S::Stowed) -> Option<Arc<K>> {
        let old = self
            .objects
            .insert(key.clone(), stowed)
            .and_then(|old| S::unstow(&old));
        if let Some(old) = &old {
            self.index(&key, old, false);
        }
        self.index(&key, object, true);
        old
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = S::unstow(&self.objects.remove(key)?)?;
        self.index(key, &old, false);
        Some(old)
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.objects.get(key).and_then(S::unstow)
    }
}

/// The objects of one kind, kept current by a watch (see the module docs); `S` says how
/// they are kept ([`Parsed`] or [`Compacted`](crate::compact::Compacted)).
pub struct Informer<K: Informable, S: Storage<K> = Parsed> {
    store: RwLock<Store<K, S>>,
    handlers: RwLock<Vec<Handler<K>>>,
    synced: watch::Sender<bool>,
    storage: PhantomData<fn() -> S>,
}

impl<K: Informable, S: Storage<K>> Informer<K, S> {
    fn new() -> Informer<K, S> {
        Informer {
            store: RwLock::new(Store {
                objects: BTreeMap::new(),
                indexers: vec![],
                indexes: HashMap::new(),
            }),
            handlers: RwLock::new(vec![]),
            synced: watch::channel(false).0,
            storage: PhantomData,
        }
    }

    /// A standalone informer, synced and not watching anything: for tests of code that
    /// reads informers (objects are put in with [`Self::apply`]).
    pub fn detached() -> Arc<Informer<K, S>> {
        let informer = Arc::new(Informer::new());
        let _ = informer.synced.send(true);
        informer
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Store<K, S>> {
        self.store.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Store<K, S>> {
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
        let stowed: Vec<S::Stowed> = self.read().objects.values().cloned().collect();
        stowed.iter().filter_map(S::unstow).collect()
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
        let stowed: Vec<S::Stowed> = self
            .read()
            .objects
            .range(start..)
            .take_while(|(k, _)| k.namespace == namespace)
            .map(|(_, o)| o.clone())
            .collect();
        for object in stowed.iter().filter_map(S::unstow) {
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
            let Some(object) = S::unstow(object) else {
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
        let stowed: Vec<S::Stowed> = {
            let store = self.read();
            let Some(keys) = store.indexes.get(name).and_then(|i| i.get(value)) else {
                return;
            };
            keys.iter()
                .filter_map(|k| store.objects.get(k).cloned())
                .collect()
        };
        for object in stowed.iter().filter_map(S::unstow) {
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

    /// Stores an object from the watch (prepared as the storage wants, see
    /// [`Storage::prepare`]) and tells the handlers.
    pub fn apply(&self, mut object: K) {
        S::prepare(&mut object);
        let key = ObjectKey::of(&object);
        let object = Arc::new(object);
        let stowed = S::stow(&object);
        let old = self.write().insert(key, &object, stowed);
        match &old {
            Some(old) => self.dispatch(&Change::Updated { old, new: &object }),
            None => self.dispatch(&Change::Added(&object)),
        }
    }

    /// Removes an object the watch says is deleted and tells the handlers.
    pub fn delete(&self, mut object: K) {
        let key = ObjectKey::of(&object);
        let removed = self.write().remove(&key);
        let last = match removed {
            Some(removed) => removed,
            None => {
                S::prepare(&mut object);
                Arc::new(object)
            }
        };
        self.dispatch(&Change::Deleted(&last));
    }

    /// Replaces everything with a fresh list: what is gone is reported deleted, the rest
    /// added or updated.
    fn replace(&self, listed: Vec<K>) {
        // (before, after) per object.
        type Pair<K> = (Option<Arc<K>>, Option<Arc<K>>);
        let mut changes: Vec<Pair<K>> = vec![];
        let listed: Vec<(ObjectKey, Arc<K>, S::Stowed)> = listed
            .into_iter()
            .map(|mut object| {
                S::prepare(&mut object);
                let object = Arc::new(object);
                (
                    ObjectKey::of(object.as_ref()),
                    object.clone(),
                    S::stow(&object),
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

    /// Keeps the informer current until the process ends. `what` names the watch in logs.
    async fn run(self: Arc<Self>, api: Api<Slim<K>>, config: watcher::Config, what: String) {
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut listing: Option<Vec<K>> = None;
        while let Some(event) = stream.next().await {
            match event {
                Err(error) => {
                    tracing::debug!(%error, watch = %what, "watch");
                }
                Ok(Event::Init) => listing = Some(vec![]),
                Ok(Event::InitApply(Slim(object))) => {
                    listing.get_or_insert_with(Vec::new).push(object);
                }
                Ok(Event::InitDone) => self.replace(listing.take().unwrap_or_default()),
                Ok(Event::Apply(Slim(object))) => self.apply(object),
                Ok(Event::Delete(Slim(object))) => self.delete(object),
            }
        }
    }
}

/// Spawns an informer's watch task.
type Starter = Box<dyn FnOnce() -> tokio::task::AbortHandle + Send>;

/// The watch tasks of a [`SharedInformers`]: waiting for [`SharedInformers::start`],
/// running, or stopped for good (its [`Watching`] dropped).
#[derive(Default)]
struct Watches {
    pending: Vec<Starter>,
    running: Vec<tokio::task::AbortHandle>,
    started: bool,
    stopped: bool,
}

/// Keeps the informers of a [`SharedInformers`] watching: dropping it aborts every watch
/// task (and none starts afterwards), so that the informers stop with the component run
/// that started them. The stores keep what they hold.
#[must_use = "the informers stop watching when this is dropped"]
pub struct Watching {
    watches: Arc<Mutex<Watches>>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.stopped = true;
        watches.pending.clear();
        for task in watches.running.drain(..) {
            task.abort();
        }
    }
}

/// What [`SharedInformers`] tells informers apart by: the informer's type (kind and
/// storage), the resource (for dynamic kinds) and the selection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct InformerKey {
    informer: TypeId,
    /// `<apiVersion>/<plural>`.
    resource: String,
    selection: Selection,
}

/// One informer per kind, storage and [`Selection`], shared by every controller of the
/// process.
pub struct SharedInformers {
    client: kube::Client,
    informers: Mutex<HashMap<InformerKey, Arc<dyn Any + Send + Sync>>>,
    watches: Arc<Mutex<Watches>>,
    synced: Mutex<Vec<(String, watch::Receiver<bool>)>>,
}

impl SharedInformers {
    pub fn new(client: kube::Client) -> Arc<SharedInformers> {
        Arc::new(SharedInformers {
            client,
            informers: Mutex::new(HashMap::new()),
            watches: Arc::default(),
            synced: Mutex::new(vec![]),
        })
    }

    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The informer of every object of `K`, kept parsed; created on first use, it watches
    /// once [`Self::start`] has been called (at once, if it has).
    pub fn get<K: Informable<DynamicType = ()>>(&self) -> Arc<Informer<K>> {
        self.get_with(Selection::all())
    }

    /// The informer of every object of `K`, kept compact
    /// ([`Compacted`](crate::compact::Compacted)).
    pub fn compacted<K>(&self) -> Arc<Informer<K, crate::compact::Compacted>>
    where
        K: Informable<DynamicType = ()> + crate::compact::Compactable,
    {
        self.get_with(Selection::all())
    }

    /// The informer of the objects of `K` that `selection` selects, kept as `S` says.
    pub fn get_with<K: Informable<DynamicType = ()>, S: Storage<K>>(
        &self,
        selection: Selection,
    ) -> Arc<Informer<K, S>> {
        self.shared(&(), selection)
    }

    /// The informer of a resource known only at run time (a custom resource, say), its
    /// objects as JSON ([`DynamicObject`]).
    pub fn dynamic(
        &self,
        resource: &ApiResource,
        selection: Selection,
    ) -> Arc<Informer<DynamicObject>> {
        self.shared(resource, selection)
    }

    /// The informer of `K` (of resource `dynamic_type`), storage `S` and `selection`.
    fn shared<K: Informable, S: Storage<K>>(
        &self,
        dynamic_type: &K::DynamicType,
        selection: Selection,
    ) -> Arc<Informer<K, S>> {
        let resource = format!(
            "{}/{}",
            K::api_version(dynamic_type),
            K::plural(dynamic_type)
        );
        let key = InformerKey {
            informer: TypeId::of::<Informer<K, S>>(),
            resource,
            selection,
        };
        let mut informers = self.informers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = informers.get(&key)
            && let Ok(informer) = existing.clone().downcast::<Informer<K, S>>()
        {
            return informer;
        }
        if informers
            .keys()
            .any(|k| k.resource == key.resource && k.selection == key.selection)
        {
            tracing::warn!(
                resource = %key.resource,
                selection = %key.selection,
                "a second informer watches the same objects, kept differently: they are \
                 listed, watched and held twice"
            );
        }
        let informer: Arc<Informer<K, S>> = Arc::new(Informer::new());
        informers.insert(key.clone(), informer.clone());
        drop(informers);
        let what = format!("{} ({})", key.resource, key.selection);
        self.synced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((what.clone(), informer.synced.subscribe()));
        let api: Api<Slim<K>> = match &key.selection.namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, dynamic_type),
            None => Api::all_with(self.client.clone(), dynamic_type),
        };
        let config = key.selection.watcher_config();
        let run = informer.clone();
        let starter: Starter =
            Box::new(move || tokio::spawn(run.run(api, config, what)).abort_handle());
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        if watches.stopped {
            tracing::debug!(watch = %key.resource, "informer asked for after its watches stopped");
        } else if watches.started {
            watches.running.push(starter());
        } else {
            watches.pending.push(starter);
        }
        drop(watches);
        informer
    }

    /// Starts every informer asked for so far (and any asked for later); they watch until
    /// the returned [`Watching`] is dropped.
    pub fn start(&self) -> Watching {
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        if !watches.stopped {
            watches.started = true;
            let pending = std::mem::take(&mut watches.pending);
            for starter in pending {
                watches.running.push(starter());
            }
        }
        drop(watches);
        Watching {
            watches: self.watches.clone(),
        }
    }

    /// Waits until every informer has loaded its first list.
    pub async fn wait_for_sync(&self) {
        let receivers: Vec<(String, watch::Receiver<bool>)> = self
            .synced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (watch, mut rx) in receivers {
            let _ = rx.wait_for(|s| *s).await;
            tracing::debug!(%watch, "informer synced");
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
        let informer = Informer::<Pod, crate::compact::Compacted>::detached();
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
        informer.apply(wire);
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
        let informer = Informer::<Pod>::detached();
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
        let informer = Informer::<Pod>::detached();
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
        let informer = Informer::<Pod>::detached();
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

    /// A client whose API answers lists with `items` and watches with `added`, then keeps
    /// the watch open; the request URIs are recorded.
    fn fake_client(
        items: serde_json::Value,
        added: serde_json::Value,
    ) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
        use bytes::Bytes;
        use http_body_util::{BodyExt, Full, StreamBody};
        use hyper::body::Frame;
        let requests = Arc::new(Mutex::new(vec![]));
        let seen = requests.clone();
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let uri = request.uri().to_string();
            seen.lock().unwrap().push(uri.clone());
            let items = items.clone();
            let added = added.clone();
            async move {
                let body = if uri.contains("watch=true") {
                    let mut line =
                        serde_json::to_vec(&json!({"type": "ADDED", "object": added})).unwrap();
                    line.push(b'\n');
                    let first = futures::stream::iter([Ok::<_, std::convert::Infallible>(
                        Frame::data(Bytes::from(line)),
                    )]);
                    BodyExt::boxed(StreamBody::new(first.chain(futures::stream::pending())))
                } else {
                    let list = json!({"apiVersion": "v1", "kind": "List",
                        "metadata": {"resourceVersion": "5"}, "items": items});
                    Full::new(Bytes::from(serde_json::to_vec(&list).unwrap())).boxed()
                };
                Ok::<_, std::convert::Infallible>(http::Response::new(body))
            }
        });
        (kube::Client::new(service, "default"), requests)
    }

    fn pod_groups() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("scheduling.x-k8s.io", "v1alpha1", "PodGroup"),
            "podgroups",
        )
    }

    fn same<A, B>(a: &Arc<A>, b: &Arc<B>) -> bool {
        std::ptr::eq(Arc::as_ptr(a).cast::<()>(), Arc::as_ptr(b).cast::<()>())
    }

    #[tokio::test]
    async fn informers_are_shared_by_kind_storage_and_selection() {
        use k8s_openapi::api::core::v1::Node;
        let (client, requests) = fake_client(json!([]), json!({}));
        let informers = SharedInformers::new(client);
        let pods = informers.get::<Pod>();
        assert!(same(&pods, &informers.get::<Pod>()));
        assert!(same(
            &pods,
            &informers.get_with::<Pod, Parsed>(Selection::all())
        ));
        let on_node_1 = Selection::all().fields("spec.nodeName=node-1");
        let node_1 = informers.get_with::<Pod, Parsed>(on_node_1.clone());
        assert!(!same(&pods, &node_1));
        assert!(same(&node_1, &informers.get_with::<Pod, Parsed>(on_node_1)));
        let node_2 =
            informers.get_with::<Pod, Parsed>(Selection::all().fields("spec.nodeName=node-2"));
        assert!(!same(&node_1, &node_2));
        let web = Selection::all().namespace("a").labels("app=web");
        let in_a = informers.get_with::<Pod, Parsed>(web.clone());
        assert!(!same(&pods, &in_a));
        assert!(same(&in_a, &informers.get_with::<Pod, Parsed>(web)));
        // Another storage, another kind, a dynamic resource: each its own.
        let compact = informers.compacted::<Pod>();
        assert!(!same(&pods, &compact));
        assert!(same(&compact, &informers.compacted::<Pod>()));
        assert!(!same(&pods, &informers.get::<Node>()));
        let groups = informers.dynamic(&pod_groups(), Selection::all());
        assert!(same(
            &groups,
            &informers.dynamic(&pod_groups(), Selection::all())
        ));
        let quotas = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("scheduling.x-k8s.io", "v1alpha1", "ElasticQuota"),
            "elasticquotas",
        );
        assert!(!same(
            &groups,
            &informers.dynamic(&quotas, Selection::all())
        ));
        // Any kind, with nothing implemented for it here.
        use k8s_openapi::api::{networking, node, storage};
        let _ = informers.get::<node::v1::RuntimeClass>();
        let _ = informers.get::<storage::v1::CSIDriver>();
        let _ = informers.get::<storage::v1::CSINode>();
        let _ = informers.get::<storage::v1::VolumeAttachment>();
        let _ = informers.get::<networking::v1::NetworkPolicy>();
        // Nothing is watched before `start`.
        tokio::task::yield_now().await;
        assert!(requests.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_dynamic_informer_lists_and_watches_what_it_selects() {
        let group = |name: &str, rv: &str| {
            json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"namespace": "ns", "name": name, "resourceVersion": rv,
                    "labels": {"app": "web"},
                    "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
                "spec": {"minMember": 2}})
        };
        let (client, requests) = fake_client(json!([group("g1", "3")]), group("g2", "6"));
        let informers = SharedInformers::new(client);
        let informer = informers.dynamic(
            &pod_groups(),
            Selection::all().namespace("ns").labels("app=web"),
        );
        informer.add_index("min-member", |o: &DynamicObject| {
            vec![o.data["spec"]["minMember"].to_string()]
        });
        let seen = Arc::new(Mutex::new(vec![]));
        let log = seen.clone();
        informer.on_change(move |change| {
            let name = change.object().metadata.name.clone().unwrap();
            log.lock().unwrap().push(name);
        });
        let watching = informers.start();
        let deadline = std::time::Duration::from_secs(10);
        tokio::time::timeout(deadline, informers.wait_for_sync())
            .await
            .unwrap();
        tokio::time::timeout(deadline, async {
            while informer.len() < 2 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        let g1 = informer.get("ns", "g1").unwrap();
        assert_eq!(g1.data["spec"]["minMember"], 2);
        assert!(g1.metadata.managed_fields.is_none());
        let names = |v: Vec<Arc<DynamicObject>>| {
            v.iter()
                .map(|o| o.metadata.name.clone().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(informer.by_index("min-member", "2")), ["g1", "g2"]);
        assert_eq!(*seen.lock().unwrap(), ["g1", "g2"]);
        {
            let requests = requests.lock().unwrap();
            assert!(
                requests.iter().all(|uri| uri
                    .starts_with("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups?")
                    && uri.contains("labelSelector=app%3Dweb")),
                "{requests:?}"
            );
            assert!(requests.iter().any(|uri| uri.contains("watch=true")));
        }
        // Dropping `watching` stops the watch (its task let go of the informer), and no
        // informer asked for later starts.
        let held = Arc::strong_count(&informer);
        drop(watching);
        tokio::time::timeout(deadline, async {
            while Arc::strong_count(&informer) >= held {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        let late = informers.get::<Pod>();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!late.has_synced());
        assert_eq!(informer.len(), 2, "the store keeps what it holds");
    }
}
