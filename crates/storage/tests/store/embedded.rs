//! What only the embedded store promises: durability of every acknowledged write across a
//! SIGKILL, refusing damaged or foreign files, and history kept across restarts.

use crate::harness::{DEADLINE, is_compacted, value, value_at};
use bytes::Bytes;
use kyb_storage::embedded::STORE_FILE;
use kyb_storage::{EmbeddedOptions, EmbeddedStore, Error, ListRequest, Revision, Store};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open(dir: &Path) -> Result<EmbeddedStore, Error> {
    EmbeddedStore::open(dir, &EmbeddedOptions::default())
}

/// The value the crash writer stores under `key`, so the reader can check it byte for byte.
fn crash_value(key: &str) -> Bytes {
    Bytes::from(key.repeat(1 + 900 / key.len()))
}

const CRASH_DIR_ENV: &str = "KYB_CRASH_TEST_DIR";

/// The child half of `acknowledged_writes_survive_sigkill`: writes from 8 tasks as fast as
/// it can and prints `ack <revision> <key>` once each write is acknowledged. Does nothing
/// unless started by the parent.
#[test]
#[ignore = "started as a child process by acknowledged_writes_survive_sigkill"]
fn crash_writer_child() {
    let Ok(dir) = std::env::var(CRASH_DIR_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        // Frequent checkpoints, so that the kill lands before, during and after them.
        let options = EmbeddedOptions {
            checkpoint_bytes: 256 << 10,
            checkpoint_interval: Duration::from_millis(50),
            ..EmbeddedOptions::default()
        };
        let store = Arc::new(EmbeddedStore::open(Path::new(&dir), &options).unwrap());
        let session = std::process::id();
        let mut tasks = Vec::new();
        for writer in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0.. {
                    let key = format!("/crash/{session}/{writer}/{n}");
                    let rev = store
                        .create(key.as_bytes(), crash_value(&key))
                        .await
                        .unwrap();
                    println!("ack {rev} {key}");
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = kyb_testkit::temp_dir("crash").unwrap();
    let mut all_acked: Vec<(Revision, String)> = Vec::new();
    let mut recovered_from_log = false;
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "embedded::crash_writer_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_DIR_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acked = Vec::new();
        let deadline = Instant::now() + DEADLINE;
        // Kill it mid-stream, at a different point each round.
        while acked.len() < 400 + 300 * round {
            assert!(
                Instant::now() < deadline,
                "the writer acknowledged only {} writes",
                acked.len()
            );
            let line = lines.next().expect("writer output").unwrap();
            if let Some(ack) = parse_ack(&line) {
                acked.push(ack);
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // What it printed before dying was acknowledged too.
        acked.extend(
            lines
                .map_while(Result::ok)
                .filter_map(|line| parse_ack(&line)),
        );
        all_acked.extend(acked);

        let wal = std::fs::metadata(dir.path().join(kyb_storage::embedded::WAL_FILE))
            .unwrap()
            .len();
        recovered_from_log |= wal > 0;
        let store = open(dir.path()).unwrap();
        let max = all_acked.iter().map(|(rev, _)| *rev).max().unwrap();
        let current = store.current_revision().await.unwrap();
        assert!(
            current >= max,
            "round {round}: revision {current} < acknowledged {max}"
        );
        for (rev, key) in &all_acked {
            let kv = store.get(key.as_bytes(), None).await.unwrap().kv;
            let kv = kv.unwrap_or_else(|| panic!("round {round}: acknowledged {key} lost"));
            assert_eq!(kv.mod_revision, *rev, "{key}");
            assert_eq!(kv.value, crash_value(key), "{key} damaged");
        }
        // Revisions were handed out once each, and the sequence goes on from where it was.
        let mut revisions: Vec<_> = all_acked.iter().map(|(rev, _)| *rev).collect();
        revisions.sort_unstable();
        revisions.dedup();
        assert_eq!(revisions.len(), all_acked.len());
        let next = store
            .create(format!("/after/{round}").as_bytes(), value("x"))
            .await
            .unwrap();
        assert_eq!(next, current + 1);
        store.shutdown().await;
    }
    assert!(
        recovered_from_log,
        "no kill left writes in the log to recover"
    );
}

fn parse_ack(line: &str) -> Option<(Revision, String)> {
    let mut words = line.strip_prefix("ack ")?.split(' ');
    Some((words.next()?.parse().ok()?, words.next()?.to_string()))
}

#[tokio::test]
async fn state_and_history_persist_across_restarts() {
    let dir = kyb_testkit::temp_dir("restart").unwrap();
    let (r1, r2) = {
        let store = open(dir.path()).unwrap();
        let r1 = store.create(b"/k", value("one")).await.unwrap();
        let r2 = store.update(b"/k", value("two"), r1).await.unwrap();
        store.shutdown().await;
        (r1, r2)
    };
    let store = open(dir.path()).unwrap();
    assert_eq!(store.current_revision().await.unwrap(), r2);
    assert_eq!(value_at(&store, b"/k", Some(r1)).await, &b"one"[..]);
    let mut watch = store.watch(b"/", r1).await.unwrap();
    let first = tokio::time::timeout(DEADLINE, watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.revision(), r1);
    store.compact(r2).await.unwrap();
    store.shutdown().await;
    // Shutting down ends the watch, after what it had to deliver.
    let second = tokio::time::timeout(DEADLINE, watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.revision(), r2);
    assert!(
        tokio::time::timeout(DEADLINE, watch.next())
            .await
            .unwrap()
            .is_none()
    );
    drop(store);
    let store = open(dir.path()).unwrap();
    assert!(is_compacted(store.get(b"/k", Some(r1)).await));
    assert_eq!(value_at(&store, b"/k", None).await, &b"two"[..]);
}

#[tokio::test]
async fn writes_after_shutdown_fail_cleanly() {
    let dir = kyb_testkit::temp_dir("closed").unwrap();
    let store = open(dir.path()).unwrap();
    store.shutdown().await;
    assert!(matches!(
        store.create(b"/k", value("v")).await,
        Err(Error::Closed)
    ));
}

#[test]
fn a_garbage_file_is_refused_not_reset() {
    let dir = kyb_testkit::temp_dir("garbage").unwrap();
    let garbage: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.path().join(STORE_FILE), &garbage).unwrap();
    let error = open(dir.path()).err().expect("garbage must not open");
    assert!(matches!(error, Error::Corrupt(_)), "{error:?}");
    assert!(
        error.to_string().contains(STORE_FILE),
        "the error names the file: {error}"
    );
    assert_eq!(
        std::fs::read(dir.path().join(STORE_FILE)).unwrap(),
        garbage,
        "the file was left as it was"
    );
}

#[test]
fn a_foreign_database_is_refused() {
    let dir = kyb_testkit::temp_dir("foreign").unwrap();
    let path = dir.path().join(STORE_FILE);
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let table: redb::TableDefinition<&str, &str> =
                redb::TableDefinition::new("someone-else");
            txn.open_table(table).unwrap().insert("k", "v").unwrap();
        }
        txn.commit().unwrap();
    }
    let error = open(dir.path())
        .err()
        .expect("a foreign database must not open");
    assert!(
        error.to_string().contains("not a Kybernetes store"),
        "{error}"
    );
}

