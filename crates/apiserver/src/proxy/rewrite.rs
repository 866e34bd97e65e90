//! What Kubernetes' proxy transport changes in a proxied exchange (`proxyutil.Transport`
//! and `corsRemovingTransport`): `X-Forwarded-Uri` tells the backend the path the client
//! asked for; a redirect's `Location` on the backend (or an absolute path) is rewritten
//! to go through the proxy again; the backend's CORS headers are dropped. (HTML bodies'
//! links, which Kubernetes also rewrites, pass unchanged.)

use super::path::join_preserving_trailing_slash;
use http::header::{self, HeaderMap, HeaderValue};

/// The CORS headers a proxied response loses.
const CORS: [&str; 4] = [
    "access-control-allow-credentials",
    "access-control-allow-headers",
    "access-control-allow-methods",
    "access-control-allow-origin",
];

/// `X-Forwarded-Uri` for a request to `backend_path` through the proxy at `prefix`.
pub fn forwarded_uri(prefix: &str, backend_path: &str) -> String {
    join_preserving_trailing_slash(&format!("{prefix}/{backend_path}"))
}

/// The response's headers as the client gets them: `Location` through the proxy, no CORS.
pub fn response_headers(
    headers: &mut HeaderMap,
    backend_authority: &str,
    request_host: &str,
    prefix: &str,
) {
    for name in CORS {
        headers.remove(name);
    }
    let rewritten = headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|location| rewrite_location(location, backend_authority, request_host, prefix));
    if let Some(value) = rewritten.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, value);
    }
}

/// Kubernetes' `rewriteURL` of a redirect target: a URL on another host, or a relative
/// one, is left alone; one on the backend becomes a path under `prefix` (the scheme and
/// host kept only when they are the API server's own).
pub fn rewrite_location(
    location: &str,
    backend_authority: &str,
    request_host: &str,
    prefix: &str,
) -> String {
    let (origin, rest) = match location.split_once("://") {
        Some((scheme, after)) if !scheme.contains('/') => {
            let split = after.find(['/', '?', '#']).unwrap_or(after.len());
            let (host, rest) = after.split_at(split);
            (Some((scheme, host)), rest)
        }
        _ => (None, location),
    };
    let split = rest.find(['?', '#']).unwrap_or(rest.len());
    let (path, suffix) = rest.split_at(split);
    let host = origin.map_or("", |(_, host)| host);
    let different_host = !host.is_empty() && host != backend_authority && host != request_host;
    if different_host || !path.starts_with('/') {
        return location.to_string();
    }
    let origin = match origin {
        Some((scheme, host)) if host == request_host => format!("{scheme}://{host}"),
        _ => String::new(),
    };
    if path.starts_with(prefix) {
        return format!("{origin}{path}{suffix}");
    }
    let path = join_preserving_trailing_slash(&format!("{prefix}/{path}"));
    format!("{origin}{path}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = "/api/v1/namespaces/default/services/web/proxy";

    fn rewrite(location: &str) -> String {
        rewrite_location(location, "10.42.0.5:8080", "127.0.0.1:6443", PREFIX)
    }

    #[test]
    fn redirects_on_the_backend_go_through_the_proxy() {
        assert_eq!(
            rewrite("/login?next=%2F"),
            format!("{PREFIX}/login?next=%2F")
        );
        assert_eq!(
            rewrite("http://10.42.0.5:8080/a/b/"),
            format!("{PREFIX}/a/b/")
        );
        assert_eq!(
            rewrite("https://127.0.0.1:6443/x#top"),
            format!("https://127.0.0.1:6443{PREFIX}/x#top")
        );
        assert_eq!(
            rewrite(&format!("{PREFIX}/already")),
            format!("{PREFIX}/already")
        );
    }

    #[test]
    fn other_hosts_and_relative_paths_are_left_alone() {
        assert_eq!(rewrite("https://example.com/a"), "https://example.com/a");
        assert_eq!(rewrite("login"), "login");
        assert_eq!(rewrite("http://10.42.0.5:8080"), "http://10.42.0.5:8080");
    }

    #[test]
    fn cors_headers_are_dropped_and_the_forwarded_uri_is_the_client_s_path() {
        let mut headers = HeaderMap::new();
        headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
        headers.insert(header::LOCATION, HeaderValue::from_static("/next"));
        headers.insert("x-kept", HeaderValue::from_static("1"));
        response_headers(&mut headers, "10.42.0.5:8080", "127.0.0.1:6443", PREFIX);
        assert!(headers.get("access-control-allow-origin").is_none());
        assert_eq!(headers[header::LOCATION], format!("{PREFIX}/next").as_str());
        assert_eq!(headers["x-kept"], "1");
        assert_eq!(forwarded_uri(PREFIX, "/a/b/"), format!("{PREFIX}/a/b/"));
        assert_eq!(forwarded_uri(PREFIX, "/"), format!("{PREFIX}/"));
    }
}
