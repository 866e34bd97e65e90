//! What an authorization request asks (`Attributes`), what RBAC answers (`Decision`), and
//! the text of the 403 the API server sends when nobody allowed it.

use kyb_apimachinery::gofmt::quote;

/// One request as the authorizer sees it, borrowed from the API server's request info.
/// Empty strings stand for absent values (no namespace, the core API group "", no name), as
/// in Kubernetes' `authorizer.Attributes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attributes<'a> {
    /// The authenticated user name (`system:serviceaccount:<ns>:<name>` for service
    /// accounts).
    pub user: &'a str,
    /// The user's groups, including `system:authenticated` and the like when the
    /// authenticator added them.
    pub groups: &'a [String],
    /// The API verb (`get`, `list`, `watch`, `create`, ..., or a special verb such as `bind`,
    /// `escalate`, `impersonate`); for non-resource requests the lowercased HTTP method verb.
    pub verb: &'a str,
    pub namespace: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    /// The request path, used for non-resource requests.
    pub path: &'a str,
    /// Whether the request is for an API resource (otherwise it is for `path`).
    pub resource_request: bool,
}

impl<'a> Attributes<'a> {
    /// A resource request by `user` in `groups`: `verb` on `resource` in `api_group`, in
    /// `namespace` ("" for cluster scope). Set `subresource` and `name` on the result as
    /// needed.
    pub fn resource(
        user: &'a str,
        groups: &'a [String],
        verb: &'a str,
        api_group: &'a str,
        resource: &'a str,
        namespace: &'a str,
    ) -> Self {
        Self {
            user,
            groups,
            verb,
            namespace,
            api_group,
            resource,
            resource_request: true,
            ..Self::default()
        }
    }

    /// A non-resource request by `user` in `groups`: `verb` on `path`.
    pub fn non_resource(user: &'a str, groups: &'a [String], verb: &'a str, path: &'a str) -> Self {
        Self {
            user,
            groups,
            verb,
            path,
            ..Self::default()
        }
    }

    /// The same request for the named object.
    pub fn with_name(mut self, name: &'a str) -> Self {
        self.name = name;
        self
    }

    /// The same request for a subresource (`status`, `log`, `scale`, ...).
    pub fn with_subresource(mut self, subresource: &'a str) -> Self {
        self.subresource = subresource;
        self
    }

    /// The message of the 403 `Forbidden` status Kubernetes answers when no authorizer
    /// allowed the request, `reason` being the authorizers' reason (empty when they gave
    /// none), for example
    /// `pods "web" is forbidden: User "jane" cannot get resource "pods" in API group "" in
    /// the namespace "default"`.
    pub fn forbidden_message(&self, reason: &str) -> String {
        let mut detail = if !self.resource_request {
            format!(
                "User {} cannot {} path {}",
                quote(self.user),
                self.verb,
                quote(self.path)
            )
        } else {
            let resource = if self.subresource.is_empty() {
                self.resource.to_string()
            } else {
                format!("{}/{}", self.resource, self.subresource)
            };
            let scope = if self.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {}", quote(self.namespace))
            };
            format!(
                "User {} cannot {} resource {} in API group {} {scope}",
                quote(self.user),
                self.verb,
                quote(&resource),
                quote(self.api_group),
            )
        };
        if !reason.is_empty() {
            detail.push_str(": ");
            detail.push_str(reason);
        }
        if !self.resource_request || (self.resource.is_empty() && self.api_group.is_empty()) {
            return format!("forbidden: {detail}");
        }
        let qualified = if self.api_group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.api_group)
        };
        if self.name.is_empty() {
            format!("{qualified} is forbidden: {detail}")
        } else {
            format!("{qualified} {} is forbidden: {detail}", quote(self.name))
        }
    }
}

/// An authorizer's answer, each with its reason text.
///
/// RBAC only ever allows or has no opinion: it has no deny rules. `Deny` exists for
/// authorizers composed with it (and is what a caller may map a hard refusal to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed; the reason names the binding and role that granted it, as in
    /// `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`.
    Allow(String),
    /// Explicitly denied.
    Deny(String),
    /// Not allowed by any rule. The reason is empty, or (when some binding referred to a
    /// missing role) `RBAC: ` and the resolution errors; pass it to
    /// [`Attributes::forbidden_message`] for the 403.
    NoOpinion(String),
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_messages() {
        let groups = vec!["system:authenticated".to_string()];
        let a =
            Attributes::resource("jane", &groups, "get", "", "pods", "default").with_name("web");
        assert_eq!(
            a.forbidden_message(""),
            r#"pods "web" is forbidden: User "jane" cannot get resource "pods" in API group "" in the namespace "default""#
        );
        let a = Attributes::resource("jane", &groups, "list", "apps", "deployments", "");
        assert_eq!(
            a.forbidden_message("RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found"),
            r#"deployments.apps is forbidden: User "jane" cannot list resource "deployments" in API group "apps" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
        );
        let a = Attributes::resource("jane", &groups, "get", "", "pods", "ns")
            .with_name("web")
            .with_subresource("log");
        assert!(
            a.forbidden_message("").starts_with(
                r#"pods "web" is forbidden: User "jane" cannot get resource "pods/log""#
            )
        );
        let a = Attributes::non_resource("jane", &groups, "get", "/metrics");
        assert_eq!(
            a.forbidden_message(""),
            r#"forbidden: User "jane" cannot get path "/metrics""#
        );
    }
}
