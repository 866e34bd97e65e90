//! The reverse proxy of the proxy subresources, as Kubernetes' `UpgradeAwareHandler`:
//! the request forwarded with its method, query and streamed body to `path` on the
//! backend; hop-by-hop headers and the caller's credentials (`Authorization`,
//! `Impersonate-*`, which the API server consumed) dropped, `X-Forwarded-For` added; the
//! response streamed back; an upgrade (`Connection: Upgrade`) the backend accepts turned
//! into a byte pipe between the two connections. A root path (`…/proxy`) is redirected to
//! `…/proxy/` for GET and HEAD, as Kubernetes does; redirects and CORS headers as
//! `rewrite` says.

use super::backend::Backend;
use super::rewrite;
use super::stream::relay;
use crate::response::{self, Response};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kyb_api::Status;
use kyb_serving::Body;
use kyb_serving::tls::Connection;

/// The hop-by-hop headers Go's reverse proxy drops (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Forwards `request`, which came through the proxy at `prefix`, to `path` on `backend`.
pub async fn forward(
    backend: Backend,
    request: Request<Body>,
    prefix: String,
    path: String,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let client_upgrade = parts.extensions.remove::<OnUpgrade>();
    let upgrade = upgrade_protocol(&parts.headers);
    let query = parts.uri.query().map(str::to_string);
    if path.is_empty() && upgrade.is_none() && matches!(parts.method, Method::GET | Method::HEAD) {
        let location = match &query {
            Some(query) => format!("{}/?{query}", parts.uri.path()),
            None => format!("{}/", parts.uri.path()),
        };
        return redirect(&location);
    }
    let backend_path = if path.is_empty() { "/" } else { &path };
    let target = match &query {
        Some(query) => format!("{backend_path}?{query}"),
        None => backend_path.to_string(),
    };
    let forwarded_uri = rewrite::forwarded_uri(&prefix, backend_path);
    let request_host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or_default()
        .to_string();
    parts.uri = match target.parse() {
        Ok(uri) => uri,
        Err(error) => {
            return response::error(&Status::bad_request(format!(
                "invalid proxy path {target:?}: {error}"
            )));
        }
    };
    let peer = parts.extensions.get::<Connection>().and_then(|c| c.peer);
    parts.extensions = http::Extensions::new();
    outgoing_headers(&mut parts.headers, upgrade.as_ref(), peer);
    if let Ok(value) = HeaderValue::from_str(&forwarded_uri) {
        parts.headers.insert("x-forwarded-uri", value);
    }

    let mut answer = match backend.round_trip(Request::from_parts(parts, body)).await {
        Ok(answer) => answer,
        Err(why) => return response::error(&Status::new(500, "", why)),
    };
    if answer.status() == StatusCode::SWITCHING_PROTOCOLS {
        let Some(client_upgrade) = client_upgrade.filter(|_| upgrade.is_some()) else {
            return response::error(&Status::internal(
                "the backend switched protocols on a request that did not ask to",
            ));
        };
        let backend_upgrade = hyper::upgrade::on(&mut answer);
        tokio::spawn(async move {
            match tokio::try_join!(client_upgrade, backend_upgrade) {
                Ok((client, backend)) => {
                    let mut client = TokioIo::new(client);
                    let mut backend = TokioIo::new(backend);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut backend).await;
                }
                Err(error) => tracing::debug!(%error, "proxied upgrade failed"),
            }
        });
        let (parts, _) = answer.into_parts();
        return http::Response::from_parts(parts, response::Body::Full(None));
    }
    let (mut parts, body) = answer.into_parts();
    remove_hop_by_hop(&mut parts.headers);
    rewrite::response_headers(
        &mut parts.headers,
        &backend.authority(),
        &request_host,
        &prefix,
    );
    http::Response::from_parts(parts, relay(body, None))
}

/// `Upgrade`'s value when the request asks for one (`Connection: Upgrade`).
fn upgrade_protocol(headers: &HeaderMap) -> Option<HeaderValue> {
    let asks = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    asks.then(|| headers.get(header::UPGRADE).cloned())
        .flatten()
}

/// The forwarded request's headers: hop-by-hop ones and the caller's credentials
/// dropped, the upgrade asked for again, the caller's address appended to
/// `X-Forwarded-For`.
fn outgoing_headers(
    headers: &mut HeaderMap,
    upgrade: Option<&HeaderValue>,
    peer: Option<std::net::IpAddr>,
) {
    remove_hop_by_hop(headers);
    headers.remove(header::AUTHORIZATION);
    let impersonation: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for name in impersonation {
        headers.remove(name);
    }
    if let Some(protocol) = upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        headers.insert(header::UPGRADE, protocol.clone());
    }
    if let Some(peer) = peer {
        let forwarded = match headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
            Some(prior) => format!("{prior}, {peer}"),
            None => peer.to_string(),
        };
        if let Ok(value) = HeaderValue::from_str(&forwarded) {
            headers.insert("x-forwarded-for", value);
        }
    }
}

/// Drops the hop-by-hop headers and those `Connection` names.
fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(name);
    }
}

fn redirect(location: &str) -> Response {
    let mut answer = http::Response::new(response::Body::Full(None));
    *answer.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = HeaderValue::from_str(location) {
        answer.headers_mut().insert(header::LOCATION, value);
    }
    answer
}

#[cfg(test)]
#[path = "forward_tests.rs"]
mod server_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn hop_by_hop_headers_and_credentials_are_not_forwarded() {
        let mut map = headers(&[
            ("connection", "keep-alive, X-Private"),
            ("keep-alive", "timeout=5"),
            ("x-private", "1"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("authorization", "Bearer secret"),
            ("impersonate-user", "bob"),
            ("impersonate-extra-scopes", "x"),
            ("accept", "text/html"),
            ("x-forwarded-for", "192.0.2.1"),
        ]);
        outgoing_headers(
            &mut map,
            None,
            Some(
                "10.0.0.9"
                    .parse()
                    .unwrap_or(std::net::Ipv4Addr::LOCALHOST.into()),
            ),
        );
        let mut names: Vec<&str> = map.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["accept", "x-forwarded-for"]);
        assert_eq!(map["x-forwarded-for"], "192.0.2.1, 10.0.0.9");
    }

    #[test]
    fn an_upgrade_is_asked_for_again() {
        let mut map = headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-key", "abc"),
        ]);
        let upgrade = upgrade_protocol(&map);
        assert_eq!(upgrade, Some(HeaderValue::from_static("websocket")));
        outgoing_headers(&mut map, upgrade.as_ref(), None);
        assert_eq!(map["connection"], "Upgrade");
        assert_eq!(map["upgrade"], "websocket");
        assert_eq!(map["sec-websocket-key"], "abc");
        assert_eq!(
            upgrade_protocol(&headers(&[("upgrade", "websocket")])),
            None
        );
    }
}
