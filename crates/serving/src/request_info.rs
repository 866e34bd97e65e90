//! What a request is about, resolved once from its method, path and query and kept in the
//! request's extensions ([`RequestInfo`]) for every layer after: a resource verb
//! (`get pods/web in default`) or a non-resource path (`/healthz`, discovery, OpenAPI).
//! [`classify`] reads the API server's paths as Kubernetes' RequestInfoFactory does; another
//! server (the kubelet) resolves its own paths to the attributes it authorizes.

use crate::query::Query;
use http::Method;
use std::sync::Arc;

/// The facts about a request the filters and handlers share: what it targets and its query.
#[derive(Clone, Debug)]
pub struct RequestInfo {
    pub method: Method,
    /// The path, as sent (not decoded).
    pub path: String,
    pub target: Target,
    pub query: Query,
}

impl RequestInfo {
    /// Reads an API server request: `/api/...` and `/apis/...` resource paths, anything else
    /// a non-resource path.
    pub fn of_api_request(parts: &http::request::Parts) -> RequestInfo {
        let query = Query::parse(parts.uri.query());
        let target = classify(&parts.method, parts.uri.path(), query.flag("watch"));
        RequestInfo {
            method: parts.method.clone(),
            path: parts.uri.path().to_string(),
            target,
            query,
        }
    }

    /// The resource request, if it is one.
    pub fn resource(&self) -> Option<&ResourceRequest> {
        match &self.target {
            Target::Resource(request) => Some(request),
            Target::NonResource => None,
        }
    }

    /// A watch, or another request held open for as long as the client wants — the
    /// streaming subresources `exec`, `attach`, `portforward`, `proxy` and `log`, as
    /// Kubernetes counts them (exempt from the in-flight limit and request timeouts).
    pub fn is_long_running(&self) -> bool {
        self.resource().is_some_and(|r| {
            r.verb == Verb::Watch
                || matches!(
                    r.subresource.as_deref(),
                    Some("exec" | "attach" | "portforward" | "proxy" | "log")
                )
        })
    }
}

/// How a server reads the facts of its requests.
pub type Resolver = Arc<dyn Fn(&http::request::Parts) -> RequestInfo + Send + Sync>;

/// The verb of a non-resource request, as authorizers see it.
pub fn non_resource_verb(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "post",
        Method::PUT => "put",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "unknown",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }
}

/// A request for a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    pub verb: Verb,
    pub group: String,
    pub version: String,
    /// The resource's plural name.
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Resource(ResourceRequest),
    /// Anything else: health checks, version, discovery, OpenAPI.
    NonResource,
}

/// The segments of a path, each percent-decoded as Go's `url.URL.Path` is (Kubernetes
/// reads names, namespaces and subresources from the decoded path, so
/// `clusterroles/system%3Aaggregate-to-admin` names `system:aggregate-to-admin`); `None`
/// for a malformed escape, which Go's HTTP server refuses with 400 before any handler.
pub fn path_segments(path: &str) -> Option<Vec<String>> {
    path.split('/')
        .filter(|p| !p.is_empty())
        .map(crate::query::unescape_path)
        .filter(|segment| !segment.as_ref().is_some_and(String::is_empty))
        .collect()
}

