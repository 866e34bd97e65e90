//! The watch cache: every built-in resource held in memory, fed by one storage watch.
//!
//! At start the cache lists the whole store at one revision, then follows a single watch of
//! `/registry/` from the next revision, routing each event to the cache of its resource (by
//! storage prefix). Reads are served from memory: a consistent read first waits until the
//! cache has caught up with the store's current revision. Each resource keeps a bounded
//! window of recent events so watches can resume from a `resourceVersion`, and fans its
//! events out to any number of watchers through one broadcast channel.

mod follow;
pub mod object;
pub(crate) mod shallow;

pub use follow::{Follower, follow};

use kyb_api::ResourceDef;
use kyb_api::registry::BUILTIN;
use kyb_storage::{EventKind, ListRequest, Revision, Store};
use object::{CachedObject, Filter};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// Events a resource keeps for watches that resume from a past resourceVersion.
const WINDOW: usize = 4096;
/// Events a watcher may fall behind before it is dropped (it then resumes from its last
/// resourceVersion).
const FANOUT_BUFFER: usize = 1024;
/// Page size of the initial list.
const LOAD_PAGE: usize = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change to one object, as watchers see it.
#[derive(Debug)]
pub struct CacheEvent {
    pub revision: Revision,
    pub kind: EventType,
    /// The new state; for a deletion, the last state at the deletion's revision.
    pub object: Arc<CachedObject>,
    /// The state before, for modifications and deletions.
    pub prev: Option<Arc<CachedObject>>,
}

struct State {
    objects: BTreeMap<Arc<str>, Arc<CachedObject>>,
    window: VecDeque<Arc<CacheEvent>>,
    /// Watches can resume from any revision at or after this one.
    horizon: Revision,
    /// The revision of the last event applied here.
    last_applied: Revision,
    events: broadcast::Sender<Arc<CacheEvent>>,
}

/// The cache of one resource (all versions that share its storage).
pub struct ResourceCache {
    /// The resource as stored (the first registry entry with this storage prefix).
    pub def: &'static ResourceDef,
    state: RwLock<State>,
}

/// A page of a list served from memory.
pub struct Page {
    pub items: Vec<Arc<CachedObject>>,
    pub revision: Revision,
    /// The key the next page starts at.
    pub next: Option<Box<str>>,
}

/// A started watch: what to send first, then what to follow.
pub struct Subscription {
    pub initial: Vec<Arc<CacheEvent>>,
    /// The revision the initial part brings the watcher to.
    pub revision: Revision,
    pub events: broadcast::Receiver<Arc<CacheEvent>>,
}

/// Why a watch cannot start where asked.
pub enum WatchError {
    /// The revision is older than the window (410 Gone).
    TooOld {
        requested: Revision,
        oldest: Revision,
    },
}

