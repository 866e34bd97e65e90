//! The scheduler cache: every node and the pods on it, kept from the informers, plus the
//! pods the scheduler has *assumed* onto a node (chosen, reserved, binding in progress) so
//! that the next cycle already sees their resources taken. A bound pod confirmed by the
//! informer replaces its assumption; a failed bind is forgotten.
//!
//! The scheduling loop keeps one [`Snapshot`] and brings it up to date before each cycle
//! with [`Cache::update_snapshot`], which copies only what changed since: the positions of
//! the nodes touched (each at most once, however often it changed), the affinity lists and
//! image counts when they changed, everything only when nodes came or went. Node infos are
//! shared (`Arc`); a change copies only the node it touches.

use crate::framework::snapshot::{ImageCounts, NodeIndex, count_images};
use crate::framework::{NodeInfo, PodInfo, Snapshot};
use k8s_openapi::api::core::v1::Node;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

type Map<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// Node positions, as snapshots share them.
type Positions = Arc<Vec<usize>>;

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
    index: Arc<NodeIndex>,
    /// Pods whose node is not (yet, or any more) known.
    orphans: Map<NodeInfo>,
    pods: Map<PodState>,
    with_affinity: BTreeSet<usize>,
    with_required_anti_affinity: BTreeSet<usize>,
    /// The two sets above as snapshots share them; `None` after a change.
    affinity_lists: Option<(Positions, Positions)>,
    /// How many nodes hold each image name.
    images: Arc<ImageCounts>,
    /// Bumped whenever nodes come or go (positions change).
    layout: u64,
    /// Positions changed since the last snapshot update, each once.
    dirty: Vec<usize>,
    marked: Vec<bool>,
}

impl Cache {
    pub fn new() -> Cache {
        Cache::default()
    }

