//! LimitRanger and ResourceQuota, Kubernetes' two built-in resource admission plugins,
//! as pure logic over `serde_json::Value` objects: the API server gathers the inputs
//! (the namespace's LimitRanges, ResourceQuotas and objects) from its cache and performs
//! the writes; this crate decides.
//!
//! Entry points:
//!
//! - LimitRanger: [`applies`] (which requests), [`admit_pod`] (defaults, the
//!   `kubernetes.io/limit-ranger` annotation, then min/max/ratio checks; also as the two
//!   phases [`mutate_pod`] and [`validate_pod`]), [`admit_pvc`], [`skips_update_of`];
//!   refusals are [`LimitError`].
//! - ResourceQuota admission: [`quota_handles`] (which requests), [`check`] /
//!   [`check_at`] (the decision and the quotas' new `status.used` as [`QuotaUpdate`]s,
//!   or a [`QuotaError`]), [`usage`] / [`usage_at`] (what one object counts for),
//!   [`matches_scopes`].
//! - The resource quota controller's recalculation: [`recalculate`] / [`recalculate_at`] (usage from the
//!   namespace's objects), [`status`], [`status_changed`].
//! - Cheap pre-checks: [`tracked_resources`], [`affected_resources`], [`may_affect`],
//!   [`has_limits_for`].
//! - Shared: [`ResourceList`], [`Operation`], [`forbidden_message`],
//!   [`scope_allows_resource`].
//!
//! Hostile input: objects are read defensively (a field of the wrong type reads as
//! absent) and a quantity that does not parse is treated as absent — never a panic.
//! Kubernetes cannot hold such objects (decoding rejects them with 400), and the API
//! server validates objects before the validating admission phase, so this only guards
//! against corrupt data. The consequences are the conservative ones: a LimitRange or
//! quota limit that does not parse is not enforced, a container quantity that does not
//! parse counts as missing (so `min` and `must specify` checks refuse), and a quota whose
//! `status.used` does not parse refuses writes with `status unknown` until the resource
//! quota controller rewrites it.

mod limit_ranger;
mod messages;
mod pod_resources;
mod quota;
mod resource_list;

pub use kyb_api::Operation;
pub use limit_ranger::{
    LIMIT_RANGER_ANNOTATION, LimitError, admit_pod, admit_pvc, applies, has_limits_for, mutate_pod,
    skips_update_of, validate_pod,
};
pub use messages::{aggregate, forbidden_message};
pub use quota::{
    GroupResource, QuotaError, QuotaUpdate, affected_resources, check, check_at,
    handles as quota_handles, matches_scopes, may_affect, recalculate, recalculate_at,
    scope_allows_resource, status, status_changed, tracked_resources, usage, usage_at,
};
pub use resource_list::ResourceList;
