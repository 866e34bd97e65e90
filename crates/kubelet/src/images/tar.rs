//! A minimal, reproducible tar writer (POSIX ustar): the entries an image layer and an
//! OCI archive need (directories, regular files, symbolic links), with the owner, mtime
//! and names the caller gives, and nothing taken from the host.

use anyhow::{Context as _, bail};

const BLOCK: usize = 512;

/// What a tar entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File(Vec<u8>),
    Directory,
    Symlink(String),
}

/// One entry: path (relative, `/`-separated, no trailing `/` needed), mode bits, owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub kind: EntryKind,
}

/// Writes `entries`, in the order given, as a tar archive with every mtime 0.
pub fn write(entries: &[Entry]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    for entry in entries {
        append(&mut out, entry).with_context(|| format!("adding {} to the archive", entry.path))?;
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    Ok(out)
}

fn append(out: &mut Vec<u8>, entry: &Entry) -> anyhow::Result<()> {
    let mut name = entry.path.trim_start_matches('/').to_string();
    if entry.kind == EntryKind::Directory && !name.ends_with('/') {
        name.push('/');
    }
    let (prefix, name) = split_name(&name)?;
    let mut header = [0u8; BLOCK];
    put(&mut header[0..100], name.as_bytes());
    octal(&mut header[100..108], u64::from(entry.mode & 0o7777));
    octal(&mut header[108..116], u64::from(entry.uid));
    octal(&mut header[116..124], u64::from(entry.gid));
    let (size, flag, link) = match &entry.kind {
        EntryKind::File(data) => (data.len(), b'0', ""),
        EntryKind::Directory => (0, b'5', ""),
        EntryKind::Symlink(target) => (0, b'2', target.as_str()),
    };
    if link.len() > 100 {
        bail!("the link target {link:?} is longer than 100 bytes");
    }
    octal(&mut header[124..136], size as u64);
    octal(&mut header[136..148], 0);
    header[156] = flag;
    put(&mut header[157..257], link.as_bytes());
    put(&mut header[257..263], b"ustar\0");
    put(&mut header[263..265], b"00");
    let owner = |id: u32| if id == 0 { "root" } else { "" };
    put(&mut header[265..297], owner(entry.uid).as_bytes());
    put(&mut header[297..329], owner(entry.gid).as_bytes());
    octal(&mut header[329..337], 0);
    octal(&mut header[337..345], 0);
    put(&mut header[345..500], prefix.as_bytes());
    // The checksum is computed with its own field as spaces.
    header[148..156].fill(b' ');
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    let checksum = format!("{sum:06o}\0 ");
    put(&mut header[148..156], checksum.as_bytes());
    out.extend_from_slice(&header);
    if let EntryKind::File(data) = &entry.kind {
        out.extend_from_slice(data);
        let padding = (BLOCK - data.len() % BLOCK) % BLOCK;
        out.resize(out.len() + padding, 0);
    }
    Ok(())
}

/// Splits a name into ustar's `prefix` (155 bytes) and `name` (100 bytes) at a `/`.
fn split_name(path: &str) -> anyhow::Result<(&str, &str)> {
    if path.len() <= 100 {
        return Ok(("", path));
    }
    let trimmed = path.trim_end_matches('/');
    for (index, _) in trimmed.match_indices('/') {
        let (prefix, rest) = (&path[..index], &path[index + 1..]);
        if prefix.len() <= 155 && rest.len() <= 100 {
            return Ok((prefix, rest));
        }
    }
    bail!("the path is too long for a ustar header")
}

fn put(field: &mut [u8], value: &[u8]) {
    let n = value.len().min(field.len());
    field[..n].copy_from_slice(&value[..n]);
}

/// A zero-padded octal number ending in NUL, filling `field`.
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    put(field, text.as_bytes());
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn gnu_tar_reads_the_archive() {
        let archive = write(&[
            Entry {
                path: "bin".into(),
                mode: 0o755,
                uid: 0,
                gid: 0,
                kind: EntryKind::Directory,
            },
            Entry {
                path: "bin/hello".into(),
                mode: 0o644,
                uid: 0,
                gid: 0,
                kind: EntryKind::File(b"hello\n".to_vec()),
            },
            Entry {
                path: "bin/link".into(),
                mode: 0o777,
                uid: 0,
                gid: 0,
                kind: EntryKind::Symlink("hello".into()),
            },
            Entry {
                path: format!("{}/{}", "d".repeat(120), "f".repeat(90)),
                mode: 0o600,
                uid: 65534,
                gid: 65534,
                kind: EntryKind::File(vec![7; 600]),
            },
        ])
        .unwrap();
        assert_eq!(archive.len() % BLOCK, 0);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.tar");
        std::fs::write(&file, &archive).unwrap();
        let listing = std::process::Command::new("tar")
            .arg("-tvf")
            .arg(&file)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&listing.stdout);
        assert!(listing.status.success(), "{listing:?}");
        assert!(text.contains("drwxr-xr-x root/root"), "{text}");
        assert!(text.contains("bin/link -> hello"), "{text}");
        assert!(text.contains("-rw------- 65534/65534"), "{text}");
        assert!(text.contains(&"f".repeat(90)), "{text}");
        let content = std::process::Command::new("tar")
            .arg("-xOf")
            .arg(&file)
            .arg("bin/hello")
            .output()
            .unwrap();
        assert_eq!(content.stdout, b"hello\n");
    }
}