/// Classifies a request. `watch` is the `watch` query parameter; `path` as sent (its
/// segments are decoded here).
pub fn classify(method: &Method, path: &str, watch: bool) -> Target {
    let Some(segments) = path_segments(path) else {
        return Target::NonResource;
    };
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        _ => return Target::NonResource,
    };
    let (mut watch, mut rest) = (watch, rest);
    if let ["watch", after @ ..] = rest {
        // The deprecated `/api/v1/watch/...` form.
        watch = true;
        rest = after;
    }
    let mut namespace = None;
    if let ["namespaces", ns, after @ ..] = rest {
        namespace = Some(ns.to_string());
        // `/namespaces/<ns>/status` and `/finalize` are the namespace's own subresources.
        if !after.is_empty() && !matches!(after.first(), Some(&"status" | &"finalize")) {
            rest = after;
        }
    }
    let (resource, name, subresource) = match rest {
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some(*name), None),
        [resource, name, sub] => (*resource, Some(*name), Some(*sub)),
        // `…/pods/web/proxy/some/path`: the proxy subresource, the rest its path.
        [resource, name, "proxy", ..] => (*resource, Some(*name), Some("proxy")),
        _ => return Target::NonResource,
    };
    // A namespace named in the path of the namespaces resource is the object itself.
    if resource == "namespaces" {
        namespace = None;
    }
    let verb = match (method, name.is_some()) {
        (&Method::GET | &Method::HEAD, _) if watch => Verb::Watch,
        (&Method::GET | &Method::HEAD, true) => Verb::Get,
        (&Method::GET | &Method::HEAD, false) => Verb::List,
        (&Method::POST, _) => Verb::Create,
        (&Method::PUT, _) => Verb::Update,
        (&Method::PATCH, _) => Verb::Patch,
        (&Method::DELETE, true) => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => return Target::NonResource,
    };
    Target::Resource(ResourceRequest {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        subresource: subresource.map(str::to_string),
        namespace,
        name: name.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(method: Method, path: &str, watch: bool) -> ResourceRequest {
        match classify(&method, path, watch) {
            Target::Resource(r) => r,
            Target::NonResource => panic!("{path} is a resource path"),
        }
    }

    #[test]
    fn namespaced_and_cluster_paths() {
        let r = resource(Method::GET, "/api/v1/namespaces/default/pods/web", false);
        assert_eq!(
            (
                r.verb,
                r.resource.as_str(),
                r.namespace.as_deref(),
                r.name.as_deref()
            ),
            (Verb::Get, "pods", Some("default"), Some("web"))
        );
        let r = resource(Method::GET, "/api/v1/pods", false);
        assert_eq!((r.verb, r.namespace), (Verb::List, None));
        let r = resource(
            Method::GET,
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            false,
        );
        assert_eq!(
            (r.group.as_str(), r.subresource.as_deref()),
            ("apps", Some("scale"))
        );
        let r = resource(Method::DELETE, "/api/v1/namespaces/ns/configmaps", false);
        assert_eq!(r.verb, Verb::DeleteCollection);
        let r = resource(Method::GET, "/api/v1/nodes/n1", false);
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref()),
            ("nodes", Some("n1"))
        );
    }

    #[test]
    fn namespaces_themselves() {
        let r = resource(Method::GET, "/api/v1/namespaces/default", false);
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("default"), None)
        );
        let r = resource(Method::PUT, "/api/v1/namespaces/ns/finalize", false);
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            ("namespaces", Some("ns"), Some("finalize"))
        );
        let r = resource(Method::GET, "/api/v1/namespaces", false);
        assert_eq!(r.verb, Verb::List);
    }

    #[test]
    fn proxy_paths_are_the_proxy_subresource() {
        let r = resource(
            Method::POST,
            "/api/v1/namespaces/ns/pods/web:8080/proxy/a/b",
            false,
        );
        assert_eq!(
            (
                r.verb,
                r.name.as_deref(),
                r.subresource.as_deref(),
                r.namespace.as_deref()
            ),
            (Verb::Create, Some("web:8080"), Some("proxy"), Some("ns"))
        );
        let r = resource(Method::GET, "/api/v1/nodes/n1/proxy/stats/summary", false);
        assert_eq!(
            (r.resource.as_str(), r.subresource.as_deref()),
            ("nodes", Some("proxy"))
        );
        assert_eq!(
            classify(
                &Method::GET,
                "/api/v1/namespaces/ns/pods/web/status/x",
                false
            ),
            Target::NonResource
        );
    }

    #[test]
    fn watches() {
        assert_eq!(
            resource(Method::GET, "/api/v1/pods", true).verb,
            Verb::Watch
        );
        let r = resource(Method::GET, "/api/v1/watch/namespaces/ns/pods", false);
        assert_eq!((r.verb, r.namespace.as_deref()), (Verb::Watch, Some("ns")));
    }

    #[test]
    fn decodes_every_segment() {
        let r = resource(
            Method::GET,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aaggregate-to-admin",
            false,
        );
        assert_eq!(r.name.as_deref(), Some("system:aggregate-to-admin"));
        let r = resource(
            Method::GET,
            "/api/v1/namespaces/%6B%75be-system/pods/a%2Eb/%6Cog",
            false,
        );
        assert_eq!(
            (
                r.namespace.as_deref(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            (Some("kube-system"), Some("a.b"), Some("log"))
        );
        let r = resource(Method::GET, "/api/v1/%6Eamespaces/x", false);
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref()),
            ("namespaces", Some("x"))
        );
        assert_eq!(path_segments("/api/v1/pods/%zz"), None);
        assert_eq!(path_segments("/api/v1/pods/a%4"), None);
    }

    #[test]
    fn non_resources() {
        for path in [
            "/",
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/healthz",
            "/openapi/v3",
            "/api/v1/namespaces/a/pods/b/c/d",
        ] {
            assert_eq!(
                classify(&Method::GET, path, false),
                Target::NonResource,
                "{path}"
            );
        }
    }
}
