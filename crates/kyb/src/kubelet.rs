//! `kyb kubelet --kubeconfig …` (the node agent alone, an essential component: its
//! failure ends the process), and the agent `kyb server` runs in-process with the node's
//! identity (`<data-dir>/components/kubelet.kubeconfig`), restarted when it fails.

use crate::cli::{KubeletArgs, NodeArgs};
use anyhow::Context as _;
use kyb_component::{Component, Context, Health, Supervisor};
use std::path::PathBuf;

/// The component's name (`component/kubelet` in `/readyz`).
const NAME: &str = "kubelet";

pub async fn run(args: KubeletArgs, data_dir: Option<PathBuf>) -> anyhow::Result<()> {
    anyhow::ensure!(
        kyb_node_sys::privileges::is_root(),
        "the node agent needs root (it runs containers, mounts volumes and configures the \\
         network); run kyb kubelet as root"
    );
    let data_dir = data_dir.map_or_else(crate::server::default_data_dir, Ok)?;
    let client = crate::scheduler::client(&args.kubeconfig).await?;
    let config = config(&args.node, &data_dir);
    let mut supervisor = Supervisor::new(Health::new());
    let node = args.node.clone();
    supervisor.essential(kyb_component::once(NAME, move |ctx| {
        agent(client, config, node, ctx)
    }));
    Ok(supervisor.run(crate::server::shutdown_signal()).await?)
}

/// The agent's settings from its flags and the data dir.
fn config(args: &NodeArgs, data_dir: &std::path::Path) -> kyb_kubelet::Config {
    kyb_kubelet::Config {
        node_name: args
            .hostname_override
            .clone()
            .unwrap_or_else(crate::identities::node_name),
        root_dir: data_dir.join("agent"),
        container_runtime_endpoint: args.container_runtime_endpoint.clone(),
        node_ip: args.node_ip,
    }
}

/// The agent `kyb server` runs in-process, as the node `system:node:<host name>`; each
/// start reads `kubeconfig` again.
pub fn in_process(kubeconfig: PathBuf, args: NodeArgs, data_dir: PathBuf) -> impl Component {
    kyb_component::from_fn(NAME, move |ctx| {
        let kubeconfig = kubeconfig.clone();
        let args = args.clone();
        let config = config(&args, &data_dir);
        async move {
            let client = crate::scheduler::client(&kubeconfig).await?;
            agent(client, config, args, ctx).await
        }
    })
}

async fn agent(
    client: kube::Client,
    config: kyb_kubelet::Config,
    args: NodeArgs,
    ctx: Context,
) -> anyhow::Result<()> {
    let endpoint = args.container_runtime_endpoint.clone().context(
        "--container-runtime-endpoint is needed (the agent's own containerd is not built yet)",
    )?;
    let cancel = ctx.token().clone();
    kyb_kubelet::agent::run(config, client, &endpoint, || ctx.ready(), cancel)
        .await
        .context("running the node agent")
}
