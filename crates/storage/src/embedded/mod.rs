//! The embedded backend: a durable, crash-safe store in one directory.
//!
//! State lives in a redb file (an ACID, copy-on-write B-tree engine in pure Rust); a
//! write-ahead log makes each batch of writes durable with one sequential append and one
//! fdatasync, and periodic checkpoints commit redb durably and empty the log. The layout is
//! in `format`, reads in `snapshot`, the log in `wal`, batching and compaction in `writer`,
//! durability and publication in `syncer`, watches in `watch`.

mod format;
mod redb_error;
mod snapshot;
mod syncer;
mod wal;
mod watch;
mod writer;

use self::format::{FORMAT_MARKER, KEYS, LOG, META, META_FORMAT};
use self::redb_error::Context;
use self::snapshot::{Counters, Snapshot};
use self::syncer::{Syncer, Written};
use self::wal::Wal;
use self::writer::{Request, WriteOp, Writer};
use crate::error::{Error, Result};
use crate::keys::{check_key, check_value};
use crate::store::{Store, WatchStream};
use crate::types::{DeleteResponse, Event, GetResponse, ListRequest, ListResponse, Revision};
use async_trait::async_trait;
use bytes::Bytes;
use redb::{Database, ReadableDatabase, TableHandle};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::{broadcast, mpsc, oneshot};

/// The redb file, inside the directory given to [`EmbeddedStore::open`].
pub const STORE_FILE: &str = "kyb.redb";
/// The write-ahead log, beside it.
pub const WAL_FILE: &str = wal::WAL_FILE;

/// How many committed batches a watcher may fall behind before it replays from the log.
const EVENT_BATCHES_BUFFERED: usize = 256;
/// Writes waiting for the writer thread before writers are made to wait.
const WRITE_QUEUE: usize = 8192;
/// Batches applied but not yet durable before the writer waits for the syncer.
const SYNC_QUEUE: usize = 16;

/// Tuning for the embedded store.
#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// Memory redb may use to cache pages. Small by default: the API server serves reads
    /// from its own cache, so redb's only serves the writer's lookups.
    pub cache_size: usize,
    /// Verify every page checksum when opening, so a damaged file is refused at start-up
    /// instead of failing later. Costs one read of the whole file.
    pub check_integrity: bool,
    /// A checkpoint (durable redb commit, then an empty log) is taken once this many bytes
    /// of log have accumulated… Writes wait while it runs (about 10 ms per MiB on the
    /// reference machine), so this bounds the pauses.
    pub checkpoint_bytes: u64,
    /// …or this long after the first write since the last checkpoint.
    pub checkpoint_interval: std::time::Duration,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            cache_size: 8 << 20,
            check_integrity: true,
            checkpoint_bytes: 2 << 20,
            checkpoint_interval: std::time::Duration::from_secs(5),
        }
    }
}

/// State shared by the store handle, the writer and syncer threads and the watchers.
pub(crate) struct Shared {
    /// The latest durable revision: what readers see as "now".
    revision: AtomicU64,
    /// Revisions below this one are compacted.
    compacted: AtomicU64,
    /// Set when a write could not be made durable: the store refuses writes from then on.
    failed: AtomicBool,
    /// Where watchers subscribe to each batch's events (published by the syncer, in
    /// revision order, once durable). Taken at shutdown, so that watches end once the
    /// threads have stopped.
    events: Mutex<Option<broadcast::Sender<Arc<Vec<Event>>>>>,
}

