//! Volume ownership for a pod's `fsGroup` (kubelet's `SetVolumeOwnership`): every file and
//! directory of the volume gets the group, group read (and write unless the volume is
//! read-only) permission, and directories the set-group-ID bit so that new files inherit
//! the group. `fsGroupChangePolicy: OnRootMismatch` skips the walk when the volume's root
//! already has the right group and permissions. Symlinks are re-grouped but never followed.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const RW_MASK: u32 = 0o660;
const RO_MASK: u32 = 0o440;
const EXEC_MASK: u32 = 0o110;
const SETGID: u32 = 0o2000;

/// Applies `fs_group` to everything under `dir` (and `dir` itself).
pub fn set_volume_ownership(
    dir: &Path,
    fs_group: u32,
    read_only: bool,
    on_root_mismatch: bool,
) -> io::Result<()> {
    if on_root_mismatch && !requires_change(dir, fs_group, read_only)? {
        return Ok(());
    }
    walk(dir, &mut |path, meta| {
        change(path, meta, fs_group, read_only)
    })
}

/// Whether the root lacks the group, the permissions or the set-group-ID bit.
fn requires_change(dir: &Path, fs_group: u32, read_only: bool) -> io::Result<bool> {
    let meta = std::fs::metadata(dir)?;
    if meta.gid() != fs_group || !meta.is_dir() {
        return Ok(true);
    }
    let wanted = if read_only { RO_MASK } else { RW_MASK } | EXEC_MASK;
    let mode = meta.permissions().mode();
    Ok(mode & wanted != wanted || mode & SETGID == 0)
}

fn change(path: &Path, meta: &std::fs::Metadata, fs_group: u32, read_only: bool) -> io::Result<()> {
    std::os::unix::fs::lchown(path, None, Some(fs_group))
        .map_err(|e| io::Error::new(e.kind(), format!("chown {}: {e}", path.display())))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mut mask = if read_only { RO_MASK } else { RW_MASK };
    if meta.is_dir() {
        mask |= SETGID | EXEC_MASK;
    }
    let mode = meta.permissions().mode() & 0o7777;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | mask))
        .map_err(|e| io::Error::new(e.kind(), format!("chmod {}: {e}", path.display())))
}

/// Visits `dir` and everything below it without following symlinks.
fn walk(
    dir: &Path,
    visit: &mut dyn FnMut(&Path, &std::fs::Metadata) -> io::Result<()>,
) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    visit(dir, &meta)?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            walk(&entry?.path(), visit)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn group_and_group_bits_applied_symlinks_not_followed_as_root() {
        if !kyb_node_sys::privileges::is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let outside = tempfile::tempdir().unwrap();
        let outside_file = outside.path().join("host");
        std::fs::write(&outside_file, "x").unwrap();
        std::fs::set_permissions(&outside_file, std::fs::Permissions::from_mode(0o600)).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("vol");
        std::fs::create_dir_all(vol.join("sub")).unwrap();
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(vol.join("sub/f"), "y").unwrap();
        std::fs::set_permissions(vol.join("sub/f"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::os::unix::fs::symlink(&outside_file, vol.join("link")).unwrap();

        set_volume_ownership(&vol, 1234, true, false).unwrap();
        let f = std::fs::metadata(vol.join("sub/f")).unwrap();
        assert_eq!(f.gid(), 1234);
        assert_eq!(f.permissions().mode() & 0o7777, 0o640);
        let d = std::fs::metadata(&vol).unwrap();
        assert_eq!(d.permissions().mode() & 0o7777, 0o2755);
        let host = std::fs::metadata(&outside_file).unwrap();
        assert_eq!(host.gid(), 0);
        assert_eq!(host.permissions().mode() & 0o7777, 0o600);
        assert!(!requires_change(&vol, 1234, true).unwrap());
        assert!(requires_change(&vol, 1234, false).unwrap());

        // Writable volumes get group write; OnRootMismatch skips a root that matches.
        set_volume_ownership(&vol, 1234, false, false).unwrap();
        assert_eq!(
            std::fs::metadata(vol.join("sub/f"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o660
        );
        std::fs::set_permissions(vol.join("sub/f"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        set_volume_ownership(&vol, 1234, false, true).unwrap();
        assert_eq!(
            std::fs::metadata(vol.join("sub/f"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
    }
}
