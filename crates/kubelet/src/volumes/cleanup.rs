//! Removing pod directories: every mount below the pod's directory is unmounted first
//! (deepest first), nothing is removed while one remains (a failed unmount must not let
//! the removal reach into the mounted file system), and the removal never follows a
//! symlink, so a hostPath or anything else outside the directory is never touched.

use anyhow::Context as _;
use std::collections::HashSet;
use std::path::Path;

/// Unmounts and removes `<pods_dir>/<pod_uid>`; nothing to do when it does not exist.
pub fn remove_pod_dir(pods_dir: &Path, pod_uid: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !pod_uid.is_empty() && !pod_uid.contains('/') && pod_uid != "." && pod_uid != "..",
        "invalid pod uid {pod_uid:?}"
    );
    let dir = pods_dir.join(pod_uid);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(());
    }
    let mounts = kyb_node_sys::mount::mount_points_under(&dir)?;
    for mount in &mounts {
        kyb_node_sys::mount::unmount(mount)
            .with_context(|| format!("tearing down the volumes of pod {pod_uid}"))?;
        tracing::debug!(pod_uid, mount = %mount.display(), "unmounted");
    }
    let left = kyb_node_sys::mount::mount_points_under(&dir)?;
    anyhow::ensure!(
        left.is_empty(),
        "pod {pod_uid}'s directory still has mounts after unmounting: {left:?}"
    );
    // `remove_dir_all` removes symlinks themselves and never what they point to.
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    Ok(())
}

/// The pod uids with a directory in `pods_dir` that are not in `live`.
pub fn orphaned(pods_dir: &Path, live: &HashSet<String>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(pods_dir) else {
        return vec![];
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|uid| !live.contains(uid))
        .collect();
    out.sort();
    out
}
