//! The bounded hand-over between request threads and the audit log's writer thread.
//!
//! Producers append lines; the writer takes everything waiting at once. When the queue
//! is full (by line count or by bytes) a producer waits up to its bound for the writer to
//! make room, then drops the line and counts it. A flush is a numbered sync request: the
//! writer serves it with the next batch it takes, which holds every line accepted before
//! the request, so once that request is done those lines are written and synced.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub(crate) struct Queue {
    state: Mutex<State>,
    /// The writer waits here for lines, flush requests and shutdown.
    work: Condvar,
    /// Producers wait here for room, flushers for their lines to be synced.
    progress: Condvar,
    max_lines: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct State {
    lines: Vec<Vec<u8>>,
    bytes: usize,
    /// Lines accepted so far.
    accepted: u64,
    /// Lines the writer has handled (written or failed).
    handled: u64,
    /// The number of the latest sync request (flushes count them up).
    sync_requested: u64,
    /// The latest sync request the writer has taken a batch for.
    sync_taken: u64,
    /// The latest sync request completed.
    sync_done: u64,
    shutdown: bool,
    writer_alive: bool,
    dropped: u64,
    write_errors: u64,
}

/// What the writer took: lines to write, the sync request to serve after them (if any),
/// whether this is the last batch before shutdown (which is synced too).
pub(crate) struct Batch {
    pub(crate) lines: Vec<Vec<u8>>,
    pub(crate) sync: Option<u64>,
    pub(crate) last: bool,
}

/// Counters of a log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditLogStats {
    /// Events accepted into the buffer.
    pub accepted: u64,
    /// Events the writer has handled (written, or lost to a write error).
    pub written: u64,
    /// Events dropped because the buffer stayed full for the whole blocking bound, or
    /// the log was closed.
    pub dropped: u64,
    /// Events lost to write errors, plus failed syncs.
    pub write_errors: u64,
}

/// Why a flush did not complete.
pub(crate) enum FlushFailure {
    /// The writer thread has stopped.
    WriterGone,
    /// Writes failed while the flush waited.
    WriteErrors(u64),
}

impl Queue {
    pub(crate) fn new(max_lines: usize, max_bytes: usize) -> Queue {
        Queue {
            state: Mutex::new(State {
                writer_alive: true,
                ..State::default()
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            max_lines: max_lines.max(1),
            max_bytes: max_bytes.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_full(&self, state: &State, len: usize) -> bool {
        // An empty queue always takes a line, however large.
        !state.lines.is_empty()
            && (state.lines.len() >= self.max_lines || state.bytes + len > self.max_bytes)
    }

    /// Queues a line, waiting up to `block` for room. Returns the drop count after a
    /// drop, `None` when the line was accepted.
    pub(crate) fn push(&self, line: Vec<u8>, block: Duration) -> Option<u64> {
        let mut state = self.lock();
        let mut deadline = None;
        loop {
            if state.shutdown || !state.writer_alive {
                state.dropped += 1;
                return Some(state.dropped);
            }
            if !self.is_full(&state, line.len()) {
                break;
            }
            let now = Instant::now();
            let until = *deadline.get_or_insert(now + block);
            if now >= until {
                state.dropped += 1;
                return Some(state.dropped);
            }
            state = self
                .progress
                .wait_timeout(state, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.bytes += line.len();
        state.lines.push(line);
        state.accepted += 1;
        drop(state);
        self.work.notify_one();
        None
    }

    /// Waits for work and takes it (the writer's side).
    pub(crate) fn take(&self) -> Batch {
        let mut state = self.lock();
        while state.lines.is_empty() && state.sync_requested == state.sync_taken && !state.shutdown
        {
            state = self
                .work
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let lines = std::mem::take(&mut state.lines);
        state.bytes = 0;
        let sync = (state.sync_requested > state.sync_taken || state.shutdown)
            .then_some(state.sync_requested);
        state.sync_taken = state.sync_requested;
        let batch = Batch {
            lines,
            sync,
            last: state.shutdown,
        };
        drop(state);
        // Room was made.
        self.progress.notify_all();
        batch
    }

    /// Records what the writer did with a batch of `count` lines: how many writes failed,
    /// and the sync request it served.
    pub(crate) fn finish(&self, count: usize, errors: u64, synced: Option<u64>) {
        let mut state = self.lock();
        state.handled += count as u64;
        state.write_errors += errors;
        if let Some(request) = synced {
            state.sync_done = state.sync_done.max(request);
        }
        drop(state);
        self.progress.notify_all();
    }

    /// Marks the writer as stopped and wakes everyone waiting on it.
    pub(crate) fn writer_stopped(&self) {
        self.lock().writer_alive = false;
        self.progress.notify_all();
    }

    /// Waits until every line accepted so far is written and synced.
    pub(crate) fn flush(&self) -> Result<(), FlushFailure> {
        let mut state = self.lock();
        let errors_before = state.write_errors;
        state.sync_requested += 1;
        let request = state.sync_requested;
        self.work.notify_one();
        while state.sync_done < request {
            if !state.writer_alive {
                return Err(FlushFailure::WriterGone);
            }
            state = self
                .progress
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        match state.write_errors - errors_before {
            0 => Ok(()),
            errors => Err(FlushFailure::WriteErrors(errors)),
        }
    }

    /// Asks the writer to finish what is queued and stop; later lines are dropped.
    pub(crate) fn shut_down(&self) {
        self.lock().shutdown = true;
        self.work.notify_all();
        self.progress.notify_all();
    }

    pub(crate) fn stats(&self) -> AuditLogStats {
        let state = self.lock();
        AuditLogStats {
            accepted: state.accepted,
            written: state.handled,
            dropped: state.dropped,
            write_errors: state.write_errors,
        }
    }
}
