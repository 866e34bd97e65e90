//! `kyb kubelet --kubeconfig …` (the node agent alone, an essential component: its
//! failure ends the process), and the agent `kyb server` runs in-process with the node's
//! identity (`<data-dir>/components/kubelet.kubeconfig`), restarted when it fails.

use crate::cli::{KubeletArgs, NodeArgs};
use anyhow::Context as _;
use kyb_component::{Component, Context, Health, Supervisor};
use kyb_kubelet::server::{Issuer, ServingCertificate};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

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
    let config = config(&args.node, &data_dir, (args.address, args.port), None, None)?;
    let mut supervisor = Supervisor::new(Health::new());
    let node = args.node.clone();
    supervisor.essential(kyb_component::once(NAME, move |ctx| {
        agent(client, config, node, ctx)
    }));
    Ok(supervisor.run(crate::server::shutdown_signal()).await?)
}

/// The agent's settings from its flags and the data dir; its API listens on `listen`, with
/// a certificate from `issuer` and client certificates of `client_ca_pem` unless the flags
/// say otherwise.
pub fn config(
    args: &NodeArgs,
    data_dir: &std::path::Path,
    listen: (IpAddr, u16),
    issuer: Option<Issuer>,
    client_ca_pem: Option<String>,
) -> anyhow::Result<kyb_kubelet::Config> {
    let log_rotation = kyb_kubelet::logs::LogRotation::new(
        &args.container_log_max_size,
        args.container_log_max_files,
    )
    .map_err(anyhow::Error::msg)?;
    let certificate = match (&args.tls_cert_file, &args.tls_private_key_file, issuer) {
        (Some(cert), Some(key), _) => ServingCertificate::Files {
            cert: cert.clone(),
            key: key.clone(),
        },
        (_, _, Some(issuer)) => ServingCertificate::Issued(issuer),
        _ => ServingCertificate::Bootstrap,
    };
    let client_ca_pem = match &args.client_ca_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --client-ca-file {}", path.display()))?,
        ),
        None => client_ca_pem,
    };
    let server = kyb_kubelet::server::ServerConfig {
        address: listen.0,
        port: listen.1,
        certificate,
        client_ca_pem,
    };
    let node = kyb_kubelet::config::NodeFlags::parse(
        args.node_labels.as_deref(),
        args.register_with_taints.as_deref(),
        Some(args.max_pods),
        args.system_reserved.as_deref(),
        args.kube_reserved.as_deref(),
        args.eviction_hard.as_deref(),
    )
    .map_err(anyhow::Error::msg)?;
    Ok(kyb_kubelet::Config {
        node,
        node_name: args
            .hostname_override
            .clone()
            .unwrap_or_else(crate::identities::node_name),
        root_dir: data_dir.join("agent"),
        container_runtime_endpoint: args.container_runtime_endpoint.clone(),
        node_ip: args.node_ip,
        pod_manifest_path: args.pod_manifest_path.clone(),
        server: Some(server),
        client_ca_file: args.client_ca_file.clone(),
        log_rotation,
    })
}

/// Issues the in-process agent's serving certificate from the cluster CA in `pki_dir`
/// (`kubelet-serving.crt`: CN `system:node:<name>`, O `system:nodes`, the node's names).
fn cluster_ca_issuer(pki_dir: PathBuf, node_name: String) -> Issuer {
    Arc::new(move |sans: &kyb_pki::Sans| {
        let ca = kyb_pki::ClientIssuer::open(&pki_dir)
            .with_context(|| format!("opening the cluster CA in {}", pki_dir.display()))?;
        Ok(ca.serving(
            "kubelet-serving",
            &format!("system:node:{node_name}"),
            &["system:nodes"],
            sans,
        )?)
    })
}

/// The agent `kyb server` runs in-process, as the node `system:node:<host name>`; each
/// start reads `kubeconfig` again.
pub fn in_process(
    kubeconfig: PathBuf,
    args: NodeArgs,
    data_dir: PathBuf,
    listen: (IpAddr, u16),
) -> impl Component {
    kyb_component::from_fn(NAME, move |ctx| {
        let kubeconfig = kubeconfig.clone();
        let args = args.clone();
        let pki_dir = data_dir.join("pki");
        let ca_pem = std::fs::read_to_string(pki_dir.join("ca.crt"));
        let config = ca_pem
            .with_context(|| format!("reading the cluster CA in {}", pki_dir.display()))
            .and_then(|ca_pem| {
                let node_name = args
                    .hostname_override
                    .clone()
                    .unwrap_or_else(crate::identities::node_name);
                let issuer = cluster_ca_issuer(pki_dir.clone(), node_name);
                config(&args, &data_dir, listen, Some(issuer), Some(ca_pem))
            });
        async move {
            let config = config?;
            let client = crate::scheduler::client(&kubeconfig).await?;
            agent(client, config, args, ctx).await
        }
    })
}

/// The pod network's addresses until the node has a `spec.podCIDR` of its own (issue 19
/// brings the network from node IPAM).
const DEFAULT_POD_CIDR: &str = "10.42.0.0/24";

async fn agent(
    client: kube::Client,
    config: kyb_kubelet::Config,
    args: NodeArgs,
    ctx: Context,
) -> anyhow::Result<()> {
    use kyb_kubelet::containerd::{Containerd, ContainerdConfig, write_cni_config};
    let cancel = ctx.token().clone();
    // Our own containerd unless told to use another runtime; it is stopped with the agent
    // (its containers keep running for the next start to find).
    let (endpoint, supervised) = match args.container_runtime_endpoint.clone() {
        Some(endpoint) => (endpoint, None),
        None => {
            let runtime = ContainerdConfig::new(&config.root_dir);
            write_cni_config(&runtime.cni_conf_dir, DEFAULT_POD_CIDR)
                .context("writing the CNI configuration")?;
            let containerd = Containerd::start(runtime)
                .await
                .context("starting the node's containerd")?;
            let endpoint = containerd.endpoint();
            let stop = cancel.child_token();
            let task = tokio::spawn(containerd.supervise(stop.clone().cancelled_owned()));
            (endpoint, Some((stop, task)))
        }
    };
    let outcome = kyb_kubelet::agent::run(config, client, &endpoint, || ctx.ready(), cancel)
        .await
        .context("running the node agent");
    if let Some((stop, task)) = supervised {
        stop.cancel();
        let _ = task.await;
    }
    outcome
}