impl ResourceCache {
    fn new(def: &'static ResourceDef, revision: Revision) -> Self {
        let (events, _) = broadcast::channel(FANOUT_BUFFER);
        Self {
            def,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                window: VecDeque::new(),
                horizon: revision,
                last_applied: 0,
                events,
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The revision of the last change applied to this resource's objects: what derived
    /// indexes compare to know they are stale.
    pub fn last_applied(&self) -> Revision {
        self.read().last_applied
    }

    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.read().objects.get(key).cloned()
    }

    /// Matching objects under `prefix` in key order, at most `limit` (0: all).
    /// `global` is the cache-wide revision read before calling.
    pub fn list(&self, prefix: &str, filter: &Filter, limit: usize, global: Revision) -> Page {
        let state = self.read();
        let revision = global.max(state.last_applied);
        let mut items = Vec::new();
        let mut next = None;
        if let Some(name) = filter.name() {
            // A single object: a lookup, not a scan.
            let key = match &filter.namespace {
                Some(ns) if self.def.namespaced => {
                    format!("{}/{ns}/{name}", self.def.storage_prefix)
                }
                _ => format!("{}/{name}", self.def.storage_prefix),
            };
            if let Some(object) = state.objects.get(key.as_str())
                && key.starts_with(prefix)
                && filter.matches(self.def, object)
            {
                items.push(object.clone());
            }
            return Page {
                items,
                revision,
                next,
            };
        }
        let range = state
            .objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix));
        for (key, object) in range {
            if !filter.matches(self.def, object) {
                continue;
            }
            if limit > 0 && items.len() == limit {
                next = Some(Box::from(key.as_ref()));
                break;
            }
            items.push(object.clone());
        }
        Page {
            items,
            revision,
            next,
        }
    }

    /// Starts a watch with the current state as synthetic ADDED events.
    pub fn subscribe_with_state(
        &self,
        prefix: &str,
        filter: &Filter,
        global: Revision,
    ) -> Subscription {
        let state = self.read();
        let revision = global.max(state.last_applied);
        let initial = state
            .objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(_, o)| filter.matches(self.def, o))
            .map(|(_, o)| {
                Arc::new(CacheEvent {
                    revision: o.revision,
                    kind: EventType::Added,
                    object: o.clone(),
                    prev: None,
                })
            })
            .collect();
        Subscription {
            initial,
            revision,
            events: state.events.subscribe(),
        }
    }

    /// Starts a watch of the events after `since`.
    pub fn subscribe_since(
        &self,
        since: Revision,
        global: Revision,
    ) -> Result<Subscription, WatchError> {
        let state = self.read();
        if since < state.horizon {
            return Err(WatchError::TooOld {
                requested: since,
                oldest: state.horizon,
            });
        }
        let initial = state
            .window
            .iter()
            .filter(|e| e.revision > since)
            .cloned()
            .collect();
        Ok(Subscription {
            initial,
            revision: global.max(state.last_applied).max(since),
            events: state.events.subscribe(),
        })
    }

    fn load(&self, object: CachedObject) {
        let mut state = self.write();
        state.objects.insert(object.key.clone(), Arc::new(object));
    }

    fn apply(&self, event: CacheEvent) {
        let mut state = self.write();
        let key = event.object.key.clone();
        match event.kind {
            EventType::Deleted => state.objects.remove(&key),
            _ => state.objects.insert(key, event.object.clone()),
        };
        state.last_applied = event.revision;
        let event = Arc::new(event);
        if state.window.len() == WINDOW
            && let Some(evicted) = state.window.pop_front()
        {
            state.horizon = evicted.revision;
        }
        state.window.push_back(event.clone());
        // Sent under the lock, so a subscriber sees each event exactly once: in the state or
        // window it copied, or on its receiver.
        let _ = state.events.send(event);
    }

    /// Forgets everything (before a reload), ending every watch.
    fn reset(&self, revision: Revision) {
        let mut state = self.write();
        let (events, _) = broadcast::channel(FANOUT_BUFFER);
        *state = State {
            objects: BTreeMap::new(),
            window: VecDeque::new(),
            horizon: revision,
            last_applied: 0,
            events,
        };
    }
}

/// All resource caches and the storage watch that feeds them.
pub struct WatchCache {
    store: Arc<dyn Store>,
    caches: HashMap<&'static str, Arc<ResourceCache>>,
    revision: watch::Sender<Revision>,
    changes: broadcast::Sender<Change>,
}

/// That something changed, for the server's own keepers (quota status, ...): which
/// storage resource, in which namespace. Cheap: no object travels with it.
#[derive(Clone, Debug)]
pub struct Change {
    /// The storage form of the resource (shared prefixes name one of their resources).
    pub def: &'static ResourceDef,
    pub namespace: Option<Arc<str>>,
    pub name: Option<Arc<str>>,
    pub kind: EventType,
}

/// Changes a keeper may fall behind before it is told it lagged (and resynchronizes).
const CHANGES_BUFFER: usize = 4096;

impl WatchCache {
    /// Loads everything and starts following the store.
    pub async fn start(store: Arc<dyn Store>) -> Result<Arc<Self>, kyb_storage::Error> {
        let mut caches = HashMap::new();
        // Reviews (never stored) share the empty prefix, which no stored key routes to.
        for def in BUILTIN {
            caches
                .entry(def.storage_prefix)
                .or_insert_with(|| Arc::new(ResourceCache::new(def, 0)));
        }
        let (revision, _) = watch::channel(0);
        let (changes, _) = broadcast::channel(CHANGES_BUFFER);
        let cache = Arc::new(Self {
            store,
            caches,
            revision,
            changes,
        });
        let start = cache.load().await?;
        let follower = cache.clone();
        tokio::spawn(async move { follower.follow(start).await });
        Ok(cache)
    }