    /// Rebuilds the positions after a node left.
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
        self.relayout();
    }

    /// Positions changed: the next snapshot update copies every node.
    fn relayout(&mut self) {
        self.layout += 1;
        self.affinity_lists = None;
        self.dirty.clear();
        self.marked.clear();
        self.marked.resize(self.nodes.len(), false);
    }

    fn mark(&mut self, i: usize) {
        if let Some(marked) = self.marked.get_mut(i)
            && !*marked
        {
            *marked = true;
            self.dirty.push(i);
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
                let changed = if affinity {
                    self.with_affinity.insert(i)
                } else {
                    self.with_affinity.remove(&i)
                } | if anti {
                    self.with_required_anti_affinity.insert(i)
                } else {
                    self.with_required_anti_affinity.remove(&i)
                };
                if changed {
                    self.affinity_lists = None;
                }
                self.mark(i);
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
        if let Some(i) = self.index.get(&name).copied() {
            let old = self.nodes.get(i).map(|n| n.images.clone());
            self.with_node(&name, |info| info.set_node(node));
            if let (Some(old), Some(new)) = (old, self.nodes.get(i))
                && old != new.images
            {
                let images = Arc::make_mut(&mut self.images);
                let mut was = NodeInfo::new(&name);
                was.images = old;
                count_images(images, &was, -1);
                count_images(images, new, 1);
            }
            return;
        }
        let mut info = self
            .orphans
            .remove(&name)
            .unwrap_or_else(|| NodeInfo::new(&name));
        info.set_node(node);
        count_images(Arc::make_mut(&mut self.images), &info, 1);
        let i = self.nodes.len();
        if !info.pods_with_affinity.is_empty() {
            self.with_affinity.insert(i);
        }
        if !info.pods_with_required_anti_affinity.is_empty() {
            self.with_required_anti_affinity.insert(i);
        }
        self.nodes.push(Arc::new(info));
        Arc::make_mut(&mut self.index).insert(name, i);
        self.relayout();
    }

    /// A node deleted: its pods stay known (until they are deleted too).
    pub fn remove_node(&mut self, name: &str) {
        let Some(i) = self.index.get(name).copied() else {
            return;
        };
        let info = self.nodes.remove(i);
        count_images(Arc::make_mut(&mut self.images), &info, -1);
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
        let added = info.clone();
        match self.pods.remove(&info.uid) {
            // The assumed pod confirmed where it was assumed: swap the objects in place.
            Some(old) if old.node == node => {
                let key = old.info.key.clone();
                self.with_node(&node, |n| {
                    n.remove_pod(&key);
                    n.add_pod(added);
                });
            }
            Some(old) => {
                let key = old.info.key.clone();
                self.with_node(&old.node, |n| {
                    n.remove_pod(&key);
                });
                self.with_node(&node, |n| n.add_pod(added));
            }
            None => self.with_node(&node, |n| n.add_pod(added)),
        }
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

    fn affinity_lists(&mut self) -> (Positions, Positions) {
        let (with_affinity, with_anti) = self.affinity_lists.get_or_insert_with(|| {
            (
                Arc::new(self.with_affinity.iter().copied().collect()),
                Arc::new(self.with_required_anti_affinity.iter().copied().collect()),
            )
        });
        (with_affinity.clone(), with_anti.clone())
    }

    /// Brings `snapshot` (the loop's own, updated only here) up to date: only the nodes
    /// changed since its last update are replaced, unless nodes came or went.
    pub fn update_snapshot(&mut self, snapshot: &mut Snapshot) {
        if snapshot.layout != self.layout || snapshot.nodes.len() != self.nodes.len() {
            snapshot.nodes.clone_from(&self.nodes);
            snapshot.index = self.index.clone();
            snapshot.layout = self.layout;
        } else {
            for i in &self.dirty {
                if let (Some(slot), Some(node)) = (snapshot.nodes.get_mut(*i), self.nodes.get(*i)) {
                    *slot = node.clone();
                }
            }
        }
        for i in self.dirty.drain(..) {
            if let Some(marked) = self.marked.get_mut(i) {
                *marked = false;
            }
        }
        let (with_affinity, with_anti) = self.affinity_lists();
        snapshot.with_affinity = with_affinity;
        snapshot.with_required_anti_affinity = with_anti;
        if !Arc::ptr_eq(&snapshot.images, &self.images) {
            snapshot.images = self.images.clone();
        }
    }

    /// A snapshot of its own (tests, and callers outside the scheduling loop).
    pub fn snapshot(&mut self) -> Snapshot {
        let mut snapshot = Snapshot {
            layout: u64::MAX,
            ..Snapshot::default()
        };
        let dirty = std::mem::take(&mut self.dirty);
        self.update_snapshot(&mut snapshot);
        // The loop's snapshot still needs the changes it has not seen.
        self.dirty = dirty;
        snapshot
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

    #[test]
    fn the_loops_snapshot_takes_only_what_changed() {
        let mut cache = Cache::new();
        for name in ["a", "b", "c"] {
            cache.upsert_node(node(name));
        }
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        assert_eq!(snapshot.len(), 3);
        let before = snapshot.nodes.clone();
        // One pod assumed on b, then confirmed there: b alone is replaced.
        cache.assume(pod("p", None), "b");
        cache.upsert_pod(pod("p", Some("b")));
        cache.update_snapshot(&mut snapshot);
        assert!(Arc::ptr_eq(&before[0], &snapshot.nodes[0]));
        assert!(!Arc::ptr_eq(&before[1], &snapshot.nodes[1]));
        assert!(Arc::ptr_eq(&before[2], &snapshot.nodes[2]));
        assert_eq!(snapshot.get("b").map(|n| n.pods.len()), Some(1));
        assert_eq!(snapshot.get("b").map(|n| n.requested.milli_cpu), Some(1000));
        // What the loop's snapshot saw is not lost to a side snapshot, and vice versa.
        cache.remove_pod("p");
        let side = cache.snapshot();
        assert_eq!(side.get("b").map(|n| n.pods.len()), Some(0));
        cache.update_snapshot(&mut snapshot);
        assert_eq!(snapshot.get("b").map(|n| n.pods.len()), Some(0));
        // Nodes coming and going: positions change, everything is taken again.
        cache.remove_node("a");
        cache.upsert_node(node("d"));
        cache.update_snapshot(&mut snapshot);
        let names: Vec<&str> = snapshot.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["b", "c", "d"]);
        assert!(snapshot.get("a").is_none());
        assert_eq!(snapshot.get("d").map(|n| n.name.as_str()), Some("d"));
        // An unchanged cache changes nothing.
        let kept = snapshot.nodes.clone();
        cache.update_snapshot(&mut snapshot);
        assert!(
            kept.iter()
                .zip(&snapshot.nodes)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
    }

    #[test]
    fn affinity_lists_follow_the_pods() {
        let mut cache = Cache::new();
        cache.upsert_node(node("a"));
        cache.upsert_node(node("b"));
        let anti = testing::pod(json!({"metadata": {"name": "anti", "labels": {"app": "x"}},
            "spec": {"nodeName": "b", "containers": [{"name": "c"}],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}}}));
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        assert!(snapshot.with_required_anti_affinity.is_empty());
        cache.upsert_pod(anti.clone());
        cache.update_snapshot(&mut snapshot);
        assert_eq!(*snapshot.with_required_anti_affinity, vec![1]);
        assert_eq!(*snapshot.with_affinity, vec![1]);
        cache.remove_node("a");
        cache.update_snapshot(&mut snapshot);
        assert_eq!(*snapshot.with_required_anti_affinity, vec![0]);
        cache.remove_pod(&anti.uid);
        cache.update_snapshot(&mut snapshot);
        assert!(snapshot.with_required_anti_affinity.is_empty());
        assert!(snapshot.with_affinity.is_empty());
    }
}
