//! kyb-kubelet against a real containerd (as root): each test starts its own containerd
//! (configured by `kyb_kubelet::containerd`) in a network namespace of its own, and a
//! registry there when it needs one; everything is removed when the test ends.

mod cri;
mod pull;
mod streaming;
mod supervise;

use kyb_kubelet::containerd::{self, ContainerdConfig};
use kyb_testkit::{ContainerdFiles, NetNs, TestContainerd};
use std::path::PathBuf;

/// A containerd in `netns` with the agent's configuration and the bridge CNI network.
pub fn start_containerd(netns: &NetNs) -> anyhow::Result<TestContainerd> {
    TestContainerd::start(netns, |root| {
        let config = ContainerdConfig::new(root.join("agent"));
        containerd::write_config(&config)?;
        containerd::write_cni_config(&config.cni_conf_dir, "10.88.0.0/16")?;
        Ok(ContainerdFiles {
            config_file: config.config_file(),
            socket: config.socket_path(),
        })
    })
}

/// The project's image archive `name` (`pause`, `busybox`), built once per test process.
pub fn image_archive(name: &'static str) -> anyhow::Result<PathBuf> {
    kyb_testkit::image_archive(name, || {
        Ok(kyb_kubelet::images::build::build_named(name)?.bytes)
    })
}

/// Imports the pause and busybox images into `containerd`, as `kyb image import` does.
pub fn import_project_images(containerd: &TestContainerd) -> anyhow::Result<()> {
    for name in ["pause", "busybox"] {
        let archive = image_archive(name)?;
        containerd.ctr(&["images", "import", &archive.to_string_lossy()])?;
    }
    Ok(())
}
