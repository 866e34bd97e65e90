//! The containerd the agent starts: its configuration generated under the agent's root
//! directory (own root, state, socket, CNI directories, sandbox image, plain-HTTP pulls
//! from `localhost:5000`), the process started in the agent's network namespace and
//! supervised (restarted with back-off when it exits).
//!
//! Layout under `root_dir` (`<data-dir>/agent`):
//!
//! ```text
//! containerd/config.toml       the generated configuration
//! containerd/containerd.sock   its gRPC socket (CRI), and containerd.sock.ttrpc
//! containerd/containerd.log    its output
//! containerd/containerd.pid    the process id, to replace a containerd left by a crash
//! containerd/root, state       its content store, snapshots, metadata; its runtime state
//! containerd/runc              runc's state (not the host's /run/containerd/runc)
//! containerd/certs.d           registry hosts (`localhost:5000/hosts.toml`: plain HTTP)
//! cni/net.d                    the CNI configuration the CRI plugin reads
//! ```
//!
//! A containerd left running by an earlier agent that crashed is **replaced**: the agent
//! reads the pid file, checks the process is a containerd with this configuration, stops
//! it (SIGTERM, then SIGKILL after a deadline) and starts its own, which it can then
//! supervise. Stopping containerd never stops the pods: the shims (and so the containers)
//! keep running and the new containerd reconnects to them.

use crate::cri::Cri;
use anyhow::{Context as _, bail};
use kyb_node_sys::signals::ProcessSignal;
use std::fmt::Write as _;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// Where Debian's CNI plugins are.
pub const DEFAULT_CNI_BIN_DIR: &str = "/usr/lib/cni";

/// The longest path a unix socket may have (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// How long containerd may take to answer CRI `Version` after it is started.
const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// How long containerd gets to exit after SIGTERM before it is killed.
const STOP_DEADLINE: Duration = Duration::from_secs(10);

/// The registry served over plain HTTP (the local registry of tests and `make up`).
pub const INSECURE_REGISTRY: &str = "localhost:5000";

/// How the agent's containerd is configured.
#[derive(Clone, Debug)]
pub struct ContainerdConfig {
    /// The agent's state directory (`<data-dir>/agent`).
    pub root_dir: PathBuf,
    /// Where the CNI plugins are (`/usr/lib/cni`).
    pub cni_bin_dir: PathBuf,
    /// Where the CNI configuration is (`<root_dir>/cni/net.d`).
    pub cni_conf_dir: PathBuf,
    /// The image of pod sandboxes ([`crate::images::PAUSE_IMAGE`]).
    pub sandbox_image: String,
    /// The containerd binary (`containerd` on the PATH).
    pub binary: PathBuf,
}

impl ContainerdConfig {
    /// The defaults for an agent whose state is under `root_dir`.
    pub fn new(root_dir: impl Into<PathBuf>) -> ContainerdConfig {
        let root_dir = root_dir.into();
        ContainerdConfig {
            cni_bin_dir: PathBuf::from(DEFAULT_CNI_BIN_DIR),
            cni_conf_dir: root_dir.join("cni").join("net.d"),
            sandbox_image: crate::images::PAUSE_IMAGE.to_string(),
            binary: PathBuf::from("containerd"),
            root_dir,
        }
    }

    /// containerd's own directory, `<root_dir>/containerd`.
    pub fn containerd_dir(&self) -> PathBuf {
        self.root_dir.join("containerd")
    }

    /// The generated configuration file.
    pub fn config_file(&self) -> PathBuf {
        self.containerd_dir().join("config.toml")
    }

    /// The gRPC socket.
    pub fn socket_path(&self) -> PathBuf {
        self.containerd_dir().join("containerd.sock")
    }

