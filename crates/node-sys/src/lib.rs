//! The one home for privileged system code: everything the node's components (the
//! kubelet, the service proxy, CNI, CSI and device-plugin code) need from the kernel beyond
//! ordinary files and sockets — process privileges, cgroups, and next netlink (links,
//! addresses, routes), nftables, mounts and namespaces — goes through this crate.
//!
//! # The boundary
//!
//! - No other crate calls the kernel's privileged interfaces or depends on the crates that
//!   do (`rustix`, `nix`, `libc`, `rtnetlink`, `netlink-*`, `nftnl`, `caps`, `cgroups-rs`);
//!   they ask this crate, which offers small typed operations with errors that say what
//!   was attempted. `tests` in this crate check the workspace's manifests for it.
//! - Safe crates first: `rustix` for system calls (its safe wrappers), `rtnetlink` for
//!   netlink, the `nft` command's JSON interface for nftables, plain files under `/proc`
//!   and `/sys` where the kernel offers them.
//! - The workspace forbids `unsafe` (`unsafe_code = "forbid"`), this crate included. If a
//!   call ever has no safe wrapper, this crate — and only this crate — may relax the lint
//!   to `deny`, allowing `unsafe` block by block (`#[allow(unsafe_code)]`), each with a
//!   `// SAFETY:` comment arguing why it is sound and a test that exercises it. Nowhere
//!   else does `unsafe` appear.
//! - Operations that need root say so in their documentation, and tests that need root
//!   say so in their names (`…_as_root`), as the workspace's conventions ask.
//!
//! # Modules
//!
//! - [`privileges`]: who the process runs as (`is_root`).
//! - [`cgroup`]: the machine's cgroup version (v1 or v2) and the driver managing cgroups
//!   (systemd or cgroupfs).
//! - [`signals`]: signals to other processes (SIGTERM, SIGKILL).
//! - [`machine`]: the machine's facts for the Node and eviction: memory, CPUs, huge pages,
//!   file systems (`statvfs`), process IDs, machine/boot IDs, kernel and OS image.
//! - [`mount`]: tmpfs mounts, unmounting, and the mount table (`/proc/self/mountinfo`).

pub mod cgroup;
pub mod machine;
pub mod mount;
pub mod netns;
pub mod privileges;
pub mod signals;

#[cfg(test)]
mod boundary;
