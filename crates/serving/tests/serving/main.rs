//! The TLS serving loop with a real connection on loopback: the client certificate's user
//! reaches the handler as the request's `Connection`, and a handler can take the
//! connection over with an HTTP upgrade (what exec, attach and port-forward need).

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use kyb_serving::{Body, Connection};
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers `Upgrade: kyb-echo` with 101, then greets with the certificate's user and echoes
/// what the client sends on the upgraded connection.
async fn echo(
    mut request: Request<Body>,
) -> Result<Response<http_body_util::Empty<Bytes>>, Infallible> {
    let user = request
        .extensions()
        .get::<Connection>()
        .and_then(|c| c.certificate.as_ref().map(|u| u.name.clone()))
        .unwrap_or_else(|| "anonymous".into());
    if request
        .headers()
        .get(http::header::UPGRADE)
        .map(|v| v.as_bytes())
        != Some(b"kyb-echo")
    {
        let mut response = Response::new(http_body_util::Empty::new());
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return Ok(response);
    }
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let mut io = TokioIo::new(upgraded);
        if io.write_all(format!("{user}\n").as_bytes()).await.is_err() {
            return;
        }
        let mut buffer = [0u8; 64];
        while let Ok(n) = io.read(&mut buffer).await {
            if n == 0 || io.write_all(&buffer[..n]).await.is_err() {
                return;
            }
        }
    });
    let mut response = Response::new(http_body_util::Empty::new());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    response.headers_mut().insert(
        http::header::CONNECTION,
        "Upgrade".parse().expect("a header value"),
    );
    response.headers_mut().insert(
        http::header::UPGRADE,
        "kyb-echo".parse().expect("a header value"),
    );
    Ok(response)
}

#[tokio::test]
async fn upgraded_connections_carry_the_client_certificate_s_user() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let sans = kyb_pki::Sans {
        dns: vec!["localhost".into()],
        ips: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
    };
    let pki = kyb_pki::Pki::load_or_create(dir.path(), &sans)?;
    let alice = pki.client("alice", "alice", &["team"])?;
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let address = listener.local_addr()?;
    let tls = kyb_pki::tls::server_config(pki.serving(), pki.ca_pem())?;
    let server = tokio::spawn(async move {
        kyb_serving::tls::serve(&listener, tls, tower::service_fn(echo)).await;
    });

    let connector =
        tokio_rustls::TlsConnector::from(kyb_pki::tls::client_config(pki.ca_pem(), Some(&alice))?);
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost")?;
    let mut stream = connector.connect(name, tcp).await?;
    stream
        .write_all(b"GET /echo HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: kyb-echo\r\n\r\n")
        .await?;

    let read_until = async |stream: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
                            end: &[u8]|
           -> anyhow::Result<Vec<u8>> {
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !seen.ends_with(end) {
            let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await??;
            anyhow::ensure!(
                n == 1,
                "the connection ended after {:?}",
                String::from_utf8_lossy(&seen)
            );
            seen.push(byte[0]);
        }
        Ok(seen)
    };
    let head = String::from_utf8(read_until(&mut stream, b"\r\n\r\n").await?)?;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    assert_eq!(read_until(&mut stream, b"\n").await?, b"alice\n");
    for word in ["ping\n", "pong\n"] {
        stream.write_all(word.as_bytes()).await?;
        assert_eq!(read_until(&mut stream, b"\n").await?, word.as_bytes());
    }
    server.abort();
    Ok(())
}
