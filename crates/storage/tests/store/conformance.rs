//! One suite, both backends: every case takes a `&dyn Store` and is instantiated once per
//! backend by `conformance!`.

use crate::harness::{DEADLINE, assert_quiet, is_compacted, next_event, value, value_at};
use bytes::Bytes;
use kyb_storage::{Error, EventKind, KeyValue, ListRequest, MAX_VALUE_SIZE, Revision, Store};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let harness = crate::harness::embedded().await;
                    super::$case(harness.store.clone()).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let harness = crate::harness::etcd().await;
                    super::$case(harness.store.clone()).await;
                }
            )*
        }
    };
}

conformance!(
    create_get_update_delete,
    compare_and_swap_conflicts_carry_the_current_value,
    concurrent_writers_lose_no_update,
    reads_at_past_revisions,
    pagination_reads_one_snapshot_while_writes_go_on,
    watch_delivers_every_write_in_order,
    watch_resumes_from_a_past_revision,
    watch_survives_a_slow_consumer,
    compaction_discards_old_history,
    oversize_values_are_rejected,
    prefixes_are_isolated,
);

type Shared = Arc<dyn Store>;

async fn create_get_update_delete(store: Shared) {
    let key = b"/registry/configmaps/default/one";
    let r1 = store.create(key, value("v1")).await.unwrap();
    let got = store.get(key, None).await.unwrap();
    assert!(got.revision >= r1);
    let kv = got.kv.expect("created key is readable");
    assert_eq!(
        (
            kv.value.as_ref(),
            kv.create_revision,
            kv.mod_revision,
            kv.version
        ),
        (&b"v1"[..], r1, r1, 1)
    );

    let r2 = store.update(key, value("v2"), r1).await.unwrap();
    assert!(r2 > r1, "revisions increase: {r1} then {r2}");
    let kv = store.get(key, None).await.unwrap().kv.unwrap();
    assert_eq!(
        (
            kv.value.as_ref(),
            kv.create_revision,
            kv.mod_revision,
            kv.version
        ),
        (&b"v2"[..], r1, r2, 2)
    );

    let deleted = store.delete(key, Some(r2)).await.unwrap();
    assert!(deleted.revision > r2);
    assert_eq!(deleted.prev.value.as_ref(), b"v2");
    assert_eq!(deleted.prev.mod_revision, r2);
    assert_eq!(store.get(key, None).await.unwrap().kv, None);
    assert!(matches!(
        store.update(key, value("v3"), r2).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.delete(key, None).await,
        Err(Error::NotFound { .. })
    ));

    // A key created again starts a new life.
    let r4 = store.create(key, value("again")).await.unwrap();
    let kv = store.get(key, None).await.unwrap().kv.unwrap();
    assert_eq!((kv.create_revision, kv.version), (r4, 1));
    let plain = store.delete(key, None).await.unwrap();
    assert_eq!(plain.prev.value.as_ref(), b"again");
    assert_eq!(store.current_revision().await.unwrap(), plain.revision);
}

