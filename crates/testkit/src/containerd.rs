//! A real containerd for tests: its own temporary root, state and socket, started inside a
//! test's network namespace with a configuration the test writes (kyb-kubelet renders it;
//! testkit does not depend on kyb-kubelet). Dropping it kills the shims and every process
//! of its containers, stops containerd, unmounts what is mounted under its directory
//! (rootfs overlays, sandbox network namespaces) and removes the containers' cgroups.
//!
//! Also: [`image_archive`], the project's image archives built once per test process
//! and shared through `target/images/`.

use crate::{NetNs, Process};
use anyhow::{Context, bail};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long containerd may take to answer.
const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// The files a test's containerd is started from.
pub struct ContainerdFiles {
    /// Its configuration file (`containerd --config FILE`).
    pub config_file: PathBuf,
    /// Its gRPC socket, as the configuration says.
    pub socket: PathBuf,
}

/// A running containerd.
pub struct TestContainerd {
    process: Option<Process>,
    socket: PathBuf,
    cgroup_parent: String,
    dir: tempfile::TempDir,
}

impl TestContainerd {
    /// Creates a temporary directory, lets `configure` write the configuration under it
    /// (returning the files), starts containerd in `netns` and waits until `ctr version`
    /// answers on its socket.
    pub fn start(
        netns: &NetNs,
        configure: impl FnOnce(&Path) -> anyhow::Result<ContainerdFiles>,
    ) -> anyhow::Result<TestContainerd> {
        let dir = crate::temp_dir("containerd")?;
        let files = configure(dir.path())?;
        let mut command = netns.command("containerd");
        command.arg("--config").arg(&files.config_file);
        let process = Process::spawn(&mut command)
            .context("starting containerd (install containerd: `make deps`)")?;
        let mut containerd = TestContainerd {
            process: Some(process),
            socket: files.socket,
            cgroup_parent: format!("/kyb-test-{}", crate::netns::random_suffix(10)),
            dir,
        };
        containerd.wait_ready()?;
        Ok(containerd)
    }

    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if self.socket.exists() && self.ctr(&["version"]).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "containerd did not answer on {} within {STARTUP_DEADLINE:?}:\n{}",
                    self.socket.display(),
                    self.output()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The gRPC socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The CRI endpoint, `unix:///…`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// A cgroup for the test's pod sandboxes (`PodSandboxConfig.linux.cgroup_parent`),
    /// removed with everything below it on drop.
    pub fn cgroup_parent(&self) -> &str {
        &self.cgroup_parent
    }

    /// The temporary directory it lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What containerd printed.
    pub fn output(&self) -> String {
        self.process
            .as_ref()
            .map(Process::output)
            .unwrap_or_default()
    }

    /// Runs `ctr --address SOCK --namespace k8s.io ARGS…`, returning its output.
    pub fn ctr(&self, args: &[&str]) -> anyhow::Result<String> {
        let output = Command::new("ctr")
            .arg("--address")
            .arg(&self.socket)
            .args(["--namespace", "k8s.io"])
            .args(args)
            .output()
            .context("running ctr")?;
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

    /// The shims serving this containerd and every process below them.
    fn container_processes(&self) -> Vec<u32> {
        let socket = self.socket.as_os_str().as_encoded_bytes();
        let mut parents: HashMap<u32, u32> = HashMap::new();
        let mut shims = Vec::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = parent_of(pid) {
                parents.insert(pid, ppid);
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            let is_shim = args
                .first()
                .is_some_and(|arg0| arg0.windows(15).any(|w| w == b"containerd-shim"));
            if is_shim && args.contains(&socket) {
                shims.push(pid);
            }
        }
        let mut found: BTreeSet<u32> = shims.iter().copied().collect();
        loop {
            let before = found.len();
            for (&pid, ppid) in &parents {
                if found.contains(ppid) {
                    found.insert(pid);
                }
            }
            if found.len() == before {
                break;
            }
        }
        found.into_iter().collect()
    }

    fn cleanup(&mut self) {
        let processes = self.container_processes();
        let mut cgroups: BTreeSet<String> =
            processes.iter().flat_map(|&pid| cgroups_of(pid)).collect();
        cgroups.insert(self.cgroup_parent.clone());
        if !processes.is_empty() {
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(processes.iter().map(u32::to_string))
                .output();
        }
        // Stops containerd (the process is containerd itself: nsenter execs it).
        drop(self.process.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while processes
            .iter()
            .any(|pid| Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(*pid))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        unmount_under(self.dir.path());
        remove_cgroups(&cgroups);
    }
}

impl Drop for TestContainerd {
    fn drop(&mut self) {
        self.cleanup();
    }
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
    let after = stat.get(stat.rfind(')')? + 1..)?;
    after.split_whitespace().nth(1)?.parse().ok()
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.get(stat.rfind(')')? + 1..)?.to_string();
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

/// The cgroup paths of `pid` (other than the root).
fn cgroups_of(pid: u32) -> Vec<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let own: BTreeSet<&str> = own
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .collect();
    text.lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .filter(|path| *path != "/" && !own.contains(path))
        .map(str::to_string)
        .collect()
}

/// Removes the cgroups `paths` (and their empty children) from every hierarchy.
fn remove_cgroups(paths: &BTreeSet<String>) {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let hierarchies: Vec<PathBuf> = hierarchies.flatten().map(|e| e.path()).collect();
    for path in paths {
        for hierarchy in &hierarchies {
            let dir = hierarchy.join(path.trim_start_matches('/'));
            remove_cgroup_tree(&dir);
        }
    }
}

fn remove_cgroup_tree(dir: &Path) {
    if let Ok(children) = std::fs::read_dir(dir) {
        for child in children.flatten() {
            if child.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup_tree(&child.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Unmounts every mount point under `dir`, deepest first.
pub fn unmount_under(dir: &Path) {
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let prefix = format!("{}/", dir.display());
    let mut points: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape_mount_path)
        .filter(|point| point.starts_with(&prefix))
        .collect();
    points.sort_by_key(|point| std::cmp::Reverse(point.len()));
    for point in points {
        let unmounted = Command::new("umount")
            .arg(&point)
            .output()
            .is_ok_and(|o| o.status.success());
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(&point).output();
        }
    }
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal.
fn unescape_mount_path(path: &str) -> String {
    path.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The directory image archives are kept in: `$CARGO_TARGET_DIR/images` or the
/// workspace's `target/images`.
pub fn images_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("images")
}

/// The archive `<images_dir>/<name>.tar`, made from `build()`'s bytes. Built once per
/// process; the file is replaced (written aside, then renamed, so concurrent test
/// processes never read half a file) only when its bytes differ — builds being
/// reproducible, parallel tests write the same bytes.
pub fn image_archive(
    name: &str,
    build: impl FnOnce() -> anyhow::Result<Vec<u8>>,
) -> anyhow::Result<PathBuf> {
    use std::sync::{Mutex, OnceLock};
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built
        .lock()
        .map_err(|_| anyhow::anyhow!("image archive lock poisoned"))?;
    if let Some(path) = built.get(name) {
        return Ok(path.clone());
    }
    let dir = images_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{name}.tar"));
    let bytes = build().with_context(|| format!("building the {name} image"))?;
    if std::fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
        let partial = dir.join(format!(
            "{name}.tar.{}-{}",
            std::process::id(),
            crate::netns::random_suffix(6)
        ));
        std::fs::write(&partial, &bytes)
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path)
            .with_context(|| format!("renaming {}", partial.display()))?;
    }
    built.insert(name.to_string(), path.clone());
    Ok(path)
}
