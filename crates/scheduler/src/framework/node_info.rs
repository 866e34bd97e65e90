//! `NodeInfo`: a node and the pods on it, with the aggregates plugins read on every cycle
//! kept up to date as pods come and go (requested resources, host ports in use, pods with
//! affinity terms), so a Filter or Score call never walks the node's pods to add them up.

use super::pod_info::{HostPort, PodInfo};
use super::resources::Resources;
use k8s_openapi::api::core::v1::{Node, Taint};
use std::collections::HashMap;
use std::sync::Arc;

/// A container image present on a node, and on how many nodes in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageState {
    pub size: i64,
    pub num_nodes: usize,
}

/// The images on a node by name (every name of each image). Shared between copies of the
/// node info, and nothing at all to look at for a node without images: Score reads it on
/// every node, so an empty list must not cost a memory access.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeImages(Option<Arc<HashMap<String, ImageState>>>);

impl NodeImages {
    pub fn new(images: HashMap<String, ImageState>) -> NodeImages {
        NodeImages((!images.is_empty()).then(|| Arc::new(images)))
    }

    pub fn get(&self, name: &str) -> Option<&ImageState> {
        self.0.as_ref()?.get(name)
    }

    /// Every name.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.0.iter().flat_map(|m| m.keys())
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

/// A node with its pods.
#[derive(Clone, Debug, Default)]
pub struct NodeInfo {
    pub name: String,
    /// `None` while pods are known for a node whose object is not (yet) seen.
    pub node: Option<Arc<Node>>,
    pub pods: Vec<Arc<PodInfo>>,
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    pub used_ports: Vec<HostPort>,
    /// The sum of the pods' requests.
    pub requested: Resources,
    /// The same with a floor per container (100m CPU, 200 MiB), for scoring.
    pub non_zero_requested: Resources,
    pub allocatable: Resources,
    /// Shared: copies of the node info for a change in its pods leave them alone (and an
    /// empty list is read without a memory access).
    pub taints: Arc<[Taint]>,
    pub unschedulable: bool,
    /// Images on the node, with how many nodes have each.
    pub images: NodeImages,
    /// Increased on every change: what snapshots compare.
    pub generation: u64,
}

impl NodeInfo {
    pub fn new(name: &str) -> NodeInfo {
        NodeInfo {
            name: name.to_string(),
            ..NodeInfo::default()
        }
    }

    /// Sets (or replaces) the node object.
    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable = Resources::allocatable(&node);
        let spec = node.spec.as_ref();
        self.taints = spec
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into();
        self.unschedulable = spec.and_then(|s| s.unschedulable).unwrap_or(false);
        let mut images = HashMap::new();
        for image in node
            .status
            .as_ref()
            .and_then(|s| s.images.as_ref())
            .into_iter()
            .flatten()
        {
            let size = image.size_bytes.unwrap_or(0);
            for name in image.names.iter().flatten() {
                images.insert(name.clone(), ImageState { size, num_nodes: 1 });
            }
        }
        self.images = NodeImages::new(images);
        self.node = Some(node);
        self.generation += 1;
    }

    /// The node's labels.
    pub fn labels(&self) -> Option<&std::collections::BTreeMap<String, String>> {
        self.node.as_ref()?.metadata.labels.as_ref()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels()?.get(key).map(String::as_str)
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.non_zero_requests);
        self.used_ports.extend(pod.host_ports.iter().cloned());
        if pod.has_affinity() {
            self.pods_with_affinity.push(pod.clone());
        }
        if pod.has_required_anti_affinity() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
        self.generation += 1;
    }

    /// Removes the pod with this key; whether it was there.
    pub fn remove_pod(&mut self, key: &str) -> bool {
        let Some(index) = self.pods.iter().position(|p| p.key == key) else {
            return false;
        };
        let pod = self.pods.swap_remove(index);
        self.requested.sub(&pod.requests);
        self.non_zero_requested.sub(&pod.non_zero_requests);
        for port in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|p| p == port) {
                self.used_ports.swap_remove(i);
            }
        }
        self.pods_with_affinity.retain(|p| p.key != key);
        self.pods_with_required_anti_affinity
            .retain(|p| p.key != key);
        self.generation += 1;
        true
    }

    /// Whether a host port is free for a pod wanting `wanted` (`0.0.0.0` conflicts with
    /// every address, and every address with it).
    pub fn port_conflicts(&self, wanted: &HostPort) -> bool {
        self.used_ports.iter().any(|used| {
            used.port == wanted.port
                && used.protocol == wanted.protocol
                && (used.ip == wanted.ip || used.ip == "0.0.0.0" || wanted.ip == "0.0.0.0")
        })
    }
}

/// Node affinity reads a node's name and labels through this.
impl kyb_component_helpers::nodeaffinity::NodeView for NodeInfo {
    fn node_name(&self) -> &str {
        &self.name
    }

    fn node_label(&self, key: &str) -> Option<&str> {
        self.label(key)
    }
}
