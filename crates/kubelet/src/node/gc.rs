//! Garbage collection over CRI, as the kubelet's container and image GC managers do it.
//!
//! Containers: dead containers (not running) grouped by pod and container name keep at
//! most `max_per_pod_container` (1) of the newest, all of them go when their pod is gone,
//! and past `max_containers` (−1: no limit) the oldest go; dead sandboxes (not ready, no
//! containers) go when their pod is gone, and otherwise only the newest one stays.
//!
//! Images: when the image file system's usage reaches `high_threshold_percent` (85), the
//! images not used by any container, not pinned and not the sandbox image, first seen at
//! least `min_age` (2 min) ago, are removed least recently used first until usage is down
//! to `low_threshold_percent` (80).

use crate::cri::Cri;
use k8s_cri::v1::{
    ContainerState, ImageFsInfoRequest, ImageSpec, ListContainersRequest, ListImagesRequest,
    ListPodSandboxRequest, PodSandboxState, RemoveContainerRequest, RemoveImageRequest,
    RemovePodSandboxRequest, StopPodSandboxRequest,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The CRI label with a container's or sandbox's pod UID.
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
/// The CRI label with a container's name in its pod.
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";

/// The kubelet's container GC policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerGcPolicy {
    /// How old a dead container must be to go (0).
    pub min_age: Duration,
    /// Dead containers kept per pod and container name (1); negative: no limit.
    pub max_per_pod_container: i64,
    /// Dead containers kept on the node (−1: no limit).
    pub max_containers: i64,
}

impl Default for ContainerGcPolicy {
    fn default() -> Self {
        ContainerGcPolicy {
            min_age: Duration::ZERO,
            max_per_pod_container: 1,
            max_containers: -1,
        }
    }
}

/// The kubelet's image GC policy (`--image-gc-high-threshold`, `--image-gc-low-threshold`,
/// `--minimum-image-ttl-duration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageGcPolicy {
    pub high_threshold_percent: u64,
    pub low_threshold_percent: u64,
    pub min_age: Duration,
}

impl Default for ImageGcPolicy {
    fn default() -> Self {
        ImageGcPolicy {
            high_threshold_percent: 85,
            low_threshold_percent: 80,
            min_age: Duration::from_secs(120),
        }
    }
}

/// Whether a pod's runtime objects may all go: the pod is deleted (or terminated and
/// gone from the pod workers). The pod workers implement it.
pub trait PodState: Send + Sync {
    fn should_pod_content_be_removed(&self, pod_uid: &str) -> bool;
}

/// A dead container as GC sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadContainer {
    pub id: String,
    pub pod_uid: String,
    pub name: String,
    /// Nanoseconds since the epoch.
    pub created_at: i64,
}

/// The dead containers to remove, oldest groups' extras first.
pub fn containers_to_remove(
    dead: &[DeadContainer],
    policy: &ContainerGcPolicy,
    pod_removed: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut units: BTreeMap<(String, String), Vec<&DeadContainer>> = BTreeMap::new();
    for container in dead {
        units
            .entry((container.pod_uid.clone(), container.name.clone()))
            .or_default()
            .push(container);
    }
    let mut remove = Vec::new();
    units.retain(|(uid, _), list| {
        if pod_removed(uid) {
            remove.extend(list.iter().map(|c| c.id.clone()));
            false
        } else {
            true
        }
    });
    for list in units.values_mut() {
        list.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    }
    let trim = |units: &mut BTreeMap<(String, String), Vec<&DeadContainer>>,
                keep: usize,
                remove: &mut Vec<String>| {
        for list in units.values_mut() {
            if list.len() > keep {
                remove.extend(list.drain(keep..).map(|c| c.id.clone()));
            }
        }
    };
    if let Ok(keep) = usize::try_from(policy.max_per_pod_container) {
        trim(&mut units, keep, &mut remove);
    }
    if let Ok(max) = usize::try_from(policy.max_containers) {
        let total: usize = units.values().map(Vec::len).sum();
        if total > max && !units.is_empty() {
            let per_unit = (max / units.len()).max(1);
            trim(&mut units, per_unit, &mut remove);
            let mut left: Vec<&DeadContainer> = units.values().flatten().copied().collect();
            if left.len() > max {
                left.sort_by_key(|c| c.created_at);
                let extra = left.len() - max;
                remove.extend(left[..extra].iter().map(|c| c.id.clone()));
            }
        }
    }
    remove
}

