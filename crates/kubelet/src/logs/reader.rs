//! Reading a container's log as kubelet's `ReadLogs` does: the CRI-format lines of the
//! instance's log file (and of its rotated, uncompressed predecessors, oldest first),
//! filtered by `sinceTime`, cut to the last `tailLines` and to `limitBytes`, optionally
//! timestamped, written to a channel as they are read; with `follow`, lines as they are
//! written — across a rotation (the path renamed and reopened) — until the container is no
//! longer running and the file is read to its end, or the reader goes away.

use super::LogOptions;
use super::cri_format;
use bytes::Bytes;
use jiff::Timestamp;
use std::future::Future;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncSeekExt as _, BufReader};
use tokio::sync::mpsc;

/// How often a follower looks for new lines at the end of the file.
const POLL: Duration = Duration::from_millis(100);
/// How often an idle follower asks whether the container still runs.
const STATE_CHECK: Duration = Duration::from_secs(1);

/// The files of a log, oldest first: rotated ones (`<current>.<timestamp>`, compressed
/// ones left out) then `current`.
pub fn log_files(current: &Path) -> Vec<PathBuf> {
    let mut files = super::rotation::rotated_files(current)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".gz"))
        .collect::<Vec<_>>();
    files.push(current.to_path_buf());
    files
}

/// Where lines go: the options that shape them and the channel they are sent on.
struct Output {
    tx: mpsc::Sender<Bytes>,
    timestamps: bool,
    since: Option<Timestamp>,
    remaining: Option<u64>,
}

impl Output {
    /// Writes one raw line (its newline included or not); false when reading should stop
    /// (the limit reached, or nobody reading any more).
    async fn line(&mut self, raw: &[u8]) -> bool {
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let line = match cri_format::parse(raw) {
            Ok(line) => line,
            Err(error) => {
                tracing::debug!(%error, "skipping a malformed log line");
                return true;
            }
        };
        if self.since.is_some_and(|since| line.timestamp < since) {
            return true;
        }
        let mut text = Vec::with_capacity(line.content.len() + 40);
        if self.timestamps {
            text.extend_from_slice(cri_format::format_timestamp(line.timestamp).as_bytes());
            text.push(b' ');
        }
        text.extend_from_slice(line.content);
        if !line.partial {
            text.push(b'\n');
        }
        let mut done = false;
        if let Some(remaining) = &mut self.remaining {
            if text.len() as u64 >= *remaining {
                text.truncate(*remaining as usize);
                done = true;
            }
            *remaining -= text.len() as u64;
        }
        if !text.is_empty() && self.tx.send(Bytes::from(text)).await.is_err() {
            return false;
        }
        !done
    }
}

/// The offset of the start of the last `n` complete lines of `file`, and how many complete
/// lines it found (fewer than `n` when the file is shorter; the offset is then 0).
async fn tail_start(path: &Path, n: u64) -> std::io::Result<(u64, u64)> {
    const BLOCK: u64 = 64 << 10;
    let mut file = tokio::fs::File::open(path).await?;
    let size = file.metadata().await?.len();
    let mut end = size;
    let mut newlines = 0u64;
    let mut buf = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let len = (end - start) as usize;
        file.seek(std::io::SeekFrom::Start(start)).await?;
        file.read_exact(&mut buf[..len]).await?;
        for i in (0..len).rev() {
            if buf[i] == b'\n' {
                newlines += 1;
                if newlines == n + 1 {
                    return Ok((start + i as u64 + 1, n));
                }
            }
        }
        end = start;
    }
    Ok((0, newlines))
}

/// Where reading starts: the index of the file and the offset in it.
async fn start(files: &[PathBuf], tail: Option<u64>) -> (usize, u64) {
    let Some(mut wanted) = tail else {
        return (0, 0);
    };
    let last = files.len() - 1;
    if wanted == 0 {
        let size = tokio::fs::metadata(&files[last])
            .await
            .map_or(0, |m| m.len());
        return (last, size);
    }
    for (index, path) in files.iter().enumerate().rev() {
        match tail_start(path, wanted).await {
            Ok((offset, found)) if found >= wanted => return (index, offset),
            Ok((_, found)) => wanted -= found,
            Err(_) => {}
        }
    }
    (0, 0)
}