/// The embedded, durable store. Cheap to share behind an `Arc`.
pub struct EmbeddedStore {
    db: Arc<Database>,
    shared: Arc<Shared>,
    dir: PathBuf,
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl EmbeddedStore {
    /// Opens the store in `dir` (created if missing), creating it on first use and
    /// recovering the writes of a crash from its log. Files that are damaged or not a
    /// Kybernetes store are refused with [`Error::Corrupt`], never reset.
    pub fn open(dir: &Path, options: &EmbeddedOptions) -> Result<Self> {
        create_private_dir(dir)?;
        let path = dir.join(STORE_FILE);
        let existed = path.exists();
        let db = std::panic::catch_unwind(|| open_database(&path, options)).map_err(|_| {
            Error::Corrupt(format!(
                "{}: the store file is damaged (opening it failed)",
                path.display()
            ))
        })??;
        let (mut wal, logged) = Wal::open(dir)?;
        if !existed {
            sync_dir(dir)?;
        }
        let mut counters = Counters::read(&db.begin_read().context("starting a read")?)?;
        if !logged.is_empty() {
            let recovered = logged.len();
            counters.revision = writer::replay(&db, logged, counters.revision)?;
            tracing::info!(
                writes = recovered,
                revision = counters.revision,
                "recovered writes from the log"
            );
        }
        if wal.len > 0 {
            wal.truncate()?;
        }

        let (events, _) = broadcast::channel(EVENT_BATCHES_BUFFERED);
        let shared = Arc::new(Shared {
            revision: AtomicU64::new(counters.revision),
            compacted: AtomicU64::new(counters.compacted),
            failed: AtomicBool::new(false),
            events: Mutex::new(Some(events.clone())),
        });
        let db = Arc::new(db);
        let (requests, queue) = mpsc::channel(WRITE_QUEUE);
        let (to_syncer, syncer_queue) = std::sync::mpsc::sync_channel(SYNC_QUEUE);
        let syncer = Syncer {
            wal,
            shared: shared.clone(),
            events,
            requests: syncer_queue,
        };
        let writer = Writer {
            db: db.clone(),
            shared: shared.clone(),
            requests: queue,
            syncer: to_syncer,
            revision: counters.revision,
            compacted: counters.compacted,
            compaction: None,
            unchecked: (0, None),
            checkpoint_bytes: options.checkpoint_bytes,
            checkpoint_interval: options.checkpoint_interval,
        };
        let spawn = |name: &str, run: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(run)
                .map_err(|e| Error::backend(format!("starting the {name} thread"), e))
        };
        let threads = vec![
            spawn("kyb-store-sync", Box::new(move || syncer.run()))?,
            spawn("kyb-store-write", Box::new(move || writer.run()))?,
        ];
        writer::start_ticker(requests.downgrade(), options.checkpoint_interval);
        tracing::info!(
            path = %path.display(),
            revision = counters.revision,
            compacted = counters.compacted,
            "embedded store open"
        );
        Ok(Self {
            db,
            shared,
            dir: dir.to_path_buf(),
            requests: Mutex::new(Some(requests)),
            threads: Mutex::new(threads),
        })
    }

    /// The directory holding the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops accepting writes, lets the writer finish what it has queued and take a last
    /// checkpoint, and waits for it. Later writes fail with [`Error::Closed`]; open watches
    /// end. The file is released when the store is dropped.
    pub async fn shutdown(&self) {
        drop(self.requests.lock().ok().and_then(|mut r| r.take()));
        drop(self.shared.events.lock().ok().and_then(|mut e| e.take()));
        let threads = self
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        let _ = tokio::task::spawn_blocking(move || {
            // The writer first: it stops the syncer when it drops its queue.
            for thread in threads.into_iter().rev() {
                let _ = thread.join();
            }
        })
        .await;
    }

    async fn submit<T>(
        &self,
        request: impl FnOnce(oneshot::Sender<Result<T>>) -> Request,
    ) -> Result<T> {
        let (reply, answer) = oneshot::channel();
        let sender = self
            .requests
            .lock()
            .map_err(|_| Error::Closed)?
            .clone()
            .ok_or(Error::Closed)?;
        sender
            .send(request(reply))
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    async fn write(&self, op: WriteOp) -> Result<Written> {
        self.submit(|reply| Request::Write { op, reply }).await
    }

    fn snapshot(&self) -> Result<Snapshot> {
        Snapshot::open(&self.db, self.shared.revision.load(Ordering::Acquire))
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.revision.load(Ordering::Acquire))
    }

    async fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse> {
        check_key(key)?;
        // A point read is a few page lookups: cheaper inline than on the blocking pool.
        let snapshot = self.snapshot()?;
        Ok(GetResponse {
            kv: snapshot.get(key, revision)?,
            revision: snapshot.counters.readable(revision)?,
        })
    }

    async fn list(&self, request: &ListRequest) -> Result<ListResponse> {
        let request = request.clone();
        let (db, durable) = (
            self.db.clone(),
            self.shared.revision.load(Ordering::Acquire),
        );
        tokio::task::spawn_blocking(move || Snapshot::open(&db, durable)?.list(&request))
            .await
            .map_err(|e| Error::backend("reading the store", e))?
    }

