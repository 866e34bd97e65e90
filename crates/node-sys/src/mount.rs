//! Mounts for the node's components: the tmpfs behind a memory-backed emptyDir volume,
//! unmounting, and reading which mounts exist (from `/proc/self/mountinfo`, as the
//! kubelet's mount utilities do) so that a pod's directory is unmounted before it is
//! removed. Mounting and unmounting need root (CAP_SYS_ADMIN).

use std::io;
use std::path::{Path, PathBuf};

/// `statfs` type of a tmpfs (linux/magic.h).
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// A mount operation that failed, saying what was attempted.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("mounting tmpfs on {path}: {source}")]
    MountTmpfs { path: PathBuf, source: io::Error },
    #[error("unmounting {path}: {source}")]
    Unmount { path: PathBuf, source: io::Error },
    #[error("reading /proc/self/mountinfo: {0}")]
    MountInfo(io::Error),
    #[error("reading the file system at {path}: {source}")]
    Statfs { path: PathBuf, source: io::Error },
}

/// Mounts a fresh tmpfs on `target` (an existing directory), limited to `size_bytes` when
/// given (the kernel's default, half of the memory, otherwise). Needs root.
pub fn mount_tmpfs(target: &Path, size_bytes: Option<u64>) -> Result<(), Error> {
    let data = size_bytes.map(|size| format!("size={size}"));
    let data = data
        .map(std::ffi::CString::new)
        .transpose()
        .map_err(|e| Error::MountTmpfs {
            path: target.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, e),
        })?;
    rustix::mount::mount(
        "tmpfs",
        target,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        data.as_deref(),
    )
    .map_err(|e| Error::MountTmpfs {
        path: target.to_path_buf(),
        source: e.into(),
    })
}

/// Unmounts the file system mounted on `target`. Needs root.
pub fn unmount(target: &Path) -> Result<(), Error> {
    rustix::mount::unmount(target, rustix::mount::UnmountFlags::empty()).map_err(|e| {
        Error::Unmount {
            path: target.to_path_buf(),
            source: e.into(),
        }
    })
}

/// Whether the file system holding `path` is a tmpfs.
pub fn is_tmpfs(path: &Path) -> Result<bool, Error> {
    let stat = rustix::fs::statfs(path).map_err(|e| Error::Statfs {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    #[allow(clippy::unnecessary_cast)]
    Ok(stat.f_type as i64 == TMPFS_MAGIC)
}

/// Every mount point of this process's mount namespace, in mount order.
pub fn mount_points() -> Result<Vec<PathBuf>, Error> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").map_err(Error::MountInfo)?;
    Ok(parse_mountinfo(&text))
}

/// The mount points at or below `dir`, deepest first: the order to unmount them in.
pub fn mount_points_under(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut under: Vec<PathBuf> = mount_points()?
        .into_iter()
        .filter(|p| p.starts_with(dir))
        .collect();
    under.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    under.dedup();
    Ok(under)
}

/// Whether `path` is a mount point.
pub fn is_mount_point(path: &Path) -> Result<bool, Error> {
    Ok(mount_points()?.iter().any(|p| p == path))
}

/// The mount points (fifth field) of `/proc/self/mountinfo`, with the kernel's octal
/// escapes (`\040` for a space, ...) decoded.
fn parse_mountinfo(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape(field)))
        .collect()
}

fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                if let Ok(value) = u8::try_from(value) {
                    out.push(value);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn parses_mount_points_with_escapes() {
        let text = "22 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n\
                    35 22 0:31 / /var/lib/a\\040b rw - tmpfs tmpfs rw\n";
        assert_eq!(
            parse_mountinfo(text),
            vec![PathBuf::from("/"), PathBuf::from("/var/lib/a b")]
        );
        assert_eq!(unescape("x\\0"), "x\\0");
    }

    #[test]
    fn the_root_is_a_mount_point() {
        assert!(is_mount_point(Path::new("/")).unwrap());
        assert!(!mount_points_under(Path::new("/")).unwrap().is_empty());
    }

    #[test]
    fn tmpfs_mounted_sized_and_unmounted_as_root() {
        if !crate::privileges::is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("mem");
        std::fs::create_dir(&target).unwrap();
        mount_tmpfs(&target, Some(1 << 20)).unwrap();
        // Nothing may panic between mounting and unmounting (no mount left behind).
        let mounted =
            is_mount_point(&target).unwrap_or(false) && is_tmpfs(&target).unwrap_or(false);
        let size = rustix::fs::statfs(&target).map(|s| s.f_blocks * s.f_bsize as u64);
        unmount(&target).unwrap();
        let size = size.unwrap();
        assert!(mounted);
        assert_eq!(size, 1 << 20);
        assert!(!is_mount_point(&target).unwrap());
        assert!(matches!(unmount(&target), Err(Error::Unmount { .. })));
    }
}