    /// The CRI endpoint, `unix:///…/containerd.sock`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket_path().display())
    }

    /// containerd's output.
    pub fn log_file(&self) -> PathBuf {
        self.containerd_dir().join("containerd.log")
    }

    /// The pid of the running containerd.
    pub fn pid_file(&self) -> PathBuf {
        self.containerd_dir().join("containerd.pid")
    }

    /// The registry hosts directory (`config_path`).
    pub fn registry_hosts_dir(&self) -> PathBuf {
        self.containerd_dir().join("certs.d")
    }

    /// Fails when a socket path would not fit in a unix socket address (containerd also
    /// creates `<socket>.ttrpc`).
    pub fn check_socket_path(&self) -> anyhow::Result<()> {
        let socket = self.socket_path();
        let length = socket.as_os_str().len() + ".ttrpc".len();
        if length > MAX_SOCKET_PATH {
            bail!(
                "containerd's socket {}.ttrpc would be {length} bytes long, over the {MAX_SOCKET_PATH} \
                 a unix socket path may have: use a shorter --data-dir",
                socket.display()
            );
        }
        Ok(())
    }
}

/// A TOML basic string (quoted, with `\` and `"` escaped).
fn toml_string(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(quoted, "\\u{:04X}", c as u32);
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

fn path_string(path: &Path) -> String {
    toml_string(&path.display().to_string())
}

/// The plugins a node agent does not need: snapshotters for file systems we do not use
/// and the tracing exporters.
const DISABLED_PLUGINS: &[&str] = &[
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.internal.v1.tracing",
];

/// The containerd 1.6 configuration (version 2) for `config`.
pub fn render(config: &ContainerdConfig) -> String {
    let dir = config.containerd_dir();
    let systemd_cgroup = kyb_node_sys::cgroup::driver() == kyb_node_sys::cgroup::Driver::Systemd;
    let disabled = DISABLED_PLUGINS
        .iter()
        .map(|plugin| toml_string(plugin))
        .collect::<Vec<_>>()
        .join(", ");
    let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
    format!(
        r#"# Generated by kyb: the agent's own containerd. Edits are overwritten at start.
version = 2
root = {root}
state = {state}
disabled_plugins = [{disabled}]

[grpc]
  address = {socket}

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {opt}

[{cri}]
  sandbox_image = {sandbox_image}
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = {systemd_cgroup}
        Root = {runc_root}

  [{cri}.cni]
    bin_dir = {cni_bin_dir}
    conf_dir = {cni_conf_dir}

  [{cri}.registry]
    config_path = {hosts_dir}
"#,
        root = path_string(&dir.join("root")),
        state = path_string(&dir.join("state")),
        socket = path_string(&config.socket_path()),
        opt = path_string(&dir.join("opt")),
        sandbox_image = toml_string(&config.sandbox_image),
        runc_root = path_string(&dir.join("runc")),
        cni_bin_dir = path_string(&config.cni_bin_dir),
        cni_conf_dir = path_string(&config.cni_conf_dir),
        hosts_dir = path_string(&config.registry_hosts_dir()),
    )
}

/// The `hosts.toml` that makes `registry` (`host:port`) a plain-HTTP registry.
pub fn render_insecure_registry_hosts(registry: &str) -> String {
    format!(
        "# Generated by kyb: {registry} is served over plain HTTP.\n\
         server = \"http://{registry}\"\n\n\
         [host.\"http://{registry}\"]\n  capabilities = [\"pull\", \"resolve\", \"push\"]\n"
    )
}

/// Writes the configuration files of `config` (containerd's and the registry hosts) and
/// creates the directories it names.
pub fn write_config(config: &ContainerdConfig) -> anyhow::Result<()> {
    config.check_socket_path()?;
    let dir = config.containerd_dir();
    let hosts = config.registry_hosts_dir().join(INSECURE_REGISTRY);
    for directory in [&dir, &hosts, &config.cni_conf_dir] {
        std::fs::create_dir_all(directory)
            .with_context(|| format!("creating {}", directory.display()))?;
    }
    write_file(&config.config_file(), &render(config))?;
    write_file(
        &hosts.join("hosts.toml"),
        &render_insecure_registry_hosts(INSECURE_REGISTRY),
    )?;
    Ok(())
}

fn write_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// The name of the CNI network [`write_cni_config`] writes.
pub const CNI_NETWORK: &str = "kyb";

/// Writes a CNI configuration list into `conf_dir` (`10-kyb.conflist`): a `cni0` bridge
/// with host-local addresses from `pod_cidr` (default route through the bridge, IP
/// masquerade for traffic leaving the node), `portmap` for `hostPort`s and `loopback`.
/// The address leases are kept beside `conf_dir` (`../ipam`), not in the machine's
/// `/var/lib/cni`.
pub fn write_cni_config(conf_dir: &Path, pod_cidr: &str) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(conf_dir)
        .with_context(|| format!("creating {}", conf_dir.display()))?;
    let leases = conf_dir.parent().unwrap_or(conf_dir).join("ipam");
    let conflist = serde_json::json!({
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": true,
                "ipMasq": true,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "dataDir": leases,
                    "ranges": [[{ "subnet": pod_cidr }]],
                    "routes": [{ "dst": "0.0.0.0/0" }],
                },
            },
            { "type": "portmap", "capabilities": { "portMappings": true } },
            { "type": "loopback" },
        ],
    });
    let text = serde_json::to_string_pretty(&conflist).context("encoding the CNI configuration")?;
    let path = conf_dir.join("10-kyb.conflist");
    write_file(&path, &text)?;
    Ok(path)
}

