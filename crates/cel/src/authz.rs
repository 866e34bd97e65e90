//! Kubernetes' CEL authorizer library (`authorizer.group('apps').resource('deployments')
//! .check('create').allowed()`), backed by an [`Authorizer`] the caller implements.
//!
//! The CEL values (`Authorizer`, `PathCheck`, `GroupCheck`, `ResourceCheck`, `Decision`)
//! are opaque values carrying the check being built; `check(verb)` hands an [`AuthzCheck`]
//! to the caller's authorizer. The user is the request's user, or the service account set
//! with `authorizer.serviceAccount(namespace, name)`; `authorizer.requestResource` is a
//! `ResourceCheck` for the request's own resource, subresource, namespace and name.

use std::fmt;
use std::sync::Arc;

use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{ExecutionError, FunctionContext, ResolveResult, Value as CelValue};
use serde_json::Value;

/// Decides authorization checks made from CEL (`authorizer...check(verb)`).
///
/// Implement it over the cluster's authorizer (RBAC) for the request's user. It must be
/// `Send + Sync` because deep expressions may be evaluated on a helper thread.
pub trait Authorizer: Send + Sync {
    /// Decides one check.
    fn check(&self, attributes: &AuthzCheck) -> AuthzDecision;
}

/// One authorization check, as Kubernetes' `authorizer.AttributesRecord`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthzCheck {
    /// `None`: the user who sent the request. `Some`: the service account chosen with
    /// `authorizer.serviceAccount(namespace, name)`.
    pub service_account: Option<ServiceAccount>,
    /// The API verb (`create`, `list`, ...) or, for a path check, the HTTP verb as written.
    pub verb: String,
    /// What is being accessed.
    pub target: AuthzTarget,
}

/// What an [`AuthzCheck`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthzTarget {
    /// A resource request (`ResourceRequest: true`, `APIVersion: "*"`).
    Resource(ResourceAttributes),
    /// A non-resource request for a URL path, e.g. `/healthz`.
    NonResource {
        /// The path as written in the expression.
        path: String,
    },
}

/// The resource attributes of a check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// API group (`""` for the core group).
    pub group: String,
    /// Always `"*"`, as Kubernetes' library sets it.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource, `""` when unset.
    pub subresource: String,
    /// Namespace, `""` for cluster scope.
    pub namespace: String,
    /// Object name, `""` when unset.
    pub name: String,
    /// `fieldSelector(...)` as written (Kubernetes parses it into requirements; an
    /// authorizer that honours selectors parses it, RBAC ignores it).
    pub field_selector: Option<String>,
    /// `labelSelector(...)` as written.
    pub label_selector: Option<String>,
}

/// A service account a check is made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccount {
    /// `system:serviceaccount:<namespace>:<name>`.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// `system:serviceaccounts` and `system:serviceaccounts:<namespace>`, the groups
    /// Kubernetes gives a service account's user info.
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{}", self.namespace),
        ]
    }
}

/// The authorizer's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthzDecision {
    /// Whether the decision is "allow" (`allowed()`); "deny" and "no opinion" are `false`.
    pub allowed: bool,
    /// The reason (`reason()`).
    pub reason: String,
    /// An error from the authorizer (`errored()`, `error()`).
    pub error: Option<String>,
}

impl AuthzDecision {
    /// An "allow" decision with a reason.
    pub fn allow(reason: impl Into<String>) -> Self {
        AuthzDecision {
            allowed: true,
            reason: reason.into(),
            error: None,
        }
    }

    /// A decision that is not "allow", with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        AuthzDecision {
            allowed: false,
            reason: reason.into(),
            error: None,
        }
    }
}

/// The CEL-side values of the library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthzValue {
    Authorizer {
        service_account: Option<ServiceAccount>,
    },
    PathCheck {
        service_account: Option<ServiceAccount>,
        path: String,
    },
    GroupCheck {
        service_account: Option<ServiceAccount>,
        group: String,
    },
    ResourceCheck {
        service_account: Option<ServiceAccount>,
        attributes: ResourceAttributes,
    },
    Decision(AuthzDecision),
}

impl Opaque for AuthzValue {
    fn runtime_type_name(&self) -> &str {
        match self {
            AuthzValue::Authorizer { .. } => "kubernetes.authorization.Authorizer",
            AuthzValue::PathCheck { .. } => "kubernetes.authorization.PathCheck",
            AuthzValue::GroupCheck { .. } => "kubernetes.authorization.GroupCheck",
            AuthzValue::ResourceCheck { .. } => "kubernetes.authorization.ResourceCheck",
            AuthzValue::Decision(_) => "kubernetes.authorization.Decision",
        }
    }
}

