//! Opening a store of each backend for a test, and small helpers the cases share.

use bytes::Bytes;
use kyb_storage::{EmbeddedOptions, EmbeddedStore, Error, EtcdStore, Event, Store, WatchStream};
use kyb_testkit::EtcdServer;
use std::sync::Arc;
use std::time::Duration;

/// How long a test waits for an event or a condition before failing.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A store and whatever must live as long as it.
pub struct Harness {
    pub store: Arc<dyn Store>,
    _dir: Option<tempfile::TempDir>,
    etcd: Option<EtcdServer>,
}

impl Harness {
    /// The client URL of the etcd behind the store, for the etcd backend.
    pub fn etcd_endpoint(&self) -> Option<&str> {
        self.etcd.as_ref().map(|etcd| etcd.endpoint.as_str())
    }
}

pub async fn embedded() -> Harness {
    let dir = kyb_testkit::temp_dir("store").expect("temp dir");
    let store = EmbeddedStore::open(dir.path(), &EmbeddedOptions::default()).expect("open store");
    Harness {
        store: Arc::new(store),
        _dir: Some(dir),
        etcd: None,
    }
}

pub async fn etcd() -> Harness {
    let server = tokio::task::spawn_blocking(EtcdServer::start)
        .await
        .expect("join")
        .expect("start etcd (is etcd-server installed? run `make deps`)");
    let store = EtcdStore::connect(std::slice::from_ref(&server.endpoint))
        .await
        .expect("connect to etcd");
    Harness {
        store: Arc::new(store),
        _dir: None,
        etcd: Some(server),
    }
}

pub fn value(text: impl Into<String>) -> Bytes {
    Bytes::from(text.into())
}

/// The next event, failing the test if none comes within the deadline.
pub async fn next_event(watch: &mut WatchStream) -> Event {
    match tokio::time::timeout(DEADLINE, watch.next()).await {
        Ok(Some(Ok(event))) => event,
        Ok(Some(Err(error))) => panic!("watch failed: {error}"),
        Ok(None) => panic!("watch ended"),
        Err(_) => panic!("no event within {DEADLINE:?}"),
    }
}

/// Asserts that nothing more arrives on the watch for a short while.
pub async fn assert_quiet(watch: &mut WatchStream) {
    if let Ok(item) = tokio::time::timeout(Duration::from_millis(300), watch.next()).await {
        panic!(
            "unexpected watch item: {:?}",
            item.map(|r| r.map(|e| e.revision()))
        );
    }
}

pub fn is_compacted<T: std::fmt::Debug>(result: Result<T, Error>) -> bool {
    match result {
        Err(Error::Compacted { .. }) => true,
        other => {
            eprintln!("expected Compacted, got {other:?}");
            false
        }
    }
}

/// The value of `key` (at `revision`), which must exist.
pub async fn value_at(
    store: &dyn Store,
    key: &[u8],
    revision: Option<kyb_storage::Revision>,
) -> Bytes {
    let kv = store.get(key, revision).await.expect("get").kv;
    kv.unwrap_or_else(|| panic!("{} does not exist", String::from_utf8_lossy(key)))
        .value
}