/// Reads the log whose current file is `current` as `options` say, sending the output on
/// `tx`; `running` says whether the container still runs (asked while following).
pub async fn read<F, Fut>(
    current: &Path,
    options: &LogOptions,
    tx: mpsc::Sender<Bytes>,
    mut running: F,
) -> std::io::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let files = log_files(current);
    let (first, offset) = start(&files, options.tail_lines).await;
    let mut out = Output {
        tx,
        timestamps: options.timestamps,
        since: options.since,
        remaining: options.limit_bytes,
    };
    let last = files.len() - 1;
    for (index, path) in files.iter().enumerate().skip(first) {
        let offset = if index == first { offset } else { 0 };
        let file = match tokio::fs::File::open(path).await {
            Ok(file) => file,
            // Rotated away or removed meanwhile; the current file may not exist yet.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                if index == last && options.follow {
                    return follow_missing(current, &mut out, &mut running).await;
                }
                continue;
            }
            Err(error) => return Err(error),
        };
        let follow = index == last && options.follow;
        if !read_file(file, offset, current, follow, &mut out, &mut running).await? {
            return Ok(());
        }
    }
    Ok(())
}

/// Waits for a missing current file to appear (the container has not written yet), then
/// follows it; ends when the container no longer runs.
async fn follow_missing<F, Fut>(
    current: &Path,
    out: &mut Output,
    running: &mut F,
) -> std::io::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    loop {
        if let Ok(file) = tokio::fs::File::open(current).await {
            read_file(file, 0, current, true, out, running).await?;
            return Ok(());
        }
        if !running().await {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(STATE_CHECK) => {}
            () = out.tx.closed() => return Ok(()),
        }
    }
}

