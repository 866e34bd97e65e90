//! The benchmarks' HTTP client: TLS connections to a `kyb` server as its admin (client
//! certificate) or with a bearer token, one request at a time per connection (hyper's
//! client connection API), and process helpers (the release binary, RSS).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use kyb_testkit::Process;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tokio::net::TcpStream;

pub type Sender = http1::SendRequest<Full<Bytes>>;

/// A client TLS configuration, replaced when a benchmark starts a fresh server (new CA).
pub type TlsSlot = std::sync::RwLock<Option<std::sync::Arc<tokio_rustls::rustls::ClientConfig>>>;

/// The admin's TLS client configuration, read from the server's data dir once it is up.
pub static TLS: TlsSlot = std::sync::RwLock::new(None);
/// The same CA, no client certificate: for requests with a bearer token.
pub static TOKEN_TLS: TlsSlot = std::sync::RwLock::new(None);

fn set(slot: &TlsSlot, config: std::sync::Arc<tokio_rustls::rustls::ClientConfig>) {
    if let Ok(mut slot) = slot.write() {
        *slot = Some(config);
    }
}

pub fn admin_tls(data_dir: &std::path::Path) -> anyhow::Result<()> {
    let pki = data_dir.join("pki");
    let read = |file: &str| std::fs::read_to_string(pki.join(file));
    let admin = kyb_pki::Credentials {
        cert_pem: read("admin.crt")?,
        key_pem: read("admin.key")?,
    };
    let config = kyb_pki::tls::client_config(&read("ca.crt")?, Some(&admin))?;
    set(&TLS, config);
    set(
        &TOKEN_TLS,
        kyb_pki::tls::client_config(&read("ca.crt")?, None)?,
    );
    Ok(())
}

pub async fn connect(port: u16) -> anyhow::Result<Sender> {
    connect_with(port, &TLS).await
}

pub async fn connect_with(port: u16, tls: &TlsSlot) -> anyhow::Result<Sender> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    let config = tls
        .read()
        .ok()
        .and_then(|c| c.clone())
        .ok_or_else(|| anyhow::anyhow!("TLS is not configured"))?;
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("127.0.0.1")?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, stream)
        .await?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

pub async fn request(
    sender: &mut Sender,
    method: &str,
    path: &str,
    body: Bytes,
) -> anyhow::Result<(u16, Bytes)> {
    request_as(sender, method, path, "application/json", body).await
}

pub async fn request_as(
    sender: &mut Sender,
    method: &str,
    path: &str,
    content_type: &str,
    body: Bytes,
) -> anyhow::Result<(u16, Bytes)> {
    send(sender, method, path, content_type, None, body).await
}

pub async fn send(
    sender: &mut Sender,
    method: &str,
    path: &str,
    content_type: &str,
    token: Option<&str>,
    body: Bytes,
) -> anyhow::Result<(u16, Bytes)> {
    sender.ready().await?;
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1")
        .header("content-type", content_type)
        .header("accept", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(Full::new(body))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time (user + system) a process has used so far, in milliseconds (`/proc/<pid>/stat`,
/// at the usual 100 clock ticks per second); `None` reads this process.
pub fn cpu_ms(pid: Option<u32>) -> f64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // The fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) * 10.0
}

pub fn kyb_binary() -> PathBuf {
    std::env::var_os("KYB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/kyb"))
}

/// The bearer token of the benchmarks' RBAC user `bench` (see [`token_file`]).
pub const TOKEN: &str = "bench-token-0123456789";

/// Writes a `--token-auth-file` in `dir` naming the user `bench` with [`TOKEN`].
pub fn token_file(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("tokens.csv");
    std::fs::write(&path, format!("{TOKEN},bench,1000\n"))?;
    Ok(path)
}

/// Starts `kyb server` ([`kyb_binary`]) on a free loopback port with `dir` as its data
/// dir and `flags` added, and waits until it is ready; the process and its port.
pub fn start_server(dir: &Path, flags: &[&str]) -> anyhow::Result<(Process, u16)> {
    start_server_in(None, dir, flags)
}

/// [`start_server`], inside the network namespace `netns` when given (its loopback).
pub fn start_server_in(
    netns: Option<&kyb_testkit::NetNs>,
    dir: &Path,
    flags: &[&str],
) -> anyhow::Result<(Process, u16)> {
    let binary = kyb_binary();
    anyhow::ensure!(
        binary.exists(),
        "{} is missing: run `cargo build --release -p kyb`",
        binary.display()
    );
    let port = kyb_testkit::free_port()?;
    let mut command = match netns {
        Some(netns) => netns.command(&binary),
        None => Command::new(&binary),
    };
    let mut server = Process::spawn(
        command
            .env_remove("RUST_LOG")
            .args([
                "server",
                "--disable-agent",
                "--bind-address",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--data-dir",
            ])
            .arg(dir)
            .args(flags),
    )?;
    server.wait_for_line("kyb server ready", Duration::from_secs(60))?;
    Ok((server, port))
}

/// Follows a watch (`path` with `watch=true`) until it ends, calling `on_event` with each
/// event (`{"type": …, "object": …}`); lines that are not JSON are skipped.
pub async fn follow_watch(
    port: u16,
    path: String,
    mut on_event: impl FnMut(serde_json::Value),
) -> anyhow::Result<()> {
    let mut sender: Sender = connect(port).await?;
    sender.ready().await?;
    let request = hyper::Request::builder()
        .uri(path)
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::new()))?;
    let response = sender.send_request(request).await?;
    let mut body = response.into_body();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        buffer.extend_from_slice(data);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if let Ok(event) = serde_json::from_slice(&line) {
                on_event(event);
            }
        }
    }
    Ok(())
}

/// `path` as UTF-8 (the benchmarks' temporary paths are), for a flag.
pub fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str()
        .ok_or_else(|| anyhow::anyhow!("{} is not UTF-8", path.display()))
}
