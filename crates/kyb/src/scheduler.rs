//! `kyb scheduler --kubeconfig …` (the scheduler alone, an essential component: its
//! failure ends the process), and the scheduler `kyb server` runs in-process with its own
//! identity (`<data-dir>/components/scheduler.kubeconfig`), restarted when it fails.

use crate::cli::SchedulerArgs;
use anyhow::Context as _;
use kyb_component::{Component, Context, Health, Supervisor};
use kyb_scheduler::config::SchedulerConfig;
use std::path::{Path, PathBuf};

/// The component's name (`component/scheduler` in `/readyz`).
const NAME: &str = "scheduler";

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
    let mut supervisor = Supervisor::new(Health::new());
    supervisor.essential(kyb_component::once(NAME, move |ctx| {
        schedule(client, config, identity, ctx)
    }));
    Ok(supervisor.run(crate::server::shutdown_signal()).await?)
}

/// The in-process scheduler of `kyb server` as a component, elected through the
/// `kube-system/kube-scheduler` Lease under `identity` (as k3s's embedded scheduler is), so
/// that two servers sharing one store never both schedule; each start reads `kubeconfig`
/// again.
pub fn in_process(kubeconfig: PathBuf, identity: String) -> impl Component {
    kyb_component::from_fn(NAME, move |ctx| {
        let kubeconfig = kubeconfig.clone();
        let identity = identity.clone();
        async move {
            let client = client(&kubeconfig).await?;
            schedule(client, SchedulerConfig::default(), identity, ctx).await
        }
    })
}

/// Runs the scheduler with the default plugins until `ctx` is cancelled; ready at once (its
/// caches fill while it runs, as kube-scheduler's do).
async fn schedule(
    client: kube::Client,
    config: SchedulerConfig,
    identity: String,
    ctx: Context,
) -> anyhow::Result<()> {
    ctx.ready();
    kyb_scheduler::run(
        client,
        config,
        kyb_scheduler::plugins::registry(),
        &identity,
        ctx.cancelled(),
    )
    .await
    .context("running the scheduler")
}
