//! The project's own images, built as OCI image archives (an `oci-layout` directory in a
//! tar: `oci-layout`, `index.json`, `blobs/sha256/…` holding the config, the manifest and
//! one uncompressed layer) that `ctr images import` and `skopeo` read.
//!
//! Builds are reproducible: entries are sorted, owners and mtimes fixed, JSON written in
//! a fixed order, so the same inputs give byte-identical archives (and the same image
//! ID), which lets scripts skip an import when nothing changed.

use super::tar::{self, Entry, EntryKind};
use anyhow::{Context as _, bail};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The pause program's source (`images/pause/pause.c`).
pub const PAUSE_SOURCE: &str = include_str!("../../../../images/pause/pause.c");

/// Where a file's contents come from.
#[derive(Clone, Debug)]
pub enum FileSource {
    /// These bytes.
    Contents(Vec<u8>),
    /// A file of the building machine, read at build time.
    HostFile(PathBuf),
    /// A symbolic link to this target.
    Symlink(String),
    /// A directory.
    Directory,
}

/// One file of an image.
#[derive(Clone, Debug)]
pub struct ImageFile {
    /// Its absolute path in the image (`/bin/sh`).
    pub path: String,
    /// Permission bits (`0o755`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub source: FileSource,
}

impl ImageFile {
    /// A root-owned file, directory or link.
    pub fn new(path: &str, mode: u32, source: FileSource) -> ImageFile {
        ImageFile {
            path: path.to_string(),
            mode,
            uid: 0,
            gid: 0,
            source,
        }
    }
}

/// What the image runs (the OCI image configuration's `config`).
#[derive(Clone, Debug, Default)]
pub struct ImageConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `NAME=value` pairs.
    pub env: Vec<String>,
    pub user: Option<String>,
    pub working_dir: Option<String>,
}

/// An image to build.
#[derive(Clone, Debug)]
pub struct ImageSpec {
    /// Its full name with tag (`kyb.local/busybox:1.35.0`).
    pub name: String,
    pub files: Vec<ImageFile>,
    pub config: ImageConfig,
}

/// A built OCI archive.
#[derive(Clone, Debug)]
pub struct ImageArchive {
    /// The image's name.
    pub name: String,
    /// The tar file's bytes.
    pub bytes: Vec<u8>,
    /// The manifest's digest (`sha256:…`).
    pub manifest_digest: String,
    /// The configuration's digest: the image ID containerd reports.
    pub config_digest: String,
}

const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar";

fn sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in hash {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// The OCI name of the machine's architecture.
fn architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The image's single layer: every file, with the directories above it, sorted by path.
fn layer(files: &[ImageFile]) -> anyhow::Result<Vec<u8>> {
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    for file in files {
        let path = file.path.trim_matches('/');
        if path.is_empty() || path.split('/').any(|part| part == ".." || part == ".") {
            bail!("{:?} is not an absolute path in the image", file.path);
        }
        let kind = match &file.source {
            FileSource::Contents(bytes) => EntryKind::File(bytes.clone()),
            FileSource::HostFile(host) => EntryKind::File(
                std::fs::read(host).with_context(|| format!("reading {}", host.display()))?,
            ),
            FileSource::Symlink(target) => EntryKind::Symlink(target.clone()),
            FileSource::Directory => EntryKind::Directory,
        };
        let mut parent = Path::new(path).parent();
        while let Some(directory) = parent.filter(|p| !p.as_os_str().is_empty()) {
            let name = directory.to_string_lossy().into_owned();
            entries.entry(name.clone()).or_insert(Entry {
                path: name,
                mode: 0o755,
                uid: 0,
                gid: 0,
                kind: EntryKind::Directory,
            });
            parent = directory.parent();
        }
        entries.insert(
            path.to_string(),
            Entry {
                path: path.to_string(),
                mode: file.mode,
                uid: file.uid,
                gid: file.gid,
                kind,
            },
        );
    }
    let entries: Vec<Entry> = entries.into_values().collect();
    tar::write(&entries)
}

fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
    serde_json::json!({
        "mediaType": media_type,
        "digest": format!("sha256:{}", sha256(bytes)),
        "size": bytes.len(),
    })
}

