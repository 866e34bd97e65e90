//! Who a binding grants its role to (`subjects`) and which role (`roleRef`), read from the
//! binding's JSON.

use kyb_apimachinery::gofmt::quote;
use serde_json::Value;

/// The prefix of every service account's user name.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The API group of roles, cluster roles and their bindings.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The user name a service account authenticates as: `system:serviceaccount:<ns>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// The kinds of subject RBAC knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    User,
    Group,
    ServiceAccount,
}

impl SubjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectKind::User => "User",
            SubjectKind::Group => "Group",
            SubjectKind::ServiceAccount => "ServiceAccount",
        }
    }
}

/// One entry of a binding's `subjects`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Subject {
    pub kind: SubjectKind,
    pub name: String,
    /// Only meaningful for service accounts; empty means the binding's own namespace.
    pub namespace: String,
}

impl Subject {
    /// Reads a subject. Unknown kinds and subjects without a name yield `None`: Kubernetes
    /// never matches them to anyone.
    pub fn from_json(value: &Value) -> Option<Self> {
        let kind = match value.get("kind")?.as_str()? {
            "User" => SubjectKind::User,
            "Group" => SubjectKind::Group,
            "ServiceAccount" => SubjectKind::ServiceAccount,
            _ => return None,
        };
        let name = value.get("name")?.as_str()?.to_string();
        let namespace = value
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        Some(Self {
            kind,
            name,
            namespace,
        })
    }

    /// The user name this subject stands for when it is a user or a service account (the
    /// account's namespace defaulting to `binding_namespace`); `None` for groups and for a
    /// service account whose namespace is unknown (in a cluster role binding).
    pub fn user_name(&self, binding_namespace: &str) -> Option<String> {
        match self.kind {
            SubjectKind::User => Some(self.name.clone()),
            SubjectKind::Group => None,
            SubjectKind::ServiceAccount => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                (!namespace.is_empty()).then(|| service_account_username(namespace, &self.name))
            }
        }
    }

    /// Whether the subject covers `user` in `groups`, within a binding in
    /// `binding_namespace` ("" for a cluster role binding).
    pub fn applies_to(&self, user: &str, groups: &[String], binding_namespace: &str) -> bool {
        match self.kind {
            SubjectKind::User => self.name == user,
            SubjectKind::Group => groups.contains(&self.name),
            SubjectKind::ServiceAccount => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                if namespace.is_empty() {
                    return false;
                }
                user.strip_prefix(SERVICE_ACCOUNT_PREFIX)
                    .and_then(|rest| rest.strip_prefix(namespace))
                    .and_then(|rest| rest.strip_prefix(':'))
                    == Some(self.name.as_str())
            }
        }
    }

    /// How Kubernetes names the subject in an authorization reason: `User "jane"`,
    /// `Group "devs"`, `ServiceAccount "name/namespace"`.
    pub fn describe(&self, binding_namespace: &str) -> String {
        match self.kind {
            SubjectKind::ServiceAccount => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                format!(
                    "ServiceAccount {}",
                    quote(&format!("{}/{namespace}", self.name))
                )
            }
            kind => format!("{} {}", kind.as_str(), quote(&self.name)),
        }
    }
}

/// A binding's `roleRef`: the kind (`Role` or `ClusterRole`), name and API group of the role
/// it grants.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RoleRef {
    pub kind: String,
    pub name: String,
    pub api_group: String,
}

impl RoleRef {
    /// A reference to the cluster role `name`.
    pub fn cluster_role(name: &str) -> Self {
        Self {
            kind: "ClusterRole".into(),
            name: name.into(),
            api_group: RBAC_GROUP.into(),
        }
    }

    /// A reference to the role `name` in the binding's namespace.
    pub fn role(name: &str) -> Self {
        Self {
            kind: "Role".into(),
            name: name.into(),
            api_group: RBAC_GROUP.into(),
        }
    }

    /// Reads a binding's `roleRef`; `None` when it lacks a kind or a name.
    pub fn from_binding(binding: &Value) -> Option<Self> {
        let role_ref = binding.get("roleRef")?;
        let kind = role_ref.get("kind")?.as_str()?;
        let name = role_ref.get("name")?.as_str()?;
        if kind.is_empty() || name.is_empty() {
            return None;
        }
        Some(Self {
            kind: kind.to_string(),
            name: name.to_string(),
            api_group: role_ref
                .get("apiGroup")
                .and_then(Value::as_str)
                .unwrap_or(RBAC_GROUP)
                .to_string(),
        })
    }
}

/// The subjects of a binding object; entries Kubernetes would never match are left out.
pub fn subjects_of(binding: &Value) -> Vec<Subject> {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .map(|subjects| subjects.iter().filter_map(Subject::from_json).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_account_matching() {
        let sa = Subject::from_json(&json!({"kind": "ServiceAccount", "name": "builder"}));
        let Some(sa) = sa else {
            panic!("subject should parse");
        };
        assert!(sa.applies_to("system:serviceaccount:ci:builder", &[], "ci"));
        assert!(!sa.applies_to("system:serviceaccount:ci:builder", &[], "other"));
        assert!(!sa.applies_to("system:serviceaccount:ci:builder", &[], ""));
        assert!(!sa.applies_to("system:serviceaccount:ci:builder2", &[], "ci"));
        assert_eq!(sa.describe("ci"), r#"ServiceAccount "builder/ci""#);
        assert_eq!(
            sa.user_name("ci").as_deref(),
            Some("system:serviceaccount:ci:builder")
        );
        assert_eq!(sa.user_name(""), None);
    }

    #[test]
    fn unknown_kinds_are_dropped() {
        let binding = json!({"subjects": [
            {"kind": "Robot", "name": "x"},
            {"kind": "User"},
            {"kind": "Group", "name": "devs"}
        ]});
        assert_eq!(subjects_of(&binding).len(), 1);
    }
}
