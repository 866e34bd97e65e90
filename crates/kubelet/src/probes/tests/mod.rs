//! Tests of the probes and hooks: a fake [`Exec`], recorded events, and real loopback
//! servers (HTTP, HTTPS, gRPC health) started by the tests.

mod cri_exec;
mod handlers;
mod hooks;
mod workers;

use super::grpc::{CHECK_PATH, HealthCheckRequest, HealthCheckResponse};
use super::{Exec, ExecError, ExecOutput, ProbeEvents, Target};
use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What the fake runtime does for a container's commands.
#[derive(Clone, Debug)]
pub enum Behaviour {
    Exit(i32, &'static str, &'static str),
    TimedOut,
    Fails(&'static str),
}

/// One command run through the fake.
#[derive(Clone, Debug)]
pub struct Call {
    pub container_id: String,
    pub command: Vec<String>,
    pub timeout: Duration,
    pub at: Instant,
}

/// A fake runtime: each container ID answers as its behaviour says (exit 0 by default)
/// and every call is recorded.
#[derive(Default)]
pub struct FakeExec {
    behaviours: Mutex<HashMap<String, Behaviour>>,
    calls: Mutex<Vec<Call>>,
}

impl FakeExec {
    pub fn set(&self, container_id: &str, behaviour: Behaviour) {
        lock(&self.behaviours).insert(container_id.to_owned(), behaviour);
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.calls).clone()
    }

    /// The calls whose command's first word is `program`.
    pub fn calls_of(&self, program: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.command.first().map(String::as_str) == Some(program))
            .collect()
    }
}

#[async_trait]
impl Exec for FakeExec {
    async fn exec_sync(
        &self,
        container_id: &str,
        command: Vec<String>,
        timeout: Duration,
    ) -> Result<ExecOutput, ExecError> {
        lock(&self.calls).push(Call {
            container_id: container_id.to_owned(),
            command: command.clone(),
            timeout,
            at: Instant::now(),
        });
        // A command can also choose its own behaviour: `exit <code>`.
        let behaviour = lock(&self.behaviours)
            .get(container_id)
            .cloned()
            .unwrap_or(Behaviour::Exit(0, "", ""));
        match behaviour {
            Behaviour::Exit(code, stdout, stderr) => Ok(ExecOutput {
                exit_code: code,
                stdout: stdout.as_bytes().to_vec(),
                stderr: stderr.as_bytes().to_vec(),
            }),
            Behaviour::TimedOut => Err(ExecError::TimedOut),
            Behaviour::Fails(message) => Err(ExecError::Failed(message.to_owned())),
        }
    }
}

/// Events recorded as (reason, container, message).
#[derive(Default)]
pub struct RecordedEvents(Mutex<Vec<(String, String, String)>>);

impl RecordedEvents {
    pub fn all(&self) -> Vec<(String, String, String)> {
        lock(&self.0).clone()
    }

    /// The messages of the events with `reason` about `container`.
    pub fn messages(&self, reason: &str, container: &str) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|(r, c, _)| r == reason && c == container)
            .map(|(_, _, m)| m)
            .collect()
    }
}

impl ProbeEvents for RecordedEvents {
    fn unhealthy(&self, _pod: &Pod, container: &str, message: String) {
        lock(&self.0).push(("Unhealthy".into(), container.into(), message));
    }

    fn probe_warning(&self, _pod: &Pod, container: &str, message: String) {
        lock(&self.0).push(("ProbeWarning".into(), container.into(), message));
    }
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A target on 127.0.0.1 for `container`.
pub fn loopback_target(container: Container) -> Target {
    Target {
        pod_ip: Some([127, 0, 0, 1].into()),
        container_id: "cid".into(),
        container,
        pod: "web_default(uid-1)".into(),
    }
}

/// A task stopped when dropped.
pub struct Server {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A listener on a free port of 127.0.0.1, and its address.
pub async fn bind_loopback() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("addr: {e}"));
    (listener, addr)
}

/// A loopback port nothing listens on (bound, then released).
pub async fn closed_port() -> u16 {
    bind_loopback().await.1.port()
}

/// The headers of the requests the HTTP test server received, by path.
pub type Seen = Arc<Mutex<Vec<(String, http::HeaderMap)>>>;

