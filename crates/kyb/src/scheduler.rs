//! `kyb scheduler --kubeconfig …` (the scheduler alone), and the scheduler `kyb server`
//! runs in-process with its own identity (`<data-dir>/components/scheduler.kubeconfig`).

use crate::cli::SchedulerArgs;
use anyhow::Context;
use kyb_scheduler::config::SchedulerConfig;
use std::path::Path;

/// A kube-rs client from a kubeconfig file.
pub async fn client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let file = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    kube::Client::try_from(config).context("building the API client")
}

/// This instance's name: the host name and a random suffix, as kube-scheduler names itself.
pub fn identity() -> String {
    format!(
        "{}_{:016x}",
        crate::identities::node_name(),
        fastrand::u64(..)
    )
}

pub async fn run(args: SchedulerArgs) -> anyhow::Result<()> {
    let mut config = match &args.config {
        Some(path) => SchedulerConfig::load(path)?,
        None => SchedulerConfig::default(),
    };
    if let Some(elect) = args.leader_elect {
        config.leader_elect = elect;
    }
    let client = client(&args.kubeconfig).await?;
    let identity = identity();
    tracing::info!(%identity, "scheduler starting");
    tokio::select! {
        result = kyb_scheduler::run(client, config, kyb_scheduler::plugins::registry(), &identity) => {
            result.context("running the scheduler")
        }
        () = crate::server::shutdown_signal() => Ok(()),
    }
}

/// Starts the in-process scheduler of `kyb server` (no leader election: the process holds
/// the only API server).
pub async fn start_in_process(kubeconfig: &Path) -> anyhow::Result<()> {
    let client = client(kubeconfig).await?;
    let config = SchedulerConfig {
        leader_elect: false,
        ..SchedulerConfig::default()
    };
    let identity = identity();
    tokio::spawn(async move {
        if let Err(error) = kyb_scheduler::run(
            client,
            config,
            kyb_scheduler::plugins::registry(),
            &identity,
        )
        .await
        {
            tracing::error!(%error, "the scheduler stopped");
        }
    });
    Ok(())
}
