//! The atomic writer (kubelet's `AtomicWriter`): a volume's files (configMap, secret,
//! downwardAPI, projected) replaced all at once, so that a container never sees half an
//! update.
//!
//! The contents live in a hidden timestamped directory (`..2026_11_27_13_00_00.123456789`);
//! the `..data` symlink points at the current one and is swapped by renaming a fresh
//! symlink over it (`rename` is atomic); each user-visible top-level path is a symlink
//! through it (`key -> ..data/key`). Unchanged contents are not rewritten; the previous
//! timestamped directory and paths no longer in the payload are removed after the swap.
//! (As with kubelet's writer, an open racing the removal of the previous directory can
//! fail with "not found" and succeed when retried; it never sees a partial file.)

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The symlink to the current timestamped directory.
pub const DATA_DIR: &str = "..data";
/// The symlink created next to `..data` and renamed over it.
const NEW_DATA_DIR: &str = "..data_tmp";
const MAX_PATH_LENGTH: usize = 4096;
const MAX_FILE_NAME_LENGTH: usize = 255;

/// One file of a volume: its contents and permission bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileProjection {
    pub data: Vec<u8>,
    pub mode: u32,
}

/// A volume's files by relative path.
pub type Payload = BTreeMap<String, FileProjection>;

/// Checks a payload path as kubelet does (relative, no `..` element, not starting with
/// `..`, within the length limits), with kubelet's messages.
pub fn validate_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err(format!("invalid path: must not be empty: {path:?}"));
    }
    if path.starts_with('/') {
        return Err(format!("invalid path: must be relative path: {path}"));
    }
    if path.len() > MAX_PATH_LENGTH {
        return Err(format!(
            "invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters"
        ));
    }
    let items: Vec<&str> = path.split('/').collect();
    for item in &items {
        if *item == ".." {
            return Err(format!("invalid path: must not contain '..': {path}"));
        }
        if item.len() > MAX_FILE_NAME_LENGTH {
            return Err(format!(
                "invalid path: filenames must be less than or equal to {MAX_FILE_NAME_LENGTH} characters"
            ));
        }
    }
    if items[0].starts_with("..") && items[0].len() > 2 {
        return Err(format!("invalid path: must not start with '..': {path}"));
    }
    Ok(())
}

/// A path cleaned as Go's `filepath.Clean` does for relative paths (`a//b/./c` → `a/b/c`).
fn clean(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    parts.join("/")
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A new timestamped directory was written and `..data` swapped to it.
    Written,
    /// The contents on disk already matched the payload.
    Unchanged,
}

/// Writes `payload` into `target_dir` (which must exist) atomically. `set_perms` runs on
/// the new timestamped directory before the swap (volume ownership for `fsGroup`).
pub fn write(
    target_dir: &Path,
    payload: &Payload,
    set_perms: &dyn Fn(&Path) -> io::Result<()>,
) -> io::Result<Outcome> {
    let mut clean_payload = Payload::new();
    for (path, file) in payload {
        validate_path(path).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        clean_payload.insert(clean(path), file.clone());
    }
    let data_dir = target_dir.join(DATA_DIR);
    let old_ts_name = match std::fs::read_link(&data_dir) {
        Ok(name) => Some(name),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(with_context(e, "reading the ..data link", &data_dir)),
    };
    // Only a timestamped directory of this volume is ever read or removed.
    let old_ts_dir = old_ts_name
        .filter(|name| {
            let name = name.to_string_lossy();
            name.starts_with("..") && !name.contains('/') && name != ".." && name != DATA_DIR
        })
        .map(|name| target_dir.join(name));
    let old_paths = match &old_ts_dir {
        Some(dir) if dir.is_dir() => files_under(dir)?,
        _ => BTreeSet::new(),
    };

    let changed = match &old_ts_dir {
        Some(dir) if dir.is_dir() => differs(dir, &clean_payload, &old_paths)?,
        _ => true,
    };
    if changed {
        let ts_dir = new_timestamped_dir(target_dir)?;
        write_payload(&ts_dir, &clean_payload)?;
        set_perms(&ts_dir)?;
        let ts_name = ts_dir
            .file_name()
            .map(PathBuf::from)
            .ok_or_else(|| io::Error::other("timestamped directory without a name"))?;
        let new_link = target_dir.join(NEW_DATA_DIR);
        match std::fs::remove_file(&new_link) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(with_context(e, "removing", &new_link));
            }
            _ => {}
        }
        std::os::unix::fs::symlink(&ts_name, &new_link)
            .map_err(|e| with_context(e, "creating the symlink", &new_link))?;
        std::fs::rename(&new_link, &data_dir)
            .map_err(|e| with_context(e, "renaming over", &data_dir))?;
    }

    // The user-visible top-level paths: symlinks through ..data.
    let new_top: BTreeSet<&str> = clean_payload
        .keys()
        .filter_map(|p| p.split('/').next())
        .collect();
    for top in &new_top {
        let visible = target_dir.join(top);
        if std::fs::symlink_metadata(&visible).is_err() {
            std::os::unix::fs::symlink(Path::new(DATA_DIR).join(top), &visible)
                .map_err(|e| with_context(e, "creating the symlink", &visible))?;
        }
    }
    // Top-level paths of the old contents that the new payload no longer has.
    for old in &old_paths {
        let Some(top) = old.split('/').next() else {
            continue;
        };
        if !new_top.contains(top) {
            let visible = target_dir.join(top);
            if std::fs::symlink_metadata(&visible).is_ok_and(|m| m.file_type().is_symlink()) {
                std::fs::remove_file(&visible)
                    .map_err(|e| with_context(e, "removing", &visible))?;
            }
        }
    }
    if changed
        && let Some(old) = old_ts_dir
        && old.is_dir()
    {
        std::fs::remove_dir_all(&old).map_err(|e| with_context(e, "removing", &old))?;
    }
    Ok(if changed {
        Outcome::Written
    } else {
        Outcome::Unchanged
    })
}

