//! Which storage keys a configuration encrypts: resource names (`secrets`,
//! `deployments.apps`, `pandas.awesome.bears.example`) and wildcards (`*.` for the core
//! group, `*.apps`, `*.*`) resolved to storage key prefixes, with Kubernetes' precedence
//! (an exact name before its group's wildcard before `*.*`).
//!
//! Built-in resources take their prefix from [`kyb_api::registry::BUILTIN`]
//! (`secrets` → `/registry/secrets/`); resources sharing a prefix (core and
//! `events.k8s.io` events, both at `/registry/events/`) are one storage resource, named by
//! the first registry entry, as Kubernetes stores `events.k8s.io` events as core `events`.
//! Resources of other groups are custom resources, which Kubernetes stores at
//! `/registry/<group>/<resource>/`. `*.*` also covers every other key under `/registry/`.

use std::fmt;

/// Where every resource is stored.
pub(crate) const REGISTRY_ROOT: &str = "/registry/";

/// A `resource.group` name split at its first dot, as `schema.ParseGroupResource` does:
/// `secrets` (core), `deployments.apps`, `*.` (every core resource), `*.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct GroupResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl<'a> GroupResource<'a> {
    pub fn parse(name: &'a str) -> Self {
        match name.split_once('.') {
            Some((resource, group)) => Self { group, resource },
            None => Self {
                group: "",
                resource: name,
            },
        }
    }

    /// `*.*`: every resource of every group.
    pub fn is_any(&self) -> bool {
        self.group == "*" && self.resource == "*"
    }

    /// The wildcard of this resource's group (`*.apps`, `*.`).
    pub fn group_wildcard(&self) -> GroupResource<'a> {
        GroupResource {
            group: self.group,
            resource: "*",
        }
    }

    pub const ANY: GroupResource<'static> = GroupResource {
        group: "*",
        resource: "*",
    };
}

