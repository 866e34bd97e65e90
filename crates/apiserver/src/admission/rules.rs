//! Which requests a webhook or an admission policy applies to: rules (operations, API
//! groups, versions, resources with their subresource forms, scope, and for policies
//! resource names), namespace and object selectors, as admissionregistration/v1 defines
//! them for webhooks and for ValidatingAdmissionPolicies' `matchConstraints`.

use super::{Attributes, Operation};
use kyb_apimachinery::labels::Selector;
use serde_json::{Map, Value};

/// One of a webhook's `rules` or a policy's `resourceRules`.
#[derive(Clone, Debug, Default)]
pub struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    /// Policies only: the names the rule is limited to (empty: all).
    resource_names: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    scope: String,
}

fn strings(value: &Value, field: &str) -> Vec<String> {
    value[field]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    pub fn from_json(rule: &Value) -> Rule {
        Rule {
            operations: strings(rule, "operations"),
            groups: strings(rule, "apiGroups"),
            versions: strings(rule, "apiVersions"),
            resources: strings(rule, "resources"),
            resource_names: strings(rule, "resourceNames"),
            scope: rule["scope"].as_str().unwrap_or("*").to_string(),
        }
    }

    /// Whether the rule covers this operation on this group, version, resource and
    /// subresource of the given scope.
    pub fn matches(
        &self,
        operation: Operation,
        group: &str,
        version: &str,
        resource: &str,
        subresource: &str,
        namespaced: bool,
    ) -> bool {
        let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        any(&self.operations, operation.as_str())
            && any(&self.groups, group)
            && any(&self.versions, version)
            && self
                .resources
                .iter()
                .any(|r| resource_matches(r, resource, subresource))
            && match self.scope.as_str() {
                "Cluster" => !namespaced,
                "Namespaced" => namespaced,
                _ => true,
            }
    }

    /// Whether the rule's `resourceNames` (if any) include `name`.
    pub fn names(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }
}

/// `pods`, `pods/status`, `*` (every resource, no subresources), `*/*` (everything),
/// `pods/*` (pods and all its subresources), `*/scale` (that subresource of every
/// resource): a resource part and a subresource part, each `*` or equal.
fn resource_matches(rule: &str, resource: &str, subresource: &str) -> bool {
    let (rule_resource, rule_sub) = rule.split_once('/').unwrap_or((rule, ""));
    (rule_resource == "*" || rule_resource == resource)
        && (rule_sub == "*" || rule_sub == subresource)
}

/// A label selector from a webhook (`{}` or absent: everything).
pub fn selector(value: Option<&Value>) -> Result<Selector, String> {
    match value {
        None | Some(Value::Null) => Ok(Selector::everything()),
        Some(selector) => Selector::from_label_selector(selector),
    }
}

/// The labels a request's namespace selector is matched against: the namespace's own for
/// namespaced objects and for Namespaces themselves; `None` (always matching) for other
/// cluster-scoped objects.
pub fn namespace_labels(
    attributes: &Attributes<'_>,
    object: Option<&Value>,
    lookup: impl Fn(&str) -> Option<Value>,
) -> Option<Map<String, Value>> {
    let labels = |v: &Value| {
        kyb_apimachinery::meta::labels(v)
            .cloned()
            .unwrap_or_default()
    };
    if attributes.resource.group.is_empty() && attributes.resource.plural == "namespaces" {
        return Some(
            object
                .or(attributes.old_object)
                .map(labels)
                .unwrap_or_default(),
        );
    }
    if !attributes.resource.namespaced {
        return None;
    }
    Some(
        lookup(attributes.namespace)
            .map(|ns| labels(&ns))
            .unwrap_or_default(),
    )
}

/// Whether the object (or, for updates and deletes, its old state) matches.
pub fn object_matches(selector: &Selector, object: Option<&Value>, old: Option<&Value>) -> bool {
    if selector.is_empty() {
        return true;
    }
    [object, old]
        .into_iter()
        .flatten()
        .any(|o| selector.matches(kyb_apimachinery::meta::labels(o)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_forms() {
        assert!(resource_matches("pods", "pods", ""));
        assert!(!resource_matches("pods", "pods", "status"));
        assert!(resource_matches("*", "pods", ""));
        assert!(!resource_matches("*", "pods", "status"));
        assert!(resource_matches("*/*", "pods", ""));
        assert!(resource_matches("*/*", "pods", "status"));
        assert!(resource_matches("pods/*", "pods", "status"));
        assert!(resource_matches("pods/*", "pods", ""));
        assert!(resource_matches("*/scale", "deployments", "scale"));
        assert!(!resource_matches("*/scale", "deployments", "status"));
        assert!(resource_matches("pods/status", "pods", "status"));
    }

    #[test]
    fn rules_match_operations_groups_versions_and_scope() {
        let rule = Rule::from_json(&json!({
            "operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["*"],
            "resources": ["deployments"], "scope": "Namespaced"
        }));
        assert!(rule.matches(Operation::Create, "apps", "v1", "deployments", "", true));
        assert!(!rule.matches(Operation::Delete, "apps", "v1", "deployments", "", true));
        assert!(!rule.matches(Operation::Create, "", "v1", "deployments", "", true));
        assert!(!rule.matches(Operation::Create, "apps", "v1", "deployments", "", false));
        let everything = Rule::from_json(&json!({
            "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]
        }));
        assert!(everything.matches(Operation::Connect, "x", "v9", "y", "z", false));
    }

    #[test]
    fn object_selectors_look_at_old_and_new() {
        let selector = selector(Some(&json!({"matchLabels": {"team": "a"}})))
            .unwrap_or_else(|_| Selector::everything());
        let a = json!({"metadata": {"labels": {"team": "a"}}});
        let b = json!({"metadata": {"labels": {"team": "b"}}});
        assert!(object_matches(&selector, Some(&b), Some(&a)));
        assert!(!object_matches(&selector, Some(&b), None));
        assert!(object_matches(&Selector::everything(), None, None));
    }
}
