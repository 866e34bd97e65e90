//! Control groups as the machine has them: which version is mounted (the kubelet and the
//! container runtime must agree on it) and which driver manages them.
//!
//! The version is read the way runc and the kubelet read it: `/sys/fs/cgroup` is itself a
//! cgroup2 file system on a unified (v2) machine, and a tmpfs holding one v1 hierarchy per
//! controller otherwise; a "hybrid" machine (v1 controllers plus an empty v2 hierarchy at
//! `/sys/fs/cgroup/unified`) counts as v1, as it does for Kubernetes.

use std::fmt;
use std::path::Path;

/// Where the cgroup file systems are mounted.
pub const ROOT: &str = "/sys/fs/cgroup";

/// `statfs` file system types (linux/magic.h).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// The cgroup version in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// One hierarchy per controller (also the hybrid layout).
    V1,
    /// The unified hierarchy.
    V2,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        })
    }
}

/// What manages the cgroup tree (the kubelet's `cgroupDriver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// systemd is the init system: cgroups are created as systemd slices and scopes.
    Systemd,
    /// The cgroup file system is written directly.
    Cgroupfs,
}

impl fmt::Display for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Driver::Systemd => "systemd",
            Driver::Cgroupfs => "cgroupfs",
        })
    }
}

/// Why the cgroup version could not be told.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading the file system at {path}: {source}")]
    Statfs {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a cgroup mount (file system type {kind:#x})")]
    NotCgroup { path: String, kind: i64 },
}

/// The machine's cgroup version, from [`ROOT`].
pub fn version() -> Result<Version, Error> {
    version_at(Path::new(ROOT))
}

/// The cgroup version of the hierarchy mounted at `root`.
pub fn version_at(root: &Path) -> Result<Version, Error> {
    let stat = rustix::fs::statfs(root).map_err(|errno| Error::Statfs {
        path: root.display().to_string(),
        source: errno.into(),
    })?;
    #[allow(clippy::useless_conversion)] // `f_type`'s width depends on the architecture.
    let kind = i64::from(stat.f_type);
    match kind {
        CGROUP2_SUPER_MAGIC => Ok(Version::V2),
        TMPFS_MAGIC | CGROUP_SUPER_MAGIC => Ok(Version::V1),
        kind => Err(Error::NotCgroup {
            path: root.display().to_string(),
            kind,
        }),
    }
}

/// The cgroup driver: systemd when systemd is the init system (it then owns the cgroup
/// tree and expects to be asked for changes), cgroupfs otherwise.
pub fn driver() -> Driver {
    driver_for(Path::new("/run/systemd/system"))
}

/// The driver given systemd's marker directory (what `sd_booted()` checks).
fn driver_for(systemd_marker: &Path) -> Driver {
    if systemd_marker.is_dir() {
        Driver::Systemd
    } else {
        Driver::Cgroupfs
    }
}

/// Removes the cgroup `path` (relative to each hierarchy, `/kubepods/besteffort/pod<uid>`)
/// from every hierarchy mounted under [`ROOT`] (each v1 controller, or the v2 tree),
/// children first. A cgroup that still has processes, or does not exist, is left alone:
/// the kernel refuses to remove a busy cgroup, so this never disturbs a running one.
/// Needs root. Returns how many directories were removed.
pub fn remove(path: &str) -> usize {
    let relative = path.trim_start_matches('/');
    if relative.is_empty() || relative.split('/').any(|part| part == "..") {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(ROOT) else {
        return 0;
    };
    let mut hierarchies: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    // cgroup v2: the root itself is the hierarchy.
    hierarchies.push(std::path::PathBuf::from(ROOT));
    let mut removed = 0;
    for hierarchy in hierarchies {
        removed += remove_tree(&hierarchy.join(relative));
    }
    removed
}

/// Removes a cgroup directory and its child cgroups, deepest first (a cgroup's files are
/// the kernel's: only `rmdir` applies).
fn remove_tree(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            removed += remove_tree(&entry.path());
        }
    }
    if std::fs::remove_dir(dir).is_ok() {
        removed += 1;
    }
    removed
}

/// Removes the cgroup `path` from every hierarchy if it has no child cgroups and no
/// processes (a plain `rmdir`, which the kernel refuses otherwise). Needs root.
pub fn remove_if_empty(path: &str) {
    let relative = path.trim_start_matches('/');
    if relative.is_empty() || relative.split('/').any(|part| part == "..") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(ROOT) else {
        return;
    };
    for entry in entries.flatten() {
        let _ = std::fs::remove_dir(entry.path().join(relative));
    }
    let _ = std::fs::remove_dir(std::path::Path::new(ROOT).join(relative));
}

/// The limits of a cgroup that holds other cgroups (a pod's, a QoS class's), as the
/// kubelet's pod container manager sets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The CPU weight in v1 shares (1024 a CPU; at least 2).
    pub cpu_shares: u64,
    /// The CFS quota in microseconds per `cpu_period`; None for no limit.
    pub cpu_quota: Option<i64>,
    /// The CFS period in microseconds.
    pub cpu_period: u64,
    /// The memory limit in bytes; None for no limit.
    pub memory: Option<i64>,
}

/// Creates the cgroup `path` (relative to each hierarchy, `/kubepods/burstable/pod<uid>`)
/// in the CPU and memory controllers and writes `limits` into it: on v1 `cpu.shares`,
/// `cpu.cfs_period_us`, `cpu.cfs_quota_us` and `memory.limit_in_bytes`; on v2 `cpu.weight`,
/// `cpu.max` and `memory.max`, with the controllers enabled in each ancestor's
/// `cgroup.subtree_control`. Existing cgroups are updated. Needs root.
pub fn apply(path: &str, version: Version, limits: &Limits) -> std::io::Result<()> {
    apply_at(Path::new(ROOT), path, version, limits)
}

