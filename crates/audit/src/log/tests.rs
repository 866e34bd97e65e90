//! Tests of the audit log writer: concurrency, flushing, rotation, buffering.

#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::Value;
use std::path::Path;

fn config(path: &Path) -> AuditLogConfig {
    AuditLogConfig::from_flags(path, 0, 0, 0)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn flags_map_to_lumberjack_settings() {
    let c = AuditLogConfig::from_flags("/var/log/audit.log", 30, 10, 0);
    assert_eq!(c.max_size_bytes, 100 * 1024 * 1024);
    assert_eq!((c.max_age_days, c.max_backups), (30, 10));
    assert_eq!(
        AuditLogConfig::from_flags("x", 0, 0, 5).max_size_bytes,
        5 * 1024 * 1024
    );
    assert!(AuditLogConfig::from_flags("-", 0, 0, 0).is_stdout());
    assert!(!c.is_stdout());
}

#[test]
fn concurrent_writers_produce_one_json_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs").join("audit.log");
    let log = Arc::new(AuditLog::open(config(&path)).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..500 {
                    let event =
                        format!(r#"{{"thread":{t},"i":{i},"pad":"{}"}}"#, "x".repeat(i % 97));
                    assert!(log.write(event.into_bytes()));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    log.flush().unwrap();
    let written = lines(&path);
    assert_eq!(written.len(), 4000);
    let mut seen = std::collections::HashSet::new();
    for line in &written {
        let event: Value = serde_json::from_str(line).unwrap();
        assert!(seen.insert((
            event["thread"].as_u64().unwrap(),
            event["i"].as_u64().unwrap()
        )));
    }
    // Each writer's events keep their order.
    let order: Vec<u64> = written
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["thread"] == 3)
        .map(|e| e["i"].as_u64().unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]));
    let stats = log.stats();
    assert_eq!(
        (stats.accepted, stats.written, stats.dropped),
        (4000, 4000, 0)
    );
}

#[test]
fn flush_puts_events_on_disk_and_drop_drains_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(config(&path)).unwrap();
    // The file exists as soon as the log is open.
    assert!(path.exists());
    assert!(log.write(br#"{"n":1}"#.to_vec()));
    assert!(log.write_event(Some(br#"{"n":2}"#.to_vec())));
    assert!(!log.write_event(None));
    log.flush().unwrap();
    assert_eq!(lines(&path), vec![r#"{"n":1}"#, r#"{"n":2}"#]);
    // A flush with nothing new still completes.
    log.flush().unwrap();

    for n in 3..=1000 {
        log.write(format!(r#"{{"n":{n}}}"#).into_bytes());
    }
    drop(log);
    let written = lines(&path);
    assert_eq!(written.len(), 1000);
    assert_eq!(written[999], r#"{"n":1000}"#);

    let log = AuditLog::open(config(&path)).unwrap();
    log.write(br#"{"n":1001}"#.to_vec());
    log.close().unwrap();
    assert_eq!(lines(&path).len(), 1001);
}

#[test]
fn rotates_and_keeps_backups() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(AuditLogConfig {
        max_size_bytes: 1000,
        max_backups: 3,
        ..config(&path)
    })
    .unwrap();
    // 100 events of 100 bytes (with the newline): ten files' worth.
    for i in 0..100 {
        let event = format!(r#"{{"i":{i:3},"pad":"{}"}}"#, "x".repeat(81));
        assert_eq!(event.len(), 99);
        log.write(event.into_bytes());
    }
    log.close().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(names[3], "audit.log");
    let backup = backup_name::BackupNames::for_file("audit.log");
    assert!(
        names[..3].iter().all(|n| backup.time_of(n).is_some()),
        "{names:?}"
    );
    // Every file is whole JSON lines, and the newest events are kept.
    let mut kept: Vec<u64> = Vec::new();
    for name in &names {
        for line in lines(&dir.path().join(name)) {
            let event: Value = serde_json::from_str(&line).unwrap();
            kept.push(event["i"].as_u64().unwrap());
        }
    }
    kept.sort_unstable();
    assert_eq!(kept, (60..100).collect::<Vec<u64>>());
}

#[test]
fn a_full_buffer_blocks_briefly_then_drops() {
    let queue = Queue::new(2, usize::MAX);
    let block = Duration::from_millis(20);
    assert_eq!(queue.push(b"1".to_vec(), block), None);
    assert_eq!(queue.push(b"2".to_vec(), block), None);
    let started = std::time::Instant::now();
    assert_eq!(queue.push(b"3".to_vec(), block), Some(1));
    assert!(started.elapsed() >= block);
    assert_eq!(queue.stats().dropped, 1);

    // A writer that makes room in time lets the waiting event in.
    let queue = Arc::new(queue);
    let writer = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let batch = queue.take();
            queue.finish(batch.lines.len(), 0, batch.sync);
            batch.lines
        })
    };
    assert_eq!(queue.push(b"4".to_vec(), Duration::from_secs(10)), None);
    assert_eq!(writer.join().unwrap(), vec![b"1".to_vec(), b"2".to_vec()]);
    assert_eq!(queue.stats().accepted, 3);
}

#[test]
fn the_byte_bound_counts_but_an_empty_buffer_takes_anything() {
    let queue = Queue::new(100, 10);
    assert_eq!(queue.push(vec![b'x'; 50], Duration::ZERO), None);
    assert_eq!(queue.push(vec![b'y'; 1], Duration::ZERO), Some(1));
}

#[test]
fn closed_logs_drop_and_flush_reports_a_gone_writer() {
    let queue = Queue::new(10, 1000);
    queue.writer_stopped();
    assert!(matches!(queue.flush(), Err(FlushFailure::WriterGone)));
    assert_eq!(queue.push(b"x".to_vec(), Duration::from_secs(5)), Some(1));
}

#[test]
fn stdout_log_opens_and_closes() {
    let log = AuditLog::open(AuditLogConfig::from_flags("-", 0, 0, 0)).unwrap();
    log.flush().unwrap();
    log.close().unwrap();
}

#[cfg(unix)]
#[test]
fn unwritable_paths_fail_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let err = AuditLog::open(config(&blocker.join("audit.log"))).unwrap_err();
    assert!(err.to_string().starts_with("ensureLogFile: "), "{err}");
}

#[test]
fn shareable_between_request_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AuditLog>();
    send_sync::<crate::Policy>();
    send_sync::<crate::AuditContext>();
}