    async fn create(&self, key: &[u8], value: Bytes) -> Result<Revision> {
        check_key(key)?;
        check_value(&value)?;
        let key = key.to_vec();
        Ok(self.write(WriteOp::Create { key, value }).await?.revision)
    }

    async fn update(&self, key: &[u8], value: Bytes, expected: Revision) -> Result<Revision> {
        check_key(key)?;
        check_value(&value)?;
        let key = key.to_vec();
        let op = WriteOp::Update {
            key,
            value,
            expected,
        };
        Ok(self.write(op).await?.revision)
    }

    async fn delete(&self, key: &[u8], expected: Option<Revision>) -> Result<DeleteResponse> {
        check_key(key)?;
        let key = key.to_vec();
        let written = self.write(WriteOp::Delete { key, expected }).await?;
        let revision = written.revision;
        let prev = written
            .deleted
            .ok_or_else(|| Error::Corrupt("a deletion without a previous value".into()))?;
        Ok(DeleteResponse { revision, prev })
    }

    async fn watch(&self, prefix: &[u8], start: Revision) -> Result<WatchStream> {
        // Subscribe before reading the revision, so nothing committed in between is missed.
        let batches = self
            .shared
            .events
            .lock()
            .map_err(|_| Error::Closed)?
            .as_ref()
            .ok_or(Error::Closed)?
            .subscribe();
        let next = match start {
            0 => self.shared.revision.load(Ordering::Acquire) + 1,
            start => {
                let compacted = self.shared.compacted.load(Ordering::Acquire);
                if start < compacted {
                    return Err(Error::Compacted {
                        requested: start,
                        compacted,
                    });
                }
                start
            }
        };
        let (out, stream) = WatchStream::channel();
        let watcher = watch::Watcher {
            db: self.db.clone(),
            shared: self.shared.clone(),
            prefix: prefix.to_vec(),
            next,
            batches,
            out,
        };
        tokio::spawn(watcher.run());
        Ok(stream)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.submit(|reply| Request::Compact { revision, reply })
            .await
    }
}

fn open_database(path: &Path, options: &EmbeddedOptions) -> Result<Database> {
    let mut builder = redb::Builder::new();
    builder
        .set_cache_size(options.cache_size)
        .set_check_integrity_on_open(options.check_integrity);
    let db = builder.create(path).map_err(|error| match error {
        redb::DatabaseError::DatabaseAlreadyOpen => Error::Corrupt(format!(
            "{}: the store is in use by another process",
            path.display()
        )),
        other => Error::Corrupt(format!(
            "{}: not a usable store file ({other}); move it away to start a new store",
            path.display()
        )),
    })?;
    initialize(&db, path)?;
    Ok(db)
}

/// Creates the tables of a new store, or checks that an existing file is ours.
fn initialize(db: &Database, path: &Path) -> Result<()> {
    let foreign = || {
        Error::Corrupt(format!(
            "{}: this file is not a Kybernetes store; move it away to start a new store",
            path.display()
        ))
    };
    let txn = db.begin_read().context("starting a read")?;
    let tables: Vec<String> = txn
        .list_tables()
        .context("listing tables")?
        .map(|t| t.name().to_string())
        .collect();
    if !tables.is_empty() {
        if !tables.iter().any(|t| t == META.name()) {
            return Err(foreign());
        }
        let meta = txn.open_table(META).context("opening the meta table")?;
        let marker = meta.get(META_FORMAT).context("reading the format marker")?;
        return match marker {
            Some(marker) if marker.value() == FORMAT_MARKER => Ok(()),
            _ => Err(foreign()),
        };
    }
    drop(txn);
    let txn = db.begin_write().context("creating the store")?;
    {
        txn.open_table(LOG).context("creating the log table")?;
        txn.open_table(KEYS).context("creating the keys table")?;
        let mut meta = txn.open_table(META).context("creating the meta table")?;
        meta.insert(META_FORMAT, FORMAT_MARKER)
            .context("writing the format marker")?;
    }
    txn.commit().context("creating the store")
}

fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::backend(format!("creating {}", dir.display()), e))
}

/// Makes newly created files' directory entries durable.
fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::backend(format!("syncing {}", dir.display()), e))
}