/// Reads `file` from `offset` to its end, and with `follow` on: new lines as they come, a
/// rotation of `path` (the new file read from its start), until the container stops.
/// False when the output wants no more.
async fn read_file<F, Fut>(
    file: tokio::fs::File,
    offset: u64,
    path: &Path,
    follow: bool,
    out: &mut Output,
    running: &mut F,
) -> std::io::Result<bool>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let mut inode = file.metadata().await?.ino();
    let mut reader = BufReader::with_capacity(64 << 10, file);
    reader.seek(std::io::SeekFrom::Start(offset)).await?;
    let mut line = Vec::new();
    let mut idle = tokio::time::Instant::now();
    // Set once the container was seen stopped: the rest of the file is read, then done.
    let mut stopping = false;
    loop {
        let read = reader.read_until(b'\n', &mut line).await?;
        if read > 0 {
            if line.ends_with(b"\n") {
                if !out.line(&line).await {
                    return Ok(false);
                }
                line.clear();
            }
            idle = tokio::time::Instant::now();
            continue;
        }
        // At the end of the file.
        if !follow || stopping {
            if !line.is_empty() && !out.line(&line).await {
                return Ok(false);
            }
            return Ok(true);
        }
        let renamed = std::fs::metadata(path).map_or(true, |m| m.ino() != inode);
        if renamed && let Ok(next) = tokio::fs::File::open(path).await {
            // Rotated: what the runtime wrote to the old file before it reopened is read
            // to its end, then the new file from its start.
            while reader.read_until(b'\n', &mut line).await? > 0 {
                if line.ends_with(b"\n") {
                    if !out.line(&line).await {
                        return Ok(false);
                    }
                    line.clear();
                }
            }
            if !line.is_empty() && !out.line(&line).await {
                return Ok(false);
            }
            line.clear();
            inode = next.metadata().await?.ino();
            reader = BufReader::with_capacity(64 << 10, next);
            continue;
        }
        if idle.elapsed() >= STATE_CHECK {
            idle = tokio::time::Instant::now();
            if !running().await {
                // One more pass: lines written just before the container exited.
                stopping = true;
                continue;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = out.tx.closed() => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn line(second: u32, stream: &str, tag: &str, text: &str) -> String {
        format!("2026-01-01T00:00:{second:02}.500000000Z {stream} {tag} {text}\n")
    }

    fn write(path: &Path, lines: &[String]) {
        std::fs::write(path, lines.concat()).unwrap();
    }

    async fn collect(path: &Path, options: LogOptions) -> String {
        let (tx, mut rx) = mpsc::channel(16);
        let reading = read(path, &options, tx, || async { false });
        let mut text = Vec::new();
        let collecting = async {
            while let Some(chunk) = rx.recv().await {
                text.extend_from_slice(&chunk);
            }
        };
        let (result, ()) = tokio::join!(reading, collecting);
        result.unwrap();
        String::from_utf8(text).unwrap()
    }

    #[tokio::test]
    async fn reads_tail_since_timestamps_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        write(
            &path,
            &[
                line(1, "stdout", "F", "one"),
                line(2, "stderr", "F", "two"),
                line(3, "stdout", "P", "thr"),
                line(3, "stdout", "F", "ee"),
                "garbage\n".to_string(),
                line(4, "stdout", "F", "four"),
            ],
        );
        let all = collect(&path, LogOptions::default()).await;
        assert_eq!(all, "one\ntwo\nthree\nfour\n");
        let tail = LogOptions {
            tail_lines: Some(2),
            ..Default::default()
        };
        // The last two lines of the file: the malformed one and `four`.
        assert_eq!(collect(&path, tail).await, "four\n");
        let tail = LogOptions {
            tail_lines: Some(0),
            ..Default::default()
        };
        assert_eq!(collect(&path, tail).await, "");
        let since = LogOptions {
            since: Some("2026-01-01T00:00:02.6Z".parse().unwrap()),
            timestamps: true,
            ..Default::default()
        };
        assert_eq!(
            collect(&path, since).await,
            "2026-01-01T00:00:03.5Z thr2026-01-01T00:00:03.5Z ee\n2026-01-01T00:00:04.5Z four\n"
        );
        let limit = LogOptions {
            limit_bytes: Some(6),
            ..Default::default()
        };
        assert_eq!(collect(&path, limit).await, "one\ntw");
    }

    #[tokio::test]
    async fn tail_reads_across_rotated_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        write(
            &dir.path().join("0.log.20260101-000001"),
            &[line(1, "stdout", "F", "a"), line(2, "stdout", "F", "b")],
        );
        write(
            &dir.path().join("0.log.20260101-000003.gz"),
            &["compressed".to_string()],
        );
        write(
            &dir.path().join("0.log.20260101-000002"),
            &[line(3, "stdout", "F", "c")],
        );
        write(&path, &[line(4, "stdout", "F", "d")]);
        let tail = LogOptions {
            tail_lines: Some(3),
            ..Default::default()
        };
        assert_eq!(collect(&path, tail).await, "b\nc\nd\n");
        assert_eq!(collect(&path, LogOptions::default()).await, "a\nb\nc\nd\n");
    }

    #[tokio::test]
    async fn follows_new_lines_and_rotation_until_the_container_stops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        write(&path, &[line(1, "stdout", "F", "first")]);
        let running = Arc::new(AtomicBool::new(true));
        let (tx, mut rx) = mpsc::channel(16);
        let options = LogOptions {
            follow: true,
            ..Default::default()
        };
        let reader = {
            let path = path.clone();
            let running = running.clone();
            tokio::spawn(async move {
                read(&path, &options, tx, move || {
                    let running = running.clone();
                    async move { running.load(Ordering::SeqCst) }
                })
                .await
            })
        };
        let deadline = Duration::from_secs(10);
        async fn next(rx: &mut mpsc::Receiver<Bytes>) -> Bytes {
            let within = Duration::from_secs(10);
            tokio::time::timeout(within, rx.recv())
                .await
                .unwrap()
                .unwrap()
        }
        assert_eq!(next(&mut rx).await, "first\n");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(line(2, "stdout", "F", "second").as_bytes())
            .unwrap();
        assert_eq!(next(&mut rx).await, "second\n");
        // Rotation: renamed, a line more in the old file, then a new file.
        std::fs::rename(&path, dir.path().join("0.log.20260101-000002")).unwrap();
        file.write_all(line(3, "stdout", "F", "third").as_bytes())
            .unwrap();
        write(&path, &[line(4, "stdout", "F", "fourth")]);
        assert_eq!(next(&mut rx).await, "third\n");
        assert_eq!(next(&mut rx).await, "fourth\n");
        running.store(false, Ordering::SeqCst);
        let ended = tokio::time::timeout(deadline, reader).await.unwrap();
        ended.unwrap().unwrap();
        assert!(rx.recv().await.is_none());
    }
}
