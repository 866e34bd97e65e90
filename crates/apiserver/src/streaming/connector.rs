//! The connect handler of `pods/exec`, `pods/attach` and `pods/portforward`: the
//! client's protocol read from its upgrade headers, the synthetic `create` check a
//! WebSocket `GET` needs, the options and the pod checked, then the kubelet's SPDY upgrade
//! and, by the client's protocol:
//!
//! - SPDY: the kubelet's 101 (with its negotiated `X-Stream-Protocol-Version`) answered,
//!   and the bytes piped both ways untouched;
//! - WebSocket `v5.channel.k8s.io`/`v4.channel.k8s.io` (exec, attach): 101 at once, then
//!   the remotecommand translated to SPDY ([`kyb_streaming::translator`]); a kubelet that
//!   refuses is reported on the error channel as kube-apiserver's translator does;
//! - WebSocket `SPDY/3.1+portforward.k8s.io`: once the kubelet said 101, our 101 and the
//!   tunnel ([`kyb_streaming::tunnel`]).

use super::options::{Kind, StreamOptions};
use super::target::{self, Target};
use crate::auth::Attributes;
use crate::engine::Engine;
use crate::kubelet::{KubeletClient, KubeletLocation};
use crate::response::{self, Response};
use crate::router::Connect;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use kyb_api::Status;
use kyb_serving::{Body, Query, ResourceRequest, User, Verb};
use kyb_streaming::channel::{self, Version};
use kyb_streaming::remotecommand::{RemoteCommand, Streams};
use kyb_streaming::spdy::Session;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub const STREAM_PROTOCOL_VERSION: &str = "X-Stream-Protocol-Version";
const SPDY: &str = "SPDY/3.1";
/// The remotecommand version the translator speaks to the kubelet.
const TRANSLATED: &str = "v4.channel.k8s.io";

/// Serves one of the three subresources.
pub struct StreamConnector(pub Kind);

impl Connect for StreamConnector {
    fn connect(
        &self,
        engine: Arc<Engine>,
        user: Arc<User>,
        target: ResourceRequest,
        request: Request<Body>,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        let kind = self.0;
        Box::pin(async move {
            match serve(kind, engine, user, target, request).await {
                Ok(response) => response,
                Err(status) => response::error(&status),
            }
        })
    }
}