/// A sandbox as GC sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxRecord {
    pub id: String,
    pub pod_uid: String,
    pub created_at: i64,
    /// Ready, or has containers.
    pub active: bool,
}

/// The sandboxes to remove: every inactive one of a removed pod, and all but the newest
/// inactive one of the others.
pub fn sandboxes_to_remove(
    sandboxes: &[SandboxRecord],
    pod_removed: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut by_pod: BTreeMap<&str, Vec<&SandboxRecord>> = BTreeMap::new();
    for sandbox in sandboxes {
        by_pod.entry(&sandbox.pod_uid).or_default().push(sandbox);
    }
    let mut remove = Vec::new();
    for (uid, mut list) in by_pod {
        let removed = pod_removed(uid);
        list.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        let inactive = list.iter().filter(|s| !s.active);
        let skip = usize::from(!removed);
        remove.extend(inactive.skip(skip).map(|s| s.id.clone()));
    }
    remove
}

/// Every container the runtime has, in any state.
async fn list_containers(cri: &mut Cri) -> anyhow::Result<Vec<k8s_cri::v1::Container>> {
    use anyhow::Context as _;
    Ok(cri
        .runtime
        .list_containers(ListContainersRequest { filter: None })
        .await
        .context("listing containers")?
        .into_inner()
        .containers)
}

/// Removes dead containers and sandboxes; returns how many of each went.
pub async fn collect_containers(
    cri: &mut Cri,
    policy: &ContainerGcPolicy,
    pods: &dyn PodState,
) -> anyhow::Result<(usize, usize)> {
    use anyhow::Context as _;
    let containers = list_containers(cri).await?;
    let now = jiff::Timestamp::now().as_nanosecond();
    let min_age = i128::try_from(policy.min_age.as_nanos()).unwrap_or(i128::MAX);
    let dead: Vec<DeadContainer> = containers
        .iter()
        .filter(|c| c.state() != ContainerState::ContainerRunning)
        .filter(|c| now - i128::from(c.created_at) >= min_age)
        .map(|c| DeadContainer {
            id: c.id.clone(),
            pod_uid: c.labels.get(POD_UID_LABEL).cloned().unwrap_or_default(),
            name: c
                .labels
                .get(CONTAINER_NAME_LABEL)
                .cloned()
                .unwrap_or_default(),
            created_at: c.created_at,
        })
        .collect();
    let removed = |uid: &str| pods.should_pod_content_be_removed(uid);
    let doomed = containers_to_remove(&dead, policy, &removed);
    for id in &doomed {
        if let Err(e) = cri
            .runtime
            .remove_container(RemoveContainerRequest {
                container_id: id.clone(),
            })
            .await
        {
            tracing::warn!(container = %id, error = %e.message(), "failed to remove a dead container");
        }
    }
    let gone: BTreeSet<&String> = doomed.iter().collect();
    let with_containers: BTreeSet<&str> = containers
        .iter()
        .filter(|c| !gone.contains(&c.id))
        .map(|c| c.pod_sandbox_id.as_str())
        .collect();
    let sandboxes = cri
        .runtime
        .list_pod_sandbox(ListPodSandboxRequest { filter: None })
        .await
        .context("listing pod sandboxes")?
        .into_inner()
        .items;
    let records: Vec<SandboxRecord> = sandboxes
        .iter()
        .map(|s| SandboxRecord {
            id: s.id.clone(),
            pod_uid: s
                .metadata
                .as_ref()
                .map(|m| m.uid.clone())
                .or_else(|| s.labels.get(POD_UID_LABEL).cloned())
                .unwrap_or_default(),
            created_at: s.created_at,
            active: s.state() == PodSandboxState::SandboxReady
                || with_containers.contains(s.id.as_str()),
        })
        .collect();
    let doomed_sandboxes = sandboxes_to_remove(&records, &removed);
    for id in &doomed_sandboxes {
        let stop = cri
            .runtime
            .stop_pod_sandbox(StopPodSandboxRequest {
                pod_sandbox_id: id.clone(),
            })
            .await;
        let remove = match stop {
            Ok(_) => cri
                .runtime
                .remove_pod_sandbox(RemovePodSandboxRequest {
                    pod_sandbox_id: id.clone(),
                })
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = remove {
            tracing::warn!(sandbox = %id, error = %e.message(), "failed to remove a sandbox");
        }
    }
    Ok((doomed.len(), doomed_sandboxes.len()))
}

/// An image as image GC sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRecord {
    pub id: String,
    pub size: u64,
    pub first_detected: Instant,
    pub last_used: Instant,
    /// Used by a container, pinned, or the sandbox image.
    pub keep: bool,
}

