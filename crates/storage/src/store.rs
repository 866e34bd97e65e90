//! The storage trait both backends implement, and the watch stream they return.

use crate::error::Result;
use crate::types::{DeleteResponse, Event, GetResponse, ListRequest, ListResponse, Revision};
use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

/// A revisioned key-value store with etcd's semantics.
///
/// Every successful write moves the single store revision forward by one and returns it.
/// Reads can be served at a past revision until that revision is compacted.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short name for logs: `"embedded"` or `"etcd"`.
    fn backend(&self) -> &'static str;

    /// The revision of the latest write.
    async fn current_revision(&self) -> Result<Revision>;

    /// Reads one key, at `revision` or (with `None`) the latest state.
    async fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse>;

    /// Reads the keys under a prefix from one snapshot, in key order, a page at a time.
    async fn list(&self, request: &ListRequest) -> Result<ListResponse>;

    /// Writes a key that must not exist; [`Error::AlreadyExists`](crate::Error::AlreadyExists)
    /// otherwise.
    async fn create(&self, key: &[u8], value: Bytes) -> Result<Revision>;

    /// Replaces the value of a key whose `mod_revision` is `expected`;
    /// [`Error::Conflict`](crate::Error::Conflict) (with the current value) if it is not,
    /// [`Error::NotFound`](crate::Error::NotFound) if the key does not exist.
    async fn update(&self, key: &[u8], value: Bytes, expected: Revision) -> Result<Revision>;

    /// Deletes a key, only if its `mod_revision` is `expected` when that is given.
    async fn delete(&self, key: &[u8], expected: Option<Revision>) -> Result<DeleteResponse>;

    /// Streams every write to keys under `prefix` from revision `start` (inclusive) on, in
    /// revision order, each with the key's previous value. `start == 0` means "from the
    /// next write". A start older than the compacted revision fails with
    /// [`Error::Compacted`](crate::Error::Compacted), either here or as the stream's item.
    async fn watch(&self, prefix: &[u8], start: Revision) -> Result<WatchStream>;

    /// Discards the history before `revision`: reads and watches at older revisions fail
    /// with [`Error::Compacted`](crate::Error::Compacted) afterwards. Compacting to a
    /// revision already compacted does nothing.
    async fn compact(&self, revision: Revision) -> Result<()>;
}

/// How many events a watch buffers for a slow consumer before its producer waits.
pub(crate) const WATCH_BUFFER: usize = 1024;

/// An ordered stream of events, ended by dropping it.
///
/// Items come in strictly increasing revision order with no gaps among the keys watched.
/// An `Err` item ends the stream (for example [`Error::Compacted`](crate::Error::Compacted)
/// when the consumer fell so far behind that the history it needs was compacted).
pub struct WatchStream {
    events: mpsc::Receiver<Result<Event>>,
}

impl WatchStream {
    /// A stream and the sender its producer feeds (backends, and decorators that transform
    /// another store's events); the producer stops when the stream is
    /// dropped (its sends fail and `closed()` resolves).
    pub fn channel() -> (mpsc::Sender<Result<Event>>, Self) {
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        (tx, Self { events: rx })
    }

    /// The next event; `None` once the store has shut down.
    pub async fn next(&mut self) -> Option<Result<Event>> {
        self.events.recv().await
    }

    /// The next event if one is ready now, without waiting.
    pub fn try_next(&mut self) -> Option<Result<Event>> {
        self.events.try_recv().ok()
    }
}
