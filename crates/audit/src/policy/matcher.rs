//! Policy rules compiled for matching: string sets that answer membership without
//! allocating (a hash set once a list is long), resource patterns split once into their
//! wildcard forms (`*`, `*/status`, `pods/*`), and non-resource URL patterns as exact
//! strings or prefixes. Matching follows Kubernetes' audit policy checker.

use std::collections::HashSet;

use crate::attributes::{RequestAttributes, ResourceAttributes};
use crate::level::{Level, StageSet};

/// Lists longer than this are looked up through a hash set.
const LINEAR_LIMIT: usize = 8;

/// A set of strings from a policy list (users, groups, verbs, namespaces, names).
#[derive(Debug, Clone)]
pub(crate) enum StringSet {
    Small(Box<[Box<str>]>),
    Large(HashSet<Box<str>>),
}

impl StringSet {
    /// The set of `items`, `None` when the list is empty (a rule field that is empty
    /// matches everything).
    pub(crate) fn of(items: Vec<String>) -> Option<StringSet> {
        if items.is_empty() {
            None
        } else if items.len() <= LINEAR_LIMIT {
            Some(StringSet::Small(
                items.into_iter().map(String::into_boxed_str).collect(),
            ))
        } else {
            Some(StringSet::Large(
                items.into_iter().map(String::into_boxed_str).collect(),
            ))
        }
    }

    pub(crate) fn contains(&self, s: &str) -> bool {
        match self {
            StringSet::Small(items) => items.iter().any(|item| &**item == s),
            StringSet::Large(items) => items.contains(s),
        }
    }
}

/// One entry of a rule's `resources`, compiled.
#[derive(Debug, Clone)]
pub(crate) struct GroupResourcesMatcher {
    pub(crate) group: Box<str>,
    /// Empty: every resource and subresource of the group.
    pub(crate) resources: Vec<ResourcePattern>,
    pub(crate) names: Option<StringSet>,
}

/// One string of `resources[].resources`, with its wildcard forms worked out.
#[derive(Debug, Clone)]
pub(crate) struct ResourcePattern {
    raw: Box<str>,
    /// `*`: every resource and subresource.
    any: bool,
    /// `*/status`: this subresource of any resource.
    subresource_of_any: Option<Box<str>>,
    /// `pods/*`: this resource and any of its subresources.
    resource_any_subresource: Option<Box<str>>,
}

impl ResourcePattern {
    pub(crate) fn new(raw: String) -> ResourcePattern {
        ResourcePattern {
            any: raw == "*",
            subresource_of_any: raw.strip_prefix("*/").map(Into::into),
            resource_any_subresource: raw.strip_suffix("/*").map(Into::into),
            raw: raw.into_boxed_str(),
        }
    }

    fn matches(&self, resource: &str, subresource: &str) -> bool {
        if self.any || equals_combined(&self.raw, resource, subresource) {
            return true;
        }
        if !subresource.is_empty() && self.subresource_of_any.as_deref() == Some(subresource) {
            return true;
        }
        self.resource_any_subresource.as_deref() == Some(resource)
    }
}

/// Whether `pattern` equals `resource` (no subresource) or `resource/subresource`,
/// without building the combined string.
fn equals_combined(pattern: &str, resource: &str, subresource: &str) -> bool {
    if subresource.is_empty() {
        return pattern == resource;
    }
    pattern.len() == resource.len() + 1 + subresource.len()
        && pattern.starts_with(resource)
        && pattern.as_bytes().get(resource.len()) == Some(&b'/')
        && pattern.ends_with(subresource)
}

/// One string of `nonResourceURLs`.
#[derive(Debug, Clone)]
pub(crate) enum PathPattern {
    /// `*`.
    Any,
    /// A path to match exactly.
    Exact(Box<str>),
    /// `/apis/*`: paths starting with what comes before the trailing `*`.
    Prefix(Box<str>),
}

impl PathPattern {
    pub(crate) fn new(raw: String) -> PathPattern {
        if raw == "*" {
            PathPattern::Any
        } else if raw.ends_with('*') {
            PathPattern::Prefix(raw.trim_end_matches('*').into())
        } else {
            PathPattern::Exact(raw.into_boxed_str())
        }
    }

    fn matches(&self, path: &str) -> bool {
        match self {
            PathPattern::Any => true,
            PathPattern::Exact(exact) => &**exact == path,
            PathPattern::Prefix(prefix) => path.starts_with(&**prefix),
        }
    }
}

