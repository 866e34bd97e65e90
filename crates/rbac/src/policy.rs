//! The in-memory RBAC policy: every Role, ClusterRole, RoleBinding and ClusterRoleBinding,
//! kept current from a watch, indexed so that authorizing a request only looks at the
//! bindings naming its user or groups.
//!
//! # Cost
//!
//! With `g` the number of the request's groups, `b` the number of bindings (in the cluster
//! scope, plus those of the request's namespace) that name the user or one of its groups,
//! and `r` the rules of the roles those bindings grant:
//!
//! - [`Policy::authorize`] and [`Policy::rules_for`] make `1 + g` hash lookups per scope,
//!   sort the `b` binding names found, then look up each binding's role (one hash lookup)
//!   and test its rules: `O(g + b log b + r)`, independent of the number of bindings that
//!   do not name the user. `authorize` stops at the first rule that allows.
//! - Inserting, replacing or removing an object is `O(s log n)` for a binding with `s`
//!   subjects (`n` bindings filed under one subject), `O(rules)` for a role.

use crate::attributes::{Attributes, Decision};
use crate::rule::{NonResourceRule, PolicyRule, ResourceRule};
use crate::subject::{RoleRef, Subject, subjects_of};
use crate::subject_index::SubjectIndex;
use kyb_apimachinery::gofmt::quote;
use kyb_apimachinery::meta;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Why an object was not taken into the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyError {
    /// `kind` is none of Role, ClusterRole, RoleBinding, ClusterRoleBinding.
    UnsupportedKind(String),
    /// The object has no `metadata.name`.
    MissingName,
    /// A Role or RoleBinding has no `metadata.namespace`.
    MissingNamespace,
    /// A binding has no usable `roleRef` (kind and name).
    MissingRoleRef,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnsupportedKind(kind) => write!(f, "not an RBAC object: kind {kind:?}"),
            PolicyError::MissingName => f.write_str("metadata.name is missing"),
            PolicyError::MissingNamespace => f.write_str("metadata.namespace is missing"),
            PolicyError::MissingRoleRef => f.write_str("roleRef needs a kind and a name"),
        }
    }
}

impl std::error::Error for PolicyError {}

/// The four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    /// The kind of an object from its `kind` field.
    pub fn of(object: &Value) -> Result<Self, PolicyError> {
        match object.get("kind").and_then(Value::as_str) {
            Some("Role") => Ok(RbacKind::Role),
            Some("ClusterRole") => Ok(RbacKind::ClusterRole),
            Some("RoleBinding") => Ok(RbacKind::RoleBinding),
            Some("ClusterRoleBinding") => Ok(RbacKind::ClusterRoleBinding),
            other => Err(PolicyError::UnsupportedKind(
                other.unwrap_or_default().to_string(),
            )),
        }
    }
}

#[derive(Clone, Debug)]
struct Binding {
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_object(object: &Value) -> Result<Self, PolicyError> {
        Ok(Self {
            role_ref: RoleRef::from_binding(object).ok_or(PolicyError::MissingRoleRef)?,
            subjects: subjects_of(object),
        })
    }

    /// The first subject that covers the user, as Kubernetes reports it.
    fn applying_subject(&self, user: &str, groups: &[String], namespace: &str) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.applies_to(user, groups, namespace))
    }
}

/// The roles and role bindings of one namespace, with their subject index.
#[derive(Clone, Debug, Default)]
struct NamespacePolicy {
    roles: HashMap<String, Arc<[PolicyRule]>>,
    role_bindings: HashMap<String, Binding>,
    subjects: SubjectIndex,
}

impl NamespacePolicy {
    fn is_empty(&self) -> bool {
        self.roles.is_empty() && self.role_bindings.is_empty()
    }
}

/// How many objects of each kind a [`Policy`] holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyCounts {
    pub roles: usize,
    pub cluster_roles: usize,
    pub role_bindings: usize,
    pub cluster_role_bindings: usize,
}

