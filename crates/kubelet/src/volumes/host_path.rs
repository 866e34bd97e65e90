//! hostPath volumes: a path of the node handed to the container as it is, after kubelet's
//! `type` check (creating a missing directory or file for the `…OrCreate` types).

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Checks `path` against a hostPath `type` (`""` for none), creating it for
/// `DirectoryOrCreate` (0755) and `FileOrCreate` (0644, in an existing directory), with
/// kubelet's messages.
pub fn check_type(path: &str, path_type: &str) -> Result<(), String> {
    if path.split('/').any(|p| p == "..") {
        return Err(format!("invalid HostPath `{path}`: must not contain '..'"));
    }
    let p = Path::new(path);
    let meta = std::fs::metadata(p).ok();
    let kind = meta.as_ref().map(|m| m.file_type());
    let fail = |what: &str| Err(format!("hostPath type check failed: {path} is not {what}"));
    match path_type {
        "" => Ok(()),
        "DirectoryOrCreate" if meta.is_none() => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(p)
            .map_err(|e| format!("mkdir {path}: {e}")),
        "DirectoryOrCreate" | "Directory" => match kind {
            Some(k) if k.is_dir() => Ok(()),
            _ => fail("a directory"),
        },
        "FileOrCreate" if meta.is_none() => std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(p)
            .map(drop)
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => format!("open {path}: no such file or directory"),
                _ => format!("open {path}: {e}"),
            }),
        "FileOrCreate" | "File" => match kind {
            Some(k) if k.is_file() => Ok(()),
            _ => fail("a file"),
        },
        "Socket" => match kind {
            Some(k) if k.is_socket() => Ok(()),
            _ => fail("a socket file"),
        },
        "CharDevice" => match kind {
            Some(k) if k.is_char_device() => Ok(()),
            _ => fail("a character device"),
        },
        "BlockDevice" => match kind {
            Some(k) if k.is_block_device() => Ok(()),
            _ => fail("a block device"),
        },
        other => Err(format!("{other} is an invalid volume type")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn type_checks_with_kubelet_s_messages() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        let file = format!("{d}/f");
        std::fs::write(&file, "x").unwrap();
        let missing = format!("{d}/missing");

        assert_eq!(check_type(&missing, ""), Ok(()));
        assert_eq!(check_type(&d, "Directory"), Ok(()));
        assert_eq!(
            check_type(&file, "Directory").unwrap_err(),
            format!("hostPath type check failed: {file} is not a directory")
        );
        assert_eq!(
            check_type(&missing, "Directory").unwrap_err(),
            format!("hostPath type check failed: {missing} is not a directory")
        );
        assert_eq!(check_type(&file, "File"), Ok(()));
        assert_eq!(
            check_type(&d, "File").unwrap_err(),
            format!("hostPath type check failed: {d} is not a file")
        );
        assert_eq!(
            check_type(&file, "Socket").unwrap_err(),
            format!("hostPath type check failed: {file} is not a socket file")
        );
        assert_eq!(check_type("/dev/null", "CharDevice"), Ok(()));
        assert_eq!(
            check_type(&file, "CharDevice").unwrap_err(),
            format!("hostPath type check failed: {file} is not a character device")
        );
        assert_eq!(
            check_type("/dev/null", "BlockDevice").unwrap_err(),
            "hostPath type check failed: /dev/null is not a block device"
        );
        assert_eq!(
            check_type(&d, "Fifo").unwrap_err(),
            "Fifo is an invalid volume type"
        );
        assert!(
            check_type("/a/../b", "")
                .unwrap_err()
                .contains("must not contain '..'")
        );
    }

    #[test]
    fn or_create_types_create_with_kubelet_s_modes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap().to_string();
        let new_dir = format!("{d}/a/b");
        check_type(&new_dir, "DirectoryOrCreate").unwrap();
        let meta = std::fs::metadata(&new_dir).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o777, 0o755 & !current_umask());

        let new_file = format!("{d}/a/f");
        check_type(&new_file, "FileOrCreate").unwrap();
        let meta = std::fs::metadata(&new_file).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o644 & !current_umask());
        // An existing file keeps its contents.
        std::fs::write(&new_file, "keep").unwrap();
        check_type(&new_file, "FileOrCreate").unwrap();
        assert_eq!(std::fs::read_to_string(&new_file).unwrap(), "keep");

        let orphan = format!("{d}/nodir/f");
        assert_eq!(
            check_type(&orphan, "FileOrCreate").unwrap_err(),
            format!("open {orphan}: no such file or directory")
        );
        assert_eq!(
            check_type(&new_file, "DirectoryOrCreate").unwrap_err(),
            format!("hostPath type check failed: {new_file} is not a directory")
        );
    }

    /// The process's umask, read from /proc/self/status.
    fn current_umask() -> u32 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
            .unwrap()
    }
}
