//! Network namespaces for tests that start containers or servers: `ip netns add
//! kyb-<random>` with `lo` up, deleted when dropped. Commands run inside with
//! `nsenter --net=/run/netns/NAME`, which enters the network namespace alone (`ip netns
//! exec` also remounts `/sys`, hiding the cgroup mounts runc needs).

use anyhow::{Context, bail};
use std::ffi::OsStr;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::process::Command;

/// A network namespace, deleted on drop.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

/// A random lowercase hex string of `len` characters.
pub fn random_suffix(len: usize) -> String {
    let mut text = String::new();
    while text.len() < len {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        hasher.write_u32(std::process::id());
        text.push_str(&format!("{:016x}", hasher.finish()));
    }
    text.truncate(len);
    text
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (install iproute2)")?;
    if !output.status.success() {
        bail!(
            "ip {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

impl NetNs {
    /// Creates `kyb-<random>` with its loopback interface up (needs root).
    pub fn create() -> anyhow::Result<NetNs> {
        let name = format!("kyb-{}", random_suffix(10));
        ip(&["netns", "add", &name])?;
        let netns = NetNs { name };
        ip(&["-n", &netns.name, "link", "set", "lo", "up"])?;
        Ok(netns)
    }

    /// Its name (`kyb-…`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its file, `/run/netns/NAME`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// A command running `program` in the namespace (through `nsenter`, which execs it:
    /// the child's pid is the program's).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("nsenter");
        command
            .arg(format!("--net={}", self.path().display()))
            .arg("--")
            .arg(program);
        command
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        if let Err(error) = ip(&["netns", "delete", &self.name]) {
            eprintln!("deleting the network namespace {}: {error:#}", self.name);
        }
    }
}
