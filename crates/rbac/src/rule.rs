//! Policy rules: parsing them from a role's JSON, matching them against a request, and the
//! shapes in which a SelfSubjectRulesReview reports them.

use crate::attributes::Attributes;
use kyb_apimachinery::gofmt::quote_list;
use serde_json::{Map, Value, json};

/// The wildcard accepted in verbs, API groups, resources and non-resource URLs.
pub const ALL: &str = "*";

/// One entry of a role's `rules`: which verbs are allowed on which resources (by API group,
/// resource, optional names) or on which non-resource URLs.
///
/// Empty lists stand for absent fields, as Kubernetes treats `nil` and `[]` alike.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The strings of a JSON array; anything else (a missing field, `null`, a wrong type) is an
/// empty list, and non-string elements are left out.
fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl PolicyRule {
    /// A rule granting `verbs`; add what they apply to with the other builder methods.
    pub fn new(verbs: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            ..Self::default()
        }
    }

    pub fn groups(mut self, groups: &[&str]) -> Self {
        self.api_groups = strings(groups);
        self
    }

    pub fn resources(mut self, resources: &[&str]) -> Self {
        self.resources = strings(resources);
        self
    }

    pub fn names(mut self, names: &[&str]) -> Self {
        self.resource_names = strings(names);
        self
    }

    pub fn urls(mut self, urls: &[&str]) -> Self {
        self.non_resource_urls = strings(urls);
        self
    }

    /// Every list in byte order, as Kubernetes' rule builder leaves the rules it creates.
    pub fn sorted(mut self) -> Self {
        for list in [
            &mut self.verbs,
            &mut self.api_groups,
            &mut self.resources,
            &mut self.resource_names,
            &mut self.non_resource_urls,
        ] {
            list.sort();
        }
        self
    }

    /// Reads one rule object (`verbs`, `apiGroups`, `resources`, `resourceNames`,
    /// `nonResourceURLs`). Anything that is not an object yields `None`; badly typed fields
    /// read as empty, which can only narrow what the rule grants.
    pub fn from_json(value: &Value) -> Option<Self> {
        let object = value.as_object()?;
        Some(Self {
            verbs: string_list(object.get("verbs")),
            api_groups: string_list(object.get("apiGroups")),
            resources: string_list(object.get("resources")),
            resource_names: string_list(object.get("resourceNames")),
            non_resource_urls: string_list(object.get("nonResourceURLs")),
        })
    }

    /// The rules of a role or cluster role object (`rules`, missing or `null` meaning none).
    pub fn list_from_object(object: &Value) -> Vec<Self> {
        object
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().filter_map(Self::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule as JSON, fields in the order and with the omissions of `rbac/v1.PolicyRule`
    /// (`verbs` always present, the other lists left out when empty).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("verbs".into(), json!(self.verbs));
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                object.insert(key.into(), json!(list));
            }
        }
        Value::Object(object)
    }

    /// A list of rules as the JSON array of a role's `rules`.
    pub fn list_to_json(rules: &[PolicyRule]) -> Value {
        Value::Array(rules.iter().map(Self::to_json).collect())
    }

    /// Whether this rule allows the request described by `attributes`: verb, API group,
    /// resource (with subresource) and name for a resource request; verb and path otherwise.
    pub fn allows(&self, attributes: &Attributes) -> bool {
        if !self.verb_matches(attributes.verb) {
            return false;
        }
        if attributes.resource_request {
            self.api_group_matches(attributes.api_group)
                && self.resource_matches(attributes.resource, attributes.subresource)
                && self.resource_name_matches(attributes.name)
        } else {
            self.non_resource_url_matches(attributes.path)
        }
    }

    /// `verbs` contains the verb or `*`.
    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    /// `apiGroups` contains the group or `*`.
    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `resources` contains `*`, the resource itself (`pods`, or `pods/log` for a
    /// subresource), or `*/log` for any resource's subresource `log`.
    pub fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|rule| {
            if rule == ALL {
                return true;
            }
            if subresource.is_empty() {
                return rule == resource;
            }
            if let Some((rule_resource, rule_subresource)) = rule.split_once('/') {
                rule_subresource == subresource
                    && (rule_resource == resource || rule_resource == ALL)
            } else {
                false
            }
        })
    }

    /// No `resourceNames` (any name), or the name is one of them.
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// `nonResourceURLs` contains `*`, the path itself, or a prefix of it ending in `*`.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|url| {
            url == ALL
                || url == path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
        })
    }

    /// The short form Kubernetes prints in escalation errors, for example
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["create"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label}:{}", quote_list(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// A resource rule as a SelfSubjectRulesReview reports it (`status.resourceRules[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

impl ResourceRule {
    /// The rule in the JSON form of `authorization/v1.ResourceRule`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("verbs".into(), json!(self.verbs));
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
        ] {
            if !list.is_empty() {
                object.insert(key.into(), json!(list));
            }
        }
        Value::Object(object)
    }
}

/// A non-resource rule as a SelfSubjectRulesReview reports it
/// (`status.nonResourceRules[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl NonResourceRule {
    /// The rule in the JSON form of `authorization/v1.NonResourceRule`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("verbs".into(), json!(self.verbs));
        if !self.non_resource_urls.is_empty() {
            object.insert("nonResourceURLs".into(), json!(self.non_resource_urls));
        }
        Value::Object(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subresource_matching() {
        let rule = PolicyRule::new(&["get"])
            .groups(&[""])
            .resources(&["*/scale"]);
        assert!(rule.resource_matches("deployments", "scale"));
        assert!(!rule.resource_matches("deployments", ""));
        assert!(!rule.resource_matches("deployments", "status"));
        let rule = PolicyRule::new(&["get"])
            .groups(&[""])
            .resources(&["pods/log"]);
        assert!(rule.resource_matches("pods", "log"));
        assert!(!rule.resource_matches("pods", ""));
        assert!(!rule.resource_matches("nodes", "log"));
        let rule = PolicyRule::new(&["get"]).groups(&[""]).resources(&["pods"]);
        assert!(!rule.resource_matches("pods", "log"));
    }

    #[test]
    fn url_matching() {
        let rule = PolicyRule::new(&["get"]).urls(&["/apis/*", "/healthz"]);
        assert!(rule.non_resource_url_matches("/apis/apps/v1"));
        assert!(rule.non_resource_url_matches("/apis/"));
        assert!(!rule.non_resource_url_matches("/apis"));
        assert!(rule.non_resource_url_matches("/healthz"));
        assert!(!rule.non_resource_url_matches("/healthz/etcd"));
    }

    #[test]
    fn compact_string_like_kubernetes() {
        let rule = PolicyRule::new(&["create", "delete"])
            .groups(&[""])
            .resources(&["pods"]);
        assert_eq!(
            rule.compact_string(),
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}"#
        );
        let rule = PolicyRule::new(&["get"]).urls(&["/healthz"]);
        assert_eq!(
            rule.compact_string(),
            r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
        );
    }

    #[test]
    fn lenient_parsing() {
        let rule = PolicyRule::from_json(&json!({"verbs": ["get", 3], "apiGroups": "x"}));
        assert_eq!(rule, Some(PolicyRule::new(&["get"])));
        assert_eq!(PolicyRule::from_json(&json!("get")), None);
        assert!(PolicyRule::list_from_object(&json!({"rules": null})).is_empty());
    }
}