/// [`apply`] under another root (the tests' directory trees).
pub fn apply_at(root: &Path, path: &str, version: Version, limits: &Limits) -> std::io::Result<()> {
    let relative = path.trim_start_matches('/');
    if relative.is_empty() || relative.split('/').any(|part| part == "..") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{path:?} is not a cgroup path"),
        ));
    }
    let write = |dir: &Path, file: &str, value: String| {
        std::fs::write(dir.join(file), &value).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("writing {value:?} to {}: {e}", dir.join(file).display()),
            )
        })
    };
    match version {
        Version::V1 => {
            let cpu = root.join("cpu").join(relative);
            std::fs::create_dir_all(&cpu)?;
            write(&cpu, "cpu.shares", limits.cpu_shares.to_string())?;
            write(&cpu, "cpu.cfs_period_us", limits.cpu_period.to_string())?;
            write(
                &cpu,
                "cpu.cfs_quota_us",
                limits.cpu_quota.unwrap_or(-1).to_string(),
            )?;
            let memory = root.join("memory").join(relative);
            std::fs::create_dir_all(&memory)?;
            write(
                &memory,
                "memory.limit_in_bytes",
                limits.memory.unwrap_or(-1).to_string(),
            )?;
        }
        Version::V2 => {
            // Each ancestor hands the CPU and memory controllers down to its children.
            let mut dir = root.to_path_buf();
            for part in relative.split('/') {
                let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+cpu +memory");
                dir.push(part);
                if !dir.is_dir() {
                    std::fs::create_dir(&dir)?;
                }
            }
            write(
                &dir,
                "cpu.weight",
                shares_to_weight(limits.cpu_shares).to_string(),
            )?;
            let quota = limits
                .cpu_quota
                .map_or_else(|| "max".to_string(), |q| q.to_string());
            write(&dir, "cpu.max", format!("{quota} {}", limits.cpu_period))?;
            write(
                &dir,
                "memory.max",
                limits
                    .memory
                    .map_or_else(|| "max".to_string(), |m| m.to_string()),
            )?;
        }
    }
    Ok(())
}

/// v1 CPU shares (2..=262144) as a v2 weight (1..=10000), as runc converts them.
pub fn shares_to_weight(shares: u64) -> u64 {
    if shares == 0 {
        return 0;
    }
    let shares = shares.clamp(2, 262_144);
    1 + ((shares - 2) * 9999) / 262_142
}

/// The cgroups (cgroupfs layout) a pod with `uid` may have, one per QoS class.
pub fn pod_cgroups(uid: &str) -> [String; 3] {
    [
        format!("/kubepods/pod{uid}"),
        format!("/kubepods/burstable/pod{uid}"),
        format!("/kubepods/besteffort/pod{uid}"),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn limits_are_written_as_each_version_names_them() {
        let root = tempfile::tempdir().unwrap();
        let limits = Limits {
            cpu_shares: 307,
            cpu_quota: Some(30_000),
            cpu_period: 100_000,
            memory: Some(96 << 20),
        };
        apply_at(root.path(), "/kubepods/podu1", Version::V1, &limits).unwrap();
        let read = |p: &str| std::fs::read_to_string(root.path().join(p)).unwrap();
        assert_eq!(read("cpu/kubepods/podu1/cpu.shares"), "307");
        assert_eq!(read("cpu/kubepods/podu1/cpu.cfs_quota_us"), "30000");
        assert_eq!(read("cpu/kubepods/podu1/cpu.cfs_period_us"), "100000");
        assert_eq!(
            read("memory/kubepods/podu1/memory.limit_in_bytes"),
            "100663296"
        );

        let unlimited = Limits {
            cpu_quota: None,
            memory: None,
            ..limits
        };
        apply_at(
            root.path(),
            "kubepods/burstable/podu2",
            Version::V2,
            &unlimited,
        )
        .unwrap();
        assert_eq!(read("kubepods/burstable/podu2/cpu.max"), "max 100000");
        assert_eq!(read("kubepods/burstable/podu2/memory.max"), "max");
        assert_eq!(read("kubepods/burstable/podu2/cpu.weight"), "12");
        assert_eq!(read("kubepods/cgroup.subtree_control"), "+cpu +memory");

        let error = apply_at(root.path(), "/kubepods/../x", Version::V1, &limits).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn shares_convert_to_weights_as_runc_does() {
        assert_eq!(shares_to_weight(2), 1);
        assert_eq!(shares_to_weight(1024), 39);
        assert_eq!(shares_to_weight(262_144), 10_000);
    }

    #[test]
    fn this_machine_has_a_version_consistent_with_its_mounts() {
        let Ok(version) = version() else {
            // No cgroup file system here (a minimal container): nothing to compare.
            return;
        };
        let unified = Path::new(ROOT).join("cgroup.controllers").is_file();
        assert_eq!(version == Version::V2, unified, "{version}");
    }

    #[test]
    fn a_directory_that_is_not_a_cgroup_mount_is_refused() {
        let error = version_at(Path::new("/proc")).unwrap_err();
        assert!(
            error.to_string().starts_with("/proc is not a cgroup mount"),
            "{error}"
        );
        let error = version_at(Path::new("/nonexistent/cgroup")).unwrap_err();
        assert!(matches!(error, Error::Statfs { .. }), "{error}");
    }

    #[test]
    fn the_driver_follows_systemd_s_marker() {
        let dir = std::env::temp_dir();
        assert_eq!(driver_for(&dir), Driver::Systemd);
        assert_eq!(
            driver_for(&dir.join("no-such-marker-kyb")),
            Driver::Cgroupfs
        );
        assert_eq!(Driver::Cgroupfs.to_string(), "cgroupfs");
    }
}
