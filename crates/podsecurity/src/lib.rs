//! Pod Security admission as pure functions over objects in their JSON form
//! (`serde_json::Value`): the Pod Security Standards checks of every level and policy
//! version (v1.0 … v1.33 and `latest`, as Kubernetes 1.33 evaluates them), and the
//! PodSecurity admission plugin's decisions, with Kubernetes' exact message texts.
//!
//! Entry points:
//! - [`namespace_policy`] / [`effective_policy`]: a namespace's [`NamespacePolicy`]
//!   (enforce, audit and warn [`LevelVersion`]s) from its `pod-security.kubernetes.io/*`
//!   labels, with the [`LabelError`]s of invalid values.
//! - [`check_pod`]: the [`CheckFailure`]s of a pod or pod template at a level and version,
//!   in Kubernetes' order; [`forbidden_reason`], [`violation_warning`],
//!   [`forbidden_detail`] and [`failure_reasons`] build the messages from them.
//! - [`admit`]: the plugin's [`Decision`] (allowed or refused, warnings, audit annotations)
//!   for one [`Request`] on a pod, a workload with a pod template, or a namespace;
//!   [`Decision::status`] gives the `Status` of a refusal.
//! - [`check_namespace_update`] / [`check_namespace_pods`]: the warnings about existing
//!   pods when a namespace's enforce level is set or tightened.
//! - Helpers the caller may need on its own: [`is_significant_pod_update`],
//!   [`pod_template`], [`classify`], [`exempt_namespace_warning`].
//!
//! Nothing here does I/O: the caller passes the namespace's labels, the objects, the
//! admission configuration ([`Exemptions`], defaults) and, for namespace updates, the
//! namespace's pods. Objects come from clients: missing or mistyped fields read as unset
//! (Go's zero values) and nothing panics on them.

pub mod admission;
pub mod checks;
pub mod labels;
pub mod level;
pub mod namespace;
mod pod;
mod text;
pub mod update;
pub mod workload;

pub use admission::{Decision, Denial, Exemptions, Operation, Request, admit};
pub use checks::{
    CheckFailure, NEWEST_POLICY_VERSION, check_pod, failure_reasons, forbidden_detail,
    forbidden_reason, violation_warning,
};
pub use labels::{LabelError, NamespacePolicy, effective_policy, namespace_policy};
pub use level::{Level, LevelVersion, Version};
pub use namespace::{
    FAILED_TO_LIST_PODS, PodCheckLimits, check_namespace_pods, check_namespace_update,
    exempt_namespace_warning,
};
pub use update::is_significant_pod_update;
pub use workload::{ResourceClass, classify, pod_template};
