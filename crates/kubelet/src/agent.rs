//! The agent as a whole: connects to the container runtime, then runs the pod workers
//! for the pods bound to this node until cancelled. The pods' containers outlive the
//! agent: a new agent finds them through the runtime and carries on.

use crate::config::Config;
use crate::cri::Cri;
use crate::node::static_pods::{self, ManifestSource};
use crate::node::{NodeAgent, NodeOptions};
use crate::pods::{Shared, manager};
use crate::probes::ProbeManager;
use crate::sources::{ApiSources, Sources};
use crate::volumes::VolumeManager;
use anyhow::Context as _;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Node, Pod};
use kyb_runtime::informer::SharedInformers;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The version the node reports (`kubeletVersion`), the API's.
pub const KUBELET_VERSION: &str = "v1.33.0";

/// Events the probes record.
struct ProbeRecorder {
    recorder: kyb_runtime::events::Recorder,
}

impl crate::probes::ProbeEvents for ProbeRecorder {
    fn unhealthy(&self, pod: &k8s_openapi::api::core::v1::Pod, container: &str, message: String) {
        let mut reference = kyb_runtime::events::reference(pod);
        reference.field_path = Some(crate::pods::field_path(pod, container));
        self.recorder.record(
            reference,
            kyb_runtime::events::EventType::Warning,
            "Unhealthy",
            message,
        );
    }
}

/// Runs the agent against the runtime at `endpoint` until `cancel`; `ready` is called
/// once the runtime answered and the pods are being watched.
pub async fn run(
    config: Config,
    client: kube::Client,
    endpoint: &str,
    ready: impl FnOnce(),
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    // Everything the agent starts stops when it returns, failed or not (a restarted agent
    // must find the API's port free).
    let cancel = cancel.child_token();
    let _stop_on_return = cancel.clone().drop_guard();
    let cri = Cri::connect(endpoint)?;
    let version = cri
        .runtime
        .clone()
        .version(cri::VersionRequest::default())
        .await
        .with_context(|| format!("asking the container runtime at {endpoint} for its version"))?
        .into_inner();
    tracing::info!(
        runtime = %version.runtime_name,
        version = %version.runtime_version,
        cri = %version.runtime_api_version,
        node = %config.node_name,
        "node agent starting"
    );
    for dir in [config.pods_dir(), config.logs_dir()] {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let informers = SharedInformers::new(client.clone());
    let pods = manager::informer(&informers, &config.node_name);
    let sources: Arc<dyn Sources> = Arc::new(ApiSources::new(client.clone(), &informers));
    let recorder = kyb_runtime::events::Recorder::new(client.clone(), "kubelet");
    let exec = Arc::new(crate::probes::CriExec::new(cri.runtime.clone()));
    let probes = ProbeManager::new(
        exec,
        Arc::new(ProbeRecorder {
            recorder: recorder.clone(),
        }),
    );
    let host_ip = config
        .node_ip
        .or_else(crate::node::agent::default_route_address)
        .map_or_else(|| "127.0.0.1".to_string(), |ip| ip.to_string());
    let mut options = NodeOptions::new(&config.node_name, config.root_dir.clone(), KUBELET_VERSION);
    options.node_ip = config.node_ip;
    if let Some(server) = &config.server {
        options.kubelet_port = i32::from(server.port);
    }
    config.node.apply(&mut options);
    let eviction_hard = options.eviction_hard.clone();
    let node = NodeAgent::new(
        client.clone(),
        options,
        Arc::new(crate::cri::CriRuntimeInfo { cri: cri.clone() }),
    );
    let resources = node.resources();
    let pressure = node.pressure();
    let shared = Arc::new(Shared {
        images: crate::images::ImagePuller::new(cri.clone()),
        cri,
        client: client.clone(),
        node_name: config.node_name.clone(),
        host_ips: vec![host_ip],
        pods_dir: config.pods_dir(),
        logs_dir: config.logs_dir(),
        runtime_name: version.runtime_name,
        volumes: VolumeManager::new(config.pods_dir(), sources.clone()),
        probes,
        sources,
        recorder,
        backoff: Mutex::new(Default::default()),
        status: crate::pods::status_manager::StatusManager::new(client.clone()),
        admitted: Default::default(),
        pods: pods.clone(),
        resources,
        cgroup_driver: kyb_node_sys::cgroup::driver(),
        cluster_dns: vec![],
        cluster_domain: "cluster.local".into(),
        resolv_conf: "/etc/resolv.conf".into(),
        seccomp_root: config.root_dir.join("seccomp"),
    });
    // The kubelet's API (an address in use fails the agent, as it fails kubelet).
    if let Some(server) = &config.server {
        let stats: Arc<dyn crate::stats::NodeStats> = Arc::new(crate::stats::CriStats::new(
            shared.cri.clone(),
            &config.node_name,
            config.root_dir.clone(),
            config.logs_dir(),
        ));
        let host = Arc::new(crate::server::Host {
            shared: shared.clone(),
            stats,
            configz: crate::server::configz(&config),
            node_log_dir: "/var/log".into(),
            pod_starts: Default::default(),
        });
        let node_ips: Vec<std::net::IpAddr> = shared
            .host_ips
            .iter()
            .filter_map(|ip| ip.parse().ok())
            .collect();
        crate::server::start(server, host, &node_ips, client.clone(), cancel.clone()).await?;
    }
    tokio::spawn(crate::logs::rotation::run(
        shared.cri.clone(),
        config.log_rotation,
        cancel.clone(),
    ));
    // The node is registered once the server listens (its Node names the port).
    let node_task = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if let Err(error) = node.run(|| true, cancel.cancelled_owned()).await {
                tracing::error!(error = %format!("{error:#}"), "the node's registration and status");
            }
        })
    };
    // Static pods: read once now (so the first sweep of orphans knows them), then every
    // 20 s; their mirror pods kept in the API.
    let statics = config.pod_manifest_path.clone().map(|dir| {
        let mut source = ManifestSource::new(dir, &config.node_name);
        let (tx, rx) = tokio::sync::watch::channel(source.read());
        tokio::spawn(source.run(tx, cancel.clone().cancelled_owned()));
        tokio::spawn(mirror_pods(
            client.clone(),
            config.node_name.clone(),
            shared.pods.clone(),
            rx.clone(),
            cancel.clone(),
        ));
        rx
    });
    crate::housekeeping::spawn(
        shared.clone(),
        statics.clone(),
        eviction_hard,
        pressure,
        config.root_dir.clone(),
        crate::images::PAUSE_IMAGE,
        cancel.clone(),
    );
    let _watching = informers.start();
    ready();
    manager::run(shared, pods, statics, cancel).await;
    let _ = node_task.await;
    Ok(())
}