    /// The cache holding a resource.
    pub fn resource(&self, def: &ResourceDef) -> Option<&Arc<ResourceCache>> {
        self.caches.get(def.storage_prefix)
    }

    /// Every change from now on (see [`Change`]); a receiver that falls behind gets
    /// `Lagged` and should look at everything again.
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// The cached object `name` (in `namespace`) of a built-in resource, parsed; `None`
    /// when it does not exist (or the resource is unknown).
    pub fn lookup(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let def = kyb_api::registry::find_stored(group, plural)?;
        let object = self.resource(def)?.get(&def.key(namespace, name))?;
        object.value().ok()
    }

    /// [`Self::lookup`] for objects read on every request of some kind (namespaces, service
    /// accounts, ...): the parsed form is kept with the cached state (see
    /// [`CachedObject::shared_value`]).
    pub fn lookup_shared(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<Value>> {
        let def = kyb_api::registry::find_stored(group, plural)?;
        let object = self.resource(def)?.get(&def.key(namespace, name))?;
        object.shared_value().ok()
    }

    /// Every cached object of a built-in resource in `namespace` (everywhere with `None`),
    /// parsed, in key order.
    pub fn objects(&self, group: &str, plural: &str, namespace: Option<&str>) -> Vec<Value> {
        self.each_object(group, plural, namespace, CachedObject::value)
    }

    /// [`Self::objects`] for the few objects read on every request of some kind (priority
    /// classes, ...): parsed once per state (see [`CachedObject::shared_value`]).
    pub fn objects_shared(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> Vec<Arc<Value>> {
        self.each_object(group, plural, namespace, CachedObject::shared_value)
    }

    fn each_object<T>(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        parse: impl Fn(&CachedObject) -> Result<T, String>,
    ) -> Vec<T> {
        let Some(def) = kyb_api::registry::find_stored(group, plural) else {
            return Vec::new();
        };
        let Some(cache) = self.resource(def) else {
            return Vec::new();
        };
        let prefix = def.list_prefix(namespace);
        let state = cache.read();
        state
            .objects
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix.as_str()))
            .filter_map(|(_, object)| parse(object).ok())
            .collect()
    }

    /// The revision every cache has caught up to.
    pub fn revision(&self) -> Revision {
        *self.revision.borrow()
    }

