//! `/exec`, `/attach` and `/portForward`: the pod and container found (kubelet's errors when
//! they are not), a streaming URL asked of the runtime (CRI `Exec`, `Attach`,
//! `PortForward`; containerd's streaming server on 127.0.0.1), and the client's request
//! proxied to it — method, the upgrade headers, `X-Stream-Protocol-Version`,
//! `Sec-WebSocket-*` — with the two upgraded connections piped both ways once the runtime
//! answers `101 Switching Protocols` (its headers passed back). SPDY and WebSocket clients
//! alike: the runtime negotiates. Nothing is buffered beyond the copy buffers.

use super::Host;
use super::body::{self, Body, Response};
use crate::pods::runtime::{self, State};
use bytes::Bytes;
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use k8s_cri::v1 as cri;
use kyb_serving::Query;

/// Which streaming call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exec,
    Attach,
    PortForward,
}

/// What `/exec` and `/attach` ask for (remotecommand's `NewOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamOptions {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    pub command: Vec<String>,
}

fn flag(query: &Query, key: &str) -> bool {
    matches!(query.get(key), Some("1" | "true" | "True" | "TRUE"))
}

impl StreamOptions {
    /// The options of a request, with remotecommand's refusal when no stream is asked
    /// for; stderr is dropped with a TTY (it is merged into stdout).
    pub fn from_query(query: &Query) -> Result<StreamOptions, String> {
        let tty = flag(query, "tty");
        let options = StreamOptions {
            stdin: flag(query, "input") || flag(query, "stdin"),
            stdout: flag(query, "output") || flag(query, "stdout"),
            stderr: !tty && (flag(query, "error") || flag(query, "stderr")),
            tty,
            command: query.all("command").to_vec(),
        };
        if !options.stdin && !options.stdout && !options.stderr {
            return Err("you must specify at least 1 of stdin, stdout, stderr".to_string());
        }
        Ok(options)
    }
}

/// A `/exec/{ns}/{pod}[/{uid}]/{container}`, `/attach/…` or `/portForward/{ns}/{pod}[/{uid}]`
/// request, its path's segments after the first given.
pub async fn serve(
    host: &Host,
    kind: Kind,
    segments: &[String],
    request: Request<kyb_serving::Body>,
) -> Response {
    let query = Query::parse(request.uri().query());
    let (namespace, pod_name, uid, container) = match (kind, segments) {
        (Kind::PortForward, [ns, pod]) => (ns, pod, None, None),
        (Kind::PortForward, [ns, pod, uid]) => (ns, pod, Some(uid), None),
        (Kind::Exec | Kind::Attach, [ns, pod, container]) => (ns, pod, None, Some(container)),
        (Kind::Exec | Kind::Attach, [ns, pod, uid, container]) => {
            (ns, pod, Some(uid), Some(container))
        }
        _ => return body::not_found(),
    };
    let options = match kind {
        Kind::PortForward => None,
        _ => match StreamOptions::from_query(&query) {
            Ok(options) => Some(options),
            Err(message) => return body::error(StatusCode::BAD_REQUEST, message),
        },
    };
    let Some(pod) = host.shared.pods.get(namespace, pod_name) else {
        return body::error(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    if uid.is_some_and(|uid| *uid != pod_uid) {
        return body::error(StatusCode::NOT_FOUND, "pod not found");
    }
    let observed = match runtime::observe(&host.shared.cri, &pod_uid, &mut Default::default()).await
    {
        Ok(observed) => observed,
        Err(error) => {
            return body::error(StatusCode::INTERNAL_SERVER_ERROR, format!("{error:#}"));
        }
    };
    let url = match (kind, options, container) {
        (Kind::PortForward, _, _) => {
            let Some(sandbox) = observed.sandbox().filter(|s| s.ready) else {
                return body::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("pod {pod_name:?} has no running sandbox"),
                );
            };
            let ports = query
                .all("port")
                .iter()
                .filter_map(|p| p.parse::<i32>().ok())
                .collect();
            host.shared
                .cri
                .runtime
                .clone()
                .port_forward(cri::PortForwardRequest {
                    pod_sandbox_id: sandbox.id.clone(),
                    port: ports,
                })
                .await
                .map(|r| r.into_inner().url)
        }
        (kind, Some(options), Some(container)) => {
            let Some(instance) = observed
                .instances
                .iter()
                .find(|i| i.name == **container && i.state == State::Running)
            else {
                return body::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("container not found ({container:?})"),
                );
            };
            let mut runtime = host.shared.cri.runtime.clone();
            if kind == Kind::Exec {
                runtime
                    .exec(cri::ExecRequest {
                        container_id: instance.id.clone(),
                        cmd: options.command,
                        tty: options.tty,
                        stdin: options.stdin,
                        stdout: options.stdout,
                        stderr: options.stderr,
                    })
                    .await
                    .map(|r| r.into_inner().url)
            } else {
                runtime
                    .attach(cri::AttachRequest {
                        container_id: instance.id.clone(),
                        stdin: options.stdin,
                        tty: options.tty,
                        stdout: options.stdout,
                        stderr: options.stderr,
                    })
                    .await
                    .map(|r| r.into_inner().url)
            }
        }
        _ => return body::not_found(),
    };
    match url {
        Ok(url) => proxy(request, &url).await,
        Err(status) => {
            let code = match status.code() {
                tonic::Code::NotFound => StatusCode::NOT_FOUND,
                tonic::Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
                tonic::Code::InvalidArgument => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            body::text(code, status.message().to_string())
        }
    }
}

/// Headers not passed on to the runtime: the connection's own and the client's
/// credentials, which are for this server only.
fn passed_on(name: &header::HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "host"
            | "authorization"
            | "proxy-authorization"
            | "content-length"
            | "transfer-encoding"
            | "keep-alive"
            | "te"
            | "trailer"
    )
}