/// The images to remove to free `bytes`, least recently used first among those old
/// enough; and the bytes they free.
pub fn images_to_remove(
    images: &[ImageRecord],
    bytes: u64,
    now: Instant,
    min_age: Duration,
) -> (Vec<String>, u64) {
    let mut candidates: Vec<&ImageRecord> = images
        .iter()
        .filter(|i| !i.keep && now.duration_since(i.first_detected) >= min_age)
        .collect();
    candidates.sort_by_key(|i| (i.last_used, i.first_detected));
    let mut freed = 0u64;
    let mut remove = Vec::new();
    for image in candidates {
        if freed >= bytes {
            break;
        }
        remove.push(image.id.clone());
        freed = freed.saturating_add(image.size);
    }
    (remove, freed)
}

/// The bytes to free for usage to reach the low threshold, when it is at or above the
/// high one; 0 otherwise.
pub fn bytes_to_free(capacity: u64, available: u64, policy: &ImageGcPolicy) -> u64 {
    if capacity == 0 {
        return 0;
    }
    let usage_percent = 100 - (u128::from(available) * 100 / u128::from(capacity)).min(100) as u64;
    if usage_percent < policy.high_threshold_percent {
        return 0;
    }
    let target_available =
        u128::from(capacity) * u128::from(100 - policy.low_threshold_percent.min(100)) / 100;
    u64::try_from(target_available.saturating_sub(u128::from(available))).unwrap_or(u64::MAX)
}

/// Image GC's memory of when each image was first seen and last used.
pub struct ImageGc {
    policy: ImageGcPolicy,
    sandbox_image: String,
    seen: HashMap<String, (Instant, Instant)>,
}

impl ImageGc {
    /// Image GC that never removes `sandbox_image` (the pause image).
    pub fn new(policy: ImageGcPolicy, sandbox_image: &str) -> ImageGc {
        ImageGc {
            policy,
            sandbox_image: sandbox_image.to_string(),
            seen: HashMap::new(),
        }
    }

