//! What the proxy subresources read from a request: the `[scheme:]name[:port]` they are
//! addressed by (`SplitSchemeNamePort`), and the path after `…/proxy`, joined as
//! Kubernetes joins it (cleaned, a trailing slash kept).

/// `name`, `name:port` or `scheme:name:port`, the scheme `http`, `https` or empty.
pub fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && matches!(scheme, "" | "http" | "https")).then_some((scheme, name, port))
}

/// The path after the `proxy` segment of a proxy subresource's URL
/// (`/api/v1/namespaces/ns/pods/web/proxy/a/b/` → `/a/b/`); empty when there is none.
/// `namespaced` says whether the URL has the `namespaces/<ns>` part.
pub fn proxy_path(request_path: &str, namespaced: bool) -> String {
    // "", "api", "v1", ["namespaces", ns,] resource, name, "proxy"
    let skip = if namespaced { 8 } else { 6 };
    let rest: Vec<&str> = request_path.split('/').skip(skip).collect();
    if rest.is_empty() {
        return String::new();
    }
    join_preserving_trailing_slash(&format!("/{}", rest.join("/")))
}

/// The part of a proxy subresource's URL up to and including its `proxy` segment
/// (`/api/v1/namespaces/ns/pods/web/proxy`): what redirects are rewritten under.
pub fn proxy_prefix(request_path: &str, namespaced: bool) -> String {
    let skip = if namespaced { 8 } else { 6 };
    request_path
        .split('/')
        .take(skip)
        .collect::<Vec<_>>()
        .join("/")
}

/// Go's `path.Clean` of `path`, with a trailing slash kept when it had one.
pub fn join_preserving_trailing_slash(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let mut cleaned = format!("/{}", segments.join("/"));
    if path.ends_with('/') && !cleaned.ends_with('/') {
        cleaned.push('/');
    }
    cleaned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_scheme_and_port() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(
            split_scheme_name_port("web:8080"),
            Some(("", "web", "8080"))
        );
        assert_eq!(
            split_scheme_name_port("https:web:443"),
            Some(("https", "web", "443"))
        );
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
    }

    #[test]
    fn the_path_after_proxy() {
        let pods = "/api/v1/namespaces/default/pods/web/proxy";
        assert_eq!(proxy_path(pods, true), "");
        assert_eq!(proxy_path(&format!("{pods}/"), true), "/");
        assert_eq!(proxy_path(&format!("{pods}/a/b"), true), "/a/b");
        assert_eq!(proxy_path(&format!("{pods}/a/b/"), true), "/a/b/");
        assert_eq!(proxy_path(&format!("{pods}/a/../../x"), true), "/x");
        assert_eq!(proxy_path(&format!("{pods}//a/./b"), true), "/a/b");
        assert_eq!(proxy_prefix(&format!("{pods}/a/b"), true), pods);
        let nodes = "/api/v1/nodes/n1/proxy";
        assert_eq!(proxy_prefix(&format!("{nodes}/"), false), nodes);
        assert_eq!(proxy_path(nodes, false), "");
        assert_eq!(
            proxy_path(&format!("{nodes}/stats/summary"), false),
            "/stats/summary"
        );
    }
}
