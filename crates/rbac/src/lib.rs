//! Kubernetes RBAC over RBAC objects in their JSON form (`serde_json::Value`, as the API
//! server stores them). Pure logic, no I/O: the API server keeps a [`Policy`] current from
//! its watch of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings and asks it on
//! every request.
//!
//! - [`Policy::authorize`]: allow or no opinion for one request's [`Attributes`], with the
//!   reason texts Kubernetes gives ([`Attributes::forbidden_message`] builds the 403).
//! - [`Policy::rules_for`]: what a user may do in a namespace, for SelfSubjectRulesReview.
//! - [`escalation`]: nobody grants what they do not hold: [`covers`],
//!   [`Policy::may_bind`], [`Policy::may_write_role`], [`Policy::check_write`].
//! - [`aggregation`]: the rules of aggregated ClusterRoles, for the aggregation controller.
//! - [`bootstrap`]: the default roles and bindings of a Kubernetes 1.33 cluster.
//!
//! Objects come from storage or clients: nothing here panics on them. An object that is not
//! a valid RBAC object is skipped (and reported to the caller), and badly typed fields read
//! as empty, which can only narrow what a rule grants.

pub mod aggregation;
mod attributes;
pub mod bootstrap;
pub mod escalation;
mod policy;
mod rule;
mod subject;
mod subject_index;

pub use attributes::{Attributes, Decision};
pub use escalation::{Refusal, RoleChange, covers};
pub use policy::{Policy, PolicyCounts, PolicyError, RbacKind, SubjectRules};
pub use rule::{ALL, NonResourceRule, PolicyRule, ResourceRule};
pub use subject::{
    RBAC_GROUP, RoleRef, SERVICE_ACCOUNT_PREFIX, Subject, SubjectKind, service_account_username,
    subjects_of,
};