/// An HTTP/1.1 server on 127.0.0.1 (over TLS with `tls`), answering:
/// `/ok` 200, `/fail` 500, `/to-ok` 302 to `/ok`, `/away` 302 to another host with a
/// body, `/loop` 302 to itself, `/slow` after 30 s, `/big` 300 with a 20 KiB body;
/// `/hang-up` closes the connection without an answer.
pub async fn http_server(tls: Option<Arc<rustls::ServerConfig>>) -> (Server, Seen) {
    let (listener, addr) = bind_loopback().await;
    let seen: Seen = Arc::default();
    let recorded = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let seen = recorded.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let seen = seen.clone();
                    async move { Ok::<_, Infallible>(answer(req, &seen).await) }
                });
                let http = hyper::server::conn::http1::Builder::new();
                match tls {
                    Some(config) => {
                        let acceptor = tokio_rustls::TlsAcceptor::from(config);
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                    }
                    None => {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                }
            });
        }
    });
    (Server { addr, task }, seen)
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    seen: &Seen,
) -> hyper::Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    lock(seen).push((path.clone(), req.headers().clone()));
    let respond = |status: u16, location: Option<&str>, body: Vec<u8>| {
        let mut builder = hyper::Response::builder().status(status);
        if let Some(location) = location {
            builder = builder.header("location", location);
        }
        builder
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_else(|e| panic!("response: {e}"))
    };
    match path.as_str() {
        "/ok" => respond(200, None, b"fine".to_vec()),
        "/fail" => respond(500, None, b"broken".to_vec()),
        "/to-ok" => respond(302, Some("/ok"), Vec::new()),
        "/away" => respond(302, Some("http://127.0.0.2:1/ok"), b"moved".to_vec()),
        "/loop" => respond(302, Some("/loop"), Vec::new()),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            respond(200, None, Vec::new())
        }
        "/big" => respond(300, None, vec![b'x'; 20 * 1024]),
        // Dropping the connection without an answer.
        "/hang-up" => panic!("hanging up"),
        _ => respond(404, None, Vec::new()),
    }
}

/// A self-signed serving configuration for 127.0.0.1 (kept in `dir`).
pub fn tls_config(dir: &std::path::Path) -> Arc<rustls::ServerConfig> {
    let sans = kyb_pki::Sans {
        dns: vec![],
        ips: vec![[127, 0, 0, 1].into()],
    };
    let pki = kyb_pki::Pki::load_or_create(dir, &sans).unwrap_or_else(|e| panic!("pki: {e}"));
    kyb_pki::tls::server_config(pki.serving(), pki.ca_pem()).unwrap_or_else(|e| panic!("tls: {e}"))
}

/// An HTTP/2 (gRPC) server on 127.0.0.1 answering every request with `handle`.
pub async fn h2_server<F, Fut>(handle: F) -> Server
where
    F: Fn(hyper::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = http::Response<tonic::body::Body>> + Send + 'static,
{
    let (listener, addr) = bind_loopback().await;
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let answer = handle(req);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Server { addr, task }
}

/// A gRPC server on 127.0.0.1 implementing `grpc.health.v1.Health/Check` when `health`
/// (otherwise answering `Unimplemented`): service `""` is SERVING, `down` NOT_SERVING,
/// `slow` answers after 30 s, any other is `NotFound: unknown service`.
pub async fn grpc_server(health: bool) -> Server {
    h2_server(
        move |req: hyper::Request<hyper::body::Incoming>| async move {
            if !health || req.uri().path() != CHECK_PATH {
                return tonic::Status::unimplemented("unknown method").into_http();
            }
            let codec =
                tonic_prost::ProstCodec::<HealthCheckResponse, HealthCheckRequest>::default();
            let check = tower::service_fn(|req: tonic::Request<HealthCheckRequest>| async move {
                let status = match req.into_inner().service.as_str() {
                    "" => 1,
                    "down" => 2,
                    "slow" => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        1
                    }
                    _ => return Err(tonic::Status::not_found("unknown service")),
                };
                Ok(tonic::Response::new(HealthCheckResponse { status }))
            });
            tonic::server::Grpc::new(codec).unary(check, req).await
        },
    )
    .await
}