#[test]
fn a_damaged_store_is_refused() {
    let dir = kyb_testkit::temp_dir("damaged").unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = open(dir.path()).unwrap();
        for i in 0..2000 {
            let key = format!("/registry/configmaps/ns/{i:05}");
            store
                .create(key.as_bytes(), Bytes::from(vec![b'v'; 1000]))
                .await
                .unwrap();
        }
        store.shutdown().await;
    });
    drop(runtime);
    let path = dir.path().join(STORE_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    // Scribble over a stretch in the middle of the file, where the data pages are.
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 64 * 1024] {
        *byte ^= 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let error = open(dir.path())
        .err()
        .expect("a damaged store must not open");
    assert!(matches!(error, Error::Corrupt(_)), "{error:?}");
}

#[test]
fn a_store_in_use_is_refused() {
    let dir = kyb_testkit::temp_dir("in-use").unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _guard = runtime.enter();
    let _first = open(dir.path()).unwrap();
    let error = open(dir.path()).err().expect("a second open must fail");
    assert!(error.to_string().contains("in use"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compactor_keeps_one_interval_of_history() {
    let dir = kyb_testkit::temp_dir("compactor").unwrap();
    let store: Arc<dyn Store> = Arc::new(open(dir.path()).unwrap());
    let first = store.create(b"/c/k", value("0")).await.unwrap();
    let compactor = tokio::spawn(kyb_storage::run_compactor(
        store.clone(),
        Duration::from_millis(100),
    ));
    let mut rev = first;
    let deadline = Instant::now() + DEADLINE;
    // Keep writing until the first revision has been compacted away.
    loop {
        rev = store
            .update(b"/c/k", value(rev.to_string()), rev)
            .await
            .unwrap();
        if matches!(
            store.get(b"/c/k", Some(first)).await,
            Err(Error::Compacted { .. })
        ) {
            break;
        }
        assert!(Instant::now() < deadline, "nothing was compacted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    compactor.abort();
    // The latest state is intact.
    let list = store.list(&ListRequest::prefix("/c/")).await.unwrap();
    assert_eq!(list.kvs.len(), 1);
    assert_eq!(list.kvs[0].mod_revision, rev);
}
