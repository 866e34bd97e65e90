//! Resource amounts as the scheduler adds and compares them: CPU in millicores, memory and
//! ephemeral storage in bytes, the pod count, and every other (extended, hugepages) resource
//! by name. Pod requests follow Kubernetes' rules (`kyb_component_helpers::resource`): the
//! sum of the containers' requests and of the sidecars (restartable init containers), or
//! the largest init container's if larger, plus the pod overhead.

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kyb_component_helpers::resource::{self, Amounts};
use std::collections::BTreeMap;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// The CPU a container without a CPU request is counted for when scoring (100m).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The memory a container without a memory request is counted for when scoring (200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Amounts of resources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Node allocatable only: how many pods fit.
    pub allowed_pods: i64,
    /// Everything else by resource name (extended resources, hugepages-…), in base units.
    pub scalar: BTreeMap<String, i64>,
}

fn milli(quantity: &Quantity) -> i64 {
    kyb_apimachinery::quantity::Quantity::parse(&quantity.0)
        .map(|q| q.milli_value_i64())
        .unwrap_or(0)
}

fn value(quantity: &Quantity) -> i64 {
    kyb_apimachinery::quantity::Quantity::parse(&quantity.0)
        .map(|q| q.value())
        .unwrap_or(0)
}

impl Resources {
    /// From a resource list (`requests`, `allocatable`, `overhead`).
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Resources {
        let mut resources = Resources::default();
        for (name, quantity) in list {
            match name.as_str() {
                CPU => resources.milli_cpu = milli(quantity),
                MEMORY => resources.memory = value(quantity),
                EPHEMERAL_STORAGE => resources.ephemeral_storage = value(quantity),
                PODS => resources.allowed_pods = value(quantity),
                other => {
                    resources.scalar.insert(other.to_string(), value(quantity));
                }
            }
        }
        resources
    }

    /// A node's allocatable resources.
    pub fn allocatable(node: &Node) -> Resources {
        node.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .map(Resources::from_list)
            .unwrap_or_default()
    }

    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.allowed_pods = self.allowed_pods.saturating_add(other.allowed_pods);
        for (name, amount) in &other.scalar {
            let entry = self.scalar.entry(name.clone()).or_default();
            *entry = entry.saturating_add(*amount);
        }
    }

    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.allowed_pods = self.allowed_pods.saturating_sub(other.allowed_pods);
        for (name, amount) in &other.scalar {
            let entry = self.scalar.entry(name.clone()).or_default();
            *entry = entry.saturating_sub(*amount);
        }
    }

    /// Each resource the larger of the two.
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pods = self.allowed_pods.max(other.allowed_pods);
        for (name, amount) in &other.scalar {
            let entry = self.scalar.entry(name.clone()).or_default();
            *entry = (*entry).max(*amount);
        }
    }

    /// The amount of a resource by name (0 when absent).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.allowed_pods,
            other => self.scalar.get(other).copied().unwrap_or(0),
        }
    }

    /// Whether every amount is zero.
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.allowed_pods == 0
            && self.scalar.values().all(|v| *v == 0)
    }
}

fn container_requests(container: &Container) -> Resources {
    container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .map(Resources::from_list)
        .unwrap_or_default()
}

impl Amounts for Resources {
    fn add(&mut self, other: &Self) {
        Resources::add(self, other);
    }

    fn max_with(&mut self, other: &Self) {
        Resources::max_with(self, other);
    }
}

/// Combines per-container amounts as Kubernetes combines requests
/// (`kyb_component_helpers::resource`), plus the pod overhead.
fn combine(pod: &Pod, per_container: impl Fn(&Container) -> Resources) -> Resources {
    match pod.spec.as_ref() {
        Some(spec) => resource::pod_amounts(spec, per_container, Resources::from_list),
        None => Resources::default(),
    }
}

/// What a pod requests.
pub fn pod_requests(pod: &Pod) -> Resources {
    combine(pod, container_requests)
}

/// What a pod counts for when nodes are scored: as [`pod_requests`], but a container that
/// requests no CPU or no memory counts 100m CPU or 200 MiB.
pub fn pod_non_zero_requests(pod: &Pod) -> Resources {
    combine(pod, |container| {
        let mut requests = container_requests(container);
        if requests.milli_cpu == 0 {
            requests.milli_cpu = DEFAULT_MILLI_CPU_REQUEST;
        }
        if requests.memory == 0 {
            requests.memory = DEFAULT_MEMORY_REQUEST;
        }
        requests
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn containers_add_up_init_containers_peak_overhead_adds() {
        let p = pod(serde_json::json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi", "example.com/gpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "10Mi"}}}],
            "overhead": {"cpu": "10m"},
        }}));
        let r = pod_requests(&p);
        assert_eq!(r.milli_cpu, 1010);
        assert_eq!(r.memory, 1 << 30);
        assert_eq!(r.get("example.com/gpu"), 1);
        let nz = pod_non_zero_requests(&p);
        assert_eq!(nz.memory, (1 << 30) + DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn sidecars_run_with_the_containers() {
        let p = pod(serde_json::json!({"spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}],
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}},
                {"name": "setup", "resources": {"requests": {"cpu": "700m"}}},
            ],
        }}));
        // Regular + sidecar = 800m; setup runs beside the sidecar: 1000m.
        assert_eq!(pod_requests(&p).milli_cpu, 1000);
    }

    #[test]
    fn node_allocatable() {
        let node: Node = serde_json::from_value(serde_json::json!({"status": {"allocatable": {
            "cpu": "4", "memory": "8Gi", "pods": "110", "hugepages-2Mi": "0"}}}))
        .unwrap();
        let a = Resources::allocatable(&node);
        assert_eq!(
            (a.milli_cpu, a.memory, a.allowed_pods),
            (4000, 8 << 30, 110)
        );
    }
}