fn with_context(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// The relative paths of the regular files below `dir` (no symlinks followed).
fn files_under(dir: &Path) -> io::Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = stack.pop() {
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push((entry.path(), rel));
            } else {
                out.insert(rel);
            }
        }
    }
    Ok(out)
}

/// Whether the files in `ts_dir` differ from `payload` (set of paths, contents or modes).
fn differs(ts_dir: &Path, payload: &Payload, on_disk: &BTreeSet<String>) -> io::Result<bool> {
    if on_disk.len() != payload.len() || payload.keys().any(|k| !on_disk.contains(k)) {
        return Ok(true);
    }
    for (path, file) in payload {
        let full = ts_dir.join(path);
        let data = std::fs::read(&full)?;
        let mode = std::fs::symlink_metadata(&full)?.permissions().mode() & 0o7777;
        if data != file.data || mode != file.mode & 0o7777 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A new `..<UTC time>.<nanoseconds>` directory (mode 0755) in `target_dir`.
fn new_timestamped_dir(target_dir: &Path) -> io::Result<PathBuf> {
    let now = jiff::Timestamp::now();
    let base = now
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("..%Y_%m_%d_%H_%M_%S")
        .to_string();
    let mut nanos = now.subsec_nanosecond().unsigned_abs();
    loop {
        let dir = target_dir.join(format!("{base}.{nanos:09}"));
        match std::fs::DirBuilder::new().mode(0o755).create(&dir) {
            Ok(()) => {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                nanos = (nanos + 1) % 1_000_000_000
            }
            Err(e) => return Err(with_context(e, "creating", &dir)),
        }
    }
}

/// Writes each file (and the directories on its way, 0755) with its mode.
fn write_payload(ts_dir: &Path, payload: &Payload) -> io::Result<()> {
    for (path, file) in payload {
        let full = ts_dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(|e| with_context(e, "creating", parent))?;
        }
        std::fs::write(&full, &file.data).map_err(|e| with_context(e, "writing", &full))?;
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(file.mode & 0o7777))
            .map_err(|e| with_context(e, "setting the mode of", &full))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn file(data: &str, mode: u32) -> FileProjection {
        FileProjection {
            data: data.as_bytes().to_vec(),
            mode,
        }
    }

    fn no_perms(_: &Path) -> io::Result<()> {
        Ok(())
    }

    fn hidden_dirs(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("..") && n != DATA_DIR)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn paths_are_validated_with_kubelet_s_messages() {
        assert!(validate_path("a/b").is_ok());
        assert!(validate_path("..a").is_err());
        assert_eq!(
            validate_path("a/../b").unwrap_err(),
            "invalid path: must not contain '..': a/../b"
        );
        assert_eq!(
            validate_path("/etc").unwrap_err(),
            "invalid path: must be relative path: /etc"
        );
        assert_eq!(
            validate_path("..data/x").unwrap_err(),
            "invalid path: must not start with '..': ..data/x"
        );
    }

    #[test]
    fn writes_through_a_swapped_data_link_and_removes_old_contents() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path();
        let mut payload = Payload::from([
            ("a".to_string(), file("one", 0o644)),
            ("sub/b".to_string(), file("two", 0o600)),
        ]);
        assert_eq!(
            write(target, &payload, &no_perms).unwrap(),
            Outcome::Written
        );
        let first = hidden_dirs(target);
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(first[0].starts_with(".."), "{first:?}");
        assert_eq!(first[0].len(), "..2026_11_27_13_00_00.123456789".len());
        assert_eq!(
            std::fs::read_link(target.join("a")).unwrap(),
            Path::new("..data/a")
        );
        assert_eq!(
            std::fs::read_link(target.join("sub")).unwrap(),
            Path::new("..data/sub")
        );
        assert_eq!(
            std::fs::read_to_string(target.join("sub/b")).unwrap(),
            "two"
        );
        let mode = std::fs::metadata(target.join("sub/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        // Unchanged: nothing rewritten.
        assert_eq!(
            write(target, &payload, &no_perms).unwrap(),
            Outcome::Unchanged
        );
        assert_eq!(hidden_dirs(target), first);

        // Changed: a new directory, the old one gone, a dropped key's symlink gone.
        payload.remove("sub/b");
        payload.insert("a".into(), file("uno", 0o644));
        assert_eq!(
            write(target, &payload, &no_perms).unwrap(),
            Outcome::Written
        );
        let second = hidden_dirs(target);
        assert_eq!(second.len(), 1);
        assert_ne!(second, first);
        assert_eq!(std::fs::read_to_string(target.join("a")).unwrap(), "uno");
        assert!(std::fs::symlink_metadata(target.join("sub")).is_err());

        // A mode change alone is written too.
        payload.insert("a".into(), file("uno", 0o400));
        assert_eq!(
            write(target, &payload, &no_perms).unwrap(),
            Outcome::Written
        );
    }

    #[test]
    fn readers_never_see_a_missing_path_or_a_torn_file_while_updating() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().to_path_buf();
        let big = |c: char| c.to_string().repeat(64 * 1024);
        write(
            &target,
            &Payload::from([("k".into(), file(&big('a'), 0o644))]),
            &no_perms,
        )
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            let target = target.clone();
            std::thread::spawn(move || {
                let (mut reads, mut raced) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    // The user-visible path is never missing.
                    std::fs::symlink_metadata(target.join("k")).expect("k exists");
                    let text = match std::fs::read_to_string(target.join("k")) {
                        Ok(text) => text,
                        // The directory ..data pointed to while the path was resolved was
                        // removed meanwhile (kubelet's writer has the same window): a
                        // retry reads the new one.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            raced += 1;
                            continue;
                        }
                        Err(e) => panic!("reading k: {e}"),
                    };
                    let first = text.chars().next().expect("not empty");
                    assert_eq!(text.len(), 64 * 1024);
                    assert!(text.chars().all(|c| c == first), "a torn read");
                    reads += 1;
                }
                (reads, raced)
            })
        };
        for i in 0..200 {
            let c = if i % 2 == 0 { 'b' } else { 'a' };
            let payload = Payload::from([("k".into(), file(&big(c), 0o644))]);
            assert_eq!(
                write(&target, &payload, &no_perms).unwrap(),
                Outcome::Written
            );
        }
        stop.store(true, Ordering::Relaxed);
        let (reads, raced) = reader
            .join()
            .expect("the reader saw a consistent file each time");
        assert!(reads > 0);
        assert!(raced <= reads, "{raced} raced reads for {reads} good ones");
        assert_eq!(hidden_dirs(&target).len(), 1);
    }

    #[test]
    fn set_perms_runs_on_the_new_directory_before_the_swap() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().to_path_buf();
        let seen = std::sync::Mutex::new(None);
        let record = |p: &Path| {
            // ..data does not point here yet.
            let current = std::fs::read_link(p.parent().unwrap().join(DATA_DIR)).ok();
            *seen.lock().unwrap() = Some((p.to_path_buf(), current));
            Ok(())
        };
        write(
            &target,
            &Payload::from([("k".into(), file("x", 0o644))]),
            &record,
        )
        .unwrap();
        let (path, current) = seen.lock().unwrap().clone().unwrap();
        assert!(path.join("k").is_file());
        assert_eq!(current, None);
    }
}
