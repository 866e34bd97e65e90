//! `kyb server`: the all-in-one process. For now it opens the store and keeps it compacted;
//! the API server and the other components are wired in here as they are built.

use crate::cli::ServerArgs;
use anyhow::Context;
use kyb_storage::{
    DEFAULT_COMPACTION_INTERVAL, EmbeddedOptions, EmbeddedStore, EtcdStore, Store, run_compactor,
};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;

pub async fn run(args: ServerArgs, data_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let data_dir = data_dir.map_or_else(default_data_dir, Ok)?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating the data dir {}", data_dir.display()))?;

    let mut embedded = None;
    let store: Arc<dyn Store> = if args.etcd_endpoints.is_empty() {
        let dir = data_dir.join("db");
        let store = EmbeddedStore::open(&dir, &EmbeddedOptions::default())
            .with_context(|| format!("opening the embedded store in {}", dir.display()))?;
        let store = Arc::new(store);
        embedded = Some(store.clone());
        store
    } else {
        let store = EtcdStore::connect(&args.etcd_endpoints)
            .await
            .context("opening the etcd store")?;
        Arc::new(store)
    };
    let compactor = tokio::spawn(run_compactor(store.clone(), DEFAULT_COMPACTION_INTERVAL));

    tracing::info!(
        data_dir = %data_dir.display(),
        store = store.backend(),
        revision = store.current_revision().await?,
        address = %args.bind_address,
        port = args.port,
        "kyb server ready"
    );
    shutdown_signal().await?;
    tracing::info!("shutting down");
    compactor.abort();
    if let Some(store) = embedded {
        store.shutdown().await;
    }
    Ok(())
}

/// `/var/lib/kyb` for root, `$XDG_DATA_HOME/kyb` (or `~/.local/share/kyb`) for anyone else.
fn default_data_dir() -> anyhow::Result<PathBuf> {
    // /proc/self belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    if root {
        return Ok(PathBuf::from("/var/lib/kyb"));
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("kyb"));
    }
    let home =
        std::env::var_os("HOME").context("neither --data-dir, XDG_DATA_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".local/share/kyb"))
}

async fn shutdown_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("listening for SIGINT"),
        _ = terminate.recv() => Ok(()),
    }
}
