//! The Summary API's types (`k8s.io/kubelet/pkg/apis/stats/v1alpha1`), serialized with
//! Kubernetes' field names: what `/stats/summary` answers and what `/metrics/resource` is
//! written from. Optional figures are left out when unknown, as the kubelet leaves them.

use serde::{Serialize, Serializer};

/// A point in time, in nanoseconds since the epoch; written as `metav1.Time` (RFC 3339,
/// whole seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time(pub i64);

impl Time {
    /// Now, from the system clock.
    pub fn now() -> Time {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        Time(nanos)
    }

    /// Milliseconds since the epoch (Prometheus sample timestamps).
    pub fn millis(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = kyb_apimachinery::time::format_rfc3339(
            self.0.div_euclid(1_000_000_000),
            self.0.rem_euclid(1_000_000_000),
            0,
        )
        .unwrap_or_default();
        serializer.serialize_str(&text)
    }
}

/// The whole summary: the node and its pods.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub node: NodeStats,
    pub pods: Vec<PodStats>,
}

/// The node's own figures.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    pub node_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system_containers: Vec<ContainerStats>,
    pub start_time: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rlimit: Option<RlimitStats>,
}

/// The container runtime's file systems.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_fs: Option<FsStats>,
}

/// Process IDs on the node.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RlimitStats {
    pub time: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maxpid: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curproc: Option<u64>,
}

/// A pod's figures.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    pub pod_ref: PodReference,
    pub start_time: Time,
    pub containers: Vec<ContainerStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume: Vec<VolumeStats>,
    #[serde(rename = "ephemeral-storage", skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage: Option<FsStats>,
}

/// Which pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PodReference {
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

/// A container's figures.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    pub name: String,
    pub start_time: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<FsStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs: Option<FsStats>,
}

/// CPU: the cumulative time used and the rate over the last sampling window.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    pub time: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_nano_cores: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_core_nano_seconds: Option<u64>,
}

/// Memory, in bytes (page faults counted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    pub time: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_set_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_faults: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub major_page_faults: Option<u64>,
}

/// A file system's (or a part of one's) size and use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FsStats {
    pub time: Time,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_free: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<u64>,
}

/// A pod volume's use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VolumeStats {
    #[serde(flatten)]
    pub fs: FsStats,
    pub name: String,
}

impl Summary {
    /// The summary cut to CPU and memory (`?only_cpu_and_memory=true`), as kubelet's
    /// `GetCPUAndMemoryStats` gives it: no file systems, volumes or rlimit.
    pub fn only_cpu_and_memory(mut self) -> Summary {
        self.node.fs = None;
        self.node.runtime = None;
        self.node.rlimit = None;
        for pod in &mut self.pods {
            pod.volume.clear();
            pod.ephemeral_storage = None;
            for container in &mut pod.containers {
                container.rootfs = None;
                container.logs = None;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_kubernetes_names_and_unknowns_are_left_out() {
        let at = Time(1_700_000_000_500_000_000);
        let summary = Summary {
            node: NodeStats {
                node_name: "n1".into(),
                start_time: Time(1_600_000_000_000_000_000),
                cpu: Some(CpuStats {
                    time: at,
                    usage_nano_cores: None,
                    usage_core_nano_seconds: Some(42),
                }),
                ..Default::default()
            },
            pods: vec![PodStats {
                pod_ref: PodReference {
                    name: "web".into(),
                    namespace: "default".into(),
                    uid: "u1".into(),
                },
                start_time: at,
                ephemeral_storage: Some(FsStats {
                    time: at,
                    used_bytes: Some(7),
                    ..Default::default()
                }),
                volume: vec![VolumeStats {
                    fs: FsStats {
                        time: at,
                        used_bytes: Some(3),
                        ..Default::default()
                    },
                    name: "data".into(),
                }],
                ..Default::default()
            }],
        };
        let value = serde_json::to_value(&summary).unwrap();
        assert_eq!(
            value["node"],
            json!({
                "nodeName": "n1",
                "startTime": "2020-09-13T12:26:40Z",
                "cpu": {"time": "2023-11-14T22:13:20Z", "usageCoreNanoSeconds": 42},
            })
        );
        assert_eq!(
            value["pods"][0]["podRef"],
            json!({"name": "web", "namespace": "default", "uid": "u1"})
        );
        assert_eq!(value["pods"][0]["ephemeral-storage"]["usedBytes"], 7);
        assert_eq!(value["pods"][0]["volume"][0]["name"], "data");
        assert_eq!(value["pods"][0]["volume"][0]["usedBytes"], 3);
        let cut = serde_json::to_value(summary.only_cpu_and_memory()).unwrap();
        assert!(cut["pods"][0].get("ephemeral-storage").is_none());
        assert!(cut["pods"][0].get("volume").is_none());
    }
}
