//! The writer thread: applies writes in order, batch by batch, and runs compaction and
//! checkpoints.
//!
//! Writers queue requests on a channel. The thread takes every request waiting (up to a
//! batch limit), applies them in order inside one redb write transaction, each successful
//! write taking the next revision, and commits it without an fsync. The batch's log record
//! then goes to the syncer thread, which makes it durable and answers the writers; the
//! writer goes on with the next batch meanwhile. Readers see only what the syncer has made
//! durable (they read at its revision), so nothing is visible before it is safe.
//!
//! Every few seconds (or megabytes of log) a checkpoint commits redb durably and empties the
//! log. Compaction runs here too, a bounded chunk of the log per transaction between write
//! batches, so it never holds writers up for long.

use super::Shared;
use super::format::{EntryHeader, KEYS, LOG, LogEntry, META, META_COMPACTED, encode_revision};
use super::redb_error::Context;
use super::snapshot::{event, put_at};
use super::syncer::{Reply, SyncRequest, Written};
use super::wal::RecordBuilder;
use crate::error::{Error, Result};
use crate::types::{Event, EventKind, KeyValue, Revision};
use bytes::Bytes;
use redb::{Database, Durability, ReadableTable, Table};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// At most this many writes share one transaction…
const MAX_BATCH_WRITES: usize = 1024;
/// …and at most about this many bytes of values.
const MAX_BATCH_BYTES: usize = 16 << 20;
/// Log entries examined by one compaction transaction.
const COMPACTION_CHUNK: u64 = 4096;

pub(super) enum Request {
    Write {
        op: WriteOp,
        reply: oneshot::Sender<Result<Written>>,
    },
    Compact {
        revision: Revision,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Sent periodically, so that an idle writer still takes its checkpoint.
    Tick,
}

/// Sends [`Request::Tick`] every checkpoint interval until the store is closed.
pub(super) fn start_ticker(requests: mpsc::WeakSender<Request>, interval: Duration) {
    let ticker = std::thread::Builder::new()
        .name("kyb-store-ticker".into())
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                match requests.upgrade() {
                    Some(requests) if requests.blocking_send(Request::Tick).is_ok() => {}
                    _ => return,
                }
            }
        });
    if let Err(error) = ticker {
        tracing::warn!(%error, "no checkpoint ticker: checkpoints only follow writes");
    }
}

pub(super) enum WriteOp {
    Create {
        key: Vec<u8>,
        value: Bytes,
    },
    Update {
        key: Vec<u8>,
        value: Bytes,
        expected: Revision,
    },
    Delete {
        key: Vec<u8>,
        expected: Option<Revision>,
    },
}

impl WriteOp {
    fn key(&self) -> &[u8] {
        match self {
            Self::Create { key, .. } | Self::Update { key, .. } | Self::Delete { key, .. } => key,
        }
    }

    fn size(&self) -> usize {
        match self {
            Self::Create { key, value } | Self::Update { key, value, .. } => {
                key.len() + value.len()
            }
            Self::Delete { key, .. } => key.len(),
        }
    }
}

pub(super) struct Writer {
    pub db: Arc<Database>,
    pub shared: Arc<Shared>,
    pub requests: mpsc::Receiver<Request>,
    pub syncer: std::sync::mpsc::SyncSender<SyncRequest>,
    /// The latest revision handed out (durable or not yet).
    pub revision: Revision,
    pub compacted: Revision,
    /// The compaction under way: its target and who waits for it.
    pub compaction: Option<(Revision, Vec<oneshot::Sender<Result<()>>>)>,
    /// Log bytes written since the last checkpoint, and when the first of them was.
    pub unchecked: (u64, Option<Instant>),
    pub checkpoint_bytes: u64,
    pub checkpoint_interval: Duration,
}

