//! A real etcd for tests and benchmarks, on free loopback ports with a temporary data dir.

use anyhow::{Context, bail};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long etcd may take to answer its health check.
const STARTUP_DEADLINE: Duration = Duration::from_secs(30);

/// An etcd process; killed, and its data removed, when dropped.
pub struct EtcdServer {
    child: Child,
    /// The client URL, `http://127.0.0.1:PORT`.
    pub endpoint: String,
    dir: tempfile::TempDir,
}

impl EtcdServer {
    /// Starts etcd from `$KYB_ETCD_BIN` or `etcd` on the PATH, and waits until it is healthy.
    pub fn start() -> anyhow::Result<Self> {
        // Another process may grab a free port before etcd binds it: try a few times.
        let mut last_error = None;
        for _ in 0..3 {
            match Self::try_start() {
                Ok(server) => return Ok(server),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("etcd did not start")))
    }

    fn try_start() -> anyhow::Result<Self> {
        let binary = std::env::var("KYB_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
        let dir = crate::temp_dir("etcd")?;
        let client_port = crate::free_port()?;
        let peer_port = crate::free_port()?;
        let endpoint = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let log = std::fs::File::create(dir.path().join("etcd.log"))?;
        let child = Command::new(&binary)
            .arg("--name=kyb-test")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={endpoint}"))
            .arg(format!("--advertise-client-urls={endpoint}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=kyb-test={peer}"))
            .arg("--logger=zap")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {binary} (install etcd-server: `make deps`)"))?;
        let mut server = Self {
            child,
            endpoint,
            dir,
        };
        server.wait_healthy(client_port)?;
        Ok(server)
    }

    fn wait_healthy(&mut self, port: u16) -> anyhow::Result<()> {
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("etcd exited with {status}: {}", self.log_tail());
            }
            if health(port).unwrap_or(false) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "etcd not healthy after {STARTUP_DEADLINE:?}: {}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The etcd data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
        let start = log.len().saturating_sub(2000);
        log.get(start..).unwrap_or_default().to_string()
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asks etcd's `/health` endpoint over plain HTTP/1.0.
fn health(port: u16) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response.starts_with("HTTP/1.") && response.contains("\"health\":\"true\""))
}
