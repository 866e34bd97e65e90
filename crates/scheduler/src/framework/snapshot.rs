//! `Snapshot`: the nodes (with their pods) as one scheduling cycle sees them. The
//! scheduling loop keeps one and brings it up to date from the cache before each cycle
//! ([`crate::cache::Cache::update_snapshot`]): node infos are shared (`Arc`), so only the
//! nodes changed since the last cycle are replaced, and the node index, the affinity lists
//! and the image counts are shared with the cache until they change there.

use super::node_info::NodeInfo;
use std::collections::HashMap;
use std::sync::Arc;

/// Node names to positions.
pub type NodeIndex = HashMap<String, usize, foldhash::fast::RandomState>;
/// Image names to the number of nodes holding them.
pub type ImageCounts = HashMap<String, usize, foldhash::fast::RandomState>;

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Every node with an object, in a stable order.
    pub nodes: Vec<Arc<NodeInfo>>,
    /// Position of each node in `nodes`.
    pub(crate) index: Arc<NodeIndex>,
    /// The nodes holding pods with (anti-)affinity terms, for InterPodAffinity.
    pub with_affinity: Arc<Vec<usize>>,
    pub with_required_anti_affinity: Arc<Vec<usize>>,
    /// How many nodes hold each image name, for ImageLocality.
    pub(crate) images: Arc<ImageCounts>,
    /// The cache's node layout this snapshot copied (see the cache).
    pub(crate) layout: u64,
}

impl Snapshot {
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
        let mut images = ImageCounts::default();
        for node in &nodes {
            count_images(&mut images, node, 1);
        }
        Snapshot {
            nodes,
            index,
            with_affinity: Arc::new(with_affinity),
            with_required_anti_affinity: Arc::new(with_required_anti_affinity),
            images: Arc::new(images),
            layout: u64::MAX,
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

    /// How many nodes report an image of this name.
    pub fn nodes_with_image(&self, name: &str) -> usize {
        self.images.get(name).copied().unwrap_or(0)
    }
}

/// Adds (`delta` 1) or takes away (-1) a node's image names in `counts`.
pub(crate) fn count_images(counts: &mut ImageCounts, node: &NodeInfo, delta: isize) {
    for name in node.images.names() {
        if delta > 0 {
            *counts.entry(name.clone()).or_default() += 1;
        } else if let Some(count) = counts.get_mut(name) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(name);
            }
        }
    }
}