impl Writer {
    /// Serves requests until every sender is gone, then takes a last checkpoint.
    pub fn run(mut self) {
        let mut writes = Vec::new();
        loop {
            let first = if self.compaction.is_some() {
                match self.requests.try_recv() {
                    Ok(request) => Some(request),
                    Err(mpsc::error::TryRecvError::Empty) => None,
                    Err(mpsc::error::TryRecvError::Disconnected) => break,
                }
            } else {
                match self.requests.blocking_recv() {
                    Some(request) => Some(request),
                    None => break,
                }
            };
            let mut bytes = 0;
            let mut next = first;
            while let Some(request) = next {
                match request {
                    Request::Write { op, reply } => {
                        bytes += op.size();
                        writes.push((op, reply));
                    }
                    Request::Compact { revision, reply } => self.queue_compaction(revision, reply),
                    Request::Tick => {}
                }
                next = if writes.len() < MAX_BATCH_WRITES && bytes < MAX_BATCH_BYTES {
                    self.requests.try_recv().ok()
                } else {
                    None
                };
            }
            if !writes.is_empty() {
                self.commit(std::mem::take(&mut writes));
            }
            if self.compaction.is_some() {
                self.compact_chunk();
            }
            let (bytes, first) = self.unchecked;
            if bytes >= self.checkpoint_bytes
                || first.is_some_and(|f| f.elapsed() >= self.checkpoint_interval)
            {
                self.checkpoint();
            }
        }
        self.checkpoint();
        tracing::debug!(revision = self.revision, "store writer stopped");
    }

    /// Applies a batch of writes in one transaction and hands it to the syncer.
    fn commit(&mut self, writes: Vec<(WriteOp, oneshot::Sender<Result<Written>>)>) {
        if self.shared.failed.load(Ordering::Acquire) {
            for (_, reply) in writes {
                let _ = reply.send(Err(Error::backend(
                    "writing",
                    "the store failed earlier and refuses writes",
                )));
            }
            return;
        }
        // Each entry is its value, key and a small header: room for all of them at once.
        let bytes: usize = writes.iter().map(|(op, _)| op.size() + 64).sum();
        let mut record = RecordBuilder::with_capacity(bytes);
        let mut outcomes = Vec::with_capacity(writes.len());
        match self.apply_batch(&writes, &mut outcomes, &mut record) {
            Ok(revision) => {
                let changed = revision != self.revision;
                self.revision = revision;
                let mut events = Vec::with_capacity(outcomes.len());
                let mut replies: Vec<Reply> = Vec::with_capacity(outcomes.len());
                for ((_, reply), outcome) in writes.into_iter().zip(outcomes) {
                    let written = outcome.map(|event| {
                        let written = Written {
                            revision: event.revision(),
                            deleted: match event.kind {
                                EventKind::Delete => event.prev.clone(),
                                EventKind::Put => None,
                            },
                        };
                        events.push(event);
                        written
                    });
                    replies.push((reply, written));
                }
                let record = record.finish();
                self.unchecked.0 += record.len() as u64;
                if !record.is_empty() {
                    self.unchecked.1.get_or_insert_with(Instant::now);
                }
                let batch = SyncRequest::Batch {
                    record,
                    revision: changed.then_some(revision),
                    events,
                    replies,
                };
                if let Err(std::sync::mpsc::SendError(SyncRequest::Batch { replies, .. })) =
                    self.syncer.send(batch)
                {
                    for (reply, _) in replies {
                        let _ = reply.send(Err(Error::Closed));
                    }
                }
            }
            Err(error) => {
                // The transaction may have been half applied: never build on it.
                tracing::error!(%error, "store write failed; refusing further writes");
                self.shared.failed.store(true, Ordering::Release);
                let message = error.to_string();
                for (_, reply) in writes {
                    let _ = reply.send(Err(Error::backend("committing a write", message.clone())));
                }
            }
        }
    }

    /// Returns the revision after the batch; `outcomes` gets one result per write and
    /// `record` the successful ones.
    fn apply_batch(
        &self,
        writes: &[(WriteOp, oneshot::Sender<Result<Written>>)],
        outcomes: &mut Vec<Result<Event>>,
        record: &mut RecordBuilder,
    ) -> Result<Revision> {
        let mut txn = self.db.begin_write().context("starting a write")?;
        // Durability comes from the write-ahead log.
        txn.set_durability(Durability::None)
            .map_err(|e| Error::backend("starting a write", e.to_string()))?;
        let mut revision = self.revision;
        {
            let mut log = txn.open_table(LOG).context("opening the log table")?;
            let mut keys = txn.open_table(KEYS).context("opening the keys table")?;
            for (op, _) in writes {
                let outcome = apply(&mut log, &mut keys, revision + 1, op, record)?;
                if outcome.is_ok() {
                    revision += 1;
                }
                outcomes.push(outcome);
            }
        }
        if revision == self.revision {
            // Every write was refused: nothing to commit.
            txn.abort().context("ending a write")?;
        } else {
            txn.commit().context("committing")?;
        }
        Ok(revision)
    }

