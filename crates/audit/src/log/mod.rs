//! The audit log backend (`--audit-log-path`, `--audit-log-maxage`,
//! `--audit-log-maxbackup`, `--audit-log-maxsize`, `--audit-log-format=json`): events as
//! JSON lines in a file, or on standard output for the path `-`.
//!
//! Requests never write to disk themselves: [`AuditLog::write`] hands the line to a
//! bounded buffer that one background thread drains, writing whole batches at a time.
//! When the buffer is full the request waits up to a bound for room (Kubernetes' default
//! for the log backend is to block), then the event is dropped and counted. The writer
//! rotates the file by size and prunes backups as kube-apiserver does (module `rotate`).
//! [`AuditLog::flush`] waits until everything written so far is
//! on disk; dropping or [`AuditLog::close`]-ing the log drains the buffer, syncs and stops
//! the thread.

mod backup_name;
mod queue;
mod rotate;

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use queue::AuditLogStats;

use queue::{FlushFailure, Queue};
use rotate::{Retention, RotatingFile};

/// `--audit-log-maxsize` when 0 or unset: lumberjack's default, 100 MiB.
pub const DEFAULT_MAX_SIZE_MIB: u64 = 100;
/// The buffer's default capacity in events (kube-apiserver's default batch buffer size).
pub const DEFAULT_BUFFER_EVENTS: usize = 10_000;
/// The buffer's default capacity in bytes.
pub const DEFAULT_BUFFER_BYTES: usize = 64 * 1024 * 1024;
/// How long a request waits for room in a full buffer by default.
pub const DEFAULT_BLOCK_TIMEOUT: Duration = Duration::from_secs(1);

const MIB: u64 = 1024 * 1024;

/// Where and how the audit log is written.
#[derive(Debug, Clone)]
pub struct AuditLogConfig {
    /// The log file; `-` for standard output.
    pub path: PathBuf,
    /// Rotate before the file would exceed this many bytes.
    pub max_size_bytes: u64,
    /// Keep at most this many rotated files; 0 keeps all.
    pub max_backups: u32,
    /// Delete rotated files older than this many days; 0 keeps them regardless of age.
    pub max_age_days: u32,
    /// Buffer capacity in events.
    pub buffer_events: usize,
    /// Buffer capacity in bytes (an event larger than this still fits an empty buffer).
    pub buffer_bytes: usize,
    /// How long [`AuditLog::write`] waits for room in a full buffer before dropping.
    pub block_timeout: Duration,
}

impl AuditLogConfig {
    /// The configuration kube-apiserver's flags describe: `--audit-log-path`,
    /// `--audit-log-maxage` (days), `--audit-log-maxbackup`, `--audit-log-maxsize` (MiB;
    /// 0 means 100), with the default buffer.
    pub fn from_flags(
        path: impl Into<PathBuf>,
        max_age: u32,
        max_backup: u32,
        max_size: u64,
    ) -> Self {
        let max_size = if max_size == 0 {
            DEFAULT_MAX_SIZE_MIB
        } else {
            max_size
        };
        AuditLogConfig {
            path: path.into(),
            max_size_bytes: max_size.saturating_mul(MIB),
            max_backups: max_backup,
            max_age_days: max_age,
            buffer_events: DEFAULT_BUFFER_EVENTS,
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            block_timeout: DEFAULT_BLOCK_TIMEOUT,
        }
    }

    /// Whether the log goes to standard output.
    pub fn is_stdout(&self) -> bool {
        self.path.as_os_str() == "-"
    }
}

/// Why the audit log could not be opened or flushed.
#[derive(Debug, thiserror::Error)]
pub enum AuditLogError {
    /// The file or its directory could not be created.
    #[error("ensureLogFile: {path}: {source}")]
    Open { path: String, source: io::Error },
    /// The writer thread could not be started.
    #[error("cannot start the audit log writer: {0}")]
    Spawn(io::Error),
    /// The writer thread has stopped; nothing more reaches the log.
    #[error("the audit log writer has stopped")]
    Closed,
    /// Events were lost to write errors while flushing (the errors are logged).
    #[error("{0} audit log writes failed")]
    WriteFailed(u64),
}

