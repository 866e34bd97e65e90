//! What the audit policy is evaluated against: the requesting user and the request, as
//! the API server's authorization attributes describe them. Everything is borrowed, so
//! building the attributes for a request allocates nothing.

/// A request, as the audit policy sees it (Kubernetes' authorizer attributes).
///
/// `user` and `groups` are the *authenticated* user, before impersonation: Kubernetes
/// evaluates the audit policy in a filter that runs before the impersonation filter.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestAttributes<'a> {
    /// The user name (`system:serviceaccount:ns:name`, `kubernetes-admin`, ...).
    pub user: &'a str,
    /// The user's groups (`system:authenticated`, ...).
    pub groups: &'a [String],
    /// The Kubernetes verb of a resource request (`get`, `list`, `watch`, `create`,
    /// `update`, `patch`, `delete`, `deletecollection`, or a special verb such as
    /// `impersonate`), or the lowercased HTTP method of a non-resource request (`get`,
    /// `post`, ...).
    pub verb: &'a str,
    /// The resource addressed, `None` for a non-resource request (`/healthz`, `/api`,
    /// `/version`, discovery and OpenAPI documents).
    pub resource: Option<ResourceAttributes<'a>>,
    /// The URL path, without the query (`/api/v1/namespaces/default/pods`).
    pub path: &'a str,
}

/// The resource a resource request addresses.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceAttributes<'a> {
    /// The API group, empty for the core group.
    pub group: &'a str,
    /// The API version (`v1`).
    pub version: &'a str,
    /// The resource, plural (`pods`).
    pub resource: &'a str,
    /// The subresource (`status`, `log`, `scale`), empty for the resource itself.
    pub subresource: &'a str,
    /// The namespace, empty for cluster-scoped resources and all-namespace lists.
    pub namespace: &'a str,
    /// The object's name, empty for lists, watches and creates.
    pub name: &'a str,
}

impl RequestAttributes<'_> {
    /// Whether the request addresses a resource (rather than a non-resource URL).
    pub fn is_resource_request(&self) -> bool {
        self.resource.is_some()
    }
}