    /// Notes the images in use now and returns every image as GC sees it.
    async fn detect(&mut self, cri: &mut Cri, now: Instant) -> anyhow::Result<Vec<ImageRecord>> {
        use anyhow::Context as _;
        let images = cri
            .images
            .list_images(ListImagesRequest { filter: None })
            .await
            .context("listing images")?
            .into_inner()
            .images;
        let containers = list_containers(cri).await?;
        let used: BTreeSet<&str> = containers
            .iter()
            .flat_map(|c| {
                [
                    c.image_ref.as_str(),
                    c.image.as_ref().map_or("", |i| i.image.as_str()),
                ]
            })
            .collect();
        self.seen.retain(|id, _| images.iter().any(|i| &i.id == id));
        let mut records = Vec::new();
        for image in &images {
            let in_use = used.contains(image.id.as_str())
                || image.repo_tags.iter().any(|t| used.contains(t.as_str()))
                || image.repo_digests.iter().any(|d| used.contains(d.as_str()));
            let entry = self.seen.entry(image.id.clone()).or_insert((now, now));
            if in_use {
                entry.1 = now;
            }
            let sandbox = image.repo_tags.iter().any(|t| t == &self.sandbox_image)
                || image.id == self.sandbox_image;
            records.push(ImageRecord {
                id: image.id.clone(),
                size: image.size,
                first_detected: entry.0,
                last_used: entry.1,
                keep: in_use || image.pinned || sandbox,
            });
        }
        Ok(records)
    }

    /// Removes images to free `wanted` bytes; returns the bytes freed and the bytes that
    /// were eligible.
    async fn free(
        &mut self,
        cri: &mut Cri,
        wanted: u64,
        now: Instant,
    ) -> anyhow::Result<(u64, u64)> {
        let records = self.detect(cri, now).await?;
        let (remove, eligible) = images_to_remove(&records, wanted, now, self.policy.min_age);
        let mut freed = 0;
        for id in remove {
            let size = records.iter().find(|r| r.id == id).map_or(0, |r| r.size);
            match cri
                .images
                .remove_image(RemoveImageRequest {
                    image: Some(ImageSpec {
                        image: id.clone(),
                        ..Default::default()
                    }),
                })
                .await
            {
                Ok(_) => {
                    self.seen.remove(&id);
                    freed += size;
                }
                Err(e) => {
                    tracing::warn!(image = %id, error = %e.message(), "failed to remove an image")
                }
            }
        }
        Ok((freed, eligible))
    }

    /// One pass: notes the images in use, and when the image file system is above the
    /// high threshold removes images down to the low one. Returns the bytes freed.
    pub async fn garbage_collect(&mut self, cri: &mut Cri) -> anyhow::Result<u64> {
        use anyhow::Context as _;
        let now = Instant::now();
        let fs = cri
            .images
            .image_fs_info(ImageFsInfoRequest {})
            .await
            .context("reading the image file system's usage")?
            .into_inner();
        let Some(mountpoint) = fs
            .image_filesystems
            .first()
            .and_then(|f| f.fs_id.as_ref())
            .map(|id| id.mountpoint.clone())
        else {
            self.detect(cri, now).await?;
            return Ok(0);
        };
        let stats = kyb_node_sys::machine::fs_stats(std::path::Path::new(&mountpoint))?;
        let wanted = bytes_to_free(stats.capacity, stats.available, &self.policy);
        if wanted == 0 {
            self.detect(cri, now).await?;
            return Ok(0);
        }
        let (freed, eligible) = self.free(cri, wanted, now).await?;
        if eligible < wanted {
            anyhow::bail!(
                "Failed to garbage collect required amount of images. Attempted to free {wanted} bytes, but only found {eligible} bytes eligible to free."
            );
        }
        Ok(freed)
    }

    /// Removes every unused image old enough (the kubelet's `DeleteUnusedImages`, run
    /// under disk pressure before evicting pods). Returns the bytes freed.
    pub async fn delete_unused(&mut self, cri: &mut Cri) -> anyhow::Result<u64> {
        Ok(self.free(cri, u64::MAX, Instant::now()).await?.0)
    }
}

/// Node-level reclaim under disk pressure: dead containers, then unused images, before
/// the eviction manager evicts pods.
pub struct Reclaimer {
    pub cri: Cri,
    pub containers: ContainerGcPolicy,
    pub images: tokio::sync::Mutex<ImageGc>,
    pub pods: std::sync::Arc<dyn PodState>,
}

