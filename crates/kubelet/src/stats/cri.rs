//! [`CriStats`]: the node's [`NodeStats`] from the container runtime and the machine, as
//! kubelet's CRI stats provider builds the summary.
//!
//! One sampling round makes three CRI calls, whatever the number of pods, at the same
//! time: the ready sandboxes (the pods, their references and start times), the running
//! containers (names and start times) and every container's statistics (CPU, memory,
//! writable layer) — plus, for the full summary, the image file system. The node's CPU
//! and memory come from the root cgroup (`kyb-node-sys::machine`), its file systems from
//! `statvfs`. A pod's CPU and memory are its containers' sums. `usageNanoCores` is the
//! rate between this round's cumulative counters and a kept reference ([`Rates`]).

use super::rate::Rates;
use super::summary::{
    ContainerStats, CpuStats, FsStats, MemoryStats, NodeStats as NodeSummary, PodReference,
    PodStats, RlimitStats, RuntimeStats, Summary, Time,
};
use super::{NodeStats, resource_metrics};
use crate::container::labels::CONTAINER_NAME;
use crate::cri::Cri;
use anyhow::Context as _;
use async_trait::async_trait;
use k8s_cri::v1 as cri;
use kyb_node_sys::machine;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The node's resource usage from CRI and the machine.
pub struct CriStats {
    cri: Cri,
    node_name: String,
    /// The kubelet's root directory: its file system is the node's (`fs`).
    root_dir: PathBuf,
    /// `/var/log/pods`: each container's log files.
    logs_dir: PathBuf,
    rates: Mutex<Rates>,
}

/// What one round reads from the runtime.
struct RuntimeSample {
    sandboxes: Vec<cri::PodSandbox>,
    containers: Vec<cri::Container>,
    stats: Vec<cri::ContainerStats>,
    image_fs: Option<cri::FilesystemUsage>,
}

impl CriStats {
    /// Stats for `node_name` over the runtime `cri`; `root_dir` is the kubelet's root
    /// directory and `logs_dir` the pods' log directory (`Config::logs_dir`).
    pub fn new(cri: Cri, node_name: &str, root_dir: PathBuf, logs_dir: PathBuf) -> CriStats {
        CriStats {
            cri,
            node_name: node_name.to_string(),
            root_dir,
            logs_dir,
            rates: Mutex::new(Rates::default()),
        }
    }

    async fn read_runtime(&self, with_image_fs: bool) -> anyhow::Result<RuntimeSample> {
        let mut runtime = self.cri.runtime.clone();
        let sandboxes = {
            let mut runtime = runtime.clone();
            async move {
                runtime
                    .list_pod_sandbox(cri::ListPodSandboxRequest {
                        filter: Some(cri::PodSandboxFilter {
                            state: Some(cri::PodSandboxStateValue {
                                state: cri::PodSandboxState::SandboxReady as i32,
                            }),
                            ..Default::default()
                        }),
                    })
                    .await
                    .map_err(|e| anyhow::anyhow!("listing pod sandboxes: {}", e.message()))
                    .map(|r| r.into_inner().items)
            }
        };
        let containers = {
            let mut runtime = runtime.clone();
            async move {
                runtime
                    .list_containers(cri::ListContainersRequest {
                        filter: Some(cri::ContainerFilter {
                            state: Some(cri::ContainerStateValue {
                                state: cri::ContainerState::ContainerRunning as i32,
                            }),
                            ..Default::default()
                        }),
                    })
                    .await
                    .map_err(|e| anyhow::anyhow!("listing containers: {}", e.message()))
                    .map(|r| r.into_inner().containers)
            }
        };
        let stats = async move {
            runtime
                .list_container_stats(cri::ListContainerStatsRequest { filter: None })
                .await
                .map_err(|e| anyhow::anyhow!("listing container stats: {}", e.message()))
                .map(|r| r.into_inner().stats)
        };
        let image_fs = {
            let mut images = self.cri.images.clone();
            async move {
                if !with_image_fs {
                    return Ok(None);
                }
                images
                    .image_fs_info(cri::ImageFsInfoRequest {})
                    .await
                    .map_err(|e| anyhow::anyhow!("reading the image file system: {}", e.message()))
                    .map(|r| r.into_inner().image_filesystems.into_iter().next())
            }
        };
        let (sandboxes, containers, stats, image_fs) =
            tokio::try_join!(sandboxes, containers, stats, image_fs)?;
        Ok(RuntimeSample {
            sandboxes,
            containers,
            stats,
            image_fs,
        })
    }

