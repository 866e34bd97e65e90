//! Storage errors: one type for both backends, with the distinctions callers act on.

use crate::types::{KeyValue, Revision};
use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key does not exist (update or delete of a missing key).
    #[error("key {} not found", Key(.key))]
    NotFound { key: Vec<u8> },

    /// `create` of a key that exists; carries the current value.
    #[error("key {} already exists", Key(&.current.key))]
    AlreadyExists { current: Box<KeyValue> },

    /// A compare-and-swap lost: the key's `mod_revision` was not the expected one. Carries
    /// the current value so the caller can retry without another read.
    #[error(
        "conflict on key {}: expected mod_revision {expected}, found {}",
        Key(&.current.key),
        .current.mod_revision
    )]
    Conflict {
        expected: Revision,
        current: Box<KeyValue>,
    },

    /// The requested revision is older than the oldest the store still holds.
    #[error("revision {requested} has been compacted (oldest available: {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },

    /// The requested revision has not been written yet.
    #[error("revision {requested} is in the future (current: {current})")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },

    /// A value over [`MAX_VALUE_SIZE`](crate::MAX_VALUE_SIZE); nothing was written.
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    ValueTooLarge { size: usize, limit: usize },

    /// The request itself is malformed (empty key, start key outside the prefix, …).
    #[error("invalid request: {0}")]
    InvalidArgument(String),

    /// The on-disk data is not a store this program can use.
    #[error("{0}")]
    Corrupt(String),

    /// The backend failed (I/O error, etcd unreachable, …); the outcome of a write that
    /// fails this way is unknown.
    #[error("{context}: {source}")]
    Backend {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The store has been shut down.
    #[error("the store is closed")]
    Closed,
}

impl Error {
    pub(crate) fn backend(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Backend {
            context: context.into(),
            source: source.into(),
        }
    }
}

/// Displays a key as text when it is UTF-8 (as Kubernetes keys are), escaped otherwise.
pub(crate) struct Key<'a>(pub &'a [u8]);

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(self.0) {
            Ok(s) => write!(f, "{s:?}"),
            Err(_) => write!(f, "\"{}\"", self.0.escape_ascii()),
        }
    }
}