fn blob(bytes: &[u8]) -> Entry {
    Entry {
        path: format!("blobs/sha256/{}", sha256(bytes)),
        mode: 0o644,
        uid: 0,
        gid: 0,
        kind: EntryKind::File(bytes.to_vec()),
    }
}

/// Builds `spec` as an OCI image archive.
pub fn build(spec: &ImageSpec) -> anyhow::Result<ImageArchive> {
    let (_, tag) = spec
        .name
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .with_context(|| format!("the image name {:?} has no tag", spec.name))?;
    let layer = layer(&spec.files)?;
    let mut container_config = serde_json::Map::new();
    let config = &spec.config;
    if !config.env.is_empty() {
        container_config.insert("Env".into(), serde_json::json!(config.env));
    }
    if !config.entrypoint.is_empty() {
        container_config.insert("Entrypoint".into(), serde_json::json!(config.entrypoint));
    }
    if !config.cmd.is_empty() {
        container_config.insert("Cmd".into(), serde_json::json!(config.cmd));
    }
    if let Some(user) = &config.user {
        container_config.insert("User".into(), serde_json::json!(user));
    }
    if let Some(dir) = &config.working_dir {
        container_config.insert("WorkingDir".into(), serde_json::json!(dir));
    }
    let image_config = serde_json::json!({
        "created": "1970-01-01T00:00:00Z",
        "architecture": architecture(),
        "os": "linux",
        "config": container_config,
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{}", sha256(&layer))] },
        "history": [{ "created": "1970-01-01T00:00:00Z", "created_by": "kyb image build" }],
    });
    let image_config = serde_json::to_vec(&image_config).context("encoding the image config")?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": descriptor(CONFIG_MEDIA_TYPE, &image_config),
        "layers": [descriptor(LAYER_MEDIA_TYPE, &layer)],
    });
    let manifest = serde_json::to_vec(&manifest).context("encoding the manifest")?;
    let mut manifest_descriptor = descriptor(MANIFEST_MEDIA_TYPE, &manifest);
    manifest_descriptor["annotations"] = serde_json::json!({
        "io.containerd.image.name": spec.name,
        "org.opencontainers.image.ref.name": tag,
    });
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [manifest_descriptor],
    });
    let index = serde_json::to_vec(&index).context("encoding the index")?;
    let directory = |path: &str| Entry {
        path: path.to_string(),
        mode: 0o755,
        uid: 0,
        gid: 0,
        kind: EntryKind::Directory,
    };
    let file = |path: &str, bytes: &[u8]| Entry {
        path: path.to_string(),
        mode: 0o644,
        uid: 0,
        gid: 0,
        kind: EntryKind::File(bytes.to_vec()),
    };
    let mut blobs = [blob(&image_config), blob(&manifest), blob(&layer)];
    blobs.sort_by(|a, b| a.path.cmp(&b.path));
    let mut entries = vec![
        file("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#),
        file("index.json", &index),
        directory("blobs"),
        directory("blobs/sha256"),
    ];
    entries.extend(blobs);
    Ok(ImageArchive {
        name: spec.name.clone(),
        bytes: tar::write(&entries)?,
        manifest_digest: format!("sha256:{}", sha256(&manifest)),
        config_digest: format!("sha256:{}", sha256(&image_config)),
    })
}

/// Compiles the pause program (`gcc -static -Os -s`), returning the binary.
pub fn compile_pause() -> anyhow::Result<Vec<u8>> {
    let dir = tempfile_dir()?;
    let source = dir.path().join("pause.c");
    let binary = dir.path().join("pause");
    std::fs::write(&source, PAUSE_SOURCE)
        .with_context(|| format!("writing {}", source.display()))?;
    // Relative names: nothing of the temporary directory's path reaches the binary.
    let output = std::process::Command::new("gcc")
        .args(["-static", "-Os", "-s", "-o", "pause", "pause.c"])
        .current_dir(dir.path())
        .output()
        .context("running gcc (install gcc and libc6-dev: `make deps`)")?;
    if !output.status.success() {
        bail!(
            "gcc failed to build the pause program ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::read(&binary).with_context(|| format!("reading {}", binary.display()))
}

/// A private temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> anyhow::Result<TempDir> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = base.join(format!("kyb-image-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(TempDir(path)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => {
                return Err(error).with_context(|| format!("creating {}", path.display()));
            }
        }
    }
    bail!("no free temporary directory under {}", base.display())
}