async fn compare_and_swap_conflicts_carry_the_current_value(store: Shared) {
    let key = b"/registry/pods/default/web";
    let r1 = store.create(key, value("a")).await.unwrap();
    match store.create(key, value("b")).await {
        Err(Error::AlreadyExists { current }) => {
            assert_eq!(
                (current.value.as_ref(), current.mod_revision),
                (&b"a"[..], r1)
            );
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    let r2 = store.update(key, value("b"), r1).await.unwrap();
    // A writer that read r1 loses, and learns the current value without another read.
    match store.update(key, value("stale"), r1).await {
        Err(Error::Conflict { expected, current }) => {
            assert_eq!(expected, r1);
            assert_eq!(
                (current.value.as_ref(), current.mod_revision),
                (&b"b"[..], r2)
            );
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    match store.delete(key, Some(r1)).await {
        Err(Error::Conflict { current, .. }) => assert_eq!(current.mod_revision, r2),
        other => panic!("expected Conflict, got {other:?}"),
    }
    // Nothing the losers sent was written.
    let kv = store.get(key, None).await.unwrap().kv.unwrap();
    assert_eq!((kv.value.as_ref(), kv.version), (&b"b"[..], 2));
    assert_eq!(store.current_revision().await.unwrap(), r2);
}

async fn concurrent_writers_lose_no_update(store: Shared) {
    const WRITERS: u64 = 16;
    const INCREMENTS: u64 = 25;
    let key: &[u8] = b"/registry/counters/shared";
    store.create(key, value("0")).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut current = store.get(key, None).await.unwrap().kv.unwrap();
            let mut conflicts = 0u64;
            for _ in 0..INCREMENTS {
                loop {
                    let n: u64 = std::str::from_utf8(&current.value)
                        .unwrap()
                        .parse()
                        .unwrap();
                    match store
                        .update(key, value((n + 1).to_string()), current.mod_revision)
                        .await
                    {
                        Ok(rev) => {
                            current = KeyValue {
                                value: value((n + 1).to_string()),
                                mod_revision: rev,
                                ..current
                            };
                            break;
                        }
                        Err(Error::Conflict {
                            current: latest, ..
                        }) => {
                            conflicts += 1;
                            current = *latest;
                        }
                        Err(other) => panic!("update failed: {other}"),
                    }
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for task in tasks {
        conflicts += task.await.unwrap();
    }
    let kv = store.get(key, None).await.unwrap().kv.unwrap();
    assert_eq!(
        kv.value.as_ref(),
        (WRITERS * INCREMENTS).to_string().as_bytes()
    );
    assert_eq!(kv.version, WRITERS * INCREMENTS + 1);
    assert!(conflicts > 0, "16 writers on one key should have collided");
}

async fn reads_at_past_revisions(store: Shared) {
    let a = b"/registry/secrets/ns/a";
    let b = b"/registry/secrets/ns/b";
    let ra = store.create(a, value("a1")).await.unwrap();
    let rb = store.create(b, value("b1")).await.unwrap();
    let ra2 = store.update(a, value("a2"), ra).await.unwrap();
    store.delete(b, None).await.unwrap();
    let c = b"/registry/secrets/ns/c";
    store.create(c, value("c1")).await.unwrap();

    let at = |rev: Revision| {
        let store = store.clone();
        async move {
            let list = store
                .list(&ListRequest::prefix("/registry/secrets/").at_revision(rev))
                .await
                .unwrap();
            assert_eq!(list.revision, rev);
            list.kvs
                .into_iter()
                .map(|kv| {
                    (
                        String::from_utf8(kv.key).unwrap(),
                        String::from_utf8(kv.value.to_vec()).unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let pair = |k: &str, v: &str| (format!("/registry/secrets/ns/{k}"), v.to_string());
    assert_eq!(at(rb).await, vec![pair("a", "a1"), pair("b", "b1")]);
    assert_eq!(at(ra2).await, vec![pair("a", "a2"), pair("b", "b1")]);
    let now = store.current_revision().await.unwrap();
    assert_eq!(at(now).await, vec![pair("a", "a2"), pair("c", "c1")]);

    let old = store.get(a, Some(ra)).await.unwrap();
    assert_eq!(old.revision, ra);
    let old = old.kv.unwrap();
    assert_eq!(
        (old.value.as_ref(), old.mod_revision, old.version),
        (&b"a1"[..], ra, 1)
    );
    assert_eq!(store.get(b, Some(now)).await.unwrap().kv, None);
    assert_eq!(value_at(store.as_ref(), b, Some(rb)).await, &b"b1"[..]);
    assert!(matches!(
        store.get(a, Some(now + 1000)).await,
        Err(Error::FutureRevision { .. })
    ));
}

async fn pagination_reads_one_snapshot_while_writes_go_on(store: Shared) {
    const KEYS: usize = 200;
    const PREFIX: &str = "/registry/pages/";
    let prefix = PREFIX;
    let key = |i: usize| format!("{PREFIX}{i:04}");
    for i in 0..KEYS {
        store.create(key(i).as_bytes(), value("0")).await.unwrap();
    }
    let start = store.current_revision().await.unwrap();
    let mut watch = store.watch(prefix.as_bytes(), start + 1).await.unwrap();

    // Churn: update, delete and re-create keys while the pages are read.
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let k = key(i * 7 % KEYS);
                match store.get(k.as_bytes(), None).await.unwrap().kv {
                    Some(kv) if i.is_multiple_of(3) => {
                        store.delete(k.as_bytes(), Some(kv.mod_revision)).await.ok();
                    }
                    Some(kv) => {
                        store
                            .update(k.as_bytes(), value(i.to_string()), kv.mod_revision)
                            .await
                            .ok();
                    }
                    None => {
                        store.create(k.as_bytes(), value(i.to_string())).await.ok();
                    }
                }
                i += 1;
            }
            i
        })
    };

    // Let the churn get going, then page through.
    wait_for_revision(store.as_ref(), start + 20).await;
    let mut request = ListRequest::prefix(prefix).limit(17);
    let mut paged = Vec::new();
    let mut revision = None;
    loop {
        let page = store.list(&request).await.unwrap();
        assert!(page.kvs.len() <= 17);
        assert_eq!(
            *revision.get_or_insert(page.revision),
            page.revision,
            "pages mix revisions"
        );
        paged.extend(page.kvs.iter().cloned());
        // Give the churn time to move on between pages.
        wait_for_revision(store.as_ref(), store.current_revision().await.unwrap() + 3).await;
        match request.next_page(&page) {
            Some(next) => request = next,
            None => break,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let writes = churn.await.unwrap();
    let snapshot = revision.unwrap();
    assert!(
        store.current_revision().await.unwrap() > snapshot + 10,
        "writes went on ({writes})"
    );

    // The pages are exactly the state at the snapshot revision…
    let whole = store
        .list(&ListRequest::prefix(prefix).at_revision(snapshot))
        .await
        .unwrap();
    assert_eq!(paged, whole.kvs);
    assert!(
        paged.windows(2).all(|w| w[0].key < w[1].key),
        "keys sorted and unique"
    );
    assert!(paged.iter().all(|kv| kv.mod_revision <= snapshot));

    // …and that state is what the initial keys plus the watched events up to it make.
    let mut state: BTreeMap<Vec<u8>, KeyValue> = BTreeMap::new();
    for i in 0..KEYS {
        let kv = store
            .get(key(i).as_bytes(), Some(start))
            .await
            .unwrap()
            .kv
            .unwrap();
        state.insert(kv.key.clone(), kv);
    }
    loop {
        let event = next_event(&mut watch).await;
        if event.revision() > snapshot {
            break;
        }
        match event.kind {
            EventKind::Put => state.insert(event.kv.key.clone(), event.kv),
            EventKind::Delete => state.remove(&event.kv.key),
        };
    }
    assert_eq!(paged, state.into_values().collect::<Vec<_>>());
}

async fn wait_for_revision(store: &dyn Store, revision: Revision) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while store.current_revision().await.unwrap() < revision {
        assert!(
            tokio::time::Instant::now() < deadline,
            "revision {revision} never reached"
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

async fn watch_delivers_every_write_in_order(store: Shared) {
    let prefix = b"/registry/deployments/";
    let mut watch = store.watch(prefix, 0).await.unwrap();
    // Sequential writes of every kind, and writes outside the prefix.
    let k = |name: &str| format!("/registry/deployments/ns/{name}");
    let r1 = store.create(k("a").as_bytes(), value("a1")).await.unwrap();
    store
        .create(b"/registry/pods/ns/x", value("x"))
        .await
        .unwrap();
    let r2 = store
        .update(k("a").as_bytes(), value("a2"), r1)
        .await
        .unwrap();
    let r3 = store
        .delete(k("a").as_bytes(), None)
        .await
        .unwrap()
        .revision;

    let e1 = next_event(&mut watch).await;
    assert_eq!(
        (e1.kind, e1.revision(), e1.prev.as_ref()),
        (EventKind::Put, r1, None)
    );
    assert_eq!((e1.kv.create_revision, e1.kv.version), (r1, 1));
    let e2 = next_event(&mut watch).await;
    assert_eq!(
        (e2.kind, e2.revision(), e2.kv.value.as_ref()),
        (EventKind::Put, r2, &b"a2"[..])
    );
    assert_eq!(e2.prev.as_ref().map(|p| p.value.as_ref()), Some(&b"a1"[..]));
    let e3 = next_event(&mut watch).await;
    assert_eq!(
        (e3.kind, e3.revision(), e3.kv.key.as_slice()),
        (EventKind::Delete, r3, k("a").as_bytes())
    );
    assert_eq!(
        e3.prev.as_ref().map(|p| (p.value.as_ref(), p.mod_revision)),
        Some((&b"a2"[..], r2))
    );

    // Concurrent writers: every revision they were given arrives, once, in order.
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in 0..25 {
                let key = format!("/registry/deployments/w{w}/{i}");
                revisions.push(store.create(key.as_bytes(), value("v")).await.unwrap());
                store
                    .create(format!("/registry/other/{w}/{i}").as_bytes(), value("o"))
                    .await
                    .unwrap();
            }
            revisions
        }));
    }
    let mut expected = Vec::new();
    for task in tasks {
        expected.extend(task.await.unwrap());
    }
    expected.sort_unstable();
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        let event = next_event(&mut watch).await;
        assert!(event.kv.key.starts_with(prefix));
        seen.push(event.revision());
    }
    assert_eq!(seen, expected);
    assert_quiet(&mut watch).await;
}

async fn watch_resumes_from_a_past_revision(store: Shared) {
    let mut revisions = Vec::new();
    for i in 0..10 {
        let key = format!("/registry/jobs/ns/{i}");
        revisions.push(
            store
                .create(key.as_bytes(), value(i.to_string()))
                .await
                .unwrap(),
        );
    }
    // Resume in the middle, as a client that saw up to revisions[4] would.
    let mut watch = store
        .watch(b"/registry/jobs/", revisions[4] + 1)
        .await
        .unwrap();
    for (i, &rev) in revisions.iter().enumerate().skip(5) {
        let event = next_event(&mut watch).await;
        assert_eq!(event.revision(), rev);
        assert_eq!(event.kv.value.as_ref(), i.to_string().as_bytes());
    }
    // Then it goes on live.
    let live = store
        .create(b"/registry/jobs/ns/live", value("l"))
        .await
        .unwrap();
    assert_eq!(next_event(&mut watch).await.revision(), live);
    assert_quiet(&mut watch).await;
}

async fn watch_survives_a_slow_consumer(store: Shared) {
    let mut watch = store.watch(b"/registry/slow/", 0).await.unwrap();
    let mut expected = Vec::new();
    for i in 0..3000 {
        let key = format!("/registry/slow/{}", i % 50);
        let rev = match store.get(key.as_bytes(), None).await.unwrap().kv {
            Some(kv) => {
                store
                    .update(key.as_bytes(), value(i.to_string()), kv.mod_revision)
                    .await
            }
            None => store.create(key.as_bytes(), value(i.to_string())).await,
        };
        expected.push(rev.unwrap());
    }
    // Nothing was read while the writes went on; all of them must still come, in order.
    for (i, rev) in expected.into_iter().enumerate() {
        let event = next_event(&mut watch).await;
        assert_eq!(event.revision(), rev);
        assert_eq!(event.kv.value.as_ref(), i.to_string().as_bytes());
    }
}

async fn compaction_discards_old_history(store: Shared) {
    let key = b"/registry/leases/ns/l";
    let mut rev = store.create(key, value("0")).await.unwrap();
    let gone = b"/registry/leases/ns/gone";
    let gone_rev = store.create(gone, value("g")).await.unwrap();
    let mut revisions = vec![rev];
    for i in 1..10 {
        rev = store.update(key, value(i.to_string()), rev).await.unwrap();
        revisions.push(rev);
    }
    store.delete(gone, None).await.unwrap();
    let target = revisions[5];
    store.compact(target).await.unwrap();
    store.compact(target - 1).await.unwrap(); // already done: a no-op

    // Older revisions are gone for reads and watches…
    assert!(is_compacted(store.get(key, Some(revisions[2])).await));
    assert!(is_compacted(
        store
            .list(&ListRequest::prefix("/registry/leases/").at_revision(revisions[2]))
            .await
    ));
    assert!(is_compacted(
        match store.watch(b"/registry/leases/", revisions[2]).await {
            Ok(mut watch) => tokio::time::timeout(DEADLINE, watch.next())
                .await
                .unwrap()
                .unwrap()
                .map(|_| ()),
            Err(error) => Err(error),
        }
    ));
    // …the compacted revision itself and later still read as they were…
    let kv = store.get(key, Some(target)).await.unwrap().kv.unwrap();
    assert_eq!(kv.value.as_ref(), b"5");
    assert_eq!(
        store
            .get(gone, Some(target))
            .await
            .unwrap()
            .kv
            .unwrap()
            .mod_revision,
        gone_rev
    );
    let mut watch = store.watch(b"/registry/leases/", target).await.unwrap();
    for (i, &rev) in revisions.iter().enumerate().skip(5) {
        let event = next_event(&mut watch).await;
        assert_eq!(
            (event.revision(), event.kv.value.as_ref()),
            (rev, i.to_string().as_bytes())
        );
        if i > 5 {
            assert_eq!(
                event.prev.unwrap().value.as_ref(),
                (i - 1).to_string().as_bytes()
            );
        }
    }
    assert_eq!(next_event(&mut watch).await.kind, EventKind::Delete);
    // …and the current state is untouched.
    assert_eq!(value_at(store.as_ref(), key, None).await, &b"9"[..]);
    assert_eq!(store.get(gone, None).await.unwrap().kv, None);
    let now = store.current_revision().await.unwrap();
    assert!(matches!(
        store.compact(now + 100).await,
        Err(Error::FutureRevision { .. })
    ));
    // Compacting everything still keeps the latest state.
    store.compact(now).await.unwrap();
    let list = store
        .list(&ListRequest::prefix("/registry/leases/"))
        .await
        .unwrap();
    assert_eq!(list.kvs.len(), 1);
    assert_eq!(list.kvs[0].value.as_ref(), b"9");
}

async fn oversize_values_are_rejected(store: Shared) {
    let key = b"/registry/configmaps/ns/big";
    let before = store.current_revision().await.unwrap();
    let too_big = Bytes::from(vec![b'x'; MAX_VALUE_SIZE + 1]);
    assert!(matches!(
        store.create(key, too_big.clone()).await,
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(store.get(key, None).await.unwrap().kv, None);
    assert_eq!(store.current_revision().await.unwrap(), before);

    let rev = store
        .create(key, Bytes::from(vec![b'y'; 1 << 20]))
        .await
        .unwrap();
    assert!(matches!(
        store.update(key, too_big, rev).await,
        Err(Error::ValueTooLarge { .. })
    ));
    let kv = store.get(key, None).await.unwrap().kv.unwrap();
    assert_eq!((kv.value.len(), kv.mod_revision), (1 << 20, rev));
}

async fn prefixes_are_isolated(store: Shared) {
    let mut watch = store.watch(b"/registry/a/", 0).await.unwrap();
    for key in [
        "/registry/a",
        "/registry/a/x",
        "/registry/ab/y",
        "/registry/a/y",
        "/registry/b/z",
    ] {
        store.create(key.as_bytes(), value(key)).await.unwrap();
    }
    let list = store
        .list(&ListRequest::prefix("/registry/a/"))
        .await
        .unwrap();
    let keys: Vec<_> = list.kvs.iter().map(|kv| kv.key.as_slice()).collect();
    assert_eq!(keys, vec![&b"/registry/a/x"[..], b"/registry/a/y"]);
    assert_eq!(next_event(&mut watch).await.kv.key, b"/registry/a/x");
    assert_eq!(next_event(&mut watch).await.kv.key, b"/registry/a/y");
    assert_quiet(&mut watch).await;

    // A start key outside the prefix is refused, not silently read.
    let outside = ListRequest::prefix("/registry/a/").start("/registry/b/");
    assert!(matches!(
        store.list(&outside).await,
        Err(Error::InvalidArgument(_))
    ));
    // An empty prefix reads everything.
    let all = store.list(&ListRequest::prefix("")).await.unwrap();
    assert_eq!(all.kvs.len(), 5);
    assert!(matches!(
        store.create(b"", value("x")).await,
        Err(Error::InvalidArgument(_))
    ));
}
