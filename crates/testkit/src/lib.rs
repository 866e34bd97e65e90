//! Helpers for tests and benchmarks: free loopback ports, temporary directories and a real
//! etcd started as a child process (Debian's `etcd-server`), stopped when dropped; for node
//! tests (as root), network namespaces, a containerd and an image registry inside them.

mod containerd;
mod etcd;
mod netns;
mod process;
mod registry;

pub use containerd::{ContainerdFiles, TestContainerd, image_archive, images_dir, unmount_under};
pub use etcd::EtcdServer;
pub use netns::{NetNs, random_suffix};
pub use process::Process;
pub use registry::{REGISTRY_ADDRESS, TestRegistry};

use std::net::TcpListener;

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A fresh temporary directory, removed when dropped.
pub fn temp_dir(label: &str) -> anyhow::Result<tempfile::TempDir> {
    Ok(tempfile::Builder::new()
        .prefix(&format!("kyb-{label}-"))
        .tempdir()?)
}