    /// One sampling round: the summary now (file systems too unless
    /// `only_cpu_and_memory`).
    pub async fn sample(&self, only_cpu_and_memory: bool) -> anyhow::Result<Summary> {
        let runtime = self.read_runtime(!only_cpu_and_memory).await?;
        let now = Time::now();
        let node_cpu = machine::cpu_usage_core_nanoseconds()
            .map_err(|e| tracing::debug!(error = %e, "reading the node's CPU usage"))
            .ok();
        let mut rates = self
            .rates
            .lock()
            .map_err(|_| anyhow::anyhow!("the CPU rate table is poisoned"))?;
        let mut live = HashSet::new();
        let node = self.node(
            now,
            node_cpu,
            &runtime,
            only_cpu_and_memory,
            &mut rates,
            &mut live,
        );
        let pods = self.pods(now, &runtime, only_cpu_and_memory, &mut rates, &mut live);
        rates.retain(&live);
        drop(rates);
        Ok(Summary { node, pods })
    }

    fn node(
        &self,
        now: Time,
        cpu_used: Option<u64>,
        runtime: &RuntimeSample,
        only_cpu_and_memory: bool,
        rates: &mut Rates,
        live: &mut HashSet<String>,
    ) -> NodeSummary {
        let cpu = cpu_used.map(|used| {
            live.insert("node".into());
            CpuStats {
                time: now,
                usage_nano_cores: rates.observe("node", now.0, used),
                usage_core_nano_seconds: Some(used),
            }
        });
        let memory = match (machine::meminfo(), machine::memory_working_set()) {
            (Ok(info), Ok(working_set)) => Some(MemoryStats {
                time: now,
                available_bytes: Some(info.total.saturating_sub(working_set)),
                usage_bytes: Some(info.total.saturating_sub(info.available)),
                working_set_bytes: Some(working_set),
                ..Default::default()
            }),
            (Err(e), _) | (_, Err(e)) => {
                tracing::debug!(error = %e, "reading the node's memory");
                None
            }
        };
        let start_time = machine::boot_time()
            .map(|seconds| Time(seconds.saturating_mul(1_000_000_000)))
            .unwrap_or_default();
        let mut node = NodeSummary {
            node_name: self.node_name.clone(),
            start_time,
            cpu,
            memory,
            ..Default::default()
        };
        if !only_cpu_and_memory {
            node.fs = fs_of(&self.root_dir, now);
            node.runtime = Some(RuntimeStats {
                image_fs: runtime.image_fs.as_ref().map(|usage| image_fs(usage, now)),
            });
            node.rlimit = machine::pids().ok().map(|pids| RlimitStats {
                time: now,
                maxpid: Some(pids.max),
                curproc: Some(pids.running),
            });
        }
        node
    }

