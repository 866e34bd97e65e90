//! The values that cross the [`Store`](crate::Store) interface.

use bytes::Bytes;

/// A store revision: etcd's `int64` revision, always positive once anything was written.
pub type Revision = u64;

/// The largest value accepted, etcd's default request limit (1.5 MiB).
pub const MAX_VALUE_SIZE: usize = 1536 * 1024;

/// A key with its value and the revisions that describe its history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Bytes,
    /// Revision of the write that created this incarnation of the key.
    pub create_revision: Revision,
    /// Revision of the last write to the key.
    pub mod_revision: Revision,
    /// Number of writes since the key was created (1 right after the create).
    pub version: u64,
}

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Put,
    Delete,
}

/// One write seen by a watch.
///
/// For a delete, `kv` carries the key and the deletion revision (in `mod_revision`) with an
/// empty value, and `prev` the value that was deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub kv: KeyValue,
    /// The key's value just before this write, if it existed.
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The revision of the write this event reports.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// The answer to [`Store::get`](crate::Store::get).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetResponse {
    pub kv: Option<KeyValue>,
    /// The store revision the read was served at.
    pub revision: Revision,
}

/// A (possibly paginated, possibly historical) read of every key under a prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListRequest {
    pub prefix: Vec<u8>,
    /// First key to return (inclusive); must lie under `prefix`. `None` starts at the prefix.
    pub start: Option<Vec<u8>>,
    /// At most this many keys; 0 means no limit.
    pub limit: usize,
    /// Read the state at this revision; `None` reads the latest.
    pub revision: Option<Revision>,
}

impl ListRequest {
    pub fn prefix(prefix: impl Into<Vec<u8>>) -> Self {
        Self {
            prefix: prefix.into(),
            ..Self::default()
        }
    }

    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    pub fn start(mut self, start: impl Into<Vec<u8>>) -> Self {
        self.start = Some(start.into());
        self
    }

    pub fn at_revision(mut self, revision: Revision) -> Self {
        self.revision = Some(revision);
        self
    }

    /// The request for the page after `response`, at the same revision; `None` when
    /// `response` was the last page.
    pub fn next_page(&self, response: &ListResponse) -> Option<Self> {
        let start = response.next.clone()?;
        Some(Self {
            prefix: self.prefix.clone(),
            start: Some(start),
            limit: self.limit,
            revision: Some(response.revision),
        })
    }
}

/// The answer to [`Store::list`](crate::Store::list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListResponse {
    /// Keys in ascending byte order.
    pub kvs: Vec<KeyValue>,
    /// The revision of the snapshot every key was read from; pass it back (with `next`) to
    /// read the following page from the same snapshot.
    pub revision: Revision,
    /// Where the next page starts, when more keys remain.
    pub next: Option<Vec<u8>>,
}

/// The answer to [`Store::delete`](crate::Store::delete).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteResponse {
    /// The revision of the deletion.
    pub revision: Revision,
    /// The key and value as they were just before the deletion.
    pub prev: KeyValue,
}