    /// Waits until the caches have caught up to `revision`; false on timeout.
    pub async fn wait_for(&self, revision: Revision, timeout: Duration) -> bool {
        let mut receiver = self.revision.subscribe();
        tokio::time::timeout(timeout, receiver.wait_for(|r| *r >= revision))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits until the caches reflect every write acknowledged so far (a consistent read);
    /// returns the revision they are at, or `None` if they did not catch up in time.
    pub async fn wait_fresh(&self, timeout: Duration) -> Option<Revision> {
        let current = self.store.current_revision().await.ok()?;
        if self.wait_for(current, timeout).await {
            Some(self.revision())
        } else {
            None
        }
    }

    /// Lists the whole store at one revision into the caches; returns that revision.
    async fn load(&self) -> Result<Revision, kyb_storage::Error> {
        let mut request = ListRequest::prefix("/registry/").limit(LOAD_PAGE);
        let mut revision = None;
        let mut count = 0usize;
        loop {
            let page = self.store.list(&request).await?;
            revision.get_or_insert(page.revision);
            for kv in &page.kvs {
                if let Some(cache) = self.route(&kv.key) {
                    match CachedObject::from_stored(cache.def, &kv.key, &kv.value, kv.mod_revision)
                    {
                        Ok(object) => cache.load(object),
                        Err(error) => {
                            tracing::warn!(key = %String::from_utf8_lossy(&kv.key), %error, "skipping a stored object")
                        }
                    }
                    count += 1;
                }
            }
            match request.next_page(&page) {
                Some(next) => request = next,
                None => break,
            }
        }
        let revision = revision.unwrap_or(0);
        for cache in self.caches.values() {
            let mut state = cache.write();
            state.horizon = revision;
        }
        self.revision.send_replace(revision);
        tracing::debug!(objects = count, revision, "watch cache loaded");
        Ok(revision)
    }

    /// The cache a storage key belongs to: `<prefix>/<name>` or `<prefix>/<ns>/<name>`.
    fn route(&self, key: &[u8]) -> Option<&Arc<ResourceCache>> {
        let key = std::str::from_utf8(key).ok()?;
        let (parent, _) = key.rsplit_once('/')?;
        if let Some(cache) = self.caches.get(parent).filter(|c| !c.def.namespaced) {
            return Some(cache);
        }
        let (grandparent, _) = parent.rsplit_once('/')?;
        self.caches.get(grandparent).filter(|c| c.def.namespaced)
    }

    /// Follows the store from `revision` on, for as long as the process runs.
    async fn follow(&self, mut revision: Revision) {
        loop {
            match self.store.watch(b"/registry/", revision + 1).await {
                Ok(mut events) => {
                    while let Some(event) = events.next().await {
                        match event {
                            Ok(event) => {
                                revision = event.revision();
                                self.apply(event);
                                self.revision.send_replace(revision);
                            }
                            Err(error) => {
                                tracing::warn!(%error, "the watch cache lost its storage watch");
                                break;
                            }
                        }
                    }
                }
                Err(error) => tracing::warn!(%error, "the watch cache cannot watch the store"),
            }
            // Start over from a fresh list: watchers are ended and resume (or relist).
            tokio::time::sleep(Duration::from_millis(200)).await;
            for cache in self.caches.values() {
                cache.reset(revision);
            }
            match self.load().await {
                Ok(loaded) => revision = loaded,
                Err(error) => tracing::warn!(%error, "the watch cache cannot reload"),
            }
        }
    }

    fn apply(&self, event: kyb_storage::Event) {
        let Some(cache) = self.route(&event.kv.key) else {
            return;
        };
        let revision = event.revision();
        let def = cache.def;
        // The previous state is normally the one cached already (only this task applies
        // events): reused, not built again.
        let prev = event.prev.as_ref().and_then(|p| {
            let cached = std::str::from_utf8(&p.key)
                .ok()
                .and_then(|key| cache.get(key))
                .filter(|o| o.revision == p.mod_revision);
            cached.or_else(|| {
                CachedObject::from_stored(def, &p.key, &p.value, p.mod_revision)
                    .ok()
                    .map(Arc::new)
            })
        });
        let built = match event.kind {
            EventKind::Put => {
                CachedObject::from_stored(def, &event.kv.key, &event.kv.value, revision).map(
                    |object| CacheEvent {
                        revision,
                        kind: if prev.is_some() {
                            EventType::Modified
                        } else {
                            EventType::Added
                        },
                        object: Arc::new(object),
                        prev: prev.clone(),
                    },
                )
            }
            EventKind::Delete => match &prev {
                Some(prev) => prev.at_revision(def, revision).map(|object| CacheEvent {
                    revision,
                    kind: EventType::Deleted,
                    object: Arc::new(object),
                    prev: Some(prev.clone()),
                }),
                None => Err("a deletion without the deleted value".into()),
            },
        };
        match built {
            Ok(event) => {
                // Told after the cache holds the change, so a keeper reading it sees it.
                let change = (self.changes.receiver_count() > 0).then(|| Change {
                    def,
                    namespace: event.object.namespace().map(Arc::from),
                    name: Some(Arc::from(event.object.name())),
                    kind: event.kind,
                });
                cache.apply(event);
                if let Some(change) = change {
                    let _ = self.changes.send(change);
                }
            }
            Err(error) => {
                tracing::warn!(key = %String::from_utf8_lossy(&event.kv.key), %error, "skipping a stored object")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kyb_storage::{EmbeddedOptions, EmbeddedStore};
    use serde_json::json;

    /// What the cache held before it read objects shallowly: parsed, the revision set,
    /// serialized again.
    fn by_value(stored: &[u8], revision: Revision) -> Vec<u8> {
        let mut object: Value = serde_json::from_slice(stored).unwrap_or_default();
        kyb_apimachinery::meta::metadata_mut(&mut object)
            .insert("resourceVersion".into(), revision.to_string().into());
        serde_json::to_vec(&object).unwrap_or_default()
    }

    async fn next(subscription: &mut Subscription) -> anyhow::Result<Arc<CacheEvent>> {
        Ok(tokio::time::timeout(Duration::from_secs(10), subscription.events.recv()).await??)
    }

    #[tokio::test]
    async fn events_share_states_and_parsed_forms_follow_writes() -> anyhow::Result<()> {
        let dir = kyb_testkit::temp_dir("watch-cache")?;
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(
            dir.path(),
            &EmbeddedOptions::default(),
        )?);
        let cache = WatchCache::start(store.clone()).await?;
        let def = kyb_api::registry::find_stored("", "pods").ok_or(anyhow::anyhow!("pods"))?;
        let pods = cache.resource(def).ok_or(anyhow::anyhow!("no pod cache"))?;
        let mut subscription =
            pods.subscribe_with_state(&def.list_prefix(None), &Filter::default(), 0);
        let key = "/registry/pods/ns/p";
        let pod = |node: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"labels": {"b": "2", "a": "1"}, "name": "p", "namespace": "ns"},
                "spec": {"nodeName": node, "hostNetwork": true}, "status": {"phase": "Pending"}})
        };
        let stored = |node: &str| -> anyhow::Result<bytes::Bytes> {
            Ok(serde_json::to_vec(&pod(node))?.into())
        };