/// The last `bytes` of a log file, for error messages.
fn log_tail(path: &Path, bytes: usize) -> String {
    let log = std::fs::read(path).unwrap_or_default();
    let start = log.len().saturating_sub(bytes);
    String::from_utf8_lossy(log.get(start..).unwrap_or_default()).into_owned()
}

/// A containerd started by the agent.
#[derive(Debug)]
pub struct Containerd {
    config: ContainerdConfig,
    child: Child,
}

impl Containerd {
    /// Writes the configuration, replaces a containerd an earlier agent left running on
    /// the same socket, starts containerd (in the current network namespace; its output
    /// goes to `containerd.log`) and waits until it answers CRI `Version`.
    pub async fn start(config: ContainerdConfig) -> anyhow::Result<Containerd> {
        write_config(&config)?;
        replace_leftover(&config).await?;
        let child = spawn(&config)?;
        let mut containerd = Containerd { config, child };
        containerd.wait_ready().await?;
        Ok(containerd)
    }

    /// The CRI endpoint, `unix:///…/containerd.sock`.
    pub fn endpoint(&self) -> String {
        self.config.endpoint()
    }

    /// Its configuration.
    pub fn config(&self) -> &ContainerdConfig {
        &self.config
    }

    /// The process id.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let cri = Cri::connect(&self.endpoint())?;
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().context("waiting for containerd")? {
                bail!(
                    "containerd exited ({status}) before answering on {}; its log ({}) ends with:\n{}",
                    self.endpoint(),
                    self.config.log_file().display(),
                    log_tail(&self.config.log_file(), 2000)
                );
            }
            let mut runtime = cri.runtime.clone();
            let request = k8s_cri::v1::VersionRequest {
                version: "v1".to_string(),
            };
            let attempt =
                tokio::time::timeout(Duration::from_secs(2), runtime.version(request)).await;
            if let Ok(Ok(response)) = attempt {
                let version = response.into_inner();
                tracing::info!(
                    endpoint = %self.endpoint(),
                    runtime = %version.runtime_name,
                    version = %version.runtime_version,
                    "containerd is ready"
                );
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "containerd did not answer CRI Version on {} within {STARTUP_DEADLINE:?}; its log ({}) ends with:\n{}",
                    self.endpoint(),
                    self.config.log_file().display(),
                    log_tail(&self.config.log_file(), 2000)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops containerd: SIGTERM, then SIGKILL if it has not exited within 10 s. The
    /// shims and their containers keep running.
    pub async fn stop(mut self) {
        self.terminate().await;
    }

    async fn terminate(&mut self) {
        if let Some(pid) = self.child.id() {
            signal(pid, ProcessSignal::Terminate);
            if tokio::time::timeout(STOP_DEADLINE, self.child.wait())
                .await
                .is_err()
            {
                tracing::warn!(pid, "containerd did not exit after SIGTERM; killing it");
                let _ = self.child.kill().await;
            }
        }
        let _ = std::fs::remove_file(self.config.pid_file());
    }

    /// Keeps containerd running until `cancel` completes, then stops it. When it exits
    /// on its own, the reason is logged and it is started again after a back-off (1 s,
    /// doubling to 30 s; back to 1 s once it has run for a minute).
    pub async fn supervise(mut self, cancel: impl Future<Output = ()>) {
        const INITIAL: Duration = Duration::from_secs(1);
        const MAX: Duration = Duration::from_secs(30);
        const STABLE: Duration = Duration::from_secs(60);
        let mut cancel = std::pin::pin!(cancel);
        let mut backoff = INITIAL;
        let mut started = Instant::now();
        loop {
            let status = tokio::select! {
                () = &mut cancel => {
                    self.terminate().await;
                    return;
                }
                status = self.child.wait() => status,
            };
            if started.elapsed() >= STABLE {
                backoff = INITIAL;
            }
            tracing::error!(
                status = ?status,
                log = %log_tail(&self.config.log_file(), 1000),
                retry_in = ?backoff,
                "containerd exited; restarting it"
            );
            loop {
                tokio::select! {
                    () = &mut cancel => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX);
                match spawn(&self.config) {
                    Ok(child) => {
                        self.child = child;
                        break;
                    }
                    Err(error) => {
                        tracing::error!(error = %format!("{error:#}"), retry_in = ?backoff, "restarting containerd");
                    }
                }
            }
            started = Instant::now();
            if let Err(error) = self.wait_ready().await {
                tracing::error!(error = %format!("{error:#}"), "restarted containerd is not ready");
            }
        }
    }
}

fn signal(pid: u32, signal: ProcessSignal) {
    if let Err(error) = kyb_node_sys::signals::send(pid, signal) {
        tracing::debug!(error = %error, "signalling containerd");
    }
}

/// Starts containerd with `config`'s configuration file, its output appended to its log,
/// and records its pid.
fn spawn(config: &ContainerdConfig) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(config.log_file())
        .with_context(|| format!("opening {}", config.log_file().display()))?;
    let child = Command::new(&config.binary)
        .arg("--config")
        .arg(config.config_file())
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().context("duplicating the log file")?)
        .stderr(log)
        .kill_on_drop(false)
        .spawn()
        .with_context(|| {
            format!(
                "starting {} (install containerd: `make deps`)",
                config.binary.display()
            )
        })?;
    if let Some(pid) = child.id() {
        write_file(&config.pid_file(), &format!("{pid}\n"))?;
    }
    Ok(child)
}

