//! emptyDir volumes: a directory in the pod's directory (0777, as kubelet makes it), or a
//! tmpfs for `medium: Memory` sized as kubelet sizes it (the smallest of the volume's
//! `sizeLimit`, the pod's memory limit and the node's allocatable memory). The disk usage
//! of a volume is measured for `sizeLimit` eviction and stats.

use super::downward_api::Allocatable;
use k8s_openapi::api::core::v1::{Container, EmptyDirVolumeSource, Pod};
use kyb_apimachinery::quantity::Quantity;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The mode of an emptyDir's directory.
const PERM: u32 = 0o777;

/// Sets up the emptyDir at `dir`; true when it was created (or mounted) now.
pub fn setup(
    dir: &Path,
    source: &EmptyDirVolumeSource,
    pod: &Pod,
    allocatable: &Allocatable,
) -> Result<bool, String> {
    match source.medium.as_deref().unwrap_or_default() {
        "" => make_dir(dir),
        "Memory" => {
            let created = make_dir(dir)?;
            let mounted = mount_memory(
                dir,
                memory_size(pod, source.size_limit.as_ref(), allocatable),
            )?;
            if mounted {
                chmod(dir)?;
            }
            Ok(created || mounted)
        }
        other => Err(format!("unknown storage medium {other:?}")),
    }
}

/// Mounts a tmpfs of `size` bytes on `dir` unless one is there already; true when mounted
/// now.
pub fn mount_memory(dir: &Path, size: Option<u64>) -> Result<bool, String> {
    let mounted = kyb_node_sys::mount::is_mount_point(dir).map_err(|e| e.to_string())?;
    if mounted {
        return Ok(false);
    }
    kyb_node_sys::mount::mount_tmpfs(dir, size).map_err(|e| e.to_string())?;
    Ok(true)
}

fn make_dir(dir: &Path) -> Result<bool, String> {
    if dir.is_dir() {
        return Ok(false);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    chmod(dir)?;
    Ok(true)
}

fn chmod(dir: &Path) -> Result<(), String> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PERM))
        .map_err(|e| format!("chmod {}: {e}", dir.display()))
}

/// The size of a memory-backed emptyDir: the node's allocatable memory, lowered to the
/// pod's memory limit and then to the volume's `sizeLimit` when those are positive and
/// smaller; `None` (the kernel's default) when nothing is known.
pub fn memory_size(
    pod: &Pod,
    size_limit: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    allocatable: &Allocatable,
) -> Option<u64> {
    let bytes = |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
        Quantity::parse(&q.0).ok().map(|q| q.value())
    };
    let mut size: Option<i64> = allocatable.get("memory").and_then(bytes);
    let lower = |size: Option<i64>, candidate: Option<i64>| match (size, candidate) {
        (_, Some(c)) if c > 0 && size.is_none_or(|s| c <= s) => Some(c),
        _ => size,
    };
    size = lower(size, pod_memory_limit(pod));
    size = lower(size, size_limit.and_then(bytes));
    size.and_then(|s| u64::try_from(s).ok())
}

/// The pod's memory limit as its cgroup gets it: the pod-level limit, or the sum of the
/// containers' limits (at least the largest init container's) when every container has
/// one.
fn pod_memory_limit(pod: &Pod) -> Option<i64> {
    let spec = pod.spec.as_ref()?;
    let limit = |c: &Container| {
        c.resources
            .as_ref()?
            .limits
            .as_ref()?
            .get("memory")
            .and_then(|q| Quantity::parse(&q.0).ok())
            .map(|q| q.value())
    };
    if let Some(pod_level) = spec
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get("memory"))
        .and_then(|q| Quantity::parse(&q.0).ok())
    {
        return Some(pod_level.value());
    }
    let mut sum = 0i64;
    for c in &spec.containers {
        sum = sum.saturating_add(limit(c)?);
    }
    let mut init_max = 0i64;
    for c in spec.init_containers.iter().flatten() {
        let l = limit(c)?;
        if c.restart_policy.as_deref() == Some("Always") {
            sum = sum.saturating_add(l);
        } else {
            init_max = init_max.max(l);
        }
    }
    Some(sum.max(init_max))
}

/// Bytes of disk (or memory) the files under `dir` take, symlinks not followed.
pub fn usage(dir: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return 0;
    };
    let mut total = meta.blocks() * 512;
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        for entry in entries.flatten() {
            total += usage(&entry.path());
        }
    }
    total
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

    fn pod(limits: &[Option<&str>]) -> Pod {
        let containers: Vec<serde_json::Value> = limits
            .iter()
            .enumerate()
            .map(|(i, l)| match l {
                Some(l) => serde_json::json!({"name": format!("c{i}"), "resources": {"limits": {"memory": l}}}),
                None => serde_json::json!({"name": format!("c{i}")}),
            })
            .collect();
        serde_json::from_value(serde_json::json!({"spec": {"containers": containers}})).unwrap()
    }

    #[test]
    fn memory_size_is_the_smallest_known_limit() {
        let alloc = Allocatable::from([("memory".to_string(), ApiQuantity("1Gi".into()))]);
        let q = |s: &str| ApiQuantity(s.into());
        assert_eq!(memory_size(&pod(&[None]), None, &alloc), Some(1 << 30));
        assert_eq!(
            memory_size(&pod(&[Some("64Mi"), Some("64Mi")]), None, &alloc),
            Some(128 << 20)
        );
        // One container without a limit: no pod limit.
        assert_eq!(
            memory_size(&pod(&[Some("64Mi"), None]), None, &alloc),
            Some(1 << 30)
        );
        assert_eq!(
            memory_size(&pod(&[Some("64Mi")]), Some(&q("16Mi")), &alloc),
            Some(16 << 20)
        );
        // A sizeLimit above the pod's limit does not raise it.
        assert_eq!(
            memory_size(&pod(&[Some("64Mi")]), Some(&q("2Gi")), &alloc),
            Some(64 << 20)
        );
        assert_eq!(memory_size(&pod(&[None]), None, &Allocatable::new()), None);
        assert_eq!(
            memory_size(&pod(&[None]), Some(&q("8Mi")), &Allocatable::new()),
            Some(8 << 20)
        );
    }

    #[test]
    fn disk_directories_are_world_writable_and_measured() {
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("v");
        let source = EmptyDirVolumeSource::default();
        assert!(setup(&vol, &source, &pod(&[None]), &Allocatable::new()).unwrap());
        assert!(!setup(&vol, &source, &pod(&[None]), &Allocatable::new()).unwrap());
        let mode = std::fs::metadata(&vol).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o777);
        let before = usage(&vol);
        std::fs::write(vol.join("f"), vec![1u8; 256 * 1024]).unwrap();
        assert!(usage(&vol) >= before + 256 * 1024, "{}", usage(&vol));
        let other = EmptyDirVolumeSource {
            medium: Some("HugePages".into()),
            ..Default::default()
        };
        assert_eq!(
            setup(
                &dir.path().join("h"),
                &other,
                &pod(&[None]),
                &Allocatable::new()
            )
            .unwrap_err(),
            "unknown storage medium \"HugePages\""
        );
    }
}