/// What the client asked to upgrade to.
#[derive(Debug, PartialEq, Eq)]
enum ClientProtocol {
    /// A WebSocket with the protocol we chose from its offer.
    WebSocket(&'static str),
    /// SPDY with the remotecommand or port-forward versions it offered.
    Spdy(Vec<String>),
}

async fn serve(
    kind: Kind,
    engine: Arc<Engine>,
    user: Arc<User>,
    resource: ResourceRequest,
    mut request: Request<Body>,
) -> Result<Response, Status> {
    if request.method() != Method::GET && request.method() != Method::POST {
        return Err(Status::method_not_supported());
    }
    let client = client_protocol(kind, request.headers())?;
    // A WebSocket upgrade is a GET, authorized as `get`; Kubernetes also requires
    // `create`, which the POST of SPDY was authorized with.
    if resource.verb != Verb::Create {
        let mut create = resource.clone();
        create.verb = Verb::Create;
        let attributes = Attributes::Resource {
            request: &create,
            field_selector: "",
        };
        engine.authorizer.authorize(&user, &attributes)?;
    }
    let options = StreamOptions::parse(kind, &Query::parse(request.uri().query()))?;
    let target = target::resolve(
        &engine,
        resource.namespace.as_deref().unwrap_or_default(),
        resource.name.as_deref().unwrap_or_default(),
        options.container.as_deref(),
        kind != Kind::PortForward,
    )?;
    let location = engine.kubelet.location(&engine, &target.node).await?;
    let path = kubelet_path(kind, &target, &options);
    let on_upgrade = hyper::upgrade::on(&mut request);
    let kubelet = engine.kubelet.clone();
    match client {
        ClientProtocol::Spdy(offered) => {
            let (answer, backend) = kubelet
                .upgrade(&location, upgrade_request(&path, &offered)?)
                .await?;
            let negotiated = answer.headers().get(STREAM_PROTOCOL_VERSION).cloned();
            tokio::spawn(async move {
                if let Ok(client) = on_upgrade.await {
                    let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
                }
            });
            let mut response = switching_protocols(SPDY);
            if let Some(negotiated) = negotiated {
                response
                    .headers_mut()
                    .insert(STREAM_PROTOCOL_VERSION, negotiated);
            }
            Ok(response)
        }
        ClientProtocol::WebSocket(protocol) if kind == Kind::PortForward => {
            let (_, backend) = kubelet
                .upgrade(&location, upgrade_request(&path, &[channel::PORT_FORWARD])?)
                .await?;
            let response = websocket_answer(request.headers(), protocol)?;
            tokio::spawn(async move {
                if let Ok(client) = on_upgrade.await {
                    kyb_streaming::tunnel::tunnel(TokioIo::new(client), TokioIo::new(backend))
                        .await;
                }
            });
            Ok(response)
        }
        ClientProtocol::WebSocket(protocol) => {
            let version = match protocol {
                channel::V5 => Version::V5,
                _ => Version::V4,
            };
            let response = websocket_answer(request.headers(), protocol)?;
            let backend_request = upgrade_request(&path, &[TRANSLATED])?;
            let streams = Streams {
                stdin: options.stdin,
                stdout: options.stdout,
                stderr: options.stderr,
                tty: options.tty,
            };
            tokio::spawn(async move {
                let Ok(client) = on_upgrade.await else {
                    return;
                };
                let client = TokioIo::new(client);
                match start(&kubelet, &location, backend_request, streams).await {
                    Ok(command) => {
                        kyb_streaming::translator::translate(client, version, command).await;
                    }
                    Err(status) => {
                        let status = internal_error(&format!(
                            "unable to upgrade connection: {}",
                            status.message
                        ));
                        kyb_streaming::translator::refuse(client, status.to_string().as_bytes())
                            .await;
                    }
                }
            });
            Ok(response)
        }
    }
}

/// Reads the client's protocol from its upgrade headers.
fn client_protocol(kind: Kind, headers: &HeaderMap) -> Result<ClientProtocol, Status> {
    if channel::is_websocket(headers) {
        let supported: &[&'static str] = match kind {
            Kind::PortForward => &[channel::PORT_FORWARD_TUNNEL],
            Kind::Exec | Kind::Attach => &channel::PROTOCOLS,
        };
        return match channel::negotiate(headers, supported) {
            Some(protocol) => Ok(ClientProtocol::WebSocket(protocol)),
            None => Err(Status::bad_request(format!(
                "requested protocol(s) are not supported: [{}]; supports [{}]",
                channel::offered(headers).join(" "),
                supported.join(" ")
            ))),
        };
    }
    let spdy = headers
        .get_all(header::UPGRADE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case(SPDY));
    if !spdy {
        return Err(Status::bad_request("Upgrade request required"));
    }
    let offered = headers
        .get_all(STREAM_PROTOCOL_VERSION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    Ok(ClientProtocol::Spdy(offered))
}

/// The kubelet's path and query: `/exec/{ns}/{pod}/{container}?…`, `/portForward/{ns}/{pod}`.
fn kubelet_path(kind: Kind, target: &Target, options: &StreamOptions) -> String {
    let mut path = format!(
        "/{}/{}/{}",
        kind.kubelet_path(),
        target.namespace,
        target.pod
    );
    if let Some(container) = &target.container {
        path.push('/');
        path.push_str(container);
    }
    let query = options.kubelet_query();
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query);
    }
    path
}

