//! The HTTP/1.1 client of httpGet probes and hooks, as kubelet's: one connection per
//! request (no keep-alive), HTTPS without certificate verification, `User-Agent:
//! kube-probe/1.33` (or `kube-lifecycle/1.33`) and `Accept: */*` unless the action sets
//! them, redirects followed only to the same host (at most 10), the body read up to
//! 10 KiB, and errors worded as Go's client words them (`Get "http://…": dial tcp …`).

use super::handlers::{dial, join_host_port, resolve_container_port};
use super::{KUBE_VERSION, Outcome};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Container, HTTPGetAction};
use rustls::pki_types::ServerName;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// How much of a response body is read (kubelet's `maxRespBodyLength`).
const MAX_BODY: usize = 10 * 1024;
/// How many redirects are followed (Go's default).
const MAX_REDIRECTS: usize = 10;

/// A GET request: where it goes and its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub scheme: Scheme,
    /// The host to connect to (an IP or a name), without brackets.
    pub host: String,
    pub port: u16,
    /// The path and query, as given (may be empty).
    pub path: String,
    /// Header names and values in order; names compared case-insensitively.
    pub headers: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A response: its status and up to 10 KiB of its body.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why a request got no response, worded as Go's client (`Get "<url>": <cause>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub message: String,
    /// An HTTPS request was answered in plain HTTP (hooks then retry over HTTP).
    pub http_response_to_https: bool,
}

impl Request {
    /// The request of an httpGet action: host defaulting to `pod_ip`, port resolved
    /// against the container's ports, headers from `httpHeaders` plus `User-Agent:
    /// kube-<agent>/1.33` and `Accept: */*` unless given (an empty `Accept` removes it).
    pub fn for_action(
        action: &HTTPGetAction,
        container: &Container,
        pod_ip: Option<IpAddr>,
        agent: &str,
    ) -> Result<Request, String> {
        let scheme = match action.scheme.as_deref().map(str::to_ascii_lowercase) {
            None => Scheme::Http,
            Some(s) if s.is_empty() || s == "http" => Scheme::Http,
            Some(s) if s == "https" => Scheme::Https,
            Some(s) => return Err(format!("unsupported protocol scheme {s:?}")),
        };
        let host = match action.host.as_deref().filter(|h| !h.is_empty()) {
            Some(host) => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            None => match pod_ip {
                Some(ip) => ip.to_string(),
                None => return Err(super::handlers::NO_POD_IP.to_owned()),
            },
        };
        let port = resolve_container_port(&action.port, container)?;
        let mut headers: Vec<(String, String)> = action
            .http_headers
            .iter()
            .flatten()
            .map(|h| (h.name.clone(), h.value.clone()))
            .collect();
        let has = |headers: &[(String, String)], name: &str| {
            headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if !has(&headers, "user-agent") {
            headers.push(("User-Agent".into(), format!("kube-{agent}/{KUBE_VERSION}")));
        }
        let accept_empty = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("accept"))
            .map(|(_, v)| v.is_empty());
        match accept_empty {
            None => headers.push(("Accept".into(), "*/*".into())),
            Some(true) => headers.retain(|(n, _)| !n.eq_ignore_ascii_case("accept")),
            Some(false) => {}
        }
        let mut path = action.path.clone().unwrap_or_default();
        if !path.is_empty() && !path.starts_with('/') {
            path.insert(0, '/');
        }
        Ok(Request {
            scheme,
            host,
            port,
            path,
            headers,
        })
    }

    /// The URL as Go prints it in errors: `http://10.0.0.1:80/healthz`.
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}",
            self.scheme.as_str(),
            join_host_port(&self.host, self.port),
            self.path
        )
    }
}

/// An httpGet probe: 200–399 is success (a redirect to another host, not followed, is
/// success with the warning `Probe terminated redirects, Response body: …`), any other
/// status the failure `HTTP probe failed with statuscode: <code>`, no response the
/// failure `Get "<url>": <cause>`.
pub(crate) async fn probe(request: &Request, timeout: Duration) -> Outcome {
    match get(request, timeout).await {
        Ok(response) if (200..300).contains(&response.status) => Outcome::Success,
        Ok(response) if (300..400).contains(&response.status) => Outcome::Warning(format!(
            "Probe terminated redirects, Response body: {}",
            String::from_utf8_lossy(&response.body)
        )),
        Ok(response) => Outcome::Failure(format!(
            "HTTP probe failed with statuscode: {}",
            response.status
        )),
        Err(err) => Outcome::Failure(err.message),
    }
}

