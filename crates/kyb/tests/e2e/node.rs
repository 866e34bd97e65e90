//! A whole single-node cluster for the node's tests: `kyb server` with its node agent,
//! inside a network namespace the test creates, on a containerd the test starts in the
//! same namespace (its own root, state and socket in a temporary directory) with the
//! project's pause and busybox images imported. Nothing touches the host's network: the
//! API server listens on the namespace's loopback, pods get addresses on the namespace's
//! `cni0` bridge, and kubectl and HTTP clients run inside the namespace.
//!
//! Dropping it stops the server, then containerd (killing every container and unmounting
//! what they mounted), unmounts the pods' volumes and removes the namespace.

use kyb_kubelet::containerd::{self, ContainerdConfig};
use kyb_testkit::{ContainerdFiles, NetNs, Process, TestContainerd};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The busybox image the tests run.
pub const BUSYBOX: &str = kyb_kubelet::images::BUSYBOX_IMAGE;

/// The agent's hard eviction thresholds in the tests: memory only. Kubelet's defaults
/// include the disk (`nodefs.available<10%`, `imagefs.available<15%`), and a build
/// machine's disk may well be that full: DiskPressure would taint the node and fail every
/// test for a reason that is not theirs.
pub const EVICTION_HARD: &str = "memory.available<1Mi";

/// How long the node's tests wait for a pod to get somewhere.
pub const POD_WAIT: Duration = Duration::from_secs(90);

/// The project's image archive `name`, built once per test process.
fn image_archive(name: &'static str) -> PathBuf {
    kyb_testkit::image_archive(name, || {
        Ok(kyb_kubelet::images::build::build_named(name)?.bytes)
    })
    .unwrap()
}

pub struct NodeCluster {
    // Dropped in this order: the server, containerd (with the containers), the pods'
    // cgroups, the data dir, the namespace.
    server: Option<Process>,
    /// The agent as its own process (`kyb kubelet`), when the server runs with
    /// `--disable-agent`.
    kubelet: Option<Process>,
    pub containerd: TestContainerd,
    _cgroups: PodCgroups,
    dir: tempfile::TempDir,
    pub netns: NetNs,
    pub node_name: String,
}

impl NodeCluster {
    /// Starts the cluster and waits until its node is Ready.
    pub fn start() -> NodeCluster {
        Self::start_with(&[])
    }

    /// Starts the cluster with extra `kyb server` flags.
    pub fn start_with(flags: &[&str]) -> NodeCluster {
        let netns = NetNs::create().unwrap();
        let containerd = TestContainerd::start(&netns, |root| {
            let config = ContainerdConfig::new(root.join("agent"));
            containerd::write_config(&config)?;
            containerd::write_cni_config(&config.cni_conf_dir, "10.42.0.0/24")?;
            Ok(ContainerdFiles {
                config_file: config.config_file(),
                socket: config.socket_path(),
            })
        })
        .unwrap();
        for image in ["pause", "busybox"] {
            let archive = image_archive(image);
            containerd
                .ctr(&["images", "import", archive.to_str().unwrap()])
                .unwrap();
        }
        let dir = kyb_testkit::temp_dir("node").unwrap();
        let mut cluster = NodeCluster {
            server: None,
            kubelet: None,
            containerd,
            _cgroups: PodCgroups(dir.path().join("agent/pods")),
            dir,
            netns,
            node_name: String::new(),
        };
        cluster.start_server(flags);
        cluster
    }

    /// Starts `kyb server` (again) on the cluster's data dir and waits for its node.
    pub fn start_server(&mut self, flags: &[&str]) {
        let mut command = self.netns.command(env!("CARGO_BIN_EXE_kyb"));
        command
            .env_remove("RUST_LOG")
            .args(["server", "--bind-address", "127.0.0.1", "--port", "6443"])
            .arg("--data-dir")
            .arg(self.dir.path())
            .arg("--container-runtime-endpoint")
            .arg(self.containerd.endpoint())
            .args(["--eviction-hard", EVICTION_HARD])
            .args(flags);
        let mut server = Process::spawn(&mut command).unwrap();
        server
            .wait_for_line("kyb server ready", crate::cluster::DEADLINE)
            .unwrap();
        self.server = Some(server);
        if flags.contains(&"--disable-agent") {
            self.start_kubelet();
        }
        self.node_name = self.wait_for("a Ready node", POD_WAIT, |cluster| {
            let nodes = cluster.get_json(&["nodes"])?;
            nodes["items"]
                .as_array()?
                .iter()
                .find(|node| condition(node, "Ready") == Some("True"))
                .and_then(|node| node["metadata"]["name"].as_str())
                .map(str::to_string)
        });
        self.wait_for("the default service account", POD_WAIT, |cluster| {
            cluster
                .kubectl(&["get", "serviceaccount", "default"])
                .status
                .success()
                .then_some(())
        });
    }

    /// Starts `kyb kubelet` (the agent alone) against the server, as the node identity.
    pub fn start_kubelet(&mut self) {
        let mut command = self.netns.command(env!("CARGO_BIN_EXE_kyb"));
        command
            .env_remove("RUST_LOG")
            .arg("--data-dir")
            .arg(self.dir.path())
            .arg("kubelet")
            .arg("--kubeconfig")
            .arg(self.dir.path().join("components/kubelet.kubeconfig"))
            .arg("--container-runtime-endpoint")
            .arg(self.containerd.endpoint())
            .args(["--eviction-hard", EVICTION_HARD]);
        self.kubelet = Some(Process::spawn(&mut command).unwrap());
    }

