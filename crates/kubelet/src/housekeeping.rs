//! The agent's housekeeping over its pods: container and image garbage collection every
//! minute, and the eviction manager (disk reclaimed first, then pods evicted), with the
//! traits the node module asks for implemented on the pod workers' view of the node.

use crate::container::labels::{CONTAINER_NAME, POD_UID};
use crate::cri::Cri;
use crate::node::PressureHandle;
use crate::node::eviction::{
    ContainerUsage, EvictionManager, NodeReclaimer, PodKiller, PodStats, PodUsage,
};
use crate::node::gc::{self, ContainerGcPolicy, ImageGc, ImageGcPolicy, PodState};
use crate::node::thresholds::Thresholds;
use crate::pods::Shared;
use async_trait::async_trait;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often dead containers and unused images are collected (kubelet's 1 minute and 5
/// minutes; images are only removed above the high threshold).
const CONTAINER_GC_PERIOD: Duration = Duration::from_secs(60);
const IMAGE_GC_PERIOD: Duration = Duration::from_secs(300);

/// The pods whose content must stay: those the API has for this node, and the static pods.
struct LivePods {
    shared: Arc<Shared>,
    statics: Option<tokio::sync::watch::Receiver<Vec<Pod>>>,
}

impl PodState for LivePods {
    fn should_pod_content_be_removed(&self, pod_uid: &str) -> bool {
        let known = self
            .shared
            .pods
            .list()
            .iter()
            .any(|p| p.metadata.uid.as_deref() == Some(pod_uid))
            || self.statics.as_ref().is_some_and(|s| {
                s.borrow()
                    .iter()
                    .any(|p| p.metadata.uid.as_deref() == Some(pod_uid))
            });
        !known
    }
}

/// Pods' usage from the runtime's container statistics.
struct CriPodStats {
    shared: Arc<Shared>,
}

#[async_trait]
impl PodStats for CriPodStats {
    async fn active_pods(&self) -> anyhow::Result<Vec<PodUsage>> {
        let stats = self
            .shared
            .cri
            .runtime
            .clone()
            .list_container_stats(cri::ListContainerStatsRequest { filter: None })
            .await
            .map_err(|e| anyhow::anyhow!("listing container stats: {}", e.message()))?
            .into_inner()
            .stats;
        let mut by_pod: HashMap<String, Vec<ContainerUsage>> = HashMap::new();
        for stat in stats {
            let Some(attributes) = stat.attributes else {
                continue;
            };
            let Some(uid) = attributes.labels.get(POD_UID) else {
                continue;
            };
            by_pod.entry(uid.clone()).or_default().push(ContainerUsage {
                name: attributes
                    .labels
                    .get(CONTAINER_NAME)
                    .cloned()
                    .unwrap_or_default(),
                memory: stat
                    .memory
                    .and_then(|m| m.working_set_bytes)
                    .map_or(0, |v| v.value),
                ephemeral_storage: stat
                    .writable_layer
                    .as_ref()
                    .and_then(|w| w.used_bytes.as_ref())
                    .map_or(0, |v| v.value),
                inodes: stat
                    .writable_layer
                    .and_then(|w| w.inodes_used)
                    .map_or(0, |v| v.value),
                processes: 0,
            });
        }
        Ok(self
            .shared
            .pods
            .list()
            .into_iter()
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .map(|pod| {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                PodUsage {
                    containers: by_pod.remove(&uid).unwrap_or_default(),
                    pod,
                }
            })
            .collect())
    }

    async fn local_storage(&self) -> anyhow::Result<Vec<(PodUsage, Vec<(String, u64)>)>> {
        let limited = self
            .shared
            .pods
            .list()
            .iter()
            .any(|p| crate::node::local_storage::has_limits(p));
        if !limited {
            return Ok(vec![]);
        }
        let mut measured = vec![];
        for usage in self.active_pods().await? {
            if !crate::node::local_storage::has_limits(&usage.pod) {
                continue;
            }
            let uid = usage.pod.metadata.uid.clone().unwrap_or_default();
            let shared = self.shared.clone();
            let empty_dirs =
                tokio::task::spawn_blocking(move || shared.volumes.empty_dir_usage(&uid))
                    .await
                    .unwrap_or_default();
            measured.push((usage, empty_dirs));
        }
        Ok(measured)
    }
}

/// Evicts a pod as kubelet does: its status `Failed` with reason `Evicted` and the
/// eviction manager's message, an `Evicted` event; its worker then stops it (a pod in a
/// terminal phase runs nothing).
struct Evictor {
    shared: Arc<Shared>,
}

#[async_trait]
impl PodKiller for Evictor {
    async fn evict(&self, pod: &Pod, message: &str) -> anyhow::Result<()> {
        self.shared.event(pod, None, true, "Evicted", message);
        let status = PodStatus {
            phase: Some("Failed".into()),
            reason: Some("Evicted".into()),
            message: Some(message.to_string()),
            ..pod.status.clone().unwrap_or_default()
        };
        self.shared.status.set(pod, &status).await
    }
}

/// Runs garbage collection and the eviction manager until `cancel`.
pub fn spawn(
    shared: Arc<Shared>,
    statics: Option<tokio::sync::watch::Receiver<Vec<Pod>>>,
    thresholds: Thresholds,
    pressure: PressureHandle,
    root_dir: std::path::PathBuf,
    sandbox_image: &str,
    cancel: CancellationToken,
) {
    let live: Arc<dyn PodState> = Arc::new(LivePods {
        shared: shared.clone(),
        statics,
    });
    {
        let mut cri: Cri = shared.cri.clone();
        let live = live.clone();
        let mut images = ImageGc::new(ImageGcPolicy::default(), sandbox_image);
        let cancel = cancel.clone();
        let pods = shared.pods.clone();
        tokio::spawn(async move {
            // Only once the API's pods are known (else every pod's content looks
            // orphaned), and a period after the start, as kubelet begins.
            pods.wait_synced().await;
            let start = tokio::time::Instant::now();
            let mut containers =
                tokio::time::interval_at(start + CONTAINER_GC_PERIOD, CONTAINER_GC_PERIOD);
            let mut image_tick = tokio::time::interval_at(start + IMAGE_GC_PERIOD, IMAGE_GC_PERIOD);
            loop {
                tokio::select! {
                    _ = containers.tick() => {
                        if let Err(error) = gc::collect_containers(&mut cri, &ContainerGcPolicy::default(), live.as_ref()).await {
                            tracing::warn!(error = %format!("{error:#}"), "container garbage collection");
                        }
                    }
                    _ = image_tick.tick() => {
                        if let Err(error) = images.garbage_collect(&mut cri).await {
                            tracing::warn!(error = %format!("{error:#}"), "image garbage collection");
                        }
                    }
                    () = cancel.cancelled() => return,
                }
            }
        });
    }
    let reclaimer: Arc<dyn NodeReclaimer> = Arc::new(gc::Reclaimer {
        cri: shared.cri.clone(),
        containers: ContainerGcPolicy::default(),
        images: tokio::sync::Mutex::new(ImageGc::new(ImageGcPolicy::default(), sandbox_image)),
        pods: live,
    });
    let manager = EvictionManager::new(thresholds, pressure);
    tokio::spawn(manager.run(
        root_dir,
        None,
        Arc::new(CriPodStats {
            shared: shared.clone(),
        }),
        Arc::new(Evictor { shared }),
        Some(reclaimer),
        cancel.cancelled_owned(),
    ));
}