    /// Makes everything applied so far durable in redb and empties the log.
    fn checkpoint(&mut self) {
        if self.unchecked.0 == 0 || self.shared.failed.load(Ordering::Acquire) {
            return;
        }
        let started = Instant::now();
        let outcome = self.ask_syncer(SyncRequest::Flush).and_then(|()| {
            // An empty durable commit persists every non-durable commit before it.
            let txn = self.db.begin_write().context("starting a checkpoint")?;
            txn.commit().context("committing a checkpoint")?;
            self.ask_syncer(SyncRequest::Truncate)
        });
        match outcome {
            Ok(()) => {
                tracing::debug!(
                    revision = self.revision,
                    bytes = self.unchecked.0,
                    took = ?started.elapsed(),
                    "store checkpoint"
                );
                self.unchecked = (0, None);
            }
            Err(error) => {
                tracing::error!(%error, "store checkpoint failed; refusing further writes");
                self.shared.failed.store(true, Ordering::Release);
            }
        }
    }

    fn ask_syncer(
        &self,
        request: impl FnOnce(std::sync::mpsc::Sender<Result<()>>) -> SyncRequest,
    ) -> Result<()> {
        let (reply, answer) = std::sync::mpsc::channel();
        self.syncer
            .send(request(reply))
            .map_err(|_| Error::Closed)?;
        answer.recv().map_err(|_| Error::Closed)?
    }

    fn queue_compaction(&mut self, revision: Revision, reply: oneshot::Sender<Result<()>>) {
        let current = self.shared.revision.load(Ordering::Acquire);
        if revision > current {
            let _ = reply.send(Err(Error::FutureRevision {
                requested: revision,
                current,
            }));
        } else if revision <= self.compacted {
            let _ = reply.send(Ok(()));
        } else {
            let (target, waiting) = self
                .compaction
                .get_or_insert_with(|| (revision, Vec::new()));
            *target = (*target).max(revision);
            waiting.push(reply);
        }
    }

    /// Compacts the next chunk of the log towards the target.
    fn compact_chunk(&mut self) {
        let Some((target, _)) = self.compaction else {
            return;
        };
        let to = target.min(self.compacted + COMPACTION_CHUNK);
        match self.compact_range(self.compacted, to) {
            Ok(()) => {
                self.compacted = to;
                self.shared.compacted.store(to, Ordering::Release);
                if to == target {
                    tracing::debug!(revision = to, "store compacted");
                    if let Some((_, waiting)) = self.compaction.take() {
                        for reply in waiting {
                            let _ = reply.send(Ok(()));
                        }
                    }
                }
            }
            Err(error) => {
                tracing::error!(%error, "store compaction failed");
                if let Some((_, waiting)) = self.compaction.take() {
                    let message = error.to_string();
                    for reply in waiting {
                        let _ = reply.send(Err(Error::backend("compacting", message.clone())));
                    }
                }
            }
        }
    }

    /// Removes what revisions `from..to` made obsolete for reads at `to` or later: the
    /// entries each of them superseded, and deletions themselves (with their key).
    fn compact_range(&self, from: Revision, to: Revision) -> Result<()> {
        let mut txn = self.db.begin_write().context("starting a compaction")?;
        // Losing a compaction in a crash only brings history back: no fsync needed.
        txn.set_durability(Durability::None)
            .map_err(|e| Error::backend("starting a compaction", e.to_string()))?;
        {
            let mut log = txn.open_table(LOG).context("opening the log table")?;
            let mut keys = txn.open_table(KEYS).context("opening the keys table")?;
            let mut obsolete = Vec::new();
            let mut deleted_keys = Vec::new();
            for item in log.range(from..to).context("reading the log")? {
                let (rev, bytes) = item.context("reading the log")?;
                let rev = rev.value();
                let header = EntryHeader::decode(rev, bytes.value())?;
                if header.prev_revision != 0 {
                    obsolete.push(header.prev_revision);
                }
                if header.kind == EventKind::Delete {
                    obsolete.push(rev);
                    deleted_keys.push((header.key.to_vec(), rev));
                }
            }
            for rev in obsolete {
                log.remove(rev).context("compacting the log")?;
            }
            for (key, rev) in deleted_keys {
                let latest = keys
                    .get(key.as_slice())
                    .context("reading a key")?
                    .map(|v| v.value());
                if latest == Some(rev) {
                    keys.remove(key.as_slice()).context("compacting the keys")?;
                }
            }
            let mut meta = txn.open_table(META).context("opening the meta table")?;
            meta.insert(META_COMPACTED, encode_revision(to).as_slice())
                .context("recording the compacted revision")?;
        }
        txn.commit().context("committing a compaction")
    }
}

