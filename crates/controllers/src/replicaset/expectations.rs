//! Expectations, as Kubernetes' `ControllerExpectations`: what a controller has asked the
//! API for (pods to appear, pods to go) and not yet seen in its informer. While some are
//! outstanding, the controller does not create or delete again from a stale cache; they
//! expire after five minutes in case a watch event was lost.

use kyb_runtime::informer::ObjectKey;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// How long unmet expectations hold a controller back.
const TTL: jiff::SignedDuration = jiff::SignedDuration::from_secs(300);

#[derive(Debug)]
struct Entry {
    adds: i64,
    deletes: HashSet<String>,
    set_at: jiff::Timestamp,
}

/// Outstanding creations and deletions per owner.
#[derive(Debug, Default)]
pub struct Expectations {
    entries: Mutex<HashMap<ObjectKey, Entry>>,
}

impl Expectations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `owner` may act: nothing outstanding, or what is outstanding expired.
    pub fn satisfied(&self, owner: &ObjectKey, now: jiff::Timestamp) -> bool {
        match self.lock().get(owner) {
            None => true,
            Some(e) => (e.adds <= 0 && e.deletes.is_empty()) || now.duration_since(e.set_at) > TTL,
        }
    }

    /// `owner` is about to create `count` pods.
    pub fn expect_creations(&self, owner: &ObjectKey, count: usize, now: jiff::Timestamp) {
        self.lock().insert(
            owner.clone(),
            Entry {
                adds: count as i64,
                deletes: HashSet::new(),
                set_at: now,
            },
        );
    }

    /// `owner` is about to delete the pods named `names`.
    pub fn expect_deletions(&self, owner: &ObjectKey, names: &[String], now: jiff::Timestamp) {
        self.lock().insert(
            owner.clone(),
            Entry {
                adds: 0,
                deletes: names.iter().cloned().collect(),
                set_at: now,
            },
        );
    }

    /// A pod of `owner` appeared (or a creation failed and will never appear).
    pub fn creation_observed(&self, owner: &ObjectKey, count: usize) {
        if let Some(e) = self.lock().get_mut(owner) {
            e.adds -= count as i64;
        }
    }

    /// The pod `name` of `owner` is going (or its deletion failed).
    pub fn deletion_observed(&self, owner: &ObjectKey, name: &str) {
        if let Some(e) = self.lock().get_mut(owner) {
            e.deletes.remove(name);
        }
    }

    /// `owner` is gone.
    pub fn forget(&self, owner: &ObjectKey) {
        self.lock().remove(owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creations_and_deletions_are_awaited_until_seen_or_expired() {
        let x = Expectations::default();
        let k = ObjectKey::new("ns", "rs");
        let t0 = jiff::Timestamp::UNIX_EPOCH;
        assert!(x.satisfied(&k, t0));
        x.expect_creations(&k, 2, t0);
        assert!(!x.satisfied(&k, t0));
        x.creation_observed(&k, 1);
        assert!(!x.satisfied(&k, t0));
        x.creation_observed(&k, 1);
        assert!(x.satisfied(&k, t0));
        x.expect_deletions(&k, &["a".to_string()], t0);
        assert!(!x.satisfied(&k, t0));
        assert!(x.satisfied(&k, t0 + jiff::SignedDuration::from_secs(301)));
        x.deletion_observed(&k, "a");
        assert!(x.satisfied(&k, t0));
        x.expect_creations(&k, 1, t0);
        x.forget(&k);
        assert!(x.satisfied(&k, t0));
    }
}
