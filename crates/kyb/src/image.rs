//! `kyb image`: the project's own images (`build pause|busybox -o FILE.tar`, reproducible
//! OCI archives) and getting images into the node's containerd (`import FILE.tar…`, `ls`)
//! through Debian's `ctr`, in containerd's `k8s.io` namespace where CRI finds them.

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use kyb_kubelet::containerd::ContainerdConfig;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Args)]
pub struct ImageArgs {
    #[command(subcommand)]
    pub command: ImageCommand,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build one of the project's images (pause, busybox) as an OCI archive; the same
    /// inputs give the same bytes, and an unchanged FILE is left alone.
    Build {
        /// The image.
        #[arg(value_parser = ["pause", "busybox"])]
        image: String,
        /// The archive to write.
        #[arg(short, long, value_name = "FILE.tar")]
        output: PathBuf,
    },
    /// Import image archives (OCI or docker-archive tarballs) into the containerd of the
    /// server running on --data-dir (or at --address).
    Import {
        /// The archives.
        #[arg(required = true, value_name = "FILE.tar")]
        files: Vec<PathBuf>,
        /// containerd's socket [default: <data-dir>/agent/containerd/containerd.sock].
        #[arg(long, value_name = "SOCK")]
        address: Option<PathBuf>,
    },
    /// List the images of the server's containerd.
    Ls {
        /// containerd's socket [default: <data-dir>/agent/containerd/containerd.sock].
        #[arg(long, value_name = "SOCK")]
        address: Option<PathBuf>,
    },
}

/// containerd's namespace for CRI.
const NAMESPACE: &str = "k8s.io";

pub fn run(args: ImageArgs, data_dir: Option<PathBuf>) -> anyhow::Result<()> {
    match args.command {
        ImageCommand::Build { image, output } => build(&image, &output),
        ImageCommand::Import { files, address } => {
            if let Some(missing) = files.iter().find(|file| !file.is_file()) {
                bail!(
                    "{}: no such file (build it with `kyb image build pause|busybox -o FILE.tar`)",
                    missing.display()
                );
            }
            let socket = socket(address, data_dir)?;
            for file in &files {
                import(&socket, file)?;
            }
            Ok(())
        }
        ImageCommand::Ls { address } => {
            let socket = socket(address, data_dir)?;
            let output = ctr(&socket, &["images", "ls"])?;
            print!("{output}");
            Ok(())
        }
    }
}

fn build(image: &str, output: &Path) -> anyhow::Result<()> {
    let archive = kyb_kubelet::images::build::build_named(image)
        .with_context(|| format!("building the {image} image"))?;
    if std::fs::read(output).is_ok_and(|existing| existing == archive.bytes) {
        println!(
            "{}: {} unchanged ({})",
            output.display(),
            archive.name,
            archive.manifest_digest
        );
        return Ok(());
    }
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    // Written aside and renamed: a reader never sees half an archive.
    let partial = output.with_extension("tar.partial");
    std::fs::write(&partial, &archive.bytes)
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, output)
        .with_context(|| format!("renaming {} to {}", partial.display(), output.display()))?;
    println!(
        "{}: {} ({})",
        output.display(),
        archive.name,
        archive.manifest_digest
    );
    Ok(())
}

/// The socket of the containerd to talk to: `--address`, or the one of the server
/// running on the data dir.
fn socket(address: Option<PathBuf>, data_dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let (socket, origin) = match address {
        Some(address) => (address, "--address".to_string()),
        None => {
            let data_dir = data_dir.map_or_else(crate::server::default_data_dir, Ok)?;
            let socket = ContainerdConfig::new(data_dir.join("agent")).socket_path();
            (
                socket,
                format!("the server's data dir {}", data_dir.display()),
            )
        }
    };
    if !socket.exists() {
        bail!(
            "no containerd socket at {} (from {origin}): start the server first (`make up` or \
             `kyb server --data-dir DIR`), or give --data-dir/--address",
            socket.display()
        );
    }
    Ok(socket)
}

fn import(socket: &Path, file: &Path) -> anyhow::Result<()> {
    let file_arg = file.to_string_lossy();
    let output = ctr(socket, &["images", "import", &file_arg])?;
    print!("{output}");
    Ok(())
}

/// Runs `ctr --address SOCK -n k8s.io ARGS…`, returning its output.
fn ctr(socket: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("ctr")
        .arg("--address")
        .arg(socket)
        .args(["--namespace", NAMESPACE])
        .args(args)
        .output()
        .context("running ctr (install containerd: `make deps`)")?;
    if !output.status.success() {
        bail!(
            "ctr {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
