//! Reading and writing the PKI's files: private files are written atomically with mode
//! 0600, so a crash never leaves half a key, and nothing is ever readable by others.

use crate::Error;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub(crate) fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        action: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|source| {
        Error::Io {
            action: "restricting",
            path: dir.to_path_buf(),
            source,
        }
    })
}

/// The file's contents, or `None` if it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<String>, Error> {
    match std::fs::read_to_string(path) {
        Ok(contents) => Ok(Some(contents)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io {
            action: "reading",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `contents` to `path` atomically (temporary file, fsync, rename), mode 0600.
pub fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    let io = |action, source| Error::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(|e| io("creating", e))?;
    file.write_all(contents.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| io("writing", e))?;
    std::fs::rename(&temporary, path).map_err(|e| io("renaming", e))
}
