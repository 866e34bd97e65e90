//! The privileged-code boundary, checked on the workspace's manifests: `unsafe` stays
//! forbidden everywhere but (if ever needed) here, and only this crate depends on the
//! crates that make privileged system calls.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// Crates whose job is calling the kernel's privileged interfaces.
const SYSTEM_CRATES: &[&str] = &[
    "libc",
    "nix",
    "rustix",
    "rtnetlink",
    "netlink-sys",
    "netlink-packet-core",
    "netlink-packet-route",
    "nftnl",
    "mnl",
    "caps",
    "cgroups-rs",
];

const THIS_CRATE: &str = "kyb-node-sys";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every package manifest of the workspace: `crates/*/Cargo.toml` and `bench/Cargo.toml`.
fn manifests() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("Cargo.toml"))
        .filter(|path| path.is_file())
        .collect();
    manifests.push(root.join("bench/Cargo.toml"));
    manifests.sort();
    manifests
}

/// The package name, the dependencies (of every kind) a manifest names, and whether it
/// takes the workspace's lints.
fn read(manifest: &Path) -> (String, Vec<String>, bool) {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut section = String::new();
    let mut name = String::new();
    let mut dependencies = vec![];
    let mut workspace_lints = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "package" && key == "name" {
            name = value.trim().trim_matches('"').to_string();
        } else if section.ends_with("dependencies") && !key.starts_with('#') {
            dependencies.push(key.split('.').next().unwrap_or(key).to_string());
        } else if section == "lints" && key == "workspace" && value.trim() == "true" {
            workspace_lints = true;
        }
    }
    (name, dependencies, workspace_lints)
}

#[test]
fn the_workspace_forbids_unsafe_code() {
    let text = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
    let lints = text.split("[workspace.lints.rust]").nth(1).unwrap();
    let table = lints.split("\n[").next().unwrap();
    assert!(
        table
            .lines()
            .any(|l| l.replace(' ', "") == "unsafe_code=\"forbid\""),
        "[workspace.lints.rust] must keep unsafe_code = \"forbid\""
    );
}

#[test]
fn every_other_crate_takes_the_workspace_lints_and_no_system_crate() {
    let manifests = manifests();
    assert!(manifests.len() > 10, "{manifests:?}");
    for manifest in manifests {
        let (name, dependencies, workspace_lints) = read(&manifest);
        if name == THIS_CRATE {
            // What this crate may use (and proof the manifest reading finds dependencies).
            assert!(
                dependencies.iter().any(|d| d == "rustix"),
                "{dependencies:?}"
            );
            continue;
        }
        assert!(
            workspace_lints,
            "{name} must use the workspace lints ([lints] workspace = true): only {THIS_CRATE} may relax unsafe_code"
        );
        for dependency in &dependencies {
            assert!(
                !SYSTEM_CRATES.contains(&dependency.as_str()),
                "{name} depends on {dependency}: privileged system code goes through {THIS_CRATE}"
            );
        }
    }
}