/// The sandbox image: the pause program as `/pause`, run as 65535:65535 as Kubernetes'
/// own pause image does.
pub fn pause_image(binary: Vec<u8>) -> ImageSpec {
    ImageSpec {
        name: super::PAUSE_IMAGE.to_string(),
        files: vec![ImageFile::new(
            "/pause",
            0o755,
            FileSource::Contents(binary),
        )],
        config: ImageConfig {
            entrypoint: vec!["/pause".to_string()],
            user: Some("65535:65535".to_string()),
            working_dir: Some("/".to_string()),
            ..ImageConfig::default()
        },
    }
}

/// Where Debian's `busybox-static` installs its binary.
pub const BUSYBOX_BINARY: &str = "/bin/busybox";

/// The applets linked in the busybox image's `/bin`.
pub const BUSYBOX_APPLETS: &[&str] = &[
    "cat", "chmod", "cp", "date", "dd", "echo", "env", "false", "grep", "head", "hostname",
    "httpd", "id", "kill", "ln", "ls", "mkdir", "mv", "nc", "nslookup", "printf", "ps", "pwd",
    "rm", "sed", "sh", "sleep", "sort", "stat", "tail", "tar", "tee", "test", "top", "touch",
    "true", "uname", "wc", "whoami",
];

/// The busybox image from the machine's busybox binary (`binary`, Debian's static
/// `/bin/busybox`): the applets as links, `/etc/passwd` and `/etc/group` with root and
/// nobody (65534), `/tmp` (1777), `/var/www`, `/root`.
pub fn busybox_image(binary: &Path) -> ImageSpec {
    let mut files = vec![
        ImageFile::new(
            "/bin/busybox",
            0o755,
            FileSource::HostFile(binary.to_path_buf()),
        ),
        ImageFile::new(
            "/usr/bin/env",
            0o777,
            FileSource::Symlink("/bin/busybox".into()),
        ),
        ImageFile::new(
            "/etc/passwd",
            0o644,
            FileSource::Contents(
                b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
                    .to_vec(),
            ),
        ),
        ImageFile::new(
            "/etc/group",
            0o644,
            FileSource::Contents(b"root:x:0:\nnobody:x:65534:\n".to_vec()),
        ),
        ImageFile::new("/tmp", 0o1777, FileSource::Directory),
        ImageFile::new("/var/www", 0o755, FileSource::Directory),
        ImageFile::new("/root", 0o700, FileSource::Directory),
        ImageFile::new("/home", 0o755, FileSource::Directory),
    ];
    for applet in BUSYBOX_APPLETS {
        files.push(ImageFile::new(
            &format!("/bin/{applet}"),
            0o777,
            FileSource::Symlink("busybox".into()),
        ));
    }
    ImageSpec {
        name: super::BUSYBOX_IMAGE.to_string(),
        files,
        config: ImageConfig {
            cmd: vec!["sh".to_string()],
            env: vec![
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
            ],
            ..ImageConfig::default()
        },
    }
}