/// As the configuration writes it: `secrets`, `deployments.apps`, `*.`, `*.*`.
impl fmt::Display for GroupResource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() && self.resource == "*" {
            f.write_str("*.")
        } else if self.group.is_empty() {
            f.write_str(self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// The storage key prefixes covered by the rules `rule_of` knows (it answers, for a group
/// and resource, the index of the rule written for exactly that name, if any). Each prefix
/// comes with the rule that governs it, following Kubernetes' lookup order: exact name,
/// then the group's wildcard, then `*.*`. Longer prefixes come first, so the first prefix
/// a key starts with is its most specific rule.
pub(crate) fn resolve<'n>(
    rules: &[GroupResource<'n>],
    rule_of: impl Fn(GroupResource<'_>) -> Option<usize>,
) -> Vec<(String, usize)> {
    let mut routes: Vec<(String, usize)> = Vec::new();
    let lookup = |gr: GroupResource<'_>| {
        rule_of(gr)
            .or_else(|| rule_of(gr.group_wildcard()))
            .or_else(|| rule_of(GroupResource::ANY))
    };
    // Built-in resources: one storage resource per prefix, named by its first entry.
    // Resources answered on the spot (reviews) have no prefix and are never stored.
    for def in kyb_api::registry::BUILTIN {
        if def.storage_prefix.is_empty() {
            continue;
        }
        let prefix = format!("{}/", def.storage_prefix);
        if routes.iter().any(|(p, _)| *p == prefix) {
            continue;
        }
        let gr = GroupResource {
            group: &def.group,
            resource: &def.plural,
        };
        if let Some(rule) = lookup(gr) {
            routes.push((prefix, rule));
        }
    }
    // Custom resources, in groups no built-in resource uses. (A custom resource group has
    // a dot in it, so `/registry/<group>/` cannot be a built-in resource's prefix.)
    for gr in rules {
        let custom = gr.group.contains('.')
            && gr.group != "*"
            && !kyb_api::registry::BUILTIN
                .iter()
                .any(|def| def.group == gr.group);
        if !custom {
            continue;
        }
        let prefix = if gr.resource == "*" {
            format!("{REGISTRY_ROOT}{}/", gr.group)
        } else {
            format!("{REGISTRY_ROOT}{}/{}/", gr.group, gr.resource)
        };
        if routes.iter().any(|(p, _)| *p == prefix) {
            continue;
        }
        if let Some(rule) = rule_of(*gr) {
            routes.push((prefix, rule));
        }
    }
    if let Some(rule) = rule_of(GroupResource::ANY) {
        routes.push((REGISTRY_ROOT.to_string(), rule));
    }
    routes.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(rules: &[&str]) -> Vec<(String, usize)> {
        let parsed: Vec<GroupResource<'_>> =
            rules.iter().map(|r| GroupResource::parse(r)).collect();
        resolve(&parsed, |gr| parsed.iter().position(|r| *r == gr))
    }

    fn rule_for(routes: &[(String, usize)], key: &str) -> Option<usize> {
        routes
            .iter()
            .find(|(prefix, _)| key.starts_with(prefix.as_str()))
            .map(|(_, rule)| *rule)
    }

    #[test]
    fn parses_and_prints_group_resources() {
        let cases = [
            ("secrets", "", "secrets"),
            ("deployments.apps", "apps", "deployments"),
            (
                "pandas.awesome.bears.example",
                "awesome.bears.example",
                "pandas",
            ),
            ("*.", "", "*"),
            ("*.*", "*", "*"),
            ("*.apps", "apps", "*"),
        ];
        for (name, group, resource) in cases {
            let gr = GroupResource::parse(name);
            assert_eq!((gr.group, gr.resource), (group, resource), "{name}");
            assert_eq!(gr.to_string(), name);
        }
    }

    #[test]
    fn named_resources_resolve_to_their_storage_prefix() {
        let routes = routes(&[
            "secrets",
            "deployments.apps",
            "nodes",
            "services",
            "endpoints",
        ]);
        let mut prefixes: Vec<&str> = routes.iter().map(|(p, _)| p.as_str()).collect();
        prefixes.sort_unstable();
        assert_eq!(
            prefixes,
            [
                "/registry/deployments/",
                "/registry/minions/",
                "/registry/secrets/",
                "/registry/services/endpoints/",
                "/registry/services/specs/",
            ]
        );
        assert_eq!(rule_for(&routes, "/registry/secrets/default/s"), Some(0));
        assert_eq!(
            rule_for(&routes, "/registry/deployments/default/d"),
            Some(1)
        );
        assert_eq!(rule_for(&routes, "/registry/secretsx/default/s"), None);
        assert_eq!(rule_for(&routes, "/registry/configmaps/default/c"), None);
    }

    #[test]
    fn core_and_events_k8s_io_events_share_one_prefix() {
        let routes = routes(&["events"]);
        assert_eq!(routes, [("/registry/events/".to_string(), 0)]);
    }

    #[test]
    fn core_wildcard_covers_only_the_core_group() {
        let routes = routes(&["*."]);
        for key in [
            "/registry/pods/ns/p",
            "/registry/secrets/ns/s",
            "/registry/minions/n",
            "/registry/events/ns/e",
            "/registry/services/specs/ns/s",
        ] {
            assert_eq!(rule_for(&routes, key), Some(0), "{key}");
        }
        assert_eq!(rule_for(&routes, "/registry/deployments/ns/d"), None);
        assert_eq!(
            rule_for(&routes, "/registry/example.com/widgets/ns/w"),
            None
        );
    }

    #[test]
    fn exact_names_win_over_group_wildcards_over_everything() {
        let routes = routes(&[
            "events",
            "*.apps",
            "*.*",
            "widgets.example.com",
            "*.example.com",
        ]);
        assert_eq!(rule_for(&routes, "/registry/events/ns/e"), Some(0));
        assert_eq!(rule_for(&routes, "/registry/deployments/ns/d"), Some(1));
        assert_eq!(rule_for(&routes, "/registry/secrets/ns/s"), Some(2));
        assert_eq!(
            rule_for(&routes, "/registry/example.com/widgets/ns/w"),
            Some(3)
        );
        assert_eq!(
            rule_for(&routes, "/registry/example.com/gadgets/ns/g"),
            Some(4)
        );
        assert_eq!(rule_for(&routes, "/registry/other.io/things/t"), Some(2));
        assert_eq!(rule_for(&routes, "/other/key"), None);
    }

    #[test]
    fn every_route_lies_under_the_registry() {
        for (prefix, _) in routes(&["*.*"]) {
            assert!(prefix.starts_with(REGISTRY_ROOT), "{prefix}");
            assert!(prefix.ends_with('/'), "{prefix}");
        }
    }

    #[test]
    fn unknown_built_in_group_resources_match_nothing() {
        assert!(routes(&["frobs", "frobs.apps", "*.services"]).is_empty());
    }
}
