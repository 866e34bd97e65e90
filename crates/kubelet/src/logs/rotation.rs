//! Container log rotation, as kubelet's container log manager does it: every 10 s, each
//! running container's log file past `--container-log-max-size` is renamed to
//! `<file>.<YYYYMMDD-hhmmss>` and the runtime told to reopen it (CRI
//! `ReopenContainerLog`; renamed back if that fails); rotated files beyond
//! `--container-log-max-files` (the current one counted) are removed, oldest first.

use crate::cri::Cri;
use anyhow::Context as _;
use k8s_cri::v1 as cri;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the log files are checked.
pub const CHECK_PERIOD: Duration = Duration::from_secs(10);

/// `--container-log-max-size` and `--container-log-max-files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRotation {
    /// A log file is rotated once it is at least this large (bytes; 10Mi by default).
    pub max_size: u64,
    /// The most files a container's log keeps, the current one included (5 by default,
    /// at least 2).
    pub max_files: usize,
}

impl Default for LogRotation {
    fn default() -> Self {
        LogRotation {
            max_size: 10 << 20,
            max_files: 5,
        }
    }
}

impl LogRotation {
    /// The flags' values, checked as kubelet checks them.
    pub fn new(max_size: &str, max_files: i64) -> Result<LogRotation, String> {
        let quantity = kyb_apimachinery::quantity::Quantity::parse(max_size)
            .map_err(|e| format!("invalid --container-log-max-size {max_size:?}: {e}"))?;
        let max_size = quantity.value();
        if max_size <= 0 {
            return Err(format!(
                "--container-log-max-size {max_size:?} must be a positive size"
            ));
        }
        if max_files <= 1 {
            return Err("--container-log-max-files must be greater than 1".to_string());
        }
        Ok(LogRotation {
            max_size: max_size as u64,
            max_files: max_files as usize,
        })
    }
}

/// The rotated files of the log `current` (`<current>.<timestamp>`, compressed or not),
/// oldest first; unfinished temporary files left out.
pub fn rotated_files(current: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (current.parent(), current.file_name()) else {
        return vec![];
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix) && !n.ends_with(".tmp"))
        .map(|n| dir.join(n))
        .collect();
    files.sort();
    files
}

/// Removes a dead instance's log: the file and its rotated predecessors.
pub async fn remove_log(current: &Path) {
    for path in rotated_files(current)
        .into_iter()
        .chain(std::iter::once(current.to_path_buf()))
    {
        if let Err(error) = tokio::fs::remove_file(&path).await
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!(path = %path.display(), %error, "removing a container log");
        }
    }
}

/// Rotates `current` if it has grown to `policy.max_size`: removes the rotated files that
/// would be past the count, renames it, and calls `reopen` (the runtime reopening its
/// log); renamed back when `reopen` fails. True when it was rotated.
pub async fn rotate_if_needed<F, Fut>(
    current: &Path,
    policy: LogRotation,
    reopen: F,
) -> anyhow::Result<bool>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let size = match tokio::fs::metadata(current).await {
        Ok(metadata) => metadata.len(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error).with_context(|| format!("{}", current.display())),
    };
    if size < policy.max_size {
        return Ok(false);
    }
    // The current file and the one about to be rotated count too.
    let rotated = rotated_files(current);
    let keep = policy.max_files.saturating_sub(2);
    for old in &rotated[..rotated.len().saturating_sub(keep)] {
        tokio::fs::remove_file(old)
            .await
            .with_context(|| format!("removing {}", old.display()))?;
    }
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    let target = PathBuf::from(format!("{}.{stamp}", current.display()));
    if tokio::fs::try_exists(&target).await.unwrap_or(true) {
        // Rotated within this second already: next round.
        return Ok(false);
    }
    tokio::fs::rename(current, &target)
        .await
        .with_context(|| format!("renaming {}", current.display()))?;
    if let Err(error) = reopen().await {
        if let Err(back) = tokio::fs::rename(&target, current).await {
            tracing::error!(error = %back, path = %target.display(), "renaming a rotated log back");
        }
        return Err(error.context(format!("reopening {}", current.display())));
    }
    Ok(true)
}

/// Checks every running container's log every [`CHECK_PERIOD`] until `cancel`.
pub async fn run(cri: Cri, policy: LogRotation, cancel: CancellationToken) {
    loop {
        if let Err(error) = rotate_all(&cri, policy).await {
            tracing::warn!(error = %format!("{error:#}"), "rotating container logs");
        }
        tokio::select! {
            () = tokio::time::sleep(CHECK_PERIOD) => {}
            () = cancel.cancelled() => return,
        }
    }
}