/// One of the project's images by its short name (`pause`, `busybox`), built.
pub fn build_named(short_name: &str) -> anyhow::Result<ImageArchive> {
    let spec = match short_name {
        "pause" => pause_image(compile_pause()?),
        "busybox" => {
            let binary = Path::new(BUSYBOX_BINARY);
            if !binary.is_file() {
                bail!("{BUSYBOX_BINARY} is missing: install busybox-static (`make deps`)");
            }
            busybox_image(binary)
        }
        other => bail!("unknown image {other:?}: the images are pause and busybox"),
    };
    build(&spec)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> ImageSpec {
        ImageSpec {
            name: "kyb.local/sample:1".into(),
            files: vec![
                ImageFile::new(
                    "/bin/tool",
                    0o755,
                    FileSource::Contents(b"#!/bin/sh\n".to_vec()),
                ),
                ImageFile::new("/a/b/c", 0o644, FileSource::Contents(b"c".to_vec())),
                ImageFile::new("/tmp", 0o1777, FileSource::Directory),
            ],
            config: ImageConfig {
                entrypoint: vec!["/bin/tool".into()],
                env: vec!["A=1".into()],
                ..ImageConfig::default()
            },
        }
    }

    fn read_member(archive: &[u8], member: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("image.tar");
        std::fs::write(&file, archive).unwrap();
        let output = std::process::Command::new("tar")
            .arg("-xOf")
            .arg(&file)
            .arg(member)
            .output()
            .unwrap();
        assert!(output.status.success(), "{member}: {output:?}");
        output.stdout
    }

    #[test]
    fn the_same_inputs_give_the_same_bytes() {
        let first = build(&sample()).unwrap();
        let second = build(&sample()).unwrap();
        assert_eq!(first.bytes, second.bytes);
        let mut changed = sample();
        changed.config.env.push("B=2".into());
        assert_ne!(build(&changed).unwrap().bytes, first.bytes);
    }

    #[test]
    fn the_index_names_the_manifest_whose_blob_has_its_digest() {
        let archive = build(&sample()).unwrap();
        let index: serde_json::Value =
            serde_json::from_slice(&read_member(&archive.bytes, "index.json")).unwrap();
        let entry = &index["manifests"][0];
        assert_eq!(entry["digest"], archive.manifest_digest.as_str());
        assert_eq!(
            entry["annotations"]["io.containerd.image.name"],
            "kyb.local/sample:1"
        );
        assert_eq!(
            entry["annotations"]["org.opencontainers.image.ref.name"],
            "1"
        );
        let hex = archive.manifest_digest.trim_start_matches("sha256:");
        let manifest_bytes = read_member(&archive.bytes, &format!("blobs/sha256/{hex}"));
        assert_eq!(
            format!("sha256:{}", sha256(&manifest_bytes)),
            archive.manifest_digest
        );
        assert_eq!(entry["size"], manifest_bytes.len());
        let manifest: serde_json::Value = serde_json::from_slice(&manifest_bytes).unwrap();
        let layer_digest = manifest["layers"][0]["digest"].as_str().unwrap();
        let layer = read_member(
            &archive.bytes,
            &format!(
                "blobs/sha256/{}",
                layer_digest.trim_start_matches("sha256:")
            ),
        );
        assert_eq!(format!("sha256:{}", sha256(&layer)), layer_digest);
        let config = read_member(
            &archive.bytes,
            &format!(
                "blobs/sha256/{}",
                archive.config_digest.trim_start_matches("sha256:")
            ),
        );
        let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"][0], layer_digest);
        assert_eq!(config["config"]["Entrypoint"][0], "/bin/tool");
    }

    #[test]
    fn the_layer_holds_parent_directories_sorted() {
        let layer = layer(&sample().files).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("layer.tar");
        std::fs::write(&file, layer).unwrap();
        let output = std::process::Command::new("tar")
            .arg("-tf")
            .arg(&file)
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&output.stdout);
        let names: Vec<&str> = listing.lines().collect();
        assert_eq!(names, ["a/", "a/b/", "a/b/c", "bin/", "bin/tool", "tmp/"]);
    }

    #[test]
    fn paths_must_stay_in_the_image() {
        let mut spec = sample();
        spec.files
            .push(ImageFile::new("/../etc/x", 0o644, FileSource::Directory));
        assert!(build(&spec).is_err());
    }

    #[test]
    fn the_project_images_are_reproducible() {
        let first = build_named("pause").unwrap();
        let second = build_named("pause").unwrap();
        assert_eq!(first.bytes, second.bytes);
        assert_eq!(first.name, "kyb.local/pause:1.0");
        let busybox = build_named("busybox").unwrap();
        assert_eq!(busybox.bytes, build_named("busybox").unwrap().bytes);
        assert!(build_named("nginx").is_err());
    }
}
