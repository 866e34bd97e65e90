//! The client against a real HTTPS server on loopback that stands in for a kubelet: the
//! client certificate it presents, verification of the kubelet's certificate, bodies
//! streamed, upgrades and refused upgrades, transport errors.

use super::*;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Frame;
use kyb_pki::{Pki, Sans};
use kyb_serving::Body;
use kyb_serving::tls::Connection;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

/// A response body fed by a channel: what the test sends arrives as it is sent.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.get_mut()
            .0
            .poll_recv(cx)
            .map(|bytes| bytes.map(|b| Ok(Frame::data(b))))
    }
}

type Lines = Arc<Mutex<Option<mpsc::Receiver<Bytes>>>>;

/// The stand-in kubelet: `/whoami` answers the client certificate's user, the Host header
/// and the query; `/lines` streams what the test sends; `/upgrade` switches to an echo
/// protocol; anything else is a 403 with text, as kubelet's authorizer words it.
fn kubelet(request: Request<Body>, lines: &Lines) -> Response<Body> {
    let user = request
        .extensions()
        .get::<Connection>()
        .and_then(|c| c.certificate.clone())
        .map_or_else(|| "anonymous".to_string(), |u| u.name.clone());
    match request.uri().path() {
        "/whoami" => {
            let host = request
                .headers()
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let query = request.uri().query().unwrap_or_default().to_string();
            Response::new(Body::full(format!("{user} {host} {query}")))
        }
        "/lines" => match lines.lock().ok().and_then(|mut l| l.take()) {
            Some(receiver) => Response::new(Body::new(ChannelBody(receiver))),
            None => Response::new(Body::empty()),
        },
        "/upgrade" => {
            let on_upgrade = hyper::upgrade::on(request);
            tokio::spawn(async move {
                if let Ok(upgraded) = on_upgrade.await {
                    let mut io = hyper_util::rt::TokioIo::new(upgraded);
                    let mut buffer = [0u8; 64];
                    while let Ok(n) = io.read(&mut buffer).await {
                        if n == 0 || io.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            });
            Response::builder()
                .status(StatusCode::SWITCHING_PROTOCOLS)
                .header(http::header::CONNECTION, "Upgrade")
                .header(http::header::UPGRADE, "SPDY/3.1")
                .header("X-Stream-Protocol-Version", "v4.channel.k8s.io")
                .body(Body::empty())
                .unwrap_or_default()
        }
        _ => {
            let mut response = Response::new(Body::full(format!(
                "Forbidden (user={user}, verb=create, resource=nodes, subresource(s)=[proxy])\n"
            )));
            *response.status_mut() = StatusCode::FORBIDDEN;
            response
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    pki: Pki,
    location: KubeletLocation,
    lines: mpsc::Sender<Bytes>,
}

/// A stand-in kubelet serving on loopback with a certificate from a fresh CA.
async fn start() -> anyhow::Result<Fixture> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(
        dir.path(),
        &Sans {
            dns: vec!["localhost".to_string()],
            ips: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        },
    )?;
    let tls = kyb_pki::tls::server_config(pki.serving(), pki.ca_pem())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let (sender, receiver) = mpsc::channel(4);
    let lines: Lines = Arc::new(Mutex::new(Some(receiver)));
    let service = tower::service_fn(move |request: Request<Body>| {
        let response = kubelet(request, &lines);
        async move { Ok::<_, Infallible>(response) }
    });
    tokio::spawn(async move { kyb_serving::tls::serve(&listener, tls, service).await });
    Ok(Fixture {
        _dir: dir,
        pki,
        location: KubeletLocation {
            node_name: "n1".to_string(),
            host: "127.0.0.1".to_string(),
            port,
            insecure_skip_tls_verify: false,
        },
        lines: sender,
    })
}

fn get(path: &str) -> Request<Body> {
    let mut request = Request::new(Body::empty());
    *request.uri_mut() = path.parse().unwrap_or_default();
    request
}

async fn text(response: Response<hyper::body::Incoming>) -> anyhow::Result<String> {
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8(bytes.to_vec())?)
}

#[tokio::test]
async fn requests_carry_the_client_certificate_and_verify_the_kubelet() -> anyhow::Result<()> {
    let fixture = start().await?;
    let identity = fixture.pki.client(
        "apiserver-kubelet-client",
        "kube-apiserver-kubelet-client",
        &[],
    )?;
    let verified = KubeletClient::new(&KubeletClientConfig {
        client_certificate: Some(identity.clone()),
        certificate_authority: Some(fixture.pki.ca_pem().to_string()),
        ..KubeletClientConfig::default()
    })?;
    let response = verified
        .send(&fixture.location, get("/whoami?follow=true&tailLines=3"))
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let port = fixture.location.port;
    assert_eq!(
        text(response).await?,
        format!("kube-apiserver-kubelet-client 127.0.0.1:{port} follow=true&tailLines=3")
    );

    // A kubelet whose certificate another CA issued is refused...
    let other = tempfile::tempdir()?;
    let other_ca = Pki::load_or_create(
        other.path(),
        &Sans {
            dns: vec![],
            ips: vec![],
        },
    )?;
    let strict = KubeletClient::new(&KubeletClientConfig {
        client_certificate: Some(identity.clone()),
        certificate_authority: Some(other_ca.ca_pem().to_string()),
        ..KubeletClientConfig::default()
    })?;
    let error = strict
        .send(&fixture.location, get("/whoami"))
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an unknown issuer was accepted"))?;
    assert_eq!(error.code, 500);
    assert!(
        error
            .message
            .starts_with(&format!("Get \"https://127.0.0.1:{port}/whoami\": tls: ")),
        "{}",
        error.message
    );
    // ...unless the request skips verification (insecureSkipTLSVerifyBackend), or no CA
    // was configured at all; without a certificate the client is anonymous.
    let skip = KubeletLocation {
        insecure_skip_tls_verify: true,
        ..fixture.location.clone()
    };
    assert!(strict.send(&skip, get("/whoami")).await.is_ok());
    let unverified = KubeletClient::new(&KubeletClientConfig::default())?;
    let response = unverified.send(&fixture.location, get("/whoami")).await?;
    assert!(text(response).await?.starts_with("anonymous "));
    Ok(())
}

#[tokio::test]
async fn response_bodies_arrive_as_the_kubelet_sends_them() -> anyhow::Result<()> {
    let fixture = start().await?;
    let client = KubeletClient::new(&KubeletClientConfig::default())?;
    let response = client.send(&fixture.location, get("/lines")).await?;
    let mut body = response.into_body();
    for line in ["one\n", "two\n"] {
        fixture.lines.send(Bytes::from(line)).await?;
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await?
            .ok_or_else(|| anyhow::anyhow!("the body ended early"))??;
        assert_eq!(frame.into_data().ok(), Some(Bytes::from(line)));
    }
    drop(fixture.lines);
    let end = tokio::time::timeout(Duration::from_secs(10), body.frame()).await?;
    assert!(end.is_none(), "the body did not end with the kubelet's");
    Ok(())
}

#[tokio::test]
async fn upgrades_hand_back_the_connection_and_refusals_the_kubelet_s_answer() -> anyhow::Result<()>
{
    let fixture = start().await?;
    let client = KubeletClient::new(&KubeletClientConfig::default())?;
    let upgrade = |path: &str| {
        let mut request = get(path);
        request.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("Upgrade"),
        );
        request.headers_mut().insert(
            http::header::UPGRADE,
            http::HeaderValue::from_static("SPDY/3.1"),
        );
        request
    };
    let (response, upgraded) = client
        .upgrade(&fixture.location, upgrade("/upgrade"))
        .await?;
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(
        response.headers()["X-Stream-Protocol-Version"],
        "v4.channel.k8s.io"
    );
    let mut io = hyper_util::rt::TokioIo::new(upgraded);
    io.write_all(b"ping").await?;
    let mut echoed = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), io.read_exact(&mut echoed)).await??;
    assert_eq!(&echoed, b"ping");

    let refused = client
        .upgrade(&fixture.location, upgrade("/exec/default/p/c"))
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a 403 was taken for an upgrade"))?;
    assert_eq!(refused.code, 403);
    assert_eq!(refused.reason, "Forbidden");
    assert_eq!(
        refused.message,
        "Forbidden (user=anonymous, verb=create, resource=nodes, subresource(s)=[proxy])"
    );
    Ok(())
}

#[tokio::test]
async fn a_kubelet_that_does_not_answer_is_go_s_dial_error() -> anyhow::Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    drop(listener);
    let client = KubeletClient::new(&KubeletClientConfig::default())?;
    let location = KubeletLocation {
        node_name: "n1".to_string(),
        host: "127.0.0.1".to_string(),
        port,
        insecure_skip_tls_verify: false,
    };
    let error = client
        .send(&location, get("/healthz"))
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a closed port answered"))?;
    assert_eq!(
        error.message,
        format!(
            "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    Ok(())
}

#[test]
fn locations_bracket_ipv6_addresses() {
    let location = KubeletLocation {
        node_name: "n1".to_string(),
        host: "fd00::1".to_string(),
        port: 10250,
        insecure_skip_tls_verify: false,
    };
    assert_eq!(location.authority(), "[fd00::1]:10250");
    assert_eq!(
        location.url("/stats/summary"),
        "https://[fd00::1]:10250/stats/summary"
    );
}