    fn pods(
        &self,
        now: Time,
        runtime: &RuntimeSample,
        only_cpu_and_memory: bool,
        rates: &mut Rates,
        live: &mut HashSet<String>,
    ) -> Vec<PodStats> {
        let stats: HashMap<&str, &cri::ContainerStats> = runtime
            .stats
            .iter()
            .filter_map(|s| Some((s.attributes.as_ref()?.id.as_str(), s)))
            .collect();
        let mut by_sandbox: HashMap<&str, Vec<&cri::Container>> = HashMap::new();
        for container in &runtime.containers {
            by_sandbox
                .entry(container.pod_sandbox_id.as_str())
                .or_default()
                .push(container);
        }
        let root_fs = (!only_cpu_and_memory)
            .then(|| fs_of(&self.root_dir, now))
            .flatten();
        let image_fs = runtime.image_fs.as_ref().map(|usage| image_fs(usage, now));
        // The newest ready sandbox of each pod.
        let mut newest: HashMap<&str, &cri::PodSandbox> = HashMap::new();
        for sandbox in &runtime.sandboxes {
            let Some(metadata) = &sandbox.metadata else {
                continue;
            };
            let entry = newest.entry(metadata.uid.as_str()).or_insert(sandbox);
            if sandbox.created_at > entry.created_at {
                *entry = sandbox;
            }
        }
        let mut pods: Vec<PodStats> = newest
            .into_values()
            .filter_map(|sandbox| {
                let metadata = sandbox.metadata.as_ref()?;
                let pod_ref = PodReference {
                    name: metadata.name.clone(),
                    namespace: metadata.namespace.clone(),
                    uid: metadata.uid.clone(),
                };
                let log_dir = self.logs_dir.join(format!(
                    "{}_{}_{}",
                    pod_ref.namespace, pod_ref.name, pod_ref.uid
                ));
                let mut containers: Vec<ContainerStats> = by_sandbox
                    .get(sandbox.id.as_str())
                    .into_iter()
                    .flatten()
                    .map(|container| {
                        let stat = stats.get(container.id.as_str()).copied();
                        let name = container
                            .metadata
                            .as_ref()
                            .map(|m| m.name.clone())
                            .or_else(|| container.labels.get(CONTAINER_NAME).cloned())
                            .unwrap_or_default();
                        let mut out = container_stats(name, container, stat, now, rates, live);
                        if !only_cpu_and_memory {
                            out.rootfs = stat.and_then(|s| {
                                rootfs(s.writable_layer.as_ref(), image_fs.as_ref(), now)
                            });
                            out.logs = logs(&log_dir.join(&out.name), root_fs.as_ref(), now);
                        }
                        out
                    })
                    .collect();
                containers.sort_by(|a, b| a.name.cmp(&b.name));
                let mut pod = PodStats {
                    start_time: Time(sandbox.created_at),
                    cpu: pod_cpu(&pod_ref.uid, &containers, now, rates, live),
                    memory: pod_memory(&containers, now),
                    pod_ref,
                    containers,
                    ..Default::default()
                };
                if !only_cpu_and_memory {
                    pod.ephemeral_storage = ephemeral_storage(&pod.containers, root_fs.as_ref());
                }
                Some(pod)
            })
            .collect();
        pods.sort_by(|a, b| {
            (&a.pod_ref.namespace, &a.pod_ref.name).cmp(&(&b.pod_ref.namespace, &b.pod_ref.name))
        });
        pods
    }
}

/// A container's CPU and memory from its CRI statistics.
fn container_stats(
    name: String,
    container: &cri::Container,
    stat: Option<&cri::ContainerStats>,
    now: Time,
    rates: &mut Rates,
    live: &mut HashSet<String>,
) -> ContainerStats {
    let at = |timestamp: i64| if timestamp > 0 { Time(timestamp) } else { now };
    let cpu = stat.and_then(|s| s.cpu.as_ref()).and_then(|cpu| {
        let used = cpu.usage_core_nano_seconds.as_ref()?.value;
        let time = at(cpu.timestamp);
        let key = format!("container/{}", container.id);
        let rate = rates.observe(&key, time.0, used);
        live.insert(key);
        Some(CpuStats {
            time,
            usage_nano_cores: rate,
            usage_core_nano_seconds: Some(used),
        })
    });
    let memory = stat
        .and_then(|s| s.memory.as_ref())
        .map(|memory| MemoryStats {
            time: at(memory.timestamp),
            available_bytes: memory.available_bytes.as_ref().map(|v| v.value),
            usage_bytes: memory.usage_bytes.as_ref().map(|v| v.value),
            working_set_bytes: memory.working_set_bytes.as_ref().map(|v| v.value),
            rss_bytes: memory.rss_bytes.as_ref().map(|v| v.value),
            page_faults: memory.page_faults.as_ref().map(|v| v.value),
            major_page_faults: memory.major_page_faults.as_ref().map(|v| v.value),
        });
    ContainerStats {
        name,
        start_time: Time(container.created_at),
        cpu,
        memory,
        rootfs: None,
        logs: None,
    }
}

/// A pod's CPU: its containers' cumulative time summed, its rate kept per pod.
fn pod_cpu(
    uid: &str,
    containers: &[ContainerStats],
    now: Time,
    rates: &mut Rates,
    live: &mut HashSet<String>,
) -> Option<CpuStats> {
    let cpus: Vec<&CpuStats> = containers.iter().filter_map(|c| c.cpu.as_ref()).collect();
    if cpus.is_empty() {
        return None;
    }
    let used: u64 = cpus
        .iter()
        .filter_map(|c| c.usage_core_nano_seconds)
        .fold(0u64, u64::saturating_add);
    let time = cpus.iter().map(|c| c.time).max().unwrap_or(now);
    let key = format!("pod/{uid}");
    let rate = rates.observe(&key, time.0, used);
    live.insert(key);
    Some(CpuStats {
        time,
        usage_nano_cores: rate,
        usage_core_nano_seconds: Some(used),
    })
}