    /// Stops `kyb kubelet` (SIGTERM), leaving its pods' containers running.
    pub fn stop_kubelet(&mut self) {
        if let Some(mut kubelet) = self.kubelet.take() {
            kubelet.terminate().unwrap();
            kubelet.wait_exit(Duration::from_secs(30)).unwrap();
        }
    }

    /// Stops `kyb server` (SIGTERM, as a user would), leaving the pods' containers running.
    pub fn stop_server(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.terminate().unwrap();
            server.wait_exit(Duration::from_secs(30)).unwrap();
        }
    }

    /// The server's output so far (for failure messages).
    pub fn server_output(&self) -> String {
        self.server
            .as_ref()
            .map(Process::output)
            .unwrap_or_default()
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig.yaml")
    }

    /// `program` run inside the cluster's network namespace.
    pub fn command(&self, program: &str) -> Command {
        self.netns.command(program)
    }

    /// Runs kubectl (inside the namespace) as the admin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.command("kubectl")
            .env("KUBECONFIG", self.kubeconfig())
            .args(args)
            .output()
            .unwrap()
    }

    /// Runs kubectl, which must succeed; its standard output.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs kubectl with `input` on its standard input.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write as _;
        let mut child = self
            .command("kubectl")
            .env("KUBECONFIG", self.kubeconfig())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// `kubectl apply -f -` of `manifest`, which must succeed.
    pub fn apply(&self, manifest: &str) {
        let output = self.kubectl_stdin(&["apply", "-f", "-"], manifest);
        assert!(
            output.status.success(),
            "kubectl apply failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `kubectl get ARGS -o json`, parsed; `None` when kubectl fails.
    pub fn get_json(&self, args: &[&str]) -> Option<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let output = self.kubectl(&all);
        if !output.status.success() {
            return None;
        }
        serde_json::from_slice(&output.stdout).ok()
    }

    /// The pod `name` of the default namespace as JSON.
    pub fn pod(&self, name: &str) -> Option<Value> {
        self.get_json(&["pod", name])
    }

    /// Polls `probe` every 200 ms until it gives a value, failing after `limit` with the
    /// server's output.
    pub fn wait_for<T>(
        &self,
        what: &str,
        limit: Duration,
        mut probe: impl FnMut(&NodeCluster) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(value) = probe(self) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the server said:\n{}",
                tail(&self.server_output(), 4000)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until pod `name` passes `test`, returning it.
    pub fn wait_for_pod(&self, name: &str, what: &str, test: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + POD_WAIT;
        loop {
            let pod = self.pod(name);
            if let Some(pod) = pod.as_ref().filter(|pod| test(pod)) {
                return pod.clone();
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for pod {name}: {what}; it is {}; its events: {:?}; the server said:\n{}",
                pod.map_or_else(|| "missing".to_string(), |p| p["status"].to_string()),
                self.events(name),
                tail(&self.server_output(), 3000)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// An HTTP/1.0 GET of `http://ip:port/path` from inside the namespace (curl).
    pub fn http_get(&self, ip: &str, port: u16, path: &str) -> Option<String> {
        let output = self
            .command("curl")
            .args(["-s", "-m", "3", "--fail"])
            .arg(format!("http://{ip}:{port}{path}"))
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The events about pod `name`, as `reason: message` lines.
    pub fn events(&self, name: &str) -> Vec<String> {
        let selector = format!("involvedObject.name={name}");
        self.get_json(&["events", "--field-selector", &selector])
            .and_then(|list| {
                list["items"].as_array().map(|items| {
                    items
                        .iter()
                        .map(|e| {
                            format!(
                                "{}: {}",
                                e["reason"].as_str().unwrap_or_default(),
                                e["message"].as_str().unwrap_or_default()
                            )
                        })
                        .collect()
                })
            })
            .unwrap_or_default()
    }
}

impl Drop for NodeCluster {
    fn drop(&mut self) {
        // Killed, not stopped: containerd's drop then kills the containers.
        self.kubelet.take();
        self.server.take();
        // The data dir's volumes (tmpfs) go before the directory does.
        let dir = self.dir.path().to_path_buf();
        kyb_testkit::unmount_under(&dir);
    }
}

/// Removes the cgroups the agent made for the cluster's pods (one directory per pod UID
/// under its pods directory), once their containers are gone.
struct PodCgroups(PathBuf);

impl Drop for PodCgroups {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return;
        };
        for entry in entries.flatten() {
            for cgroup in kyb_node_sys::cgroup::pod_cgroups(&entry.file_name().to_string_lossy()) {
                kyb_node_sys::cgroup::remove(&cgroup);
            }
        }
        for parent in ["/kubepods/burstable", "/kubepods/besteffort", "/kubepods"] {
            kyb_node_sys::cgroup::remove_if_empty(parent);
        }
    }
}

/// The status of condition `type_` of an object (a pod's or a node's).
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
}

/// The status of container `name` of a pod.
pub fn container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    pod["status"]["containerStatuses"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)
}

/// The status of init container `name` of a pod.
pub fn init_container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    pod["status"]["initContainerStatuses"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)
}

fn tail(text: &str, bytes: usize) -> &str {
    let start = text.len().saturating_sub(bytes);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..]
}