/// Sends the client's request to the runtime's streaming URL and, on `101`, pipes the two
/// upgraded connections together; any other answer is passed back as it is.
pub async fn proxy(mut request: Request<kyb_serving::Body>, url: &str) -> Response {
    let failed = |message: String| {
        tracing::warn!(url, message, "proxying a stream to the runtime");
        body::error(StatusCode::BAD_GATEWAY, message)
    };
    let uri: http::Uri = match url.parse() {
        Ok(uri) => uri,
        Err(error) => return failed(format!("the runtime's streaming URL {url:?}: {error}")),
    };
    let (Some(authority), Some("http")) = (uri.authority().cloned(), uri.scheme_str()) else {
        return failed(format!(
            "the runtime's streaming URL {url:?} is not http://host:port/…"
        ));
    };
    let address = format!(
        "{}:{}",
        authority.host(),
        authority.port_u16().unwrap_or(80)
    );
    let stream = match tokio::net::TcpStream::connect(&address).await {
        Ok(stream) => stream,
        Err(error) => {
            return failed(format!(
                "connecting to the runtime's streaming server {address}: {error}"
            ));
        }
    };
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(error) => return failed(format!("the runtime's streaming server: {error}")),
        };
    tokio::spawn(async move {
        if let Err(error) = connection.with_upgrades().await {
            tracing::debug!(%error, "the runtime's streaming connection");
        }
    });
    let path = uri
        .path_and_query()
        .map_or_else(|| "/".to_string(), |p| p.as_str().to_string());
    let mut outgoing = Request::builder()
        .method(request.method().clone())
        .uri(path);
    if let Some(headers) = outgoing.headers_mut() {
        for (name, value) in request.headers() {
            if passed_on(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
            headers.insert(header::HOST, host);
        }
    }
    let outgoing = match outgoing.body(http_body_util::Empty::<Bytes>::new()) {
        Ok(outgoing) => outgoing,
        Err(error) => return failed(format!("building the runtime's request: {error}")),
    };
    let mut response = match sender.send_request(outgoing).await {
        Ok(response) => response,
        Err(error) => return failed(format!("the runtime's streaming server: {error}")),
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // An error from the runtime (small): passed back whole.
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = match http_body_util::Limited::new(response.into_body(), 1 << 20)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(error) => Bytes::from(format!("reading the runtime's answer: {error}")),
        };
        let mut answer = http::Response::new(Body::from(bytes));
        *answer.status_mut() = status;
        if let Some(content_type) = headers.get(header::CONTENT_TYPE) {
            answer
                .headers_mut()
                .insert(header::CONTENT_TYPE, content_type.clone());
        }
        return answer;
    }
    let mut answer = http::Response::new(Body::empty());
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *answer.headers_mut() = response.headers().clone();
    let backend = hyper::upgrade::on(&mut response);
    let client = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let (client, backend) = match tokio::try_join!(client, backend) {
            Ok(pair) => pair,
            Err(error) => {
                tracing::debug!(%error, "upgrading a stream");
                return;
            }
        };
        let mut client = TokioIo::new(client);
        let mut backend = TokioIo::new(backend);
        if let Err(error) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
            tracing::debug!(%error, "a proxied stream ended");
        }
    });
    answer
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn stream_options_follow_remotecommand() {
        let query = Query::parse(Some(
            "command=sh&command=-c&command=echo%20hi&stdout=1&stderr=1&tty=1",
        ));
        let options = StreamOptions::from_query(&query).unwrap();
        assert_eq!(
            options,
            StreamOptions {
                stdin: false,
                stdout: true,
                stderr: false,
                tty: true,
                command: vec!["sh".into(), "-c".into(), "echo hi".into()],
            }
        );
        assert_eq!(
            StreamOptions::from_query(&Query::parse(Some("command=ls"))).unwrap_err(),
            "you must specify at least 1 of stdin, stdout, stderr"
        );
        assert!(
            StreamOptions::from_query(&Query::parse(Some("input=1")))
                .unwrap()
                .stdin
        );
    }

    #[test]
    fn credentials_are_not_passed_on() {
        assert!(!passed_on(&header::AUTHORIZATION));
        assert!(!passed_on(&header::HOST));
        assert!(passed_on(&header::UPGRADE));
        assert!(passed_on(&header::CONNECTION));
        assert!(passed_on(&header::HeaderName::from_static(
            "x-stream-protocol-version"
        )));
        assert!(passed_on(&header::SEC_WEBSOCKET_PROTOCOL));
    }
}
