//! ImageLocality (PreFilter, Score): favours nodes that already have the pod's container
//! images, so they start sooner. Each image (of the init containers and the containers)
//! present on the node adds its size scaled by its spread — the share of the cluster's nodes
//! having it — so a pod is not drawn to the few nodes that alone hold an image ("node
//! heating"). The sum, clamped between 23 MiB and 1000 MiB per container, maps linearly to
//! 0..=100. An image without a tag is looked up as `:latest`. No arguments.
//!
//! The spread needs the number of nodes holding each image across the whole cluster (a
//! node's own `ImageState::num_nodes` is 1). The cache keeps those counts as nodes come,
//! change and go, and every snapshot carries them; PreFilter, the one point that sees the
//! snapshot, looks up the pod's images there and keeps their counts for Score. Should
//! PreFilter not run (the plugin enabled at `score` alone), Score leaves the sizes unscaled.

use crate::framework::{
    CycleState, Handle, MAX_NODE_SCORE, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, ScorePlugin, Snapshot, Status,
};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "ImageLocality";

/// Where PreFilter keeps the pod's images with their spread.
const PRE_FILTER_KEY: &str = "PreFilterImageLocality";

const MB: i64 = 1024 * 1024;
/// Sums below this score 0.
const MIN_THRESHOLD: i64 = 23 * MB;
/// Sums above this times the number of containers score 100.
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The plugin (no state of its own).
#[derive(Default)]
pub struct ImageLocality;

pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(ImageLocality))
}