/// A policy rule, compiled.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) level: Level,
    /// The rule's omitted stages joined with the policy's.
    pub(crate) omit_stages: StageSet,
    /// The rule's own `omitManagedFields`; `None` defers to the policy.
    pub(crate) omit_managed_fields: Option<bool>,
    pub(crate) users: Option<StringSet>,
    pub(crate) user_groups: Option<StringSet>,
    pub(crate) verbs: Option<StringSet>,
    pub(crate) namespaces: Option<StringSet>,
    pub(crate) resources: Vec<GroupResourcesMatcher>,
    pub(crate) non_resource_urls: Vec<PathPattern>,
}

impl CompiledRule {
    /// Whether the rule applies to the request: every selector the rule sets must match.
    pub(crate) fn matches(&self, attributes: &RequestAttributes<'_>) -> bool {
        if let Some(users) = &self.users
            && !users.contains(attributes.user)
        {
            return false;
        }
        if let Some(groups) = &self.user_groups
            && !attributes.groups.iter().any(|g| groups.contains(g))
        {
            return false;
        }
        if let Some(verbs) = &self.verbs
            && !verbs.contains(attributes.verb)
        {
            return false;
        }
        if self.namespaces.is_some() || !self.resources.is_empty() {
            return match &attributes.resource {
                Some(resource) => self.matches_resource(resource),
                None => false,
            };
        }
        if !self.non_resource_urls.is_empty() {
            return attributes.resource.is_none()
                && self
                    .non_resource_urls
                    .iter()
                    .any(|pattern| pattern.matches(attributes.path));
        }
        true
    }

    fn matches_resource(&self, request: &ResourceAttributes<'_>) -> bool {
        // Cluster-scoped resources have the empty namespace, which a rule may list.
        if let Some(namespaces) = &self.namespaces
            && !namespaces.contains(request.namespace)
        {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        self.resources
            .iter()
            .filter(|entry| *entry.group == *request.group)
            .any(|entry| {
                if entry.resources.is_empty() {
                    return true;
                }
                let named = entry
                    .names
                    .as_ref()
                    .is_none_or(|names| names.contains(request.name));
                named
                    && entry
                        .resources
                        .iter()
                        .any(|pattern| pattern.matches(request.resource, request.subresource))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_patterns() {
        let p = |s: &str| ResourcePattern::new(s.to_string());
        assert!(p("pods").matches("pods", ""));
        assert!(!p("pods").matches("pods", "log"));
        assert!(p("pods/log").matches("pods", "log"));
        assert!(!p("pods/log").matches("pods", ""));
        assert!(!p("pods/log").matches("pods", "status"));
        assert!(!p("pods/log").matches("podsx", "log"));
        assert!(p("*").matches("pods", ""));
        assert!(p("*").matches("pods", "exec"));
        assert!(p("*/status").matches("deployments", "status"));
        assert!(!p("*/status").matches("deployments", ""));
        assert!(!p("*/status").matches("deployments", "scale"));
        // `resource/*` also matches the resource itself, as Kubernetes' checker does.
        assert!(p("pods/*").matches("pods", "exec"));
        assert!(p("pods/*").matches("pods", ""));
        assert!(!p("pods/*").matches("services", "proxy"));
    }

    #[test]
    fn path_patterns() {
        let p = |s: &str| PathPattern::new(s.to_string());
        assert!(p("*").matches("/anything"));
        assert!(p("/healthz").matches("/healthz"));
        assert!(!p("/healthz").matches("/healthz/etcd"));
        assert!(p("/healthz*").matches("/healthz/etcd"));
        assert!(p("/healthz*").matches("/healthz"));
        assert!(p("/apis/*").matches("/apis/apps"));
        assert!(!p("/apis/*").matches("/apis"));
    }

    #[test]
    fn string_sets_small_and_large() {
        assert!(StringSet::of(Vec::new()).is_none());
        let small = StringSet::of(vec!["a".into(), "b".into()]);
        assert!(matches!(small, Some(StringSet::Small(_))));
        assert!(
            small
                .as_ref()
                .is_some_and(|s| s.contains("b") && !s.contains("c"))
        );
        let many: Vec<String> = (0..20).map(|i| format!("user-{i}")).collect();
        let large = StringSet::of(many);
        assert!(matches!(large, Some(StringSet::Large(_))));
        assert!(large.is_some_and(|s| s.contains("user-17") && !s.contains("user-20")));
    }
}