/// A pod's memory: its containers' figures summed.
fn pod_memory(containers: &[ContainerStats], now: Time) -> Option<MemoryStats> {
    let memories: Vec<&MemoryStats> = containers
        .iter()
        .filter_map(|c| c.memory.as_ref())
        .collect();
    if memories.is_empty() {
        return None;
    }
    let sum = |field: fn(&MemoryStats) -> Option<u64>| -> Option<u64> {
        memories
            .iter()
            .map(|m| field(m))
            .try_fold(0u64, |total, v| Some(total.saturating_add(v?)))
    };
    Some(MemoryStats {
        time: memories.iter().map(|m| m.time).max().unwrap_or(now),
        available_bytes: None,
        usage_bytes: sum(|m| m.usage_bytes),
        working_set_bytes: sum(|m| m.working_set_bytes),
        rss_bytes: sum(|m| m.rss_bytes),
        page_faults: sum(|m| m.page_faults),
        major_page_faults: sum(|m| m.major_page_faults),
    })
}

/// The file system holding `path`, whole.
fn fs_of(path: &Path, now: Time) -> Option<FsStats> {
    let fs = machine::fs_stats(path)
        .map_err(|e| tracing::debug!(error = %e, "reading a file system's size"))
        .ok()?;
    Some(FsStats {
        time: now,
        available_bytes: Some(fs.available),
        capacity_bytes: Some(fs.capacity),
        used_bytes: Some(fs.capacity.saturating_sub(fs.available)),
        inodes_free: Some(fs.inodes_free),
        inodes: Some(fs.inodes),
        inodes_used: Some(fs.inodes.saturating_sub(fs.inodes_free)),
    })
}

/// The image file system: the runtime's usage, the size of the file system it is on.
fn image_fs(usage: &cri::FilesystemUsage, now: Time) -> FsStats {
    let whole = usage
        .fs_id
        .as_ref()
        .and_then(|id| fs_of(Path::new(&id.mountpoint), now))
        .unwrap_or_default();
    FsStats {
        time: now,
        used_bytes: usage.used_bytes.as_ref().map(|v| v.value),
        inodes_used: usage.inodes_used.as_ref().map(|v| v.value),
        ..whole
    }
}

/// A container's writable layer, on the image file system.
fn rootfs(
    layer: Option<&cri::FilesystemUsage>,
    image_fs: Option<&FsStats>,
    now: Time,
) -> Option<FsStats> {
    let layer = layer?;
    Some(FsStats {
        time: if layer.timestamp > 0 {
            Time(layer.timestamp)
        } else {
            now
        },
        available_bytes: image_fs.and_then(|fs| fs.available_bytes),
        capacity_bytes: image_fs.and_then(|fs| fs.capacity_bytes),
        used_bytes: layer.used_bytes.as_ref().map(|v| v.value),
        inodes_free: image_fs.and_then(|fs| fs.inodes_free),
        inodes: image_fs.and_then(|fs| fs.inodes),
        inodes_used: layer.inodes_used.as_ref().map(|v| v.value),
    })
}

/// A container's log files (`<logs>/<ns>_<pod>_<uid>/<container>/`), on the root file
/// system.
fn logs(dir: &Path, root_fs: Option<&FsStats>, now: Time) -> Option<FsStats> {
    let entries = std::fs::read_dir(dir).ok()?;
    let (mut bytes, mut files) = (0u64, 0u64);
    for entry in entries.flatten() {
        if let Ok(metadata) = entry.metadata()
            && metadata.is_file()
        {
            bytes = bytes.saturating_add(metadata.len());
            files += 1;
        }
    }
    Some(FsStats {
        time: now,
        available_bytes: root_fs.and_then(|fs| fs.available_bytes),
        capacity_bytes: root_fs.and_then(|fs| fs.capacity_bytes),
        used_bytes: Some(bytes),
        inodes_free: root_fs.and_then(|fs| fs.inodes_free),
        inodes: root_fs.and_then(|fs| fs.inodes),
        inodes_used: Some(files),
    })
}