/// What a user may do in a namespace, as a SelfSubjectRulesReview reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubjectRules {
    /// `status.resourceRules`: one per granted rule that names resources.
    pub resource_rules: Vec<ResourceRule>,
    /// `status.nonResourceRules`: one per granted rule that names non-resource URLs.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// `status.incomplete`: some binding referred to a role that could not be found.
    pub incomplete: bool,
    /// `status.evaluationError`: what could not be resolved, when `incomplete`.
    pub evaluation_error: Option<String>,
}

/// Joins resolution errors as Kubernetes' aggregate error prints them: one error as it is,
/// several as `[a, b]`, repeats left out.
pub(crate) fn aggregate_errors(errors: &[String]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for error in errors {
        if !unique.contains(&error.as_str()) {
            unique.push(error);
        }
    }
    match unique.as_slice() {
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Every RBAC object of the cluster, indexed for authorization. See the module
/// documentation for the cost of each operation.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    cluster_role_bindings: HashMap<String, Binding>,
    cluster_subjects: SubjectIndex,
    namespaces: HashMap<String, NamespacePolicy>,
}

impl Policy {
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy holding `objects`; objects that are not valid RBAC objects are skipped.
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut policy = Self::new();
        for object in objects {
            let _ = policy.apply(object);
        }
        policy
    }

    /// Inserts an RBAC object, replacing the one with the same kind, namespace and name (a
    /// watch's ADDED or MODIFIED event). When a replacement is invalid the old object is
    /// removed too, so a broken update never leaves stale grants behind.
    pub fn apply(&mut self, object: &Value) -> Result<(), PolicyError> {
        match RbacKind::of(object)? {
            RbacKind::Role => self.apply_role(object),
            RbacKind::ClusterRole => self.apply_cluster_role(object),
            RbacKind::RoleBinding => self.apply_role_binding(object),
            RbacKind::ClusterRoleBinding => self.apply_cluster_role_binding(object),
        }
    }

    /// Removes the RBAC object with this object's kind, namespace and name (a watch's
    /// DELETED event). Returns whether something was removed.
    pub fn delete(&mut self, object: &Value) -> bool {
        let Ok(kind) = RbacKind::of(object) else {
            return false;
        };
        let name = meta::name(object).unwrap_or_default();
        let namespace = meta::namespace(object).unwrap_or_default();
        match kind {
            RbacKind::Role => self.remove_role(namespace, name),
            RbacKind::ClusterRole => self.remove_cluster_role(name),
            RbacKind::RoleBinding => self.remove_role_binding(namespace, name),
            RbacKind::ClusterRoleBinding => self.remove_cluster_role_binding(name),
        }
    }

    /// Inserts or replaces a Role.
    pub fn apply_role(&mut self, object: &Value) -> Result<(), PolicyError> {
        let name = meta::name(object).ok_or(PolicyError::MissingName)?;
        let namespace = meta::namespace(object).ok_or(PolicyError::MissingNamespace)?;
        let rules: Arc<[PolicyRule]> = PolicyRule::list_from_object(object).into();
        self.namespaces
            .entry(namespace.to_string())
            .or_default()
            .roles
            .insert(name.to_string(), rules);
        Ok(())
    }

    /// Inserts or replaces a ClusterRole.
    pub fn apply_cluster_role(&mut self, object: &Value) -> Result<(), PolicyError> {
        let name = meta::name(object).ok_or(PolicyError::MissingName)?;
        let rules: Arc<[PolicyRule]> = PolicyRule::list_from_object(object).into();
        self.cluster_roles.insert(name.to_string(), rules);
        Ok(())
    }

    /// Inserts or replaces a RoleBinding.
    pub fn apply_role_binding(&mut self, object: &Value) -> Result<(), PolicyError> {
        let name = meta::name(object).ok_or(PolicyError::MissingName)?;
        let namespace = meta::namespace(object).ok_or(PolicyError::MissingNamespace)?;
        self.remove_role_binding(namespace, name);
        let binding = Binding::from_object(object)?;
        let scope = self.namespaces.entry(namespace.to_string()).or_default();
        scope.subjects.add(name, &binding.subjects, namespace);
        scope.role_bindings.insert(name.to_string(), binding);
        Ok(())
    }

    /// Inserts or replaces a ClusterRoleBinding.
    pub fn apply_cluster_role_binding(&mut self, object: &Value) -> Result<(), PolicyError> {
        let name = meta::name(object).ok_or(PolicyError::MissingName)?;
        self.remove_cluster_role_binding(name);
        let binding = Binding::from_object(object)?;
        self.cluster_subjects.add(name, &binding.subjects, "");
        self.cluster_role_bindings.insert(name.to_string(), binding);
        Ok(())
    }

    pub fn remove_role(&mut self, namespace: &str, name: &str) -> bool {
        let Some(scope) = self.namespaces.get_mut(namespace) else {
            return false;
        };
        let removed = scope.roles.remove(name).is_some();
        if scope.is_empty() {
            self.namespaces.remove(namespace);
        }
        removed
    }

    pub fn remove_cluster_role(&mut self, name: &str) -> bool {
        self.cluster_roles.remove(name).is_some()
    }

    pub fn remove_role_binding(&mut self, namespace: &str, name: &str) -> bool {
        let Some(scope) = self.namespaces.get_mut(namespace) else {
            return false;
        };
        let removed = match scope.role_bindings.remove(name) {
            Some(old) => {
                scope.subjects.remove(name, &old.subjects, namespace);
                true
            }
            None => false,
        };
        if scope.is_empty() {
            self.namespaces.remove(namespace);
        }
        removed
    }

    pub fn remove_cluster_role_binding(&mut self, name: &str) -> bool {
        match self.cluster_role_bindings.remove(name) {
            Some(old) => {
                self.cluster_subjects.remove(name, &old.subjects, "");
                true
            }
            None => false,
        }
    }

    /// How many objects of each kind the policy holds.
    pub fn counts(&self) -> PolicyCounts {
        PolicyCounts {
            roles: self.namespaces.values().map(|n| n.roles.len()).sum(),
            cluster_roles: self.cluster_roles.len(),
            role_bindings: self
                .namespaces
                .values()
                .map(|n| n.role_bindings.len())
                .sum(),
            cluster_role_bindings: self.cluster_role_bindings.len(),
        }
    }

    /// The rules of a ClusterRole, if the policy has it.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(|r| &r[..])
    }

    /// The rules a binding's `roleRef` grants, for a binding in `binding_namespace` ("" for a
    /// cluster role binding), or the error text Kubernetes gives when the role is missing
    /// (`clusterrole.rbac.authorization.k8s.io "x" not found`).
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<&[PolicyRule], String> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(role_ref.name.as_str())
                .map(|r| &r[..])
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {} not found",
                        quote(&role_ref.name)
                    )
                }),
            "Role" => self
                .namespaces
                .get(binding_namespace)
                .and_then(|scope| scope.roles.get(role_ref.name.as_str()))
                .map(|r| &r[..])
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {} not found",
                        quote(&role_ref.name)
                    )
                }),
            other => Err(format!("unsupported role reference kind: {}", quote(other))),
        }
    }

    /// How many bindings a request by `user` in `groups` in `namespace` examines: the
    /// cluster role bindings and the namespace's role bindings that name the user or one of
    /// its groups, found through the subject index. Exposed so callers and tests can see
    /// that the cost does not grow with unrelated bindings.
    pub fn bindings_examined(&self, user: &str, groups: &[String], namespace: &str) -> usize {
        let cluster = self.cluster_subjects.candidates(user, groups).len();
        let local = if namespace.is_empty() {
            0
        } else {
            self.namespaces
                .get(namespace)
                .map_or(0, |scope| scope.subjects.candidates(user, groups).len())
        };
        cluster + local
    }

    /// Visits every rule granted to `user` in `groups` for `namespace` ("" for cluster scope
    /// only): first through cluster role bindings, then through the namespace's role
    /// bindings, each in binding name order. `visit` gets a description of the grant (only
    /// built when asked for) and the rule, and returns `false` to stop. Resolution errors
    /// are collected into `errors`.
    fn visit_rules<'p>(
        &'p self,
        user: &str,
        groups: &[String],
        namespace: &str,
        errors: &mut Vec<String>,
        visit: &mut dyn FnMut(&dyn Fn() -> String, &'p PolicyRule) -> bool,
    ) {
        for name in self.cluster_subjects.candidates(user, groups) {
            let Some(binding) = self.cluster_role_bindings.get(name) else {
                continue;
            };
            match self.role_ref_rules(&binding.role_ref, "") {
                Err(error) => errors.push(error),
                Ok(rules) => {
                    let source = || {
                        let subject = binding
                            .applying_subject(user, groups, "")
                            .map(|s| s.describe(""))
                            .unwrap_or_default();
                        format!(
                            "ClusterRoleBinding {} of {} {} to {subject}",
                            quote(name),
                            binding.role_ref.kind,
                            quote(&binding.role_ref.name)
                        )
                    };
                    for rule in rules {
                        if !visit(&source, rule) {
                            return;
                        }
                    }
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        let Some(scope) = self.namespaces.get(namespace) else {
            return;
        };
        for name in scope.subjects.candidates(user, groups) {
            let Some(binding) = scope.role_bindings.get(name) else {
                continue;
            };
            match self.role_ref_rules(&binding.role_ref, namespace) {
                Err(error) => errors.push(error),
                Ok(rules) => {
                    let source = || {
                        let subject = binding
                            .applying_subject(user, groups, namespace)
                            .map(|s| s.describe(namespace))
                            .unwrap_or_default();
                        format!(
                            "RoleBinding {} of {} {} to {subject}",
                            quote(&format!("{name}/{namespace}")),
                            binding.role_ref.kind,
                            quote(&binding.role_ref.name)
                        )
                    };
                    for rule in rules {
                        if !visit(&source, rule) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Authorizes one request. RBAC allows when some rule granted to the user (directly,
    /// through a group, or as a service account) by a cluster role binding, or by a role
    /// binding in the request's namespace, matches the request; a role binding that grants
    /// a ClusterRole grants it within its own namespace only. Otherwise it has no opinion.
    pub fn authorize(&self, attributes: &Attributes) -> Decision {
        let mut errors = Vec::new();
        let mut allowed = None;
        self.visit_rules(
            attributes.user,
            attributes.groups,
            attributes.namespace,
            &mut errors,
            &mut |source, rule| {
                if rule.allows(attributes) {
                    allowed = Some(source());
                    false
                } else {
                    true
                }
            },
        );
        match allowed {
            Some(source) => Decision::Allow(format!("RBAC: allowed by {source}")),
            None if errors.is_empty() => Decision::NoOpinion(String::new()),
            None => Decision::NoOpinion(format!("RBAC: {}", aggregate_errors(&errors))),
        }
    }

    /// Every rule granted to `user` in `groups` for `namespace` ("" for the cluster scope
    /// only), in the order [`Policy::authorize`] examines them, with the errors met
    /// resolving role references. Kubernetes' `RulesFor`.
    pub fn policy_rules_for(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        let mut errors = Vec::new();
        let mut rules = Vec::new();
        self.visit_rules(user, groups, namespace, &mut errors, &mut |_, rule| {
            rules.push(rule.clone());
            true
        });
        (rules, errors)
    }

    /// What `user` in `groups` may do in `namespace`, as a SelfSubjectRulesReview reports
    /// it: each granted rule with resources becomes a resource rule, each with non-resource
    /// URLs a non-resource rule (in grant order, repeats kept). Missing roles make the answer
    /// incomplete.
    pub fn rules_for(&self, user: &str, groups: &[String], namespace: &str) -> SubjectRules {
        let (rules, errors) = self.policy_rules_for(user, groups, namespace);
        let mut review = SubjectRules::default();
        for rule in rules {
            if !rule.resources.is_empty() {
                review.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if !rule.non_resource_urls.is_empty() {
                review.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        if !errors.is_empty() {
            review.incomplete = true;
            review.evaluation_error = Some(aggregate_errors(&errors));
        }
        review
    }
}
