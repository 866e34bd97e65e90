//! The syncer thread: makes batches durable in the write-ahead log, then publishes them.
//!
//! It takes every batch the writer has queued, appends their records with one write,
//! fdatasyncs once, and only then moves the store's visible revision forward, publishes the
//! events to watchers and answers the writers, in batch order. While it syncs, the writer
//! already applies the next batches, so a commit costs one sequential append and one
//! fdatasync shared by everything that arrived meanwhile.

use super::Shared;
use super::wal::Wal;
use crate::error::{Error, Result};
use crate::types::{Event, KeyValue, Revision};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use tokio::sync::{broadcast, oneshot};

pub(super) type Reply = (oneshot::Sender<Result<Written>>, Result<Written>);

/// What a writer learns of its write once it is durable.
pub(super) struct Written {
    pub revision: Revision,
    /// For a deletion: what was deleted.
    pub deleted: Option<KeyValue>,
}

pub(super) enum SyncRequest {
    /// A batch the writer applied: durable once `record` is synced.
    Batch {
        record: Vec<u8>,
        /// The batch's last revision, if any of its writes succeeded.
        revision: Option<Revision>,
        events: Vec<Event>,
        replies: Vec<Reply>,
    },
    /// Answer once everything queued before is durable.
    Flush(mpsc::Sender<Result<()>>),
    /// Empty the log (everything in it is in a durable checkpoint).
    Truncate(mpsc::Sender<Result<()>>),
}

pub(super) struct Syncer {
    pub wal: Wal,
    pub shared: Arc<Shared>,
    pub events: broadcast::Sender<Arc<Vec<Event>>>,
    pub requests: mpsc::Receiver<SyncRequest>,
}

impl Syncer {
    pub fn run(mut self) {
        while let Ok(first) = self.requests.recv() {
            // Everything queued now, up to and including the first control request.
            let mut batches = Vec::new();
            let mut control = None;
            let mut next = Some(first);
            while let Some(request) = next {
                match request {
                    SyncRequest::Batch { .. } => batches.push(request),
                    other => {
                        control = Some(other);
                        break;
                    }
                }
                next = self.requests.try_recv().ok();
            }
            self.complete(batches);
            match control {
                Some(SyncRequest::Flush(reply)) => {
                    let _ = reply.send(self.check());
                }
                Some(SyncRequest::Truncate(reply)) => {
                    let _ = reply.send(self.check().and_then(|()| self.wal.truncate()));
                }
                _ => {}
            }
        }
    }

    fn check(&self) -> Result<()> {
        if self.shared.failed.load(Ordering::Acquire) {
            return Err(Error::backend(
                "writing",
                "the store failed to write its log earlier",
            ));
        }
        Ok(())
    }

    /// Syncs the batches' records and answers their writers.
    fn complete(&mut self, batches: Vec<SyncRequest>) {
        if batches.is_empty() {
            return;
        }
        let records: Vec<&[u8]> = batches
            .iter()
            .filter_map(|batch| match batch {
                SyncRequest::Batch { record, .. } if !record.is_empty() => Some(record.as_slice()),
                _ => None,
            })
            .collect();
        let synced = self.check().and_then(|()| {
            if records.is_empty() {
                return Ok(()); // only refused writes: earlier batches are already synced
            }
            self.wal.append(&records)?;
            self.wal.sync()
        });
        drop(records);
        if let Err(error) = &synced {
            tracing::error!(%error, "the store cannot write its log; refusing further writes");
            self.shared.failed.store(true, Ordering::Release);
        }
        for batch in batches {
            let SyncRequest::Batch {
                revision,
                events,
                replies,
                ..
            } = batch
            else {
                continue;
            };
            match &synced {
                Ok(()) => {
                    if let Some(revision) = revision {
                        self.shared.revision.store(revision, Ordering::Release);
                    }
                    if !events.is_empty() {
                        // No watcher listening is fine.
                        let _ = self.events.send(Arc::new(events));
                    }
                    for (reply, outcome) in replies {
                        let _ = reply.send(outcome);
                    }
                }
                Err(error) => {
                    let message = error.to_string();
                    for (reply, _) in replies {
                        let _ = reply.send(Err(Error::backend("writing the log", message.clone())));
                    }
                }
            }
        }
    }
}