/// Keeps a mirror pod in the API for each static pod (re-created when deleted or stale),
/// and deletes mirror pods whose static pod is gone: on every change of the static pods
/// and every 10 s.
async fn mirror_pods(
    client: kube::Client,
    node_name: String,
    pods: Arc<kyb_runtime::informer::Informer<Pod>>,
    mut statics: tokio::sync::watch::Receiver<Vec<Pod>>,
    cancel: CancellationToken,
) {
    let nodes: kube::Api<Node> = kube::Api::all(client.clone());
    loop {
        let now = statics.borrow_and_update().clone();
        if let Ok(node) = nodes.get(&node_name).await {
            for static_pod in &now {
                let namespace = static_pod
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or("default");
                let name = static_pod.metadata.name.as_deref().unwrap_or_default();
                let current = pods
                    .get(namespace, name)
                    .filter(|p| static_pods::is_mirror(p));
                if let Err(error) =
                    static_pods::sync_mirror_pod(&client, static_pod, current.as_deref(), &node)
                        .await
                {
                    tracing::warn!(pod = %name, error = %format!("{error:#}"), "mirror pod");
                }
            }
        }
        if let Err(error) =
            static_pods::delete_orphaned_mirror_pods(&client, &node_name, &now).await
        {
            tracing::warn!(error = %format!("{error:#}"), "deleting orphaned mirror pods");
        }
        tokio::select! {
            changed = statics.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(Duration::from_secs(10)) => {}
            () = cancel.cancelled() => return,
        }
    }
}
