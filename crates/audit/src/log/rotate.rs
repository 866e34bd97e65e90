//! A log file rotated by size, with backups kept by count and age, as kube-apiserver's
//! audit log does it (lumberjack):
//!
//! - the file is opened on the first write, appended to if it exists; if it would reach
//!   the maximum size with that write, it is rotated first;
//! - before a write that would take it past the maximum size, the file is renamed to
//!   `<name>-<UTC time>.<ext>` and a new one is created with the old one's permissions;
//! - after opening and after each rotation, backups beyond the newest `max_backups` and
//!   backups older than `max_age` (judged by the time in their names) are deleted.
//!
//! One difference: a single line larger than the maximum size is written to a fresh file
//! rather than refused, so no event is lost to the size limit.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::backup_name::BackupNames;

const BUFFER: usize = 64 * 1024;
const MILLIS_PER_DAY: i64 = 86_400_000;
/// Permissions of a new log file.
const FILE_MODE: u32 = 0o600;

/// Where backups go and which ones are kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    /// Rotate before the file would exceed this many bytes.
    pub(crate) max_size: u64,
    /// Keep at most this many backups; 0 keeps all.
    pub(crate) max_backups: u32,
    /// Delete backups older than this many days; 0 keeps them regardless of age.
    pub(crate) max_age_days: u32,
}

pub(crate) struct RotatingFile {
    path: PathBuf,
    dir: PathBuf,
    names: BackupNames,
    retention: Retention,
    file: Option<BufWriter<File>>,
    size: u64,
    /// The time in the last backup's name, so two rotations in one millisecond get
    /// distinct names.
    last_backup: i64,
}

impl RotatingFile {
    pub(crate) fn new(path: &Path, retention: Retention) -> RotatingFile {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        RotatingFile {
            path: path.to_path_buf(),
            dir,
            names: BackupNames::for_file(&file_name),
            retention,
            file: None,
            size: 0,
            last_backup: i64::MIN,
        }
    }

    /// Appends `line` and a newline, rotating first when needed.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let len = line.len() as u64 + 1;
        if self.file.is_none() {
            self.open_existing_or_new(len)?;
        }
        if self.size > 0 && self.size + len > self.retention.max_size {
            self.rotate()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("audit log file is not open"));
        };
        file.write_all(line)?;
        file.write_all(b"\n")?;
        self.size += len;
        Ok(())
    }

    /// Hands buffered lines to the operating system.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }

    /// Flushes and makes the file durable.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(file) => {
                file.flush()?;
                file.get_ref().sync_data()
            }
            None => Ok(()),
        }
    }

    fn open_existing_or_new(&mut self, write_len: u64) -> io::Result<()> {
        self.remove_old_backups();
        let size = match std::fs::metadata(&self.path) {
            Ok(metadata) => metadata.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return self.open_new(),
            Err(e) => return Err(e),
        };
        if size + write_len >= self.retention.max_size {
            return self.rotate();
        }
        let file = open(&self.path, OpenOptions::new().append(true), FILE_MODE)?;
        self.file = Some(BufWriter::with_capacity(BUFFER, file));
        self.size = size;
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut file) = self.file.take() {
            file.flush()?;
        }
        self.open_new()?;
        self.remove_old_backups();
        Ok(())
    }

    /// Moves the current file (if any) to its backup name and creates a new one.
    fn open_new(&mut self) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let mut mode = FILE_MODE;
        match std::fs::metadata(&self.path) {
            Ok(metadata) => {
                mode = permissions_of(&metadata);
                let at = now_millis().max(self.last_backup + 1);
                self.last_backup = at;
                let backup = self.dir.join(self.names.name_at(at));
                std::fs::rename(&self.path, &backup)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let file = open(
            &self.path,
            OpenOptions::new().write(true).truncate(true),
            mode,
        )?;
        self.file = Some(BufWriter::with_capacity(BUFFER, file));
        self.size = 0;
        Ok(())
    }

    /// Deletes backups beyond `max_backups` (oldest first) and older than `max_age`.
    fn remove_old_backups(&self) {
        let Retention {
            max_backups,
            max_age_days,
            ..
        } = self.retention;
        if max_backups == 0 && max_age_days == 0 {
            return;
        }
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot list audit log backups");
                return;
            }
        };
        let mut backups: Vec<(i64, String)> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                Some((self.names.time_of(&name)?, name))
            })
            .collect();
        // Newest first.
        backups.sort_by(|a, b| b.cmp(a));

        let mut remove: Vec<&str> = Vec::new();
        let mut kept: Vec<&(i64, String)> = Vec::new();
        if max_backups > 0 {
            let mut counted: Vec<&str> = Vec::new();
            for backup in &backups {
                let base = BackupNames::base_name(&backup.1);
                if !counted.contains(&base) {
                    counted.push(base);
                }
                if counted.len() as u64 > u64::from(max_backups) {
                    remove.push(&backup.1);
                } else {
                    kept.push(backup);
                }
            }
        } else {
            kept.extend(backups.iter());
        }
        if max_age_days > 0 {
            let cutoff = now_millis() - i64::from(max_age_days) * MILLIS_PER_DAY;
            remove.extend(
                kept.iter()
                    .filter(|(time, _)| *time < cutoff)
                    .map(|(_, name)| name.as_str()),
            );
        }
        for name in remove {
            let path = self.dir.join(name);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove old audit log backup");
            }
        }
    }
}