/// A pod's ephemeral storage: its containers' writable layers and logs.
fn ephemeral_storage(containers: &[ContainerStats], root_fs: Option<&FsStats>) -> Option<FsStats> {
    let parts: Vec<&FsStats> = containers
        .iter()
        .flat_map(|c| [c.rootfs.as_ref(), c.logs.as_ref()])
        .flatten()
        .collect();
    let time = parts.iter().map(|p| p.time).max()?;
    let total = |field: fn(&FsStats) -> Option<u64>| {
        Some(parts.iter().filter_map(|p| field(p)).sum::<u64>())
    };
    Some(FsStats {
        time,
        available_bytes: root_fs.and_then(|fs| fs.available_bytes),
        capacity_bytes: root_fs.and_then(|fs| fs.capacity_bytes),
        used_bytes: total(|p| p.used_bytes),
        inodes_free: root_fs.and_then(|fs| fs.inodes_free),
        inodes: root_fs.and_then(|fs| fs.inodes),
        inodes_used: total(|p| p.inodes_used),
    })
}

#[async_trait]
impl NodeStats for CriStats {
    async fn summary(&self, only_cpu_and_memory: bool) -> anyhow::Result<serde_json::Value> {
        let summary = self
            .sample(only_cpu_and_memory)
            .await
            .context("reading the node's statistics")?;
        let summary = if only_cpu_and_memory {
            summary.only_cpu_and_memory()
        } else {
            summary
        };
        serde_json::to_value(summary).context("encoding the summary")
    }

    async fn resource_metrics(&self) -> anyhow::Result<String> {
        match self.sample(true).await {
            Ok(summary) => Ok(resource_metrics::write(Some(&summary))),
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "reading the resource metrics");
                Ok(resource_metrics::write(None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, used: u64, working_set: u64, at: i64) -> ContainerStats {
        ContainerStats {
            name: name.into(),
            start_time: Time(1),
            cpu: Some(CpuStats {
                time: Time(at),
                usage_nano_cores: None,
                usage_core_nano_seconds: Some(used),
            }),
            memory: Some(MemoryStats {
                time: Time(at),
                working_set_bytes: Some(working_set),
                usage_bytes: Some(working_set * 2),
                ..Default::default()
            }),
            rootfs: Some(FsStats {
                time: Time(at),
                used_bytes: Some(10),
                inodes_used: Some(1),
                ..Default::default()
            }),
            logs: None,
        }
    }

    #[test]
    fn a_pod_is_the_sum_of_its_containers_with_its_own_rate() {
        let s = 1_000_000_000;
        let mut rates = Rates::default();
        let mut live = HashSet::new();
        let first = [
            container("a", 100, 4096, 10 * s),
            container("b", 50, 8192, 11 * s),
        ];
        let cpu = pod_cpu("u", &first, Time(0), &mut rates, &mut live).unwrap_or_default();
        assert_eq!(cpu.usage_core_nano_seconds, Some(150));
        assert_eq!(cpu.time, Time(11 * s));
        assert_eq!(cpu.usage_nano_cores, None);
        assert!(live.contains("pod/u"));
        let later = [
            container("a", 100 + 2 * s as u64, 4096, 13 * s),
            container("b", 50, 8192, 13 * s),
        ];
        let cpu = pod_cpu("u", &later, Time(0), &mut rates, &mut live).unwrap_or_default();
        assert_eq!(cpu.usage_nano_cores, Some(1_000_000_000));
        let memory = pod_memory(&later, Time(0)).unwrap_or_default();
        assert_eq!(memory.working_set_bytes, Some(12288));
        assert_eq!(memory.usage_bytes, Some(24576));
        assert_eq!(memory.rss_bytes, None);
        let storage = ephemeral_storage(&later, None).unwrap_or_default();
        assert_eq!(storage.used_bytes, Some(20));
        assert_eq!(storage.inodes_used, Some(2));
        assert_eq!(pod_cpu("v", &[], Time(0), &mut rates, &mut live), None);
    }

    #[test]
    fn log_usage_is_the_size_of_the_container_s_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("0.log"), b"12345").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("1.log"), b"678").unwrap_or_else(|e| panic!("{e}"));
        let logs = logs(dir.path(), None, Time(5)).unwrap_or_default();
        assert_eq!(logs.used_bytes, Some(8));
        assert_eq!(logs.inodes_used, Some(2));
        assert_eq!(super::logs(&dir.path().join("none"), None, Time(5)), None);
    }
}