impl fmt::Display for AuthzValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.runtime_type_name())
    }
}

/// The names of the library's member functions, registered once in the base context.
pub(crate) const METHODS: &[&str] = &[
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

/// The `authorizer` value bound for a request.
pub(crate) fn authorizer_value() -> CelValue {
    CelValue::Opaque(Arc::new(AuthzValue::Authorizer {
        service_account: None,
    }))
}

/// The `authorizer.requestResource` value: a resource check for the request itself.
pub(crate) fn request_resource_value(request: Option<&Value>) -> CelValue {
    let text = |path: &[&str]| -> String {
        let mut v = request;
        for key in path {
            v = v.and_then(|x| x.get(key));
        }
        v.and_then(Value::as_str).unwrap_or_default().to_owned()
    };
    let first = |a: String, b: String| if a.is_empty() { b } else { a };
    let attributes = ResourceAttributes {
        group: first(
            text(&["requestResource", "group"]),
            text(&["resource", "group"]),
        ),
        version: "*".to_owned(),
        resource: first(
            text(&["requestResource", "resource"]),
            text(&["resource", "resource"]),
        ),
        subresource: first(text(&["requestSubResource"]), text(&["subResource"])),
        namespace: text(&["namespace"]),
        name: text(&["name"]),
        field_selector: None,
        label_selector: None,
    };
    CelValue::Opaque(Arc::new(AuthzValue::ResourceCheck {
        service_account: None,
        attributes,
    }))
}

fn no_overload() -> ExecutionError {
    ExecutionError::NoSuchOverload
}

fn error(function: &str, message: &str) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

fn wrap(value: AuthzValue) -> ResolveResult {
    Ok(CelValue::Opaque(Arc::new(value)))
}

/// Resolves the call's string arguments.
fn string_args(ftx: &FunctionContext, count: usize) -> Result<Vec<String>, ExecutionError> {
    if ftx.args.len() != count {
        return Err(no_overload());
    }
    let mut out = Vec::with_capacity(count);
    for arg in ftx.args {
        match CelValue::resolve(arg, ftx.ptx)? {
            CelValue::String(s) => out.push(s.as_str().to_owned()),
            _ => return Err(no_overload()),
        }
    }
    Ok(out)
}

/// Whether `name` is a DNS-1123 label (what a namespace name must be).
fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Whether `name` is a DNS-1123 subdomain (what a service account name must be).
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

/// The member functions of the library, dispatched on the receiver's kind. `check` calls
/// back into the evaluation (see `runtime`) to reach the caller's [`Authorizer`].
pub(crate) fn call(
    ftx: &mut FunctionContext,
    authorize: &dyn Fn(&FunctionContext, AuthzCheck) -> ResolveResult,
) -> ResolveResult {
    let this = match &ftx.this {
        Some(CelValue::Opaque(o)) => o.clone(),
        _ => return Err(no_overload()),
    };
    let Some(value) = this.downcast_ref::<AuthzValue>() else {
        return Err(no_overload());
    };
    let method = ftx.name;
    match (value, method) {
        (AuthzValue::Authorizer { service_account }, "path") => {
            let [path] =
                <[String; 1]>::try_from(string_args(ftx, 1)?).map_err(|_| no_overload())?;
            if path.trim().is_empty() {
                return Err(error(method, "path must not be empty"));
            }
            wrap(AuthzValue::PathCheck {
                service_account: service_account.clone(),
                path,
            })
        }
        (AuthzValue::Authorizer { service_account }, "group") => {
            let [group] =
                <[String; 1]>::try_from(string_args(ftx, 1)?).map_err(|_| no_overload())?;
            wrap(AuthzValue::GroupCheck {
                service_account: service_account.clone(),
                group,
            })
        }
        (AuthzValue::Authorizer { .. }, "serviceAccount") => {
            let [namespace, name] =
                <[String; 2]>::try_from(string_args(ftx, 2)?).map_err(|_| no_overload())?;
            if !is_dns_subdomain(&name) {
                return Err(error(method, "Invalid service account name"));
            }
            if !is_dns_label(&namespace) {
                return Err(error(method, "Invalid service account namespace"));
            }
            wrap(AuthzValue::Authorizer {
                service_account: Some(ServiceAccount { namespace, name }),
            })
        }
        (
            AuthzValue::GroupCheck {
                service_account,
                group,
            },
            "resource",
        ) => {
            let [resource] =
                <[String; 1]>::try_from(string_args(ftx, 1)?).map_err(|_| no_overload())?;
            if resource.trim().is_empty() {
                return Err(error(method, "resource must not be empty"));
            }
            wrap(AuthzValue::ResourceCheck {
                service_account: service_account.clone(),
                attributes: ResourceAttributes {
                    group: group.clone(),
                    version: "*".to_owned(),
                    resource,
                    ..ResourceAttributes::default()
                },
            })
        }
        (
            AuthzValue::ResourceCheck {
                service_account,
                attributes,
            },
            "subresource" | "namespace" | "name" | "fieldSelector" | "labelSelector",
        ) => {
            let [arg] = <[String; 1]>::try_from(string_args(ftx, 1)?).map_err(|_| no_overload())?;
            let mut attributes = attributes.clone();
            match method {
                "subresource" => attributes.subresource = arg,
                "namespace" => attributes.namespace = arg,
                "name" => attributes.name = arg,
                "fieldSelector" => attributes.field_selector = Some(arg).filter(|s| !s.is_empty()),
                _ => attributes.label_selector = Some(arg).filter(|s| !s.is_empty()),
            }
            wrap(AuthzValue::ResourceCheck {
                service_account: service_account.clone(),
                attributes,
            })
        }
        (
            AuthzValue::ResourceCheck {
                service_account,
                attributes,
            },
            "check",
        ) => {
            let [verb] =
                <[String; 1]>::try_from(string_args(ftx, 1)?).map_err(|_| no_overload())?;
            let check = AuthzCheck {
                service_account: service_account.clone(),
                verb,
                target: AuthzTarget::Resource(attributes.clone()),
            };
            authorize(ftx, check)
        }
        (
            AuthzValue::PathCheck {
                service_account,
                path,
            },
            "check",
        ) => {
            let [verb] =
                <[String; 1]>::try_from(string_args(ftx, 1)?).map_err(|_| no_overload())?;
            let check = AuthzCheck {
                service_account: service_account.clone(),
                verb,
                target: AuthzTarget::NonResource { path: path.clone() },
            };
            authorize(ftx, check)
        }
        (AuthzValue::Decision(d), "allowed") if ftx.args.is_empty() => {
            Ok(CelValue::Bool(d.allowed))
        }
        (AuthzValue::Decision(d), "reason") if ftx.args.is_empty() => {
            Ok(CelValue::String(Arc::new(d.reason.clone())))
        }
        (AuthzValue::Decision(d), "errored") if ftx.args.is_empty() => {
            Ok(CelValue::Bool(d.error.is_some()))
        }
        (AuthzValue::Decision(d), "error") if ftx.args.is_empty() => Ok(CelValue::String(
            Arc::new(d.error.clone().unwrap_or_default()),
        )),
        _ => Err(no_overload()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_account_identity() {
        let sa = ServiceAccount {
            namespace: "ns".into(),
            name: "builder".into(),
        };
        assert_eq!(sa.username(), "system:serviceaccount:ns:builder");
        assert_eq!(
            sa.groups(),
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
    }

    #[test]
    fn name_rules() {
        assert!(is_dns_label("kube-system"));
        assert!(!is_dns_label("Kube"));
        assert!(!is_dns_label("-a"));
        assert!(is_dns_subdomain("a.b-c"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_subdomain("invalid@*name"));
    }

    #[test]
    fn request_resource_prefers_the_requested_resource() {
        let request = json!({
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "requestResource": {"group": "apps", "version": "v1beta1", "resource": "deployments"},
            "subResource": "scale",
            "namespace": "ns", "name": "web"
        });
        let CelValue::Opaque(o) = request_resource_value(Some(&request)) else {
            panic!("not opaque")
        };
        let Some(AuthzValue::ResourceCheck { attributes, .. }) = o.downcast_ref::<AuthzValue>()
        else {
            panic!("not a resource check")
        };
        assert_eq!(attributes.group, "apps");
        assert_eq!(attributes.version, "*");
        assert_eq!(attributes.resource, "deployments");
        assert_eq!(attributes.subresource, "scale");
        assert_eq!(
            (attributes.namespace.as_str(), attributes.name.as_str()),
            ("ns", "web")
        );
    }
}
