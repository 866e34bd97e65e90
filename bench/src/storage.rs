//! Storage benchmark: the embedded store against a real etcd on the same machine, both
//! durable (every acknowledged write fsynced).
//!
//! Figures: creates/s of 1 KiB values with 1 and 16 concurrent writers, with p50/p99 write
//! latency; time to list 10,000 keys (whole, and in pages of 500 as kubectl asks); watch
//! delivery latency p50/p99 (write submitted → event received); time to reopen the
//! embedded store (integrity check included). The embedded store runs with its default
//! options, checkpoints included.

use crate::stats::{Latencies, ms};
use bytes::Bytes;
use kyb_storage::{EmbeddedOptions, EmbeddedStore, EtcdStore, ListRequest, Revision, Store};
use kyb_testkit::EtcdServer;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Sizes {
    sequential: usize,
    concurrent_per_writer: usize,
    list_keys: usize,
    watch_writes: usize,
}

/// Runs the benchmark; `embedded_only` skips etcd (for profiling the embedded store).
pub fn run(quick: bool, embedded_only: bool) -> anyhow::Result<()> {
    let sizes = if quick {
        Sizes {
            sequential: 200,
            concurrent_per_writer: 50,
            list_keys: 1000,
            watch_writes: 200,
        }
    } else {
        Sizes {
            sequential: 2000,
            concurrent_per_writer: 1000,
            list_keys: 10_000,
            watch_writes: 2000,
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!();
        println!("| backend | 1 writer creates/s | p50 | p99 | 16 writers creates/s | p50 | p99 | list {} keys | paged (500) | watch p50 | watch p99 |", sizes.list_keys);
        println!("|---|---|---|---|---|---|---|---|---|---|---|");

        let dir = kyb_testkit::temp_dir("bench-store")?;
        let embedded = Arc::new(EmbeddedStore::open(dir.path(), &EmbeddedOptions::default())?);
        let e = bench_backend(embedded.clone(), &sizes).await?;
        embedded.shutdown().await;
        drop(embedded);
        let file = dir.path().join(kyb_storage::embedded::STORE_FILE);
        let size = std::fs::metadata(&file)?.len();
        let started = Instant::now();
        let reopened = EmbeddedStore::open(dir.path(), &EmbeddedOptions::default())?;
        let reopen = started.elapsed();
        reopened.shutdown().await;

        if embedded_only {
            return Ok(());
        }
        let etcd_server = tokio::task::spawn_blocking(EtcdServer::start).await??;
        let etcd = Arc::new(EtcdStore::connect(std::slice::from_ref(&etcd_server.endpoint)).await?);
        let d = bench_backend(etcd, &sizes).await?;

        println!();
        println!(
            "embedded/etcd: 1 writer {:.1}x, 16 writers {:.1}x, list {:.1}x faster",
            e.sequential / d.sequential,
            e.concurrent / d.concurrent,
            d.list.as_secs_f64() / e.list.as_secs_f64()
        );
        println!(
            "embedded store reopen (with integrity check): {} for a {:.1} MiB file",
            ms(reopen),
            size as f64 / (1 << 20) as f64
        );
        Ok(())
    })
}

struct Figures {
    sequential: f64,
    concurrent: f64,
    list: Duration,
}

async fn bench_backend(store: Arc<dyn Store>, sizes: &Sizes) -> anyhow::Result<Figures> {
    let value = Bytes::from(vec![b'x'; 1024]);

    // One writer.
    let mut samples = Vec::with_capacity(sizes.sequential);
    let started = Instant::now();
    for i in 0..sizes.sequential {
        let key = format!("/bench/seq/{i:08}");
        let t = Instant::now();
        store.create(key.as_bytes(), value.clone()).await?;
        samples.push(t.elapsed());
    }
    let sequential = sizes.sequential as f64 / started.elapsed().as_secs_f64();
    let seq = Latencies::new(samples);

    // Sixteen writers.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (store, value) = (store.clone(), value.clone());
        let n = sizes.concurrent_per_writer;
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(n);
            for i in 0..n {
                let key = format!("/bench/par/{w:02}/{i:08}");
                let t = Instant::now();
                store.create(key.as_bytes(), value.clone()).await?;
                samples.push(t.elapsed());
            }
            anyhow::Ok(samples)
        }));
    }
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await??);
    }
    let concurrent = samples.len() as f64 / started.elapsed().as_secs_f64();
    let par = Latencies::new(samples);

    // Listing.
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (store, value) = (store.clone(), value.clone());
        let n = sizes.list_keys / 16 + usize::from(w < sizes.list_keys % 16);
        tasks.push(tokio::spawn(async move {
            for i in 0..n {
                let key = format!("/bench/list/{w:02}/{i:08}");
                store.create(key.as_bytes(), value.clone()).await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let mut whole = Vec::new();
    let mut paged = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let list = store.list(&ListRequest::prefix("/bench/list/")).await?;
        whole.push(t.elapsed());
        anyhow::ensure!(
            list.kvs.len() == sizes.list_keys,
            "listed {}",
            list.kvs.len()
        );
        let t = Instant::now();
        let mut request = ListRequest::prefix("/bench/list/").limit(500);
        let mut count = 0;
        loop {
            let page = store.list(&request).await?;
            count += page.kvs.len();
            match request.next_page(&page) {
                Some(next) => request = next,
                None => break,
            }
        }
        paged.push(t.elapsed());
        anyhow::ensure!(count == sizes.list_keys, "paged {count}");
    }
    let list = Latencies::new(whole).percentile(50.0);
    let list_paged = Latencies::new(paged).percentile(50.0);

    // Watch delivery.
    let mut watch = store.watch(b"/bench/watch/", 0).await?;
    let writes = sizes.watch_writes;
    let receiver = tokio::spawn(async move {
        let mut received = HashMap::with_capacity(writes);
        while received.len() < writes {
            match watch.next().await {
                Some(Ok(event)) => {
                    received.insert(event.revision(), Instant::now());
                }
                Some(Err(error)) => return Err(anyhow::Error::from(error)),
                None => anyhow::bail!("watch ended"),
            }
        }
        Ok(received)
    });
    let mut submitted: Vec<(Revision, Instant)> = Vec::with_capacity(writes);
    let mut mod_revision = 0;
    for i in 0..writes {
        let t = Instant::now();
        mod_revision = if i == 0 {
            store.create(b"/bench/watch/key", value.clone()).await?
        } else {
            store
                .update(b"/bench/watch/key", value.clone(), mod_revision)
                .await?
        };
        submitted.push((mod_revision, t));
    }
    let received = tokio::time::timeout(Duration::from_secs(60), receiver).await???;
    let delays: Vec<Duration> = submitted
        .iter()
        .filter_map(|(rev, t)| received.get(rev).map(|r| r.duration_since(*t)))
        .collect();
    anyhow::ensure!(
        delays.len() == writes,
        "{} of {writes} events",
        delays.len()
    );
    let watch = Latencies::new(delays);

    println!(
        "| {} | {:.0} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} |",
        store.backend(),
        sequential,
        ms(seq.percentile(50.0)),
        ms(seq.percentile(99.0)),
        concurrent,
        ms(par.percentile(50.0)),
        ms(par.percentile(99.0)),
        ms(list),
        ms(list_paged),
        ms(watch.percentile(50.0)),
        ms(watch.percentile(99.0)),
    );
    Ok(Figures {
        sequential,
        concurrent,
        list,
    })
}