/// Applies one write at revision `rev`. The outer error aborts the whole batch (the
/// transaction is broken); the inner one refuses just this write, changing nothing.
fn apply(
    log: &mut Table<u64, &'static [u8]>,
    keys: &mut Table<&'static [u8], u64>,
    rev: Revision,
    op: &WriteOp,
    record: &mut RecordBuilder,
) -> Result<Result<Event>> {
    let key = op.key();
    let latest = keys.get(key).context("reading a key")?.map(|v| v.value());
    let current = match latest {
        Some(latest) => put_at(log, latest)?,
        None => None,
    };
    let check = |expected: Option<Revision>| -> Result<KeyValue> {
        match &current {
            None => Err(Error::NotFound { key: key.to_vec() }),
            Some(current) => match expected {
                Some(expected) if expected != current.mod_revision => Err(Error::Conflict {
                    expected,
                    current: Box::new(current.clone()),
                }),
                _ => Ok(current.clone()),
            },
        }
    };
    let entry = match op {
        WriteOp::Create { value, .. } => {
            if let Some(current) = &current {
                return Ok(Err(Error::AlreadyExists {
                    current: Box::new(current.clone()),
                }));
            }
            LogEntry {
                kind: EventKind::Put,
                key: key.to_vec(),
                create_revision: rev,
                version: 1,
                prev_revision: latest.unwrap_or(0),
                value: value.clone(),
            }
        }
        WriteOp::Update {
            value, expected, ..
        } => match check(Some(*expected)) {
            Err(refused) => return Ok(Err(refused)),
            Ok(current) => LogEntry {
                kind: EventKind::Put,
                key: key.to_vec(),
                create_revision: current.create_revision,
                version: current.version + 1,
                prev_revision: current.mod_revision,
                value: value.clone(),
            },
        },
        WriteOp::Delete { expected, .. } => match check(*expected) {
            Err(refused) => return Ok(Err(refused)),
            Ok(current) => LogEntry {
                kind: EventKind::Delete,
                key: key.to_vec(),
                create_revision: 0,
                version: 0,
                prev_revision: current.mod_revision,
                value: Bytes::new(),
            },
        },
    };
    let encoded = entry.encode();
    log.insert(rev, encoded.as_slice())
        .context("appending to the log")?;
    keys.insert(key, rev).context("indexing a key")?;
    record.push(rev, &encoded);
    Ok(Ok(event(entry, rev, current)))
}

/// Re-applies writes found in the write-ahead log after the revision redb holds durably,
/// and commits them durably.
pub(super) fn replay(
    db: &Database,
    writes: super::wal::Logged,
    durable: Revision,
) -> Result<Revision> {
    let mut revision = durable;
    let txn = db.begin_write().context("starting recovery")?;
    {
        let mut log = txn.open_table(LOG).context("opening the log table")?;
        let mut keys = txn.open_table(KEYS).context("opening the keys table")?;
        for (rev, entry) in writes {
            if rev <= durable {
                continue; // already in the checkpoint
            }
            if rev != revision + 1 {
                return Err(Error::Corrupt(format!(
                    "the write-ahead log jumps from revision {revision} to {rev}"
                )));
            }
            let key = EntryHeader::decode(rev, &entry)?.key.to_vec();
            log.insert(rev, entry.as_slice())
                .context("replaying the log")?;
            keys.insert(key.as_slice(), rev)
                .context("replaying the log")?;
            revision = rev;
        }
    }
    txn.commit().context("committing recovery")?;
    Ok(revision)
}
