//! The scheduler cache: every node and the pods on it, kept from the informers, plus the
//! pods the scheduler has *assumed* onto a node (chosen, reserved, binding in progress) so
//! that the next cycle already sees their resources taken. A bound pod confirmed by the
//! informer replaces its assumption; a failed bind is forgotten. Snapshots for cycles are
//! cheap: node infos are shared (`Arc`), a change copies only the node it touches, and the
//! node index is rebuilt only when nodes come or go.

use crate::framework::{NodeInfo, PodInfo, Snapshot};
use k8s_openapi::api::core::v1::Node;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Where a pod the cache knows is.
struct PodState {
    info: Arc<PodInfo>,
    node: String,
    /// Assumed by this scheduler and not yet confirmed by the informer.
    assumed: bool,
}

#[derive(Default)]
pub struct Cache {
    /// Nodes with an object, in a stable order (new ones at the end).
    nodes: Vec<Arc<NodeInfo>>,
    index: Arc<HashMap<String, usize>>,
    /// Pods whose node is not (yet, or any more) known.
    orphans: HashMap<String, NodeInfo>,
    pods: HashMap<String, PodState>,
    with_affinity: BTreeSet<usize>,
    with_required_anti_affinity: BTreeSet<usize>,
}

impl Cache {
    pub fn new() -> Cache {
        Cache::default()
    }

