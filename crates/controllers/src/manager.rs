//! Runs the enabled controllers over one set of shared informers: after winning the
//! `kube-system/kube-controller-manager` Lease when leader election is on (losing it ends
//! the manager, as kube-controller-manager exits), with `/metrics` served when an address
//! is given.

use crate::clock::{Clock, RealClock};
use crate::context::Context;
use crate::credentials::Clients;
use crate::options::Options;
use anyhow::Context as _;
use kyb_runtime::informer::SharedInformers;
use kyb_runtime::leader::Election;
use kyb_runtime::metrics::Registry;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How the manager runs.
pub struct Config {
    pub options: Options,
    /// Compete for the lease first (`--leader-elect`); `None` runs at once.
    pub leader_election: Option<Election>,
    /// Where to serve `/metrics` and `/healthz` (`--metrics-bind-address`).
    pub metrics_address: Option<SocketAddr>,
    /// The clock controllers read (the real one but in tests).
    pub clock: Arc<dyn Clock>,
    /// Where the HPA controller reads metrics (`None`: the resource metrics API).
    pub metrics: Option<Arc<dyn crate::podautoscaler::metrics::MetricsSource>>,
}

impl Config {
    /// Kubernetes' defaults, leader election off.
    pub fn new(options: Options) -> Config {
        Config {
            options,
            leader_election: None,
            metrics_address: None,
            clock: Arc::new(RealClock),
            metrics: None,
        }
    }
}

/// The lease kube-controller-manager competes for, with its default timings (15 s
/// lease, 10 s renew deadline, 2 s retry period).
pub fn default_election(identity: &str) -> Election {
    Election {
        namespace: "kube-system".to_string(),
        name: "kube-controller-manager".to_string(),
        identity: identity.to_string(),
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    }
}

/// Runs the manager until leadership is lost (an error) or `shutdown` resolves; the
/// controllers stop with it.
pub async fn run(
    clients: Clients,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::select! {
        result = manage(clients, config) => result,
        () = shutdown => Ok(()),
    }
}

async fn manage(clients: Clients, config: Config) -> anyhow::Result<()> {
    let client = clients.base().clone();
    let registry = Arc::new(Registry::default());
    if let Some(address) = config.metrics_address {
        let bound = kyb_runtime::serve::serve(address, registry.clone())
            .await
            .context("serving metrics")?;
        tracing::info!(address = %bound, "controller manager metrics");
    }
    // The election and the controllers, aborted when the manager returns or is dropped.
    let mut tasks = tokio::task::JoinSet::new();
    let mut leading = None;
    if let Some(election) = config.leader_election {
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        tasks.spawn(election.run(client.clone(), tx));
        tracing::info!("waiting to become the leader");
        rx.wait_for(|l| *l)
            .await
            .context("leader election stopped")?;
        leading = Some(rx);
    }
    let informers = SharedInformers::new(client.clone());
    let context = Arc::new(Context {
        client,
        clients,
        informers: informers.clone(),
        registry,
        clock: config.clock,
        options: config.options,
        metrics: config.metrics,
    });
    let mut started = vec![];
    for controller in crate::controllers::all() {
        if !context.options.enabled(
            controller.name,
            controller.aliases,
            controller.on_by_default,
        ) {
            continue;
        }
        started.push(controller.name);
        let context = context.clone();
        tasks.spawn(async move {
            if let Err(error) = (controller.start)(context).await {
                tracing::error!(controller = controller.name, error = %format!("{error:#}"), "controller stopped");
            }
        });
    }
    // The informers watch until the manager returns or is dropped.
    let _watching = informers.start();
    tracing::info!(controllers = ?started, "controllers started");
    match leading {
        Some(mut rx) => {
            let _ = rx.wait_for(|l| !*l).await;
            anyhow::bail!("leaderelection lost")
        }
        None => std::future::pending().await,
    }
}
