//! The controller's own writes, remembered until its informer catches up.
//!
//! Binding takes four writes (volume, volume status, claim, claim status), each building on
//! the object the previous one returned. Between them, and right after, the informers may
//! still hold older versions; reading those would make the controller redo a step or
//! choose a volume it has just given away. So every object the API server returns is kept
//! here, and reads take whichever of it and the informer's copy is newer (by
//! `resourceVersion`), as Kubernetes' PV controller does with its own caches.

use kube::Resource;
use kyb_runtime::informer::{Informable, Informer, ObjectKey};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct Written<K> {
    objects: Mutex<HashMap<ObjectKey, Arc<K>>>,
}

impl<K> Default for Written<K> {
    fn default() -> Self {
        Written {
            objects: Mutex::new(HashMap::new()),
        }
    }
}

fn version<K: Resource>(object: &K) -> Option<u64> {
    object.meta().resource_version.as_deref()?.parse().ok()
}

impl<K: Informable> Written<K> {
    /// Remembers an object the API server returned.
    pub fn store(&self, object: K) -> Arc<K> {
        let object = Arc::new(object);
        self.lock()
            .insert(ObjectKey::of(object.as_ref()), object.clone());
        object
    }

    /// Forgets a deleted object.
    pub fn forget(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }

    /// The newest known version of `key`: the informer's, unless a write of ours is newer.
    /// An object the informer no longer has is gone.
    pub fn latest(&self, informer: &Informer<K>, key: &ObjectKey) -> Option<Arc<K>> {
        let cached = informer.get_key(key)?;
        self.newer(cached)
    }

    /// Every object of the informer, each in its newest known version.
    pub fn list(&self, informer: &Informer<K>) -> Vec<Arc<K>> {
        informer
            .list()
            .into_iter()
            .filter_map(|o| self.newer(o))
            .collect()
    }

    fn newer(&self, cached: Arc<K>) -> Option<Arc<K>> {
        let mut objects = self.lock();
        if objects.is_empty() {
            return Some(cached);
        }
        let key = ObjectKey::of(cached.as_ref());
        let Some(mine) = objects.get(&key) else {
            return Some(cached);
        };
        match (version(cached.as_ref()), version(mine.as_ref())) {
            (Some(theirs), Some(ours)) if ours > theirs => Some(mine.clone()),
            _ => {
                objects.remove(&key);
                Some(cached)
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Arc<K>>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }
}
