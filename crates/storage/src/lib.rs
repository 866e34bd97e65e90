//! Revisioned key-value storage with etcd's semantics.
//!
//! Everything the API server persists goes through the [`Store`] trait: byte keys under a
//! prefix, opaque byte values, one monotonically increasing store revision, compare-and-swap
//! writes guarded by `mod_revision`, consistent (optionally historical) paginated lists, and
//! gap-free watches that resume from any revision not yet compacted.
//!
//! Two backends implement it and pass the same conformance suite (`tests/store.rs`):
//! - [`EmbeddedStore`]: a durable, crash-safe store in one redb file, with group commit;
//!   the default, zero set-up.
//! - [`EtcdStore`]: a real etcd v3 cluster over gRPC.
//!
//! This crate knows nothing about Kubernetes types: keys and values are bytes.

mod compactor;
pub mod embedded;
mod error;
pub mod etcd;
mod keys;
mod store;
mod types;

pub use compactor::{DEFAULT_COMPACTION_INTERVAL, run_compactor};
pub use embedded::{EmbeddedOptions, EmbeddedStore};
pub use error::{Error, Result};
pub use etcd::EtcdStore;
pub use keys::prefix_end;
pub use store::{Store, WatchStream};
pub use types::{
    DeleteResponse, Event, EventKind, GetResponse, KeyValue, ListRequest, ListResponse,
    MAX_VALUE_SIZE, Revision,
};