    fn reindex(&mut self) {
        self.index = Arc::new(
            self.nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.clone(), i))
                .collect(),
        );
        self.with_affinity.clear();
        self.with_required_anti_affinity.clear();
        for (i, node) in self.nodes.iter().enumerate() {
            if !node.pods_with_affinity.is_empty() {
                self.with_affinity.insert(i);
            }
            if !node.pods_with_required_anti_affinity.is_empty() {
                self.with_required_anti_affinity.insert(i);
            }
        }
    }

    /// Applies `change` to the node info of `name` (creating one for pods on an unknown
    /// node), keeping the affinity indexes current.
    fn with_node(&mut self, name: &str, change: impl FnOnce(&mut NodeInfo)) {
        match self.index.get(name).copied() {
            Some(i) => {
                let Some(slot) = self.nodes.get_mut(i) else {
                    return;
                };
                let node = Arc::make_mut(slot);
                change(node);
                let affinity = !node.pods_with_affinity.is_empty();
                let anti = !node.pods_with_required_anti_affinity.is_empty();
                if affinity {
                    self.with_affinity.insert(i);
                } else {
                    self.with_affinity.remove(&i);
                }
                if anti {
                    self.with_required_anti_affinity.insert(i);
                } else {
                    self.with_required_anti_affinity.remove(&i);
                }
            }
            None => {
                let node = self
                    .orphans
                    .entry(name.to_string())
                    .or_insert_with(|| NodeInfo::new(name));
                change(node);
                if node.pods.is_empty() {
                    self.orphans.remove(name);
                }
            }
        }
    }

    /// A node added or changed.
    pub fn upsert_node(&mut self, node: Arc<Node>) {
        let name = node.metadata.name.clone().unwrap_or_default();
        if self.index.contains_key(&name) {
            self.with_node(&name, |info| info.set_node(node));
            return;
        }
        let mut info = self
            .orphans
            .remove(&name)
            .unwrap_or_else(|| NodeInfo::new(&name));
        info.set_node(node);
        self.nodes.push(Arc::new(info));
        self.reindex();
    }

    /// A node deleted: its pods stay known (until they are deleted too).
    pub fn remove_node(&mut self, name: &str) {
        let Some(i) = self.index.get(name).copied() else {
            return;
        };
        let info = self.nodes.remove(i);
        if !info.pods.is_empty() {
            let mut orphan = NodeInfo::new(name);
            for pod in &info.pods {
                orphan.add_pod(pod.clone());
            }
            self.orphans.insert(name.to_string(), orphan);
        }
        self.reindex();
    }

    /// A pod bound to a node (from the informer); confirms an assumption.
    pub fn upsert_pod(&mut self, info: Arc<PodInfo>) {
        let Some(node) = info.node_name().map(str::to_string) else {
            return;
        };
        if let Some(old) = self.pods.remove(&info.uid) {
            let key = old.info.key.clone();
            self.with_node(&old.node, |n| {
                n.remove_pod(&key);
            });
        }
        let added = info.clone();
        self.with_node(&node, |n| n.add_pod(added));
        self.pods.insert(
            info.uid.clone(),
            PodState {
                info,
                node,
                assumed: false,
            },
        );
    }

    /// A pod gone.
    pub fn remove_pod(&mut self, uid: &str) {
        if let Some(old) = self.pods.remove(uid) {
            let key = old.info.key.clone();
            self.with_node(&old.node, |n| {
                n.remove_pod(&key);
            });
        }
    }

    /// Takes the pod's resources on `node` before the bind is confirmed.
    pub fn assume(&mut self, info: Arc<PodInfo>, node: &str) {
        let added = info.clone();
        self.with_node(node, |n| n.add_pod(added));
        self.pods.insert(
            info.uid.clone(),
            PodState {
                info,
                node: node.to_string(),
                assumed: true,
            },
        );
    }

    /// Drops an assumption (the bind failed, or Permit rejected the pod).
    pub fn forget(&mut self, uid: &str) {
        if self.pods.get(uid).is_some_and(|p| p.assumed) {
            self.remove_pod(uid);
        }
    }

    /// Whether the pod is bound or assumed.
    pub fn knows(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    /// The node a known pod is (assumed to be) on.
    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.pods.get(uid).map(|p| p.node.as_str())
    }

    /// Every pod known on a node, bound or assumed.
    pub fn pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.pods.values().map(|p| &p.info)
    }

    /// Whether a pod is assumed (chosen but not yet confirmed bound).
    pub fn is_assumed(&self, uid: &str) -> bool {
        self.pods.get(uid).is_some_and(|p| p.assumed)
    }

    /// The nodes as one cycle sees them.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::from_parts(
            self.nodes.clone(),
            self.index.clone(),
            self.with_affinity.iter().copied().collect(),
            self.with_required_anti_affinity.iter().copied().collect(),
        )
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::testing;
    use serde_json::json;

    fn node(name: &str) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
            .unwrap_or_default(),
        )
    }

    fn pod(name: &str, node: Option<&str>) -> Arc<PodInfo> {
        testing::pod(json!({"metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}))
    }

    #[test]
    fn assumed_pods_take_room_until_forgotten_or_confirmed() {
        let mut cache = Cache::new();
        cache.upsert_node(node("a"));
        let before = cache.snapshot();
        cache.assume(pod("p", None), "a");
        let after = cache.snapshot();
        assert_eq!(before.get("a").map(|n| n.requested.milli_cpu), Some(0));
        assert_eq!(after.get("a").map(|n| n.requested.milli_cpu), Some(1000));
        cache.forget("p");
        assert_eq!(
            cache.snapshot().get("a").map(|n| n.requested.milli_cpu),
            Some(0)
        );
        cache.assume(pod("p", None), "a");
        cache.upsert_pod(pod("p", Some("a")));
        assert!(!cache.is_assumed("p"));
        assert_eq!(cache.snapshot().get("a").map(|n| n.pods.len()), Some(1));
        cache.forget("p");
        assert_eq!(cache.snapshot().get("a").map(|n| n.pods.len()), Some(1));
    }

    #[test]
    fn pods_on_unknown_nodes_wait_for_them() {
        let mut cache = Cache::new();
        cache.upsert_pod(pod("early", Some("b")));
        assert!(cache.snapshot().get("b").is_none());
        cache.upsert_node(node("b"));
        assert_eq!(cache.snapshot().get("b").map(|n| n.pods.len()), Some(1));
        cache.remove_node("b");
        assert!(cache.snapshot().is_empty());
        cache.upsert_node(node("b"));
        assert_eq!(cache.snapshot().get("b").map(|n| n.pods.len()), Some(1));
    }
}
