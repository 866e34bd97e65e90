//! A real image registry for tests: Debian's `docker-registry` (the distribution
//! registry) serving plain HTTP on 127.0.0.1:5000 inside a test's network namespace, its
//! storage in a temporary directory; stopped when dropped.

use crate::{NetNs, Process};
use anyhow::Context;
use std::time::Duration;

/// How the registry is reached from inside its namespace.
pub const REGISTRY_ADDRESS: &str = "localhost:5000";

/// A running registry.
pub struct TestRegistry {
    process: Process,
    _dir: tempfile::TempDir,
}

impl TestRegistry {
    /// Starts the registry in `netns` and waits until it listens.
    pub fn start(netns: &NetNs) -> anyhow::Result<TestRegistry> {
        Self::start_with(netns, None)
    }

    /// Starts a registry that wants HTTP basic authentication: `htpasswd` is the line of
    /// its htpasswd file (`user:<bcrypt hash>`).
    pub fn start_with_htpasswd(netns: &NetNs, htpasswd: &str) -> anyhow::Result<TestRegistry> {
        Self::start_with(netns, Some(htpasswd))
    }

    fn start_with(netns: &NetNs, htpasswd: Option<&str>) -> anyhow::Result<TestRegistry> {
        let dir = crate::temp_dir("registry")?;
        let config = dir.path().join("config.yml");
        let mut text = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:5000\n",
            dir.path().join("storage").display()
        );
        if let Some(line) = htpasswd {
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, format!("{line}\n")).context("writing the htpasswd file")?;
            text.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: kyb-test\n    path: {}\n",
                file.display()
            ));
        }
        std::fs::write(&config, text).context("writing the registry's configuration")?;
        let mut command = netns.command("docker-registry");
        command.arg("serve").arg(&config);
        let mut process = Process::spawn(&mut command)
            .context("starting docker-registry (install docker-registry: `make deps`)")?;
        process.wait_for_line("listening on", Duration::from_secs(30))?;
        Ok(TestRegistry { process, _dir: dir })
    }

    /// What the registry printed.
    pub fn output(&self) -> String {
        self.process.output()
    }
}