/// Sends `request`, following redirects to the same host, all within `timeout`.
pub(crate) async fn get(request: &Request, timeout: Duration) -> Result<Response, Error> {
    let mut current = request.clone();
    let exchange = async {
        let mut redirects = 0;
        loop {
            let (response, location) = send(&current).await?;
            let Some(location) = location else {
                return Ok(response);
            };
            let Some(next) = redirect(&current, &location) else {
                return Ok(response);
            };
            // Only redirects to the same host are followed (kubelet's RedirectChecker).
            if !next.host.eq_ignore_ascii_case(&request.host) {
                return Ok(response);
            }
            if redirects >= MAX_REDIRECTS {
                return Err(Error {
                    message: format!("Get {:?}: stopped after 10 redirects", next.url()),
                    http_response_to_https: false,
                });
            }
            redirects += 1;
            current = next;
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Error {
            message: format!(
                "Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                request.url()
            ),
            http_response_to_https: false,
        }),
    }
}

/// One exchange on a new connection: the response, and its `Location` when it is a
/// redirect Go follows (301, 302, 303, 307, 308).
async fn send(request: &Request) -> Result<(Response, Option<String>), Error> {
    let url = request.url();
    let fail = |cause: String| Error {
        message: format!("Get {url:?}: {cause}"),
        http_response_to_https: false,
    };
    // The dial has no deadline of its own: the whole exchange is bounded by the caller.
    let stream = dial(&request.host, request.port, Duration::from_secs(24 * 3600))
        .await
        .map_err(fail)?;
    match request.scheme {
        Scheme::Http => exchange(stream, request).await.map_err(fail),
        Scheme::Https => {
            let name = match request.host.parse::<IpAddr>() {
                Ok(ip) => ServerName::IpAddress(ip.into()),
                Err(_) => ServerName::try_from(request.host.clone())
                    .map_err(|err| fail(format!("tls: {err}")))?,
            };
            let connector = tokio_rustls::TlsConnector::from(
                insecure_tls().map_err(|e| fail(format!("tls: {e}")))?,
            );
            match connector.connect(name, stream).await {
                Ok(tls) => exchange(tls, request).await.map_err(fail),
                Err(err) => {
                    let plain_http = err
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                        .is_some_and(|inner| {
                            matches!(
                                inner,
                                rustls::Error::InvalidMessage(
                                    rustls::InvalidMessage::InvalidContentType
                                )
                            )
                        });
                    if plain_http {
                        Err(Error {
                            message: format!(
                                "Get {url:?}: http: server gave HTTP response to HTTPS client"
                            ),
                            http_response_to_https: true,
                        })
                    } else {
                        Err(fail(format!("tls: {err}")))
                    }
                }
            }
        }
    }
}

/// Sends `request` over `stream` with HTTP/1.1 and reads the response.
async fn exchange<S>(stream: S, request: &Request) -> Result<(Response, Option<String>), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| err.to_string())?;
    let driver = tokio::spawn(connection);
    let _abort = AbortOnDrop(driver);

    let target = if request.path.is_empty() {
        "/"
    } else {
        &request.path
    };
    let mut builder = hyper::Request::get(target);
    let host_header = request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| join_host_port(&request.host, request.port));
    builder = builder.header(hyper::header::HOST, host_header);
    for (name, value) in &request.headers {
        if name.eq_ignore_ascii_case("host") {
            continue;
        }
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder = builder.header(hyper::header::CONNECTION, "close");
    let http_request = builder
        .body(Empty::<Bytes>::new())
        .map_err(|err| format!("net/http: invalid header: {err}"))?;
    let response = sender.send_request(http_request).await.map_err(|err| {
        // Go's client says EOF when the server closes without answering.
        if err.is_incomplete_message() {
            "EOF".to_owned()
        } else {
            err.to_string()
        }
    })?;
    let status = response.status().as_u16();
    let location = match status {
        301 | 302 | 303 | 307 | 308 => response
            .headers()
            .get(hyper::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        _ => None,
    };
    let mut body = response.into_body();
    let mut data = Vec::new();
    while data.len() < MAX_BODY {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(chunk) = frame.into_data() {
                    data.extend_from_slice(&chunk);
                }
            }
            // A body cut short still carries the status.
            Some(Err(_)) | None => break,
        }
    }
    data.truncate(MAX_BODY);
    Ok((Response { status, body: data }, location))
}

