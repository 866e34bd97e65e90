//! Watches on the embedded store.
//!
//! A watch replays the log from its start revision, then follows the batches of events the
//! writer publishes after each commit. If it falls behind the broadcast (a slow consumer) or
//! sees a gap, it goes back to replaying the log, so a watch never skips or repeats a
//! revision; if the history it needs was compacted meanwhile, it ends with `Compacted`.

use super::Shared;
use super::snapshot::Snapshot;
use crate::error::Result;
use crate::types::{Event, Revision};
use redb::Database;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{broadcast, mpsc};

/// Log entries read per replay step.
const REPLAY_CHUNK: usize = 1024;

pub(super) struct Watcher {
    pub db: Arc<Database>,
    pub shared: Arc<Shared>,
    pub prefix: Vec<u8>,
    /// The next revision to deliver.
    pub next: Revision,
    pub batches: broadcast::Receiver<Arc<Vec<Event>>>,
    pub out: mpsc::Sender<Result<Event>>,
}

impl Watcher {
    pub async fn run(mut self) {
        loop {
            if !self.replay().await {
                return;
            }
            if !self.follow().await {
                return;
            }
        }
    }

    /// Delivers the committed revisions from `next` on out of the log. Returns false when
    /// the watch is over.
    async fn replay(&mut self) -> bool {
        loop {
            let committed = self.shared.revision.load(Ordering::Acquire);
            if self.next > committed {
                return true;
            }
            let db = self.db.clone();
            let prefix = self.prefix.clone();
            let from = self.next;
            let read = tokio::task::spawn_blocking(move || {
                Snapshot::open(&db, committed)?.events(&prefix, from, committed, REPLAY_CHUNK)
            })
            .await;
            let (events, last) = match read {
                Ok(Ok(read)) => read,
                Ok(Err(error)) => {
                    let _ = self.out.send(Err(error)).await;
                    return false;
                }
                Err(_) => return false, // the runtime is shutting down
            };
            for event in events {
                if self.out.send(Ok(event)).await.is_err() {
                    return false;
                }
            }
            self.next = last + 1;
        }
    }

    /// Delivers the batches the writer publishes, until the watch must replay again
    /// (returns true) or is over (false).
    async fn follow(&mut self) -> bool {
        loop {
            let batch = tokio::select! {
                batch = self.batches.recv() => batch,
                () = self.out.closed() => return false,
            };
            let batch = match batch {
                Ok(batch) => batch,
                Err(broadcast::error::RecvError::Lagged(_)) => return true,
                Err(broadcast::error::RecvError::Closed) => return false,
            };
            let (Some(first), Some(last)) = (batch.first(), batch.last()) else {
                continue;
            };
            if last.revision() < self.next {
                continue; // already replayed from the log
            }
            if first.revision() > self.next {
                return true; // a gap: the log has what is missing
            }
            for event in batch.iter() {
                if event.revision() >= self.next
                    && event.kv.key.starts_with(&self.prefix)
                    && self.out.send(Ok(event.clone())).await.is_err()
                {
                    return false;
                }
            }
            self.next = last.revision() + 1;
        }
    }
}