/// The SPDY upgrade request to the kubelet, offering `versions`.
fn upgrade_request(path: &str, versions: &[impl AsRef<str>]) -> Result<Request<Body>, Status> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, SPDY)
        .header(header::CONTENT_LENGTH, "0");
    for version in versions {
        request = request.header(STREAM_PROTOCOL_VERSION, version.as_ref());
    }
    request
        .body(Body::empty())
        .map_err(|e| Status::bad_request(format!("invalid kubelet request {path:?}: {e}")))
}

/// Opens the remotecommand streams on the kubelet.
async fn start(
    kubelet: &KubeletClient,
    location: &KubeletLocation,
    request: Request<Body>,
    streams: Streams,
) -> Result<RemoteCommand, Status> {
    let (answer, backend) = kubelet.upgrade(location, request).await?;
    let negotiated = answer
        .headers()
        .get(STREAM_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if negotiated != TRANSLATED {
        return Err(Status::internal(format!(
            "the kubelet negotiated {negotiated:?}, not {TRANSLATED}"
        )));
    }
    RemoteCommand::start(Session::client(TokioIo::new(backend)), streams)
        .await
        .map_err(|e| Status::internal(e.to_string()))
}

fn switching_protocols(upgrade: &'static str) -> Response {
    let mut response = http::Response::new(response::Body::Full(None));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static(upgrade));
    response
}

/// Our 101 to a WebSocket upgrade.
fn websocket_answer(headers: &HeaderMap, protocol: &str) -> Result<Response, Status> {
    let answer = channel::switching_protocols(headers, protocol)
        .ok_or_else(|| Status::bad_request("missing or invalid Sec-WebSocket-Key"))?;
    let (parts, ()) = answer.into_parts();
    Ok(http::Response::from_parts(
        parts,
        response::Body::Full(None),
    ))
}

/// kube-apiserver's `NewInternalError` as JSON.
fn internal_error(message: &str) -> serde_json::Value {
    let mut status = Status::internal(format!("Internal error occurred: {message}")).to_json();
    status["details"] = serde_json::json!({"causes": [{"message": message}]});
    status
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn the_clients_protocol_comes_from_its_upgrade() {
        let websocket = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-protocol", "v5.channel.k8s.io"),
        ]);
        assert_eq!(
            client_protocol(Kind::Exec, &websocket).unwrap(),
            ClientProtocol::WebSocket(channel::V5)
        );
        let error = client_protocol(Kind::PortForward, &websocket).unwrap_err();
        assert_eq!(error.code, 400);
        assert_eq!(
            error.message,
            "requested protocol(s) are not supported: [v5.channel.k8s.io]; supports [SPDY/3.1+portforward.k8s.io]"
        );
        let spdy = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("x-stream-protocol-version", "v5.channel.k8s.io"),
            ("x-stream-protocol-version", "v4.channel.k8s.io"),
        ]);
        assert_eq!(
            client_protocol(Kind::Exec, &spdy).unwrap(),
            ClientProtocol::Spdy(vec!["v5.channel.k8s.io".into(), "v4.channel.k8s.io".into()])
        );
        let plain = headers(&[]);
        assert_eq!(
            client_protocol(Kind::Attach, &plain).unwrap_err().message,
            "Upgrade request required"
        );
    }

    #[test]
    fn kubelet_paths_are_kubernetes_own() {
        let target = Target {
            namespace: "default".into(),
            pod: "web".into(),
            container: Some("app".into()),
            node: "n".into(),
        };
        let options = StreamOptions {
            command: vec!["ls".into()],
            stdout: true,
            ..StreamOptions::default()
        };
        assert_eq!(
            kubelet_path(Kind::Exec, &target, &options),
            "/exec/default/web/app?output=1&command=ls"
        );
        let target = Target {
            container: None,
            ..target
        };
        assert_eq!(
            kubelet_path(Kind::PortForward, &target, &StreamOptions::default()),
            "/portForward/default/web"
        );
    }
}