/// Aborts the connection task when the exchange ends.
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The request a redirect to `location` makes from `current` (absolute, scheme-relative,
/// absolute-path or relative-path references); `None` when it cannot be understood.
fn redirect(current: &Request, location: &str) -> Option<Request> {
    let mut next = current.clone();
    let rest = if let Some(rest) = location.strip_prefix("http://") {
        next.scheme = Scheme::Http;
        Some(rest)
    } else if let Some(rest) = location.strip_prefix("https://") {
        next.scheme = Scheme::Https;
        Some(rest)
    } else {
        location.strip_prefix("//")
    };
    match rest {
        Some(rest) => {
            let (authority, path) = match rest.find(['/', '?']) {
                Some(at) => (&rest[..at], &rest[at..]),
                None => (rest, ""),
            };
            let (host, port) = split_authority(authority, next.scheme)?;
            next.host = host;
            next.port = port;
            next.path = path.to_owned();
        }
        None if location.starts_with('/') => next.path = location.to_owned(),
        None => {
            let base = current.path.split('?').next().unwrap_or_default();
            let dir = match base.rfind('/') {
                Some(at) => &base[..=at],
                None => "/",
            };
            next.path = format!("{dir}{location}");
        }
    }
    // Go drops the Host header override when the redirect goes elsewhere; same-host
    // redirects keep the request's headers.
    Some(next)
}

/// `host[:port]` or `[v6][:port]`, the port defaulting to the scheme's.
fn split_authority(authority: &str, scheme: Scheme) -> Option<(String, u16)> {
    let default = match scheme {
        Scheme::Http => 80,
        Scheme::Https => 443,
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, rest) = v6.split_once(']')?;
        let port = match rest.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default,
        };
        return Some((host.to_owned(), port));
    }
    match authority.split_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok()?)),
        None => Some((authority.to_owned(), default)),
    }
}

/// TLS that accepts any server certificate (kubelet's `InsecureSkipVerify`), still
/// checking the handshake's signatures.
fn insecure_tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| kyb_pki::tls::insecure_client_config(None).map_err(|e| e.to_string()))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::HTTPHeader;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn request(path: &str) -> Request {
        Request {
            scheme: Scheme::Http,
            host: "10.0.0.1".into(),
            port: 8080,
            path: path.into(),
            headers: vec![],
        }
    }

    #[test]
    fn requests_from_actions() {
        let action = HTTPGetAction {
            path: Some("healthz?x=1".into()),
            port: IntOrString::Int(8080),
            scheme: Some("HTTPS".into()),
            http_headers: Some(vec![
                HTTPHeader {
                    name: "X-Custom".into(),
                    value: "a".into(),
                },
                HTTPHeader {
                    name: "accept".into(),
                    value: String::new(),
                },
            ]),
            ..Default::default()
        };
        let ip = "10.0.0.1".parse().ok();
        let req = Request::for_action(&action, &Container::default(), ip, "probe");
        let req = req.unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(req.url(), "https://10.0.0.1:8080/healthz?x=1");
        assert_eq!(
            req.headers,
            vec![
                ("X-Custom".to_owned(), "a".to_owned()),
                ("User-Agent".to_owned(), "kube-probe/1.33".to_owned()),
            ]
        );
        let v6 = Request::for_action(
            &HTTPGetAction {
                port: IntOrString::Int(80),
                ..Default::default()
            },
            &Container::default(),
            "fd00::1".parse().ok(),
            "lifecycle",
        )
        .unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(v6.url(), "http://[fd00::1]:80");
        assert!(
            v6.headers
                .contains(&("Accept".to_owned(), "*/*".to_owned()))
        );
        assert!(
            v6.headers
                .contains(&("User-Agent".to_owned(), "kube-lifecycle/1.33".to_owned()))
        );
    }

    #[test]
    fn redirect_targets() {
        let current = request("/a/b?q");
        let abs = redirect(&current, "https://other:9443/x").unwrap_or_else(|| panic!());
        assert_eq!(abs.url(), "https://other:9443/x");
        assert_eq!(
            redirect(&current, "/root").map(|r| r.url()),
            Some("http://10.0.0.1:8080/root".to_owned())
        );
        assert_eq!(
            redirect(&current, "c").map(|r| r.url()),
            Some("http://10.0.0.1:8080/a/c".to_owned())
        );
        assert_eq!(
            redirect(&current, "//10.0.0.1/p").map(|r| r.url()),
            Some("http://10.0.0.1:80/p".to_owned())
        );
    }
}
