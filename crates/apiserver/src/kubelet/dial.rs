//! One HTTP/1.1 connection to a backend (a kubelet, or a pod or service endpoint the
//! proxy subresources reach): TCP within a timeout, TLS when given a configuration, the
//! connection driven (upgrades allowed) by a task of its own. Errors are worded as Go's
//! dialer words them (`dial tcp 10.0.0.1:10250: connect: connection refused`).

use hyper_util::rt::TokioIo;
use kyb_serving::Body;
use std::sync::Arc;
use std::time::Duration;

pub(crate) type Sender = hyper::client::conn::http1::SendRequest<Body>;

/// `host:port`, an IPv6 address in brackets.
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Connects to `host:port`, over TLS with `tls` if given (the server name is `host`).
pub(crate) async fn open(
    host: &str,
    port: u16,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
) -> Result<Sender, String> {
    let address = join_host_port(host, port);
    let dial = async {
        let tcp = tokio::net::TcpStream::connect(&address)
            .await
            .map_err(|e| format!("dial tcp {address}: {}", go_io_error(&e)))?;
        let _ = tcp.set_nodelay(true);
        Ok::<_, String>(tcp)
    };
    let tcp = tokio::time::timeout(timeout, dial)
        .await
        .map_err(|_| format!("dial tcp {address}: i/o timeout"))??;
    match tls {
        None => handshake(tcp).await,
        Some(config) => {
            let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| format!("invalid server name {host:?}: {e}"))?;
            let connect = tokio_rustls::TlsConnector::from(config).connect(server_name, tcp);
            let stream = tokio::time::timeout(timeout, connect)
                .await
                .map_err(|_| "net/http: TLS handshake timeout".to_string())?
                .map_err(|e| format!("tls: {e}"))?;
            handshake(stream).await
        }
    }
}

async fn handshake<S>(stream: S) -> Result<Sender, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(error) = connection.with_upgrades().await {
            tracing::debug!(%error, "backend connection ended");
        }
    });
    Ok(sender)
}

/// An I/O error as Go words the common ones (`connect: connection refused`).
fn go_io_error(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
        std::io::ErrorKind::HostUnreachable => "connect: no route to host".to_string(),
        std::io::ErrorKind::NetworkUnreachable => "connect: network is unreachable".to_string(),
        _ => error.to_string(),
    }
}