#[async_trait::async_trait]
impl super::eviction::NodeReclaimer for Reclaimer {
    async fn reclaim(&self, resource: &str) -> anyhow::Result<()> {
        if !matches!(resource, "ephemeral-storage" | "inodes") {
            return Ok(());
        }
        let mut cri = self.cri.clone();
        collect_containers(&mut cri, &self.containers, self.pods.as_ref()).await?;
        self.images.lock().await.delete_unused(&mut cri).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead(id: &str, uid: &str, name: &str, created_at: i64) -> DeadContainer {
        DeadContainer {
            id: id.into(),
            pod_uid: uid.into(),
            name: name.into(),
            created_at,
        }
    }

    #[test]
    fn one_dead_container_per_pod_and_name_stays() {
        let list = [
            dead("a1", "p", "web", 1),
            dead("a2", "p", "web", 3),
            dead("a3", "p", "web", 2),
            dead("b1", "p", "side", 1),
            dead("c1", "gone", "web", 5),
            dead("c2", "gone", "web", 6),
        ];
        let mut removed =
            containers_to_remove(&list, &ContainerGcPolicy::default(), &|uid| uid == "gone");
        removed.sort();
        assert_eq!(removed, ["a1", "a3", "c1", "c2"]);
        let unlimited = ContainerGcPolicy {
            max_per_pod_container: -1,
            ..Default::default()
        };
        assert!(containers_to_remove(&list[..4], &unlimited, &|_| false).is_empty());
    }

    #[test]
    fn the_node_wide_limit_removes_the_oldest() {
        let list = [
            dead("a", "p", "x", 1),
            dead("b", "q", "x", 2),
            dead("c", "r", "x", 3),
        ];
        let policy = ContainerGcPolicy {
            max_containers: 2,
            ..Default::default()
        };
        assert_eq!(containers_to_remove(&list, &policy, &|_| false), ["a"]);
    }

    #[test]
    fn sandboxes_of_deleted_pods_go_and_one_stays_otherwise() {
        let s = |id: &str, uid: &str, created_at: i64, active: bool| SandboxRecord {
            id: id.into(),
            pod_uid: uid.into(),
            created_at,
            active,
        };
        let list = [
            s("p-old", "p", 1, false),
            s("p-new", "p", 2, false),
            s("p-live", "p", 3, true),
            s("g-1", "gone", 1, false),
            s("g-live", "gone", 2, true),
        ];
        let mut removed = sandboxes_to_remove(&list, &|uid| uid == "gone");
        removed.sort();
        assert_eq!(removed, ["g-1", "p-old"]);
    }

    #[test]
    fn images_go_least_recently_used_first_when_old_enough() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(600);
        let image = |id: &str, size: u64, seen: u64, used: u64, keep: bool| ImageRecord {
            id: id.into(),
            size,
            first_detected: t0 + Duration::from_secs(seen),
            last_used: t0 + Duration::from_secs(used),
            keep,
        };
        let images = [
            image("recent", 100, 0, 500, false),
            image("stale", 100, 0, 10, false),
            image("in-use", 1000, 0, 0, true),
            image("young", 1000, 590, 590, false),
        ];
        let min_age = Duration::from_secs(120);
        assert_eq!(
            images_to_remove(&images, 50, later, min_age),
            (vec!["stale".to_string()], 100)
        );
        assert_eq!(
            images_to_remove(&images, 150, later, min_age),
            (vec!["stale".to_string(), "recent".to_string()], 200)
        );
        assert_eq!(images_to_remove(&images, 5000, later, min_age).1, 200);
    }

    #[test]
    fn gc_starts_at_the_high_threshold_and_aims_at_the_low_one() {
        let policy = ImageGcPolicy::default();
        assert_eq!(bytes_to_free(1000, 200, &policy), 0); // 80% used
        assert_eq!(bytes_to_free(1000, 150, &policy), 50); // 85% used: down to 80%
        assert_eq!(bytes_to_free(1000, 0, &policy), 200);
        assert_eq!(bytes_to_free(0, 0, &policy), 0);
        assert_eq!(policy.min_age, Duration::from_secs(120));
    }
}
