//! A webhook server for tests: HTTPS with its own CA (generated per server), answering
//! AdmissionReviews with a handler the test gives. The handler sees the path and the
//! review's `request` and returns the `response` (the uid is filled in). Its TLS accept
//! loop (`accept_tls`) and answer (`respond`) serve other test servers too.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

type Handler = dyn Fn(&str, &Value) -> Value + Send + Sync;

pub struct WebhookServer {
    pub port: u16,
    pub ca_pem: String,
    /// Requests answered so far.
    pub calls: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

/// The host's primary address (not loopback), which Endpoints may name.
pub fn host_ip() -> IpAddr {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    socket.connect("10.255.255.255:9").unwrap();
    socket.local_addr().unwrap().ip()
}

impl WebhookServer {
    pub fn start(handler: impl Fn(&str, &Value) -> Value + Send + Sync + 'static) -> Self {
        let dir = kyb_testkit::temp_dir("webhook").unwrap();
        let sans = kyb_pki::Sans {
            dns: vec!["webhook.default.svc".to_string(), "localhost".to_string()],
            ips: vec![IpAddr::from([127, 0, 0, 1]), host_ip()],
        };
        let pki = kyb_pki::Pki::load_or_create(dir.path(), &sans).unwrap();
        let config = kyb_pki::tls::server_config(pki.serving(), pki.ca_pem()).unwrap();
        let listener = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        {
            let calls = calls.clone();
            accept_tls(listener, config, stop.clone(), move |stream| {
                serve(stream, &*handler, &calls)
            });
        }
        WebhookServer {
            port,
            ca_pem: pki.ca_pem().to_string(),
            calls,
            stop,
            _dir: dir,
        }
    }

    /// The CA bundle as a webhook configuration carries it (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        base64(self.ca_pem.as_bytes())
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A TLS connection a test server answers on.
pub type TlsStream = rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>;

/// Accepts connections on `listener` until `stop`, each on its own thread, TLS with
/// `config`, handed to `handle`.
pub fn accept_tls(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    stop: Arc<AtomicBool>,
    handle: impl Fn(TlsStream) + Send + Sync + 'static,
) {
    listener.set_nonblocking(true).unwrap();
    let handle = Arc::new(handle);
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((socket, _)) => {
                    socket.set_nonblocking(false).ok();
                    let Ok(connection) = rustls::ServerConnection::new(config.clone()) else {
                        continue;
                    };
                    let handle = handle.clone();
                    std::thread::spawn(move || {
                        handle(rustls::StreamOwned::new(connection, socket))
                    });
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
    });
}

/// Writes a whole answer and closes the connection.
pub fn respond(mut stream: TlsStream, status: &str, content_type: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
    stream.conn.send_close_notify();
    let _ = stream.flush();
}

fn serve(mut stream: TlsStream, handler: &Handler, calls: &AtomicUsize) {
    let mut reader = BufReader::new(&mut stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/")
        .to_string();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = &review["request"];
    let mut response = handler(&path, request);
    response["uid"] = request["uid"].clone();
    calls.fetch_add(1, Ordering::Relaxed);
    let answer = json!({
        "apiVersion": review["apiVersion"].clone(),
        "kind": "AdmissionReview",
        "response": response,
    })
    .to_string();
    respond(stream, "200 OK", "application/json", &answer);
}

/// A JSON patch response body (base64 of the patch).
pub fn patch_response(patch: &Value) -> Value {
    json!({
        "allowed": true,
        "patchType": "JSONPatch",
        "patch": base64(patch.to_string().as_bytes()),
    })
}

/// Standard base64, as Kubernetes' `[]byte` fields carry bytes in JSON.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
