//! Escalation prevention: nobody may grant, through a role or a binding, permissions they
//! do not hold themselves, unless they are allowed the `escalate` verb on the role (to write
//! it) or the `bind` verb on it (to bind it). Kubernetes' `ConfirmNoEscalation`, `Covers`
//! and the checks of its role and binding storage.

use crate::attributes::Attributes;
use crate::policy::{Policy, aggregate_errors};
use crate::rule::{ALL, PolicyRule};
use crate::subject::{RBAC_GROUP, RoleRef};
use kyb_apimachinery::gofmt::{quote, quote_list};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// The group whose members may always escalate: the API server's own loopback identity and
/// cluster administrators.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// Splits a rule into rules of one API group, one resource, one verb and at most one
/// resource name (and, for non-resource URLs, one URL and one verb), so that each piece is
/// either wholly covered by one owner rule or not at all.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut pieces = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    pieces.push(base);
                } else {
                    for name in &rule.resource_names {
                        pieces.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            pieces.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..PolicyRule::default()
            });
        }
    }
    pieces
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|item| has(set, item))
}

fn resources_cover(owner: &[String], requested: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, requested) {
        return true;
    }
    requested.iter().all(|resource| {
        if has(owner, resource) {
            return true;
        }
        match resource.split_once('/') {
            Some((_, subresource)) => has(owner, &format!("*/{subresource}")),
            None => false,
        }
    })
}

fn url_covers(owner: &str, requested: &str) -> bool {
    owner == requested
        || owner
            .strip_suffix('*')
            .is_some_and(|prefix| requested.starts_with(prefix.trim_end_matches('*')))
}

fn urls_cover(owner: &[String], requested: &[String]) -> bool {
    requested
        .iter()
        .all(|path| owner.iter().any(|o| url_covers(o, path)))
}

/// Whether one owner rule covers a broken-down requested rule. A `*` in the owner rule
/// covers anything; a `*` in the requested rule is only covered by a `*`.
fn rule_covers(owner: &PolicyRule, piece: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &piece.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &piece.api_groups);
    let resources = resources_cover(&owner.resources, &piece.resources);
    let urls = urls_cover(&owner.non_resource_urls, &piece.non_resource_urls);
    let names = if piece.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &piece.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// Whether `owner` rules cover every permission of `requested` rules. Each requested rule
/// is broken down with [`breakdown_rule`]; the pieces no owner rule covers are returned.
pub fn covers(owner: &[PolicyRule], requested: &[PolicyRule]) -> Result<(), Vec<PolicyRule>> {
    let uncovered: Vec<PolicyRule> = requested
        .iter()
        .flat_map(breakdown_rule)
        .filter(|piece| !owner.iter().any(|o| rule_covers(o, piece)))
        .collect();
    if uncovered.is_empty() {
        Ok(())
    } else {
        Err(uncovered)
    }
}

/// Merges rules naming one API group, one resource and at most one resource name (and
/// nothing else) that differ only in their verbs; other rules are kept as they are. Used to
/// shorten the list of missing permissions in an escalation error.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut compacted = Vec::new();
    let mut simple: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    let mut merged: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            compacted.push(rule.clone());
            continue;
        }
        let key = (
            rule.api_groups[0].clone(),
            rule.resources[0].clone(),
            rule.resource_names.first().cloned(),
        );
        match simple.get(&key) {
            Some(&index) => merged[index].verbs.extend(rule.verbs.iter().cloned()),
            None => {
                simple.insert(key, merged.len());
                merged.push(rule.clone());
            }
        }
    }
    compacted.extend(merged);
    compacted
}