fn now_millis() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

#[cfg(unix)]
fn open(path: &Path, options: &mut OpenOptions, mode: u32) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    options.create(true).mode(mode).open(path)
}

#[cfg(not(unix))]
fn open(path: &Path, options: &mut OpenOptions, _mode: u32) -> io::Result<File> {
    options.create(true).open(path)
}

#[cfg(unix)]
fn permissions_of(metadata: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn permissions_of(_metadata: &std::fs::Metadata) -> u32 {
    FILE_MODE
}

/// Creates the log's directory (0700) and the file itself (0600) if missing, as
/// kube-apiserver does at start, so that a bad path is an error before any request.
pub(crate) fn ensure_log_file(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    open(path, OpenOptions::new().append(true), FILE_MODE).map(drop)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn retention(max_size: u64, max_backups: u32, max_age_days: u32) -> Retention {
        Retention {
            max_size,
            max_backups,
            max_age_days,
        }
    }

    #[test]
    fn rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut log = RotatingFile::new(&path, retention(100, 2, 0));
        // 30 lines of 40 bytes: two per file.
        for i in 0..30 {
            log.write_line(format!("{i:039}").as_bytes()).unwrap();
        }
        log.sync().unwrap();
        let names = files(dir.path());
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(names.contains(&"audit.log".to_string()));
        let names_of = BackupNames::for_file("audit.log");
        let backups: Vec<&String> = names
            .iter()
            .filter(|n| names_of.time_of(n).is_some())
            .collect();
        assert_eq!(backups.len(), 2);
        // The newest backups are kept: they hold lines 26 and 27, and 28 and 29 are current.
        let current = std::fs::read_to_string(&path).unwrap();
        assert_eq!(current, format!("{:039}\n{:039}\n", 28, 29));
        let newest = std::fs::read_to_string(dir.path().join(backups[1])).unwrap();
        assert_eq!(newest, format!("{:039}\n{:039}\n", 26, 27));
    }

    #[test]
    fn appends_to_an_existing_file_and_rotates_it_when_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, "old\n").unwrap();
        let mut log = RotatingFile::new(&path, retention(10, 0, 0));
        log.write_line(b"new").unwrap();
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\nnew\n");

        // Reopened with 8 bytes in it, a 3-byte line would reach the maximum: rotate.
        let mut log = RotatingFile::new(&path, retention(10, 0, 0));
        log.write_line(b"ab").unwrap();
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "ab\n");
        assert_eq!(files(dir.path()).len(), 2);
    }

    #[test]
    fn oversized_lines_are_written_to_a_fresh_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut log = RotatingFile::new(&path, retention(10, 0, 0));
        log.write_line(b"a").unwrap();
        log.write_line(b"0123456789abcdef").unwrap();
        log.write_line(b"b").unwrap();
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
        let mut contents: Vec<String> = files(dir.path())
            .iter()
            .filter(|n| n.as_str() != "audit.log")
            .map(|n| std::fs::read_to_string(dir.path().join(n)).unwrap())
            .collect();
        contents.sort();
        assert_eq!(contents, vec!["0123456789abcdef\n", "a\n"]);
    }

    #[test]
    fn removes_backups_older_than_max_age() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let names = BackupNames::for_file("audit.log");
        let old = names.name_at(now_millis() - 3 * MILLIS_PER_DAY);
        let recent = names.name_at(now_millis() - MILLIS_PER_DAY / 2);
        let compressed_old = format!("{}.gz", names.name_at(now_millis() - 5 * MILLIS_PER_DAY));
        for name in [&old, &recent, &compressed_old, &"unrelated.txt".to_string()] {
            std::fs::write(dir.path().join(name), "x\n").unwrap();
        }
        let mut log = RotatingFile::new(&path, retention(1024, 0, 2));
        log.write_line(b"line").unwrap();
        let left = files(dir.path());
        assert!(!left.contains(&old), "{left:?}");
        assert!(!left.contains(&compressed_old), "{left:?}");
        assert!(
            left.contains(&recent) && left.contains(&"unrelated.txt".to_string()),
            "{left:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private_and_keep_their_mode_across_rotation() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("audit.log");
        ensure_log_file(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("sub")), 0o700);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let mut log = RotatingFile::new(&path, retention(4, 0, 0));
        log.write_line(b"abc").unwrap();
        log.write_line(b"def").unwrap();
        log.flush().unwrap();
        assert_eq!(mode(&path), 0o640);
    }
}
