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

    /// Every cached object of a built-in resource in `namespace` (everywhere with `None`),
    /// parsed, in key order.
    pub fn objects(&self, group: &str, plural: &str, namespace: Option<&str>) -> Vec<Value> {
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
            .filter_map(|(_, object)| object.value().ok())
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
        let prev = event
            .prev
            .as_ref()
            .and_then(|p| CachedObject::from_stored(def, &p.key, &p.value, p.mod_revision).ok())
            .map(Arc::new);
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
