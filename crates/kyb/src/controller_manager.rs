//! `kyb controller-manager --kubeconfig …` (the controller manager alone, with leader
//! election; an essential component: losing the lease ends the process), and the controller
//! manager `kyb server` runs in-process with its own identity
//! (`<data-dir>/components/controller-manager.kubeconfig`), restarted when it fails.

use crate::cli::{ControllerArgs, ControllerManagerArgs};
use anyhow::Context as _;
use base64::Engine as _;
use kyb_component::{Component, Context, Health, Supervisor};
use kyb_controllers::credentials::Clients;
use kyb_controllers::manager::{self, Config};
use kyb_controllers::options::Options;
use kyb_runtime::client::ClientOptions;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The component's name (`component/controller-manager` in `/readyz`).
const NAME: &str = "controller-manager";

/// The controllers' options from their flags.
fn options(args: &ControllerArgs, root_ca_pem: Option<String>) -> Options {
    Options {
        controllers: args.controllers.clone(),
        node_monitor_grace_period: args.node_monitor_grace_period,
        node_monitor_period: args.node_monitor_period,
        cluster_cidr: args.cluster_cidr.clone(),
        node_cidr_mask_size: args.node_cidr_mask_size,
        allocate_node_cidrs: args.allocate_node_cidrs,
        workers: args.concurrent_syncs.max(1),
        hpa_sync_period: args.horizontal_pod_autoscaler_sync_period,
        hpa_tolerance: args.horizontal_pod_autoscaler_tolerance,
        hpa_cpu_initialization_period: args.horizontal_pod_autoscaler_cpu_initialization_period,
        hpa_initial_readiness_delay: args.horizontal_pod_autoscaler_initial_readiness_delay,
        hpa_downscale_stabilization: args.horizontal_pod_autoscaler_downscale_stabilization,
        pvclaimbinder_sync_period: args.pvclaimbinder_sync_period,
        resource_quota_sync_period: args.resource_quota_sync_period,
        root_ca_pem,
        cluster_signing_cert_file: args.cluster_signing_cert_file.clone(),
        cluster_signing_key_file: args.cluster_signing_key_file.clone(),
        cluster_signing_duration: args.cluster_signing_duration,
        ..Options::default()
    }
}

/// The CA of the kubeconfig's current cluster, as PEM.
fn kubeconfig_ca(kubeconfig: &Path) -> Option<String> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).ok()?;
    let cluster = file.clusters.first()?.cluster.as_ref()?;
    let data = cluster.certificate_authority_data.as_deref()?;
    let data: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    String::from_utf8(decoded).ok()
}

pub async fn run(args: ControllerManagerArgs) -> anyhow::Result<()> {
    let clients = Clients::per_controller(
        kyb_runtime::client::config_from_kubeconfig(&args.kubeconfig).await?,
        ClientOptions {
            qps: args.kube_api_qps,
            burst: args.kube_api_burst,
        },
    )?;
    let root_ca = match &args.root_ca_file {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => kubeconfig_ca(&args.kubeconfig),
    };
    let mut config = Config::new(options(&args.controllers, root_ca));
    if args.leader_elect {
        let mut election = manager::default_election(&crate::scheduler::identity());
        election.lease_duration = args.leader_elect_lease_duration;
        election.renew_deadline = args.leader_elect_renew_deadline;
        election.retry_period = args.leader_elect_retry_period;
        config.leader_election = Some(election);
    }
    config.metrics_address = match args.metrics_bind_address.as_str() {
        "" | "0" | "off" => None,
        address => Some(
            address
                .parse::<SocketAddr>()
                .with_context(|| format!("--metrics-bind-address {address}"))?,
        ),
    };
    tracing::info!("controller manager starting");
    let mut supervisor = Supervisor::new(Health::new());
    supervisor.essential(kyb_component::once(NAME, move |ctx| {
        manage(clients, config, ctx)
    }));
    Ok(supervisor.run(crate::server::shutdown_signal()).await?)
}

/// The in-process controller manager of `kyb server` as a component, elected through the
/// `kube-system/kube-controller-manager` Lease under `identity` (as k3s's embedded one is),
/// so that two servers sharing one store never both reconcile; each start reads
/// `kubeconfig` again.
pub fn in_process(
    kubeconfig: PathBuf,
    identity: String,
    args: ControllerArgs,
    metrics_address: Option<SocketAddr>,
    root_ca_pem: String,
) -> impl Component {
    kyb_component::from_fn(NAME, move |ctx| {
        let kubeconfig = kubeconfig.clone();
        let options = options(&args, Some(root_ca_pem.clone()));
        let identity = identity.clone();
        async move {
            let clients = Clients::per_controller(
                kyb_runtime::client::config_from_kubeconfig(&kubeconfig).await?,
                ClientOptions::default(),
            )?;
            let mut config = Config::new(options);
            config.metrics_address = metrics_address;
            // A manager running no controller (`--controllers=none`) does not compete.
            if config.options.any_enabled() {
                config.leader_election = Some(manager::default_election(&identity));
            }
            manage(clients, config, ctx).await
        }
    })
}

/// Runs the controllers until `ctx` is cancelled; ready at once (each controller waits
/// for its informers, as in kube-controller-manager).
async fn manage(clients: Clients, config: Config, ctx: Context) -> anyhow::Result<()> {
    ctx.ready();
    manager::run(clients, config, ctx.cancelled())
        .await
        .context("running the controller manager")
}
