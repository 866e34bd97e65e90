//! The agent as a whole: connects to the container runtime, then runs the pod workers
//! for the pods bound to this node until cancelled. The pods' containers outlive the
//! agent: a new agent finds them through the runtime and carries on.

use crate::config::Config;
use crate::cri::Cri;
use crate::node::{NodeAgent, NodeOptions};
use crate::pods::{Shared, manager};
use crate::probes::ProbeManager;
use crate::sources::{ApiSources, Sources};
use crate::volumes::VolumeManager;
use anyhow::Context as _;
use k8s_cri::v1 as cri;
use kyb_runtime::informer::SharedInformers;
use std::sync::{Arc, Mutex};
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
    let exec = Arc::new(crate::pods::exec::CriExec { cri: cri.clone() });
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
    let node = NodeAgent::new(
        client.clone(),
        options,
        Arc::new(crate::cri::CriRuntimeInfo { cri: cri.clone() }),
    );
    let node_task = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if let Err(error) = node.run(|| true, cancel.cancelled_owned()).await {
                tracing::error!(error = %format!("{error:#}"), "the node's registration and status");
            }
        })
    };
    let shared = Arc::new(Shared {
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
        status: crate::pods::status_manager::StatusManager::new(client),
    });
    let _watching = informers.start();
    ready();
    manager::run(shared, pods, cancel).await;
    let _ = node_task.await;
    Ok(())
}
