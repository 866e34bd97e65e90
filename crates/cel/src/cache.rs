//! A bounded, thread-safe cache of compiled expressions keyed by their source text, so a
//! policy's expressions compile once however many policies, bindings and requests use them.
//!
//! Compile errors are cached too (a broken policy is not re-parsed). When full, the least
//! recently used entry is evicted. Compilation happens outside the lock: two threads
//! missing on the same text at once both compile it, and the second result is kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::CompileError;
use crate::program::{self, Program};

/// Entries kept by [`ExpressionCache::default`].
pub const DEFAULT_CAPACITY: usize = 4096;

/// Source text → compiled program (or compile error).
#[derive(Debug)]
pub struct ExpressionCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Arc<str>, Entry>,
    clock: u64,
    stats: CacheStats,
}

#[derive(Debug)]
struct Entry {
    result: Result<Program, CompileError>,
    last_used: u64,
}

/// Counters of a cache's use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that compiled.
    pub misses: u64,
    /// Entries dropped to stay within capacity.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
}

impl Default for ExpressionCache {
    fn default() -> Self {
        ExpressionCache::new(DEFAULT_CAPACITY)
    }
}

impl ExpressionCache {
    /// A cache holding at most `capacity` expressions (at least one).
    pub fn new(capacity: usize) -> Self {
        ExpressionCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The compiled program for `expression`, compiling it on a miss.
    pub fn compile(&self, expression: &str) -> Result<Program, CompileError> {
        {
            let mut inner = self.lock();
            inner.clock += 1;
            let now = inner.clock;
            if let Some(entry) = inner.entries.get_mut(expression) {
                entry.last_used = now;
                let result = entry.result.clone();
                inner.stats.hits += 1;
                return result;
            }
            inner.stats.misses += 1;
        }
        let result = program::compile(expression);
        let mut inner = self.lock();
        if !inner.entries.contains_key(expression) && inner.entries.len() >= self.capacity {
            let oldest = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                inner.entries.remove(&oldest);
                inner.stats.evictions += 1;
            }
        }
        inner.clock += 1;
        let now = inner.clock;
        inner.entries.insert(
            Arc::from(expression),
            Entry {
                result: result.clone(),
                last_used: now,
            },
        );
        result
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            entries: inner.entries.len(),
            ..inner.stats
        }
    }

    /// Drops every entry (counters are kept).
    pub fn clear(&self) {
        self.lock().entries.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hits_after_the_first_compile() {
        let cache = ExpressionCache::new(8);
        let a = cache.compile("object.spec.replicas <= 5").unwrap();
        let b = cache.compile("object.spec.replicas <= 5").unwrap();
        assert!(a.shares(&b), "the same program is shared");
        assert!(cache.compile("1 +").is_err());
        assert!(cache.compile("1 +").is_err());
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 2,
                misses: 2,
                evictions: 0,
                entries: 2
            }
        );
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let cache = ExpressionCache::new(2);
        cache.compile("1 == 1").unwrap();
        cache.compile("2 == 2").unwrap();
        cache.compile("1 == 1").unwrap(); // 1 is now newer than 2
        cache.compile("3 == 3").unwrap(); // evicts 2
        let before = cache.stats();
        cache.compile("1 == 1").unwrap();
        assert_eq!(cache.stats().hits, before.hits + 1);
        cache.compile("2 == 2").unwrap();
        assert_eq!(cache.stats().misses, before.misses + 1);
        assert_eq!(cache.stats().entries, 2);
        assert_eq!(cache.stats().evictions, 2);
    }
}