        let created = store.create(key.as_bytes(), stored("")?).await?;
        let added = next(&mut subscription).await?;
        assert_eq!(added.kind, EventType::Added);
        assert_eq!(added.object.json.as_ref(), by_value(&stored("")?, created));
        assert_eq!(added.object.label("a"), Some("1"));
        assert_eq!(added.object.field(def, "spec.nodeName"), Some(""));
        assert_eq!(added.object.field(def, "spec.hostNetwork"), Some("true"));
        assert_eq!(added.object.field(def, "status.phase"), Some("Pending"));
        assert_eq!(added.object.field(def, "spec.schedulerName"), Some(""));
        let first = cache
            .lookup_shared("", "pods", Some("ns"), "p")
            .ok_or(anyhow::anyhow!("not cached"))?;
        assert_eq!(first.pointer("/spec/nodeName"), Some(&json!("")));

        let updated = store
            .update(key.as_bytes(), stored("node-1")?, created)
            .await?;
        let modified = next(&mut subscription).await?;
        assert_eq!(modified.kind, EventType::Modified);
        let prev = modified.prev.as_ref().ok_or(anyhow::anyhow!("no prev"))?;
        assert!(
            Arc::ptr_eq(prev, &added.object),
            "the cached state is reused"
        );
        assert_eq!(modified.object.field(def, "spec.nodeName"), Some("node-1"));
        // The parsed form belongs to a state: the new state parses anew.
        let second = cache
            .lookup_shared("", "pods", Some("ns"), "p")
            .ok_or(anyhow::anyhow!("not cached"))?;
        assert_eq!(second.pointer("/spec/nodeName"), Some(&json!("node-1")));
        assert_eq!(
            second.pointer("/metadata/resourceVersion"),
            Some(&json!(updated.to_string()))
        );
        let again = cache
            .lookup_shared("", "pods", Some("ns"), "p")
            .ok_or(anyhow::anyhow!("not cached"))?;
        assert!(Arc::ptr_eq(&second, &again), "parsed once per state");

        let deleted = store.delete(key.as_bytes(), Some(updated)).await?;
        let gone = next(&mut subscription).await?;
        assert_eq!(gone.kind, EventType::Deleted);
        let prev = gone.prev.as_ref().ok_or(anyhow::anyhow!("no prev"))?;
        assert!(Arc::ptr_eq(prev, &modified.object));
        assert_eq!(
            gone.object.json.as_ref(),
            by_value(&stored("node-1")?, deleted.revision)
        );
        assert!(cache.lookup_shared("", "pods", Some("ns"), "p").is_none());
        Ok(())
    }
}