async fn rotate_all(cri: &Cri, policy: LogRotation) -> anyhow::Result<()> {
    let mut runtime = cri.runtime.clone();
    let containers = runtime
        .list_containers(cri::ListContainersRequest {
            filter: Some(cri::ContainerFilter {
                state: Some(cri::ContainerStateValue {
                    state: cri::ContainerState::ContainerRunning as i32,
                }),
                ..Default::default()
            }),
        })
        .await
        .context("listing running containers")?
        .into_inner()
        .containers;
    for container in containers {
        let status = match runtime
            .container_status(cri::ContainerStatusRequest {
                container_id: container.id.clone(),
                verbose: false,
            })
            .await
        {
            Ok(status) => status.into_inner().status,
            Err(error) => {
                tracing::debug!(container = %container.id, %error, "container status");
                continue;
            }
        };
        let Some(path) = status.map(|s| s.log_path).filter(|p| !p.is_empty()) else {
            continue;
        };
        let mut reopener = runtime.clone();
        let id = container.id.clone();
        let rotated = rotate_if_needed(Path::new(&path), policy, || async move {
            reopener
                .reopen_container_log(cri::ReopenContainerLogRequest { container_id: id })
                .await
                .map(drop)
                .context("ReopenContainerLog")
        })
        .await;
        match rotated {
            Ok(true) => tracing::debug!(container = %container.id, path, "container log rotated"),
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(container = %container.id, error = %format!("{error:#}"), "rotating a container log")
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn flags_are_checked() {
        assert_eq!(LogRotation::new("10Mi", 5).unwrap(), LogRotation::default());
        assert_eq!(LogRotation::new("1Ki", 2).unwrap().max_size, 1024);
        assert!(LogRotation::new("ten", 5).is_err());
        assert!(LogRotation::new("10Mi", 1).is_err());
        assert!(LogRotation::new("0", 3).is_err());
    }

    #[tokio::test]
    async fn rotates_past_the_size_and_keeps_the_count() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("0.log");
        let policy = LogRotation {
            max_size: 10,
            max_files: 3,
        };
        std::fs::write(&current, "short").unwrap();
        assert!(
            !rotate_if_needed(&current, policy, || async { Ok(()) })
                .await
                .unwrap()
        );
        for old in ["0.log.20250101-000000", "0.log.20250102-000000"] {
            std::fs::write(dir.path().join(old), "old").unwrap();
        }
        std::fs::write(dir.path().join("0.log.20250103-000000.tmp"), "tmp").unwrap();
        std::fs::write(&current, "long enough to rotate").unwrap();
        let reopened = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = reopened.clone();
        let current_for_reopen = current.clone();
        assert!(
            rotate_if_needed(&current, policy, || async move {
                // The runtime creates the file again.
                std::fs::write(&current_for_reopen, "").unwrap();
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            })
            .await
            .unwrap()
        );
        assert!(reopened.load(std::sync::atomic::Ordering::SeqCst));
        let rotated = rotated_files(&current);
        // max_files 3: the current file, the newest old one, the one just rotated.
        assert_eq!(rotated.len(), 2, "{rotated:?}");
        assert!(rotated[0].ends_with("0.log.20250102-000000"));
        assert_eq!(
            std::fs::read_to_string(&rotated[1]).unwrap(),
            "long enough to rotate"
        );
        assert_eq!(std::fs::read_to_string(&current).unwrap(), "");
    }

    #[tokio::test]
    async fn a_dead_instances_log_is_removed_with_its_rotated_files() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("1.log");
        for name in [
            "1.log",
            "1.log.20250101-000000",
            "1.log.20250101-000001.gz",
            "2.log",
        ] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        remove_log(&current).await;
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["2.log"]);
    }

    #[tokio::test]
    async fn a_failed_reopen_renames_back() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("0.log");
        std::fs::write(&current, "long enough to rotate").unwrap();
        let policy = LogRotation {
            max_size: 1,
            max_files: 5,
        };
        let error = rotate_if_needed(&current, policy, || async { anyhow::bail!("no") })
            .await
            .unwrap_err();
        assert!(format!("{error:#}").contains("reopening"));
        assert_eq!(
            std::fs::read_to_string(&current).unwrap(),
            "long enough to rotate"
        );
        assert!(rotated_files(&current).is_empty());
    }
}