/// The text Kubernetes returns when a write would grant permissions the user lacks: the
/// missing permissions compacted, one per line in sorted order, and the errors met while
/// resolving the user's own roles, if any.
pub fn escalation_message(
    user: &str,
    groups: &[String],
    missing: &[PolicyRule],
    resolution_errors: &[String],
) -> String {
    let descriptions: BTreeSet<String> = compact_rules(missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    let mut message = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        quote(user),
        quote_list(groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !resolution_errors.is_empty() {
        message.push_str(&format!(
            "; resolution errors: [{}]",
            aggregate_errors(resolution_errors)
        ));
    }
    message
}

/// A refused write to a role or binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Why, in Kubernetes' words (for example the escalation message).
    pub message: String,
}

impl Refusal {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message of the 403 `Forbidden` status for the object `name` of `resource`
    /// (`roles`, `clusterroles`, `rolebindings`, `clusterrolebindings`):
    /// `rolebindings.rbac.authorization.k8s.io "x" is forbidden: ...`.
    pub fn status_message(&self, resource: &str, name: &str) -> String {
        if name.is_empty() {
            format!("{resource}.{RBAC_GROUP} is forbidden: {}", self.message)
        } else {
            format!(
                "{resource}.{RBAC_GROUP} {} is forbidden: {}",
                quote(name),
                self.message
            )
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// A create or update of a Role or ClusterRole, as the escalation check needs it.
#[derive(Clone, Copy, Debug)]
pub struct RoleChange<'a> {
    /// A ClusterRole (otherwise a Role).
    pub cluster_role: bool,
    /// The Role's namespace ("" for a ClusterRole).
    pub namespace: &'a str,
    /// The name in the request path, against which `escalate` is checked: empty for a
    /// create (Kubernetes checks the request, not the object), the role's name for an
    /// update.
    pub request_name: &'a str,
    /// The rules the role will have.
    pub rules: &'a [PolicyRule],
    /// A ClusterRole whose new or old version has an `aggregationRule`: writing it needs
    /// full authority, since the rule can gather anything.
    pub aggregation_rule: bool,
}

/// The rules of someone who may do anything (`cluster-admin`).
fn full_authority() -> [PolicyRule; 2] {
    [
        PolicyRule::new(&[ALL]).groups(&[ALL]).resources(&[ALL]),
        PolicyRule::new(&[ALL]).urls(&[ALL]),
    ]
}

fn is_system_master(groups: &[String]) -> bool {
    groups.iter().any(|g| g == SYSTEM_MASTERS)
}

impl Policy {
    /// Kubernetes' `ConfirmNoEscalation`: whether the rules `user` holds in `namespace` (""
    /// for cluster roles and cluster role bindings) cover `rules`.
    pub fn confirm_no_escalation(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), Refusal> {
        let (owned, errors) = self.policy_rules_for(user, groups, namespace);
        covers(&owned, rules)
            .map_err(|missing| Refusal::new(escalation_message(user, groups, &missing, &errors)))
    }

    /// Whether `user` may create or update a binding in `binding_namespace` ("" for a
    /// ClusterRoleBinding) that grants `role_ref`: members of `system:masters` may; so may
    /// whoever is allowed `bind` on the role (API group of the reference, `roles` or
    /// `clusterroles`, the role's name, in the binding's namespace); otherwise only someone
    /// who already holds every rule of the role.
    pub fn may_bind(
        &self,
        user: &str,
        groups: &[String],
        binding_namespace: &str,
        role_ref: &RoleRef,
    ) -> Result<(), Refusal> {
        if is_system_master(groups) {
            return Ok(());
        }
        let resource = match role_ref.kind.as_str() {
            "ClusterRole" => Some("clusterroles"),
            "Role" => Some("roles"),
            _ => None,
        };
        if let Some(resource) = resource {
            let bind = Attributes {
                name: &role_ref.name,
                ..Attributes::resource(
                    user,
                    groups,
                    "bind",
                    &role_ref.api_group,
                    resource,
                    binding_namespace,
                )
            };
            if self.authorize(&bind).is_allowed() {
                return Ok(());
            }
        }
        let rules = self
            .role_ref_rules(role_ref, binding_namespace)
            .map_err(Refusal::new)?;
        self.confirm_no_escalation(user, groups, binding_namespace, rules)
    }

    /// Whether `user` may create or update a Role or ClusterRole: members of
    /// `system:masters` may; so may whoever is allowed `escalate` on it; otherwise the user
    /// must hold every rule it will have, and for an aggregated ClusterRole must hold full
    /// authority.
    pub fn may_write_role(
        &self,
        user: &str,
        groups: &[String],
        change: &RoleChange,
    ) -> Result<(), Refusal> {
        if is_system_master(groups) {
            return Ok(());
        }
        let resource = if change.cluster_role {
            "clusterroles"
        } else {
            "roles"
        };
        let escalate = Attributes {
            name: change.request_name,
            ..Attributes::resource(
                user,
                groups,
                "escalate",
                RBAC_GROUP,
                resource,
                change.namespace,
            )
        };
        if self.authorize(&escalate).is_allowed() {
            return Ok(());
        }
        self.confirm_no_escalation(user, groups, change.namespace, change.rules)?;
        if change.cluster_role && change.aggregation_rule {
            self.confirm_no_escalation(user, groups, "", &full_authority())
                .map_err(|_| {
                    Refusal::new("must have cluster-admin privileges to use the aggregationRule")
                })?;
        }
        Ok(())
    }

    /// The escalation checks of a create (`old` is `None`) or update of any RBAC object in
    /// JSON form, as Kubernetes' role and binding storage runs them: updates that only touch
    /// what the garbage collector changes (owner references, finalizers, deletion fields)
    /// pass; others go through [`Policy::may_write_role`] or [`Policy::may_bind`]. Objects
    /// of other kinds pass. A Role's or RoleBinding's `metadata.namespace` must already be
    /// set (from the request path) when this runs.
    pub fn check_write(
        &self,
        user: &str,
        groups: &[String],
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), Refusal> {
        let kind = new.get("kind").and_then(Value::as_str).unwrap_or_default();
        if !matches!(
            kind,
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        ) || is_system_master(groups)
        {
            return Ok(());
        }
        if let Some(old) = old
            && only_gc_fields_changed(new, old)
        {
            return Ok(());
        }
        let name = kyb_apimachinery::meta::name(new).unwrap_or_default();
        let namespace = match kind {
            "Role" | "RoleBinding" => kyb_apimachinery::meta::namespace(new).unwrap_or_default(),
            _ => "",
        };
        match kind {
            "Role" | "ClusterRole" => {
                let rules = PolicyRule::list_from_object(new);
                let change = RoleChange {
                    cluster_role: kind == "ClusterRole",
                    namespace,
                    request_name: if old.is_some() { name } else { "" },
                    rules: &rules,
                    aggregation_rule: has_aggregation_rule(new)
                        || old.is_some_and(has_aggregation_rule),
                };
                self.may_write_role(user, groups, &change)
            }
            _ => {
                let role_ref = RoleRef::from_binding(new)
                    .ok_or_else(|| Refusal::new("roleRef needs a kind and a name"))?;
                self.may_bind(user, groups, namespace, &role_ref)
            }
        }
    }
}

/// Whether a ClusterRole object has an `aggregationRule` with at least one selector.
pub fn has_aggregation_rule(object: &Value) -> bool {
    object
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .is_some_and(|selectors| !selectors.is_empty())
}

/// Whether `new` differs from `old` only in the metadata the garbage collector and the
/// API server maintain: owner references, finalizers, deletion timestamp and grace period,
/// self link, resource version and managed fields.
fn only_gc_fields_changed(new: &Value, old: &Value) -> bool {
    const IGNORED: [&str; 7] = [
        "ownerReferences",
        "finalizers",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
        "managedFields",
    ];
    let strip = |object: &Value| {
        let mut copy = object.clone();
        if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in IGNORED {
                metadata.remove(key);
            }
        }
        copy
    };
    strip(new) == strip(old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown_is_per_group_resource_verb_name() {
        let rule = PolicyRule::new(&["get", "list"])
            .groups(&["", "apps"])
            .resources(&["pods"])
            .names(&["a", "b"]);
        assert_eq!(breakdown_rule(&rule).len(), 8);
        let rule = PolicyRule::new(&["get"]).urls(&["/a", "/b"]);
        assert_eq!(breakdown_rule(&rule).len(), 2);
    }

    #[test]
    fn stars_only_cover_stars() {
        let owner = [PolicyRule::new(&["get"]).groups(&[""]).resources(&["pods"])];
        let requested = [PolicyRule::new(&["*"]).groups(&[""]).resources(&["pods"])];
        assert!(covers(&owner, &requested).is_err());
        let owner = [PolicyRule::new(&["*"]).groups(&["*"]).resources(&["*"])];
        assert!(covers(&owner, &requested).is_ok());
    }

    #[test]
    fn subresource_wildcards_cover() {
        let owner = [PolicyRule::new(&["get"])
            .groups(&["apps"])
            .resources(&["*/scale"])];
        let requested = [PolicyRule::new(&["get"])
            .groups(&["apps"])
            .resources(&["deployments/scale"])];
        assert!(covers(&owner, &requested).is_ok());
        let requested = [PolicyRule::new(&["get"])
            .groups(&["apps"])
            .resources(&["deployments"])];
        assert!(covers(&owner, &requested).is_err());
    }

    #[test]
    fn resource_names_narrow() {
        let owner = [PolicyRule::new(&["get"])
            .groups(&[""])
            .resources(&["configmaps"])
            .names(&["a"])];
        let named = [PolicyRule::new(&["get"])
            .groups(&[""])
            .resources(&["configmaps"])
            .names(&["a"])];
        let any = [PolicyRule::new(&["get"])
            .groups(&[""])
            .resources(&["configmaps"])];
        assert!(covers(&owner, &named).is_ok());
        assert!(covers(&owner, &any).is_err());
    }

    #[test]
    fn compaction_merges_verbs() {
        let missing = breakdown_rule(
            &PolicyRule::new(&["create", "delete"])
                .groups(&[""])
                .resources(&["pods"]),
        );
        let compacted = compact_rules(&missing);
        assert_eq!(compacted.len(), 1);
        assert_eq!(compacted[0].verbs, vec!["create", "delete"]);
    }

    #[test]
    fn gc_only_updates() {
        let old = serde_json::json!({"kind": "Role", "metadata": {"name": "r"}, "rules": []});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = serde_json::json!(["x"]);
        assert!(only_gc_fields_changed(&new, &old));
        new["rules"] = serde_json::json!([{"verbs": ["get"]}]);
        assert!(!only_gc_fields_changed(&new, &old));
    }
}
