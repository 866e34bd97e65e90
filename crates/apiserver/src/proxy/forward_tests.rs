//! The reverse proxy between two real HTTP/1.1 servers on loopback: a front one whose
//! every request is forwarded, and a backend that echoes what reached it and accepts an
//! upgrade to an echo protocol.

use super::*;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::service::service_fn;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// The backend: `METHOD path?query`, then the headers the test looks at, then the body;
/// `/ws` switches to an echo protocol.
async fn backend(
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    if request.uri().path() == "/ws" {
        let on_upgrade = hyper::upgrade::on(request);
        tokio::spawn(async move {
            if let Ok(upgraded) = on_upgrade.await {
                let mut io = TokioIo::new(upgraded);
                let mut buffer = [0u8; 64];
                while let Ok(n) = io.read(&mut buffer).await {
                    if n == 0 || io.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            }
        });
        let mut answer = http::Response::new(Full::new(Bytes::new()));
        *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        answer
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        answer
            .headers_mut()
            .insert(header::UPGRADE, HeaderValue::from_static("echo"));
        return Ok(answer);
    }
    if request.uri().path() == "/redirect" {
        let mut answer = http::Response::new(Full::new(Bytes::new()));
        *answer.status_mut() = StatusCode::FOUND;
        answer
            .headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/elsewhere"));
        answer
            .headers_mut()
            .insert("access-control-allow-origin", HeaderValue::from_static("*"));
        return Ok(answer);
    }
    let mut text = format!(
        "{} {}\n",
        request.method(),
        request.uri().path_and_query().map_or("", |p| p.as_str())
    );
    for name in [
        "authorization",
        "impersonate-user",
        "x-private",
        "x-kept",
        "x-forwarded-for",
        "x-forwarded-uri",
    ] {
        if let Some(value) = request.headers().get(name).and_then(|v| v.to_str().ok()) {
            text.push_str(&format!("{name}: {value}\n"));
        }
    }
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    text.push_str(&String::from_utf8_lossy(&body));
    let mut answer = http::Response::new(Full::new(Bytes::from(text)));
    answer
        .headers_mut()
        .insert("keep-alive", HeaderValue::from_static("timeout=5"));
    answer
        .headers_mut()
        .insert("x-backend", HeaderValue::from_static("yes"));
    Ok(answer)
}

async fn start_backend() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(backend))
                    .with_upgrades(),
            );
        }
    });
    Ok(address)
}

/// The front: `/front/<rest>` forwarded to `<rest>` on the backend.
async fn start_front(backend: SocketAddr) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, peer)) = listener.accept().await {
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(Connection {
                    peer: Some(peer.ip()),
                    certificate: None,
                });
                let path = request
                    .uri()
                    .path()
                    .strip_prefix("/front")
                    .unwrap_or_default()
                    .to_string();
                let prefix = "/front".to_string();
                let target = Backend::Direct {
                    https: false,
                    host: backend.ip().to_string(),
                    port: backend.port(),
                };
                async move { Ok::<_, Infallible>(forward(target, request, prefix, path).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades(),
            );
        }
    });
    Ok(address)
}

async fn client(
    front: SocketAddr,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(front).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection.with_upgrades());
    Ok(sender)
}

#[tokio::test]
async fn requests_are_forwarded_with_their_method_query_and_body() -> anyhow::Result<()> {
    let front = start_front(start_backend().await?).await?;
    let mut sender = client(front).await?;
    let request = http::Request::post("/front/a/b?x=1&y=2")
        .header(header::HOST, "front")
        .header(header::AUTHORIZATION, "Bearer secret")
        .header("impersonate-user", "bob")
        .header(header::CONNECTION, "X-Private")
        .header("x-private", "dropped")
        .header("x-kept", "kept")
        .body(Full::new(Bytes::from("the body")))?;
    let answer = sender.send_request(request).await?;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["x-backend"], "yes");
    assert!(answer.headers().get("keep-alive").is_none());
    let text = String::from_utf8(answer.into_body().collect().await?.to_bytes().to_vec())?;
    assert_eq!(
        text,
        "POST /a/b?x=1&y=2\nx-kept: kept\nx-forwarded-for: 127.0.0.1\nx-forwarded-uri: /front/a/b\nthe body"
    );

    // A redirect on the backend stays behind the proxy; its CORS headers do not pass.
    let mut sender = client(front).await?;
    let request = http::Request::get("/front/redirect")
        .header(header::HOST, "front")
        .body(Full::new(Bytes::new()))?;
    let answer = sender.send_request(request).await?;
    assert_eq!(answer.status(), StatusCode::FOUND);
    assert_eq!(answer.headers()[header::LOCATION], "/front/elsewhere");
    assert!(
        answer
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    // The root path is redirected to the directory, as Kubernetes does.
    let mut sender = client(front).await?;
    let request = http::Request::get("/front?q=1")
        .header(header::HOST, "front")
        .body(Full::new(Bytes::new()))?;
    let answer = sender.send_request(request).await?;
    assert_eq!(answer.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(answer.headers()[header::LOCATION], "/front/?q=1");
    Ok(())
}

#[tokio::test]
async fn an_upgrade_becomes_a_pipe_between_client_and_backend() -> anyhow::Result<()> {
    let front = start_front(start_backend().await?).await?;
    let mut sender = client(front).await?;
    let request = http::Request::get("/front/ws")
        .header(header::HOST, "front")
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "echo")
        .body(Full::new(Bytes::new()))?;
    let mut answer = sender.send_request(request).await?;
    assert_eq!(answer.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(answer.headers()[header::UPGRADE], "echo");
    let upgraded = hyper::upgrade::on(&mut answer).await?;
    let mut io = TokioIo::new(upgraded);
    io.write_all(b"hello").await?;
    let mut echoed = [0u8; 5];
    tokio::time::timeout(Duration::from_secs(10), io.read_exact(&mut echoed)).await??;
    assert_eq!(&echoed, b"hello");
    Ok(())
}

#[tokio::test]
async fn a_backend_that_is_not_there_is_the_dial_error() -> anyhow::Result<()> {
    let closed = TcpListener::bind("127.0.0.1:0").await?;
    let address = closed.local_addr()?;
    drop(closed);
    let front = start_front(address).await?;
    let mut sender = client(front).await?;
    let request = http::Request::get("/front/x")
        .header(header::HOST, "front")
        .body(Full::new(Bytes::new()))?;
    let answer = sender.send_request(request).await?;
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let text = String::from_utf8(answer.into_body().collect().await?.to_bytes().to_vec())?;
    assert!(
        text.contains(&format!("dial tcp {address}: connect: connection refused")),
        "{text}"
    );
    Ok(())
}