/// An audit log being written by a background thread. Share it between request handlers
/// (it is `Sync`); drop it, or call [`AuditLog::close`], at shutdown.
pub struct AuditLog {
    queue: Arc<Queue>,
    block_timeout: Duration,
    writer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

enum Sink {
    Stdout,
    File(RotatingFile),
}

impl Sink {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(line)?;
                out.write_all(b"\n")
            }
            Sink::File(file) => file.write_line(line),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().flush(),
            Sink::File(file) => file.flush(),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().flush(),
            Sink::File(file) => file.sync(),
        }
    }
}

impl AuditLog {
    /// Opens the log: creates the file (0600) and its directory (0700) if missing, and
    /// starts the writer thread.
    pub fn open(config: AuditLogConfig) -> Result<AuditLog, AuditLogError> {
        let sink = if config.is_stdout() {
            Sink::Stdout
        } else {
            rotate::ensure_log_file(&config.path).map_err(|source| AuditLogError::Open {
                path: config.path.display().to_string(),
                source,
            })?;
            Sink::File(RotatingFile::new(
                &config.path,
                Retention {
                    max_size: config.max_size_bytes.max(1),
                    max_backups: config.max_backups,
                    max_age_days: config.max_age_days,
                },
            ))
        };
        let queue = Arc::new(Queue::new(config.buffer_events, config.buffer_bytes));
        let writer = {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name("kyb-audit-log".to_string())
                .spawn(move || run_writer(&queue, sink))
                .map_err(AuditLogError::Spawn)?
        };
        Ok(AuditLog {
            queue,
            block_timeout: config.block_timeout,
            writer: Some(writer),
        })
    }

    /// Queues one event (one JSON object, without a newline; the writer adds it).
    /// Returns at once unless the buffer is full, then waits up to the configured bound
    /// for room; returns `false` when the event was dropped.
    pub fn write(&self, event: Vec<u8>) -> bool {
        match self.queue.push(event, self.block_timeout) {
            None => true,
            Some(dropped) => {
                // Log the first drop and then at each power of two, not every one.
                if dropped.is_power_of_two() {
                    tracing::warn!(dropped, "audit buffer full: audit events dropped");
                }
                false
            }
        }
    }

    /// Queues an event if there is one (as [`crate::AuditContext::event`] returns it).
    pub fn write_event(&self, event: Option<Vec<u8>>) -> bool {
        event.is_some_and(|event| self.write(event))
    }

    /// Waits until every event queued before the call is written and synced to disk.
    pub fn flush(&self) -> Result<(), AuditLogError> {
        self.queue.flush().map_err(|failure| match failure {
            FlushFailure::WriterGone => AuditLogError::Closed,
            FlushFailure::WriteErrors(n) => AuditLogError::WriteFailed(n),
        })
    }

    /// The log's counters.
    pub fn stats(&self) -> AuditLogStats {
        self.queue.stats()
    }

    /// Writes everything queued, syncs, and stops the writer thread.
    pub fn close(mut self) -> Result<(), AuditLogError> {
        let flushed = self.flush();
        self.stop();
        flushed
    }

    fn stop(&mut self) {
        self.queue.shut_down();
        if let Some(writer) = self.writer.take()
            && writer.join().is_err()
        {
            tracing::error!("the audit log writer panicked");
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The writer thread: takes batches until shutdown.
fn run_writer(queue: &Queue, mut sink: Sink) {
    /// Tells waiters the writer is gone, however the thread ends.
    struct Stopped<'a>(&'a Queue);
    impl Drop for Stopped<'_> {
        fn drop(&mut self) {
            self.0.writer_stopped();
        }
    }
    let _stopped = Stopped(queue);

    loop {
        let batch = queue.take();
        let mut errors = 0u64;
        for line in &batch.lines {
            if let Err(e) = sink.write_line(line) {
                errors += 1;
                if errors == 1 {
                    tracing::error!(error = %e, "cannot write the audit log");
                }
            }
        }
        let finished = if batch.sync.is_some() || batch.last {
            sink.sync()
        } else {
            sink.flush()
        };
        if let Err(e) = finished {
            errors += 1;
            tracing::error!(error = %e, "cannot flush the audit log");
        }
        queue.finish(batch.lines.len(), errors, batch.sync);
        if batch.last {
            break;
        }
    }
}

#[cfg(test)]
mod tests;
