//! The pod workers: one task per pod bound to this node, driving the runtime towards the
//! pod's spec (kubelet's `SyncPod`) and reporting its status, then terminating it
//! gracefully when it is deleted.
//!
//! - [`runtime`]: a pod's sandboxes and containers as the runtime holds them.
//! - [`worker`]: one pod's loop: sync, terminate, clean up.
//! - [`start`]: creating a sandbox and starting a container.
//! - [`kill`]: stopping containers (preStop, SIGTERM, SIGKILL after the grace period).
//! - [`status`]: the pod status computed from the runtime.
//! - [`status_manager`]: writing statuses to the API, deleting finished pods.
//! - [`backoff`]: CrashLoopBackOff delays.
//! - [`manager`]: the pods of this node from the API, a worker each; the runtime's events
//!   (a relist every second, kubelet's PLEG) and probe results wake them.

pub mod admission;
pub mod backoff;
pub mod kill;
pub mod manager;
pub mod runtime;
pub mod start;
pub mod status;
pub mod status_manager;
pub mod worker;

use crate::cri::Cri;
use crate::probes::ProbeManager;
use crate::sources::Sources;
use crate::volumes::VolumeManager;
use k8s_openapi::api::core::v1::Pod;
use kyb_runtime::events::{EventType, Recorder};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What every pod worker shares.
pub struct Shared {
    pub cri: Cri,
    pub client: kube::Client,
    pub node_name: String,
    /// The node's addresses (status.hostIPs, and host-network pods' IPs).
    pub host_ips: Vec<String>,
    /// `<root>/pods`: each pod's directory (volumes, termination-message files).
    pub pods_dir: PathBuf,
    /// `<root>/logs`: the containers' log files, `<ns>_<name>_<uid>/<container>/<n>.log`.
    pub logs_dir: PathBuf,
    /// The runtime's name, prefixing container IDs (`containerd`).
    pub runtime_name: String,
    pub volumes: VolumeManager,
    pub probes: ProbeManager,
    pub sources: Arc<dyn Sources>,
    pub recorder: Recorder,
    pub backoff: Mutex<backoff::Backoff>,
    /// Pulls images as `imagePullPolicy` says, with back-off.
    pub images: crate::images::ImagePuller,
    pub status: status_manager::StatusManager,
    /// The pods admitted onto the node and still active, with their requests.
    pub admitted: admission::Admitted,
    /// This node's pods as the API has them (mirror pods included).
    pub pods: Arc<kyb_runtime::informer::Informer<Pod>>,
    /// The node's capacity and allocatable resources (for `resourceFieldRef` defaults).
    pub resources: crate::node::NodeResources,
    /// How the machine's cgroups are managed (pods' cgroup parents follow it).
    pub cgroup_driver: kyb_node_sys::cgroup::Driver,
    /// The cluster DNS servers pods with `dnsPolicy: ClusterFirst` use (none: the node's).
    pub cluster_dns: Vec<std::net::IpAddr>,
    /// The cluster's DNS domain (`cluster.local`).
    pub cluster_domain: String,
    /// The node's resolver configuration (`/etc/resolv.conf`).
    pub resolv_conf: PathBuf,
    /// Where `Localhost` seccomp profiles are (`<root>/seccomp`).
    pub seccomp_root: PathBuf,
}

/// The owned parts of a pod's [`PodContext`](crate::container::PodContext).
pub struct ContextParts {
    cgroup_parent: String,
    log_dir: PathBuf,
    allocatable: (i64, i64),
    memory_capacity: i64,
}

fn quantity(
    list: &std::collections::BTreeMap<String, kyb_apimachinery::quantity::Quantity>,
    name: &str,
    milli: bool,
) -> i64 {
    list.get(name).map_or(0, |q| {
        if milli {
            q.milli_value_i64()
        } else {
            q.value()
        }
    })
}

impl Shared {
    /// The address probes and hooks reach the pod at: the node's for a host-network pod,
    /// else its sandbox's first IP.
    pub fn pod_ip(&self, pod: &Pod, sandbox_ips: Option<&[String]>) -> Option<std::net::IpAddr> {
        let host_network = pod.spec.as_ref().and_then(|s| s.host_network) == Some(true);
        let ips = if host_network {
            Some(self.host_ips.as_slice())
        } else {
            sandbox_ips
        };
        ips?.first()?.parse().ok()
    }

    /// What a pod's context holds that is computed per pod.
    pub fn context_parts(&self, pod: &Pod) -> ContextParts {
        let allocatable = self.resources.allocatable();
        let capacity = self.resources.capacity();
        ContextParts {
            cgroup_parent: crate::container::cgroup_parent(pod, self.cgroup_driver),
            log_dir: self.logs_dir.join(log_dir_name(pod)),
            allocatable: (
                quantity(&allocatable, "cpu", true),
                quantity(&allocatable, "memory", false),
            ),
            memory_capacity: quantity(&capacity, "memory", false),
        }
    }

    /// The context a pod's CRI configurations are built in.
    pub fn context<'a>(
        &'a self,
        pod: &'a Pod,
        pod_ips: &'a [String],
        parts: &'a ContextParts,
    ) -> crate::container::PodContext<'a> {
        crate::container::PodContext {
            pod,
            node_name: &self.node_name,
            host_ips: &self.host_ips,
            pod_ips,
            cgroup_parent: &parts.cgroup_parent,
            pod_log_dir: &parts.log_dir,
            cluster_dns: &self.cluster_dns,
            cluster_domain: &self.cluster_domain,
            resolv_conf: &self.resolv_conf,
            node_allocatable: parts.allocatable,
            node_memory_capacity: parts.memory_capacity,
            seccomp_profile_root: &self.seccomp_root,
            seccomp_default: false,
        }
    }

    /// Records an event about `pod`, or one of its containers (`field_path`
    /// `spec.containers{name}`).
    pub fn event(
        &self,
        pod: &Pod,
        field_path: Option<String>,
        warning: bool,
        reason: &str,
        message: impl Into<String>,
    ) {
        let mut reference = kyb_runtime::events::reference(pod);
        reference.field_path = field_path;
        let type_ = if warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        self.recorder.record(reference, type_, reason, message);
    }
}

/// The container `name` of the pod's spec (regular or init).
pub fn container_spec<'a>(
    pod: &'a Pod,
    name: &str,
) -> Option<&'a k8s_openapi::api::core::v1::Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
}

/// The event field path of a pod's container.
pub fn field_path(pod: &Pod, container: &str) -> String {
    let init = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .is_some_and(|list| list.iter().any(|c| c.name == container));
    if init {
        format!("spec.initContainers{{{container}}}")
    } else {
        format!("spec.containers{{{container}}}")
    }
}

/// `<namespace>_<name>_<uid>`, the name of a pod's log directory.
pub fn log_dir_name(pod: &Pod) -> String {
    format!(
        "{}_{}_{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.uid.as_deref().unwrap_or_default()
    )
}
