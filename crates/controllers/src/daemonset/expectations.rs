//! Expectations, as Kubernetes' controllers keep them: after asking for pod creations and
//! deletions, a DaemonSet is not managed again until the informer has seen them (or five
//! minutes pass), so a stale cache does not make it create or delete twice.

use kyb_runtime::informer::ObjectKey;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TTL: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Expectations {
    pending: Mutex<HashMap<ObjectKey, (i64, i64, Instant)>>,
}

impl Expectations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, (i64, i64, Instant)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Expects `adds` creations and `deletes` deletions for `key`.
    pub fn expect(&self, key: &ObjectKey, adds: i64, deletes: i64) {
        self.lock()
            .insert(key.clone(), (adds, deletes, Instant::now()));
    }

    /// One expected creation seen (or given up).
    pub fn created(&self, key: &ObjectKey) {
        if let Some(entry) = self.lock().get_mut(key) {
            entry.0 -= 1;
        }
    }

    /// One expected deletion seen (or given up).
    pub fn deleted(&self, key: &ObjectKey) {
        if let Some(entry) = self.lock().get_mut(key) {
            entry.1 -= 1;
        }
    }

    /// Whether everything expected for `key` has been seen (or has expired).
    pub fn satisfied(&self, key: &ObjectKey) -> bool {
        match self.lock().get(key) {
            None => true,
            Some((adds, deletes, since)) => (*adds <= 0 && *deletes <= 0) || since.elapsed() > TTL,
        }
    }

    pub fn forget(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_down() {
        let e = Expectations::default();
        let k = ObjectKey::new("ns", "ds");
        assert!(e.satisfied(&k));
        e.expect(&k, 2, 1);
        e.created(&k);
        e.deleted(&k);
        assert!(!e.satisfied(&k));
        e.created(&k);
        assert!(e.satisfied(&k));
    }
}