/// Stops a containerd an earlier agent started with this configuration and left running.
async fn replace_leftover(config: &ContainerdConfig) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(config.pid_file()) else {
        return Ok(());
    };
    let Ok(pid) = text.trim().parse::<u32>() else {
        return Ok(());
    };
    if !is_containerd_with(pid, &config.config_file()) {
        return Ok(());
    }
    tracing::info!(
        pid,
        "stopping the containerd an earlier agent left running (its pods keep running)"
    );
    signal(pid, ProcessSignal::Terminate);
    let deadline = Instant::now() + STOP_DEADLINE;
    while is_containerd_with(pid, &config.config_file()) {
        if Instant::now() > deadline {
            signal(pid, ProcessSignal::Kill);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A killed (not yet reaped) process keeps the name: give the kernel a moment.
    let deadline = Instant::now() + STOP_DEADLINE;
    while is_containerd_with(pid, &config.config_file()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Whether process `pid` runs containerd with the configuration file `config_file`
/// (and is not a zombie).
fn is_containerd_with(pid: u32, config_file: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let is_containerd = args
        .first()
        .is_some_and(|arg0| arg0.ends_with(b"containerd"));
    let config = config_file.as_os_str().as_encoded_bytes();
    is_containerd && args.contains(&config)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_configuration_has_the_agents_paths_and_settings() {
        let config = ContainerdConfig::new("/var/lib/kyb/agent");
        let text = render(&config);
        for line in [
            "version = 2",
            r#"root = "/var/lib/kyb/agent/containerd/root""#,
            r#"state = "/var/lib/kyb/agent/containerd/state""#,
            r#"address = "/var/lib/kyb/agent/containerd/containerd.sock""#,
            r#"sandbox_image = "kyb.local/pause:1.0""#,
            "restrict_oom_score_adj = true",
            "netns_mounts_under_state_dir = true",
            r#"runtime_type = "io.containerd.runc.v2""#,
            r#"bin_dir = "/usr/lib/cni""#,
            r#"conf_dir = "/var/lib/kyb/agent/cni/net.d""#,
            r#"config_path = "/var/lib/kyb/agent/containerd/certs.d""#,
            r#"Root = "/var/lib/kyb/agent/containerd/runc""#,
        ] {
            assert!(
                text.lines().any(|l| l.trim() == line),
                "{line} missing from\n{text}"
            );
        }
        // No listener on the host besides the unix sockets.
        assert_eq!(text.matches(r#"address = """#).count(), 3, "{text}");
        assert!(text.contains("io.containerd.snapshotter.v1.btrfs"));
    }

    /// containerd itself parses the configuration: `config dump` merges it with the
    /// defaults and prints the result, which must carry our values.
    #[test]
    fn containerd_parses_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ContainerdConfig::new(dir.path().join("agent"));
        config.sandbox_image = "example.test/pause:\"odd\"".to_string();
        write_config(&config).unwrap();
        let output = std::process::Command::new("containerd")
            .arg("--config")
            .arg(config.config_file())
            .args(["config", "dump"])
            .output()
            .unwrap();
        let dump = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{output:?}");
        assert!(
            dump.contains(r#"sandbox_image = "example.test/pause:\"odd\"""#),
            "{dump}"
        );
        assert!(dump.contains("restrict_oom_score_adj = true"), "{dump}");
        assert!(
            dump.contains("netns_mounts_under_state_dir = true"),
            "{dump}"
        );
        assert!(
            dump.contains(&format!("conf_dir = \"{}\"", config.cni_conf_dir.display())),
            "{dump}"
        );
        let hosts = std::fs::read_to_string(
            config
                .registry_hosts_dir()
                .join("localhost:5000/hosts.toml"),
        )
        .unwrap();
        assert!(hosts.contains(r#"server = "http://localhost:5000""#));
    }

    #[test]
    fn a_socket_path_too_long_is_refused_clearly() {
        let long = format!("/{}", "d".repeat(90));
        let error = ContainerdConfig::new(long).check_socket_path().unwrap_err();
        assert!(
            error.to_string().contains("use a shorter --data-dir"),
            "{error}"
        );
        ContainerdConfig::new("/var/lib/kyb/agent")
            .check_socket_path()
            .unwrap();
    }

    #[test]
    fn the_cni_configuration_is_a_bridge_with_host_local_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_cni_config(dir.path(), "10.88.0.0/16").unwrap();
        let list: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(list["plugins"][0]["type"], "bridge");
        assert_eq!(list["plugins"][0]["bridge"], "cni0");
        assert_eq!(
            list["plugins"][0]["ipam"]["ranges"][0][0]["subnet"],
            "10.88.0.0/16"
        );
        let types: Vec<&str> = list["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["bridge", "portmap", "loopback"]);
    }
}