/// The image name as nodes report it: with `:latest` when it names no tag.
fn normalized_image_name(name: &str) -> String {
    let tagged = match (name.rfind(':'), name.rfind('/')) {
        (Some(colon), Some(slash)) => colon > slash,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if tagged {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

/// The pod's images and how far they have spread.
#[derive(Clone, Debug, PartialEq)]
struct Spread {
    /// Each container's image (init containers first), with the number of nodes having it.
    images: Vec<(String, usize)>,
    /// The nodes in the cluster.
    total_nodes: usize,
}

impl Spread {
    fn of(pod: &PodInfo, snapshot: &Snapshot) -> Spread {
        let images = pod
            .pod
            .spec
            .as_ref()
            .into_iter()
            .flat_map(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .chain(s.containers.iter())
            })
            .map(|c| {
                let name = normalized_image_name(c.image.as_deref().unwrap_or_default());
                let count = snapshot.nodes_with_image(&name);
                (name, count)
            })
            .collect();
        Spread {
            images,
            total_nodes: snapshot.len(),
        }
    }
}

/// The score of a sum of scaled image sizes for a pod with `containers` containers.
fn calculate_priority(sum: i64, containers: usize) -> i64 {
    let max_threshold =
        MAX_CONTAINER_THRESHOLD.saturating_mul(i64::try_from(containers).unwrap_or(i64::MAX));
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    let range = i128::from(max_threshold) - i128::from(MIN_THRESHOLD);
    if range == 0 {
        return 0;
    }
    let score = i128::from(MAX_NODE_SCORE) * (i128::from(sum) - i128::from(MIN_THRESHOLD)) / range;
    i64::try_from(score).unwrap_or(0)
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for ImageLocality {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(PRE_FILTER_KEY, Spread::of(pod, snapshot));
        (None, Status::success())
    }
}

impl ScorePlugin for ImageLocality {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(spread) = state.read::<Spread>(PRE_FILTER_KEY) else {
            // No counts: each image present counts its full size.
            let spec = pod.pod.spec.as_ref();
            let containers: Vec<_> = spec
                .into_iter()
                .flat_map(|s| {
                    s.init_containers
                        .iter()
                        .flatten()
                        .chain(s.containers.iter())
                })
                .collect();
            let sum = containers
                .iter()
                .filter_map(|c| {
                    node.images.get(&normalized_image_name(
                        c.image.as_deref().unwrap_or_default(),
                    ))
                })
                .fold(0i64, |sum, image| sum.saturating_add(image.size));
            return (calculate_priority(sum, containers.len()), Status::success());
        };
        let total = spread.total_nodes.max(1) as f64;
        let mut sum: i64 = 0;
        for (name, count) in &spread.images {
            if let Some(image) = node.images.get(name) {
                let scaled = (image.size as f64 * (*count as f64 / total)) as i64;
                sum = sum.saturating_add(scaled);
            }
        }
        (
            calculate_priority(sum, spread.images.len()),
            Status::success(),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use serde_json::json;

    /// A node reporting `images` (names, size in MiB).
    fn node(name: &str, images: &[(&[&str], i64)]) -> Arc<NodeInfo> {
        let images: Vec<Value> = images
            .iter()
            .map(|(names, size)| json!({"names": names, "sizeBytes": size * MB}))
            .collect();
        Arc::new(testing::node(
            json!({"metadata": {"name": name}, "status": {"images": images}}),
            &[],
        ))
    }

    fn pod(init: &[&str], images: &[&str]) -> Arc<PodInfo> {
        let containers = |images: &[&str]| -> Vec<Value> {
            images
                .iter()
                .enumerate()
                .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
                .collect()
        };
        testing::pod(json!({"metadata": {"name": "p"},
            "spec": {"initContainers": containers(init), "containers": containers(images)}}))
    }

    /// PreFilter over every node of the cluster, then Score on each.
    fn scores(pod: &PodInfo, cluster: &[Arc<NodeInfo>]) -> Vec<i64> {
        let plugin = factory(&Value::Null, &testing::handle()).unwrap();
        let snapshot = Snapshot::new(cluster.to_vec());
        let mut state = CycleState::new();
        let (result, status) = plugin
            .as_pre_filter()
            .unwrap()
            .pre_filter(&mut state, pod, &snapshot);
        assert!(status.is_success() && result.is_none());
        let score = plugin.as_score().unwrap();
        cluster
            .iter()
            .map(|n| {
                let (s, status) = score.score(&state, pod, n);
                assert!(status.is_success());
                s
            })
            .collect()
    }

    /// Kubernetes' two-node example.
    fn cluster() -> Vec<Arc<NodeInfo>> {
        vec![
            node(
                "node1",
                &[
                    (&["gcr.io/40:latest", "gcr.io/40:v1"], 40),
                    (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
                ],
            ),
            node(
                "node2",
                &[
                    (&["gcr.io/250:latest"], 250),
                    (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
                ],
            ),
        ]
    }

    #[test]
    fn images_present_scaled_by_spread() {
        let cluster = cluster();
        // node1: 40 MiB × ½ = 20 MiB, below 23 MiB → 0.
        // node2: 250 MiB × ½ = 125 MiB → 100 × (125 - 23) / (2000 - 23) = 5.
        assert_eq!(
            scores(&pod(&[], &["gcr.io/40", "gcr.io/250"]), &cluster),
            [0, 5]
        );
        // node1: (40 + 300) × ½ = 170 MiB → 100 × 147 / 1977 = 7.
        assert_eq!(
            scores(&pod(&[], &["gcr.io/40", "gcr.io/300"]), &cluster),
            [7, 0]
        );
        // Tags other than latest match their own name: node1 300 × ½ → 6, node2 10 × ½ → 0.
        assert_eq!(
            scores(&pod(&[], &["gcr.io/300:v1", "gcr.io/10:v1"]), &cluster),
            [6, 0]
        );
    }

    #[test]
    fn wider_spread_scores_higher() {
        let mut cluster = cluster();
        cluster.push(node("node3", &[(&["gcr.io/250:latest"], 250)]));
        cluster.push(node("node4", &[]));
        // 250 MiB on 2 of 4 nodes: 125 MiB of a one-container maximum of 1000 MiB:
        // 100 × 102 / 977 = 10 on the nodes having it.
        assert_eq!(scores(&pod(&[], &["gcr.io/250"]), &cluster), [0, 10, 10, 0]);
        // Compare: the same image alone on one of four nodes (62.5 MiB → 100 × 39.5 /
        // 977 = 4; one container: the maximum is 1000 MiB).
        let lonely = vec![
            node("a", &[(&["gcr.io/250:latest"], 250)]),
            node("b", &[]),
            node("c", &[]),
            node("d", &[]),
        ];
        assert_eq!(scores(&pod(&[], &["gcr.io/250"]), &lonely), [4, 0, 0, 0]);
    }

    #[test]
    fn init_containers_count_and_large_images_clamp() {
        let everywhere = vec![
            node("a", &[(&["big:latest"], 3000), (&["setup:1"], 500)]),
            node("b", &[(&["big:latest"], 3000)]),
        ];
        // One container: 3000 MiB everywhere, above 1000 MiB → 100.
        assert_eq!(scores(&pod(&[], &["big"]), &everywhere), [100, 100]);
        // With an init container, the maximum is 2000 MiB: node a has 3000 + 250 → 100,
        // node b 3000 → 100.
        assert_eq!(
            scores(&pod(&["setup:1"], &["big"]), &everywhere),
            [100, 100]
        );
        let some = vec![node("a", &[(&["setup:1"], 1000)]), node("b", &[])];
        // The init container's image: 1000 × ½ = 500 MiB of a 2000 MiB maximum:
        // 100 × 477 / 1977 = 24.
        assert_eq!(scores(&pod(&["setup:1"], &["app"]), &some), [24, 0]);
    }

    #[test]
    fn the_same_image_twice_counts_twice() {
        let cluster = vec![node("a", &[(&["img:latest"], 600)]), node("b", &[])];
        // Two containers with one image: 2 × 300 MiB = 600 MiB of 2000 → 100 × 577 / 1977.
        assert_eq!(scores(&pod(&[], &["img", "img:latest"]), &cluster), [29, 0]);
    }

    #[test]
    fn without_pre_filter_sizes_are_unscaled() {
        let cluster = cluster();
        let (score, status) =
            ImageLocality.score(&CycleState::new(), &pod(&[], &["gcr.io/300"]), &cluster[0]);
        assert!(status.is_success());
        // 300 MiB of 1000: 100 × 277 / 977 = 28.
        assert_eq!(score, 28);
    }

    /// The counts the cache keeps follow the cluster from cycle to cycle.
    #[test]
    fn counts_follow_nodes_changing_coming_and_going() {
        let plugin = ImageLocality;
        let mut cache = crate::cache::Cache::new();
        let spread = |cache: &mut crate::cache::Cache, image: &str| -> (usize, usize) {
            let snapshot = cache.snapshot();
            let mut state = CycleState::new();
            plugin.pre_filter(&mut state, &pod(&[], &[image]), &snapshot);
            let spread = state.read::<Spread>(PRE_FILTER_KEY).unwrap();
            (spread.images[0].1, spread.total_nodes)
        };
        let object = |info: Arc<NodeInfo>| info.node.clone().unwrap();
        let a = object(node("a", &[(&["img:1", "img:latest"], 100)]));
        cache.upsert_node(a.clone());
        cache.upsert_node(object(node("b", &[(&["img:1"], 100)])));
        cache.upsert_node(object(node("c", &[])));
        assert_eq!(spread(&mut cache, "img:1"), (2, 3));
        assert_eq!(spread(&mut cache, "img"), (1, 3));
        // The same node objects again: nothing changes.
        cache.upsert_node(a.clone());
        assert_eq!(spread(&mut cache, "img:1"), (2, 3));
        // Node b's object is replaced: it no longer has the image; c now has it.
        cache.upsert_node(object(node("b", &[(&["other:1"], 100)])));
        cache.upsert_node(object(node("c", &[(&["img:1"], 100)])));
        assert_eq!(spread(&mut cache, "img:1"), (2, 3));
        assert_eq!(spread(&mut cache, "other:1"), (1, 3));
        // Node a goes away (the others move up a position), then comes back at the end.
        cache.remove_node("a");
        assert_eq!(spread(&mut cache, "img:1"), (1, 2));
        assert_eq!(spread(&mut cache, "img"), (0, 2));
        cache.upsert_node(a);
        assert_eq!(spread(&mut cache, "img:1"), (2, 3));
        assert_eq!(spread(&mut cache, "img"), (1, 3));
        // Names no node holds any more are forgotten.
        cache.remove_node("a");
        cache.remove_node("c");
        assert_eq!(spread(&mut cache, "img:1"), (0, 1));
        let snapshot = cache.snapshot();
        assert_eq!(snapshot.images.len(), 1);
        assert_eq!(snapshot.nodes_with_image("other:1"), 1);
    }

    #[test]
    fn image_names() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.27"), "nginx:1.27");
        assert_eq!(
            normalized_image_name("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(
            normalized_image_name("registry.k8s.io/pause@sha256:abc"),
            "registry.k8s.io/pause@sha256:abc"
        );
        assert_eq!(calculate_priority(0, 1), 0);
        assert_eq!(calculate_priority(MAX_CONTAINER_THRESHOLD, 1), 100);
    }
}
