//! Kubernetes API server auditing, as kube-apiserver does it: the audit policy that
//! decides how much of each request to record, the `audit.k8s.io/v1` events, and the
//! audit log file.
//!
//! Entry points, in the order a request meets them:
//!
//! - [`Policy`]: `--audit-policy-file`. [`Policy::load`] / [`Policy::parse`] read and
//!   validate it; [`Policy::evaluate`] gives a request's [`RuleDecision`] (level, omitted
//!   stages, `omitManagedFields`) from its [`RequestAttributes`] without allocating.
//! - [`audit_id_for`] / [`new_audit_id`]: the request's audit ID (the client's `Audit-ID`
//!   header or a new UUID), which the server also echoes in the `Audit-ID` response
//!   header; [`source_ips`] collects the event's `sourceIPs`.
//! - [`AuditContext`]: the event builder. [`AuditContext::new`] takes the decision, the
//!   attributes and the [`RequestMetadata`]; the server then sets what it learns
//!   (`set_user`, `set_impersonated_user`, `set_object_ref`, `set_request_object`,
//!   `set_response`, `add_annotation`, `set_authorization_decision`) and calls
//!   [`AuditContext::event`] at each [`Stage`] for one JSON line (`None` when the level is
//!   `None` or the stage is omitted). A level-`None` context allocates nothing.
//! - [`AuditLog`]: `--audit-log-path` and the rotation flags ([`AuditLogConfig`]): JSON
//!   lines appended by a background thread through a bounded buffer, rotated and pruned
//!   like kube-apiserver's log; [`AuditLog::flush`] at shutdown.
//!
//! Pure logic apart from the log writer's file and thread; no network.

mod attributes;
mod audit_id;
mod event;
mod level;
mod log;
mod policy;
mod source_ips;
mod time;

pub use attributes::{RequestAttributes, ResourceAttributes};
pub use audit_id::{AUDIT_ID_HEADER, audit_id_for, new_audit_id};
pub use event::{
    AuditContext, DECISION_ANNOTATION, ObjectRef, REASON_ANNOTATION, RequestMetadata, UserInfo,
};
pub use level::{Level, Stage, StageSet};
pub use log::{
    AuditLog, AuditLogConfig, AuditLogError, AuditLogStats, DEFAULT_BLOCK_TIMEOUT,
    DEFAULT_BUFFER_BYTES, DEFAULT_BUFFER_EVENTS, DEFAULT_MAX_SIZE_MIB,
};
pub use policy::{POLICY_API_VERSION, Policy, PolicyError, RuleDecision};
pub use source_ips::source_ips;
pub use time::MicroTime;
