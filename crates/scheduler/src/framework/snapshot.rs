//! `Snapshot`: the nodes (with their pods) as one scheduling cycle sees them. Taken from the
//! cache at the start of each cycle; cheap, because node infos are shared (`Arc`) and only
//! the changed ones are copied.

use super::node_info::NodeInfo;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Every node with an object, in a stable order.
    pub nodes: Vec<Arc<NodeInfo>>,
    /// Position of each node in `nodes` (shared with the cache; rebuilt only when nodes
    /// come or go).
    index: Arc<HashMap<String, usize>>,
    /// The nodes holding pods with (anti-)affinity terms, for InterPodAffinity.
    pub with_affinity: Vec<usize>,
    pub with_required_anti_affinity: Vec<usize>,
}

impl Snapshot {
    /// A snapshot from the cache's parts (no work beyond the moves).
    pub fn from_parts(
        nodes: Vec<Arc<NodeInfo>>,
        index: Arc<HashMap<String, usize>>,
        with_affinity: Vec<usize>,
        with_required_anti_affinity: Vec<usize>,
    ) -> Snapshot {
        Snapshot {
            nodes,
            index,
            with_affinity,
            with_required_anti_affinity,
        }
    }

    /// A snapshot of `nodes`, indexing them (tests, preemption's what-ifs).
    pub fn new(nodes: Vec<Arc<NodeInfo>>) -> Snapshot {
        let index = Arc::new(
            nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.clone(), i))
                .collect(),
        );
        let with_affinity = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.pods_with_affinity.is_empty())
            .map(|(i, _)| i)
            .collect();
        let with_required_anti_affinity = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.pods_with_required_anti_affinity.is_empty())
            .map(|(i, _)| i)
            .collect();
        Snapshot {
            nodes,
            index,
            with_affinity,
            with_required_anti_affinity,
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).and_then(|i| self.nodes.get(*i))
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes holding pods with affinity terms.
    pub fn nodes_with_affinity(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.with_affinity.iter().filter_map(|i| self.nodes.get(*i))
    }

    /// The nodes holding pods with required anti-affinity terms.
    pub fn nodes_with_required_anti_affinity(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.with_required_anti_affinity
            .iter()
            .filter_map(|i| self.nodes.get(*i))
    }
}
