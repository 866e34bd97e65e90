//! The ResourceQuota admission plugin and the resource quota controller's recalculation:
//! what objects use ([`usage`]), which quotas they fall under ([`matches_scopes`]), the
//! admission decision with the quotas' new usage ([`check`]), and the usage recalculated
//! from scratch ([`recalculate`], [`status`]).
//!
//! Accounting follows Kubernetes 1.33: pods (object count, `pods`, cpu, memory,
//! ephemeral storage requests and limits, hugepages, extended resources as
//! `requests.<name>`; the pod's effective requests with init containers, sidecars,
//! overhead and in-place resizes in progress; terminal pods and pods past their deletion
//! grace period count only as objects), services (count, node ports, load balancers),
//! PersistentVolumeClaims (count and storage, also per storage class), and an object
//! count `count/<resource>[.<group>]` for every other resource.
//!
//! Scopes: `Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`,
//! `PriorityClass` (`In`, `NotIn`, `Exists`, `DoesNotExist`), `CrossNamespacePodAffinity`;
//! they select pods only (a scoped quota matches no other object).
//!
//! Not covered: the admission configuration's `limitedResources` (off by default),
//! DRA ResourceClaim quotas and the `VolumeAttributesClass` scope (off by default in
//! 1.33), pod-level `spec.resources` (alpha, off).

mod admission;
mod evaluator;
mod scopes;
mod status;

use jiff::Timestamp;
use serde_json::Value;

use crate::resource_list::ResourceList;
use kyb_api::Operation;

pub use admission::{QuotaError, QuotaUpdate};
pub use scopes::scope_allows_resource;
pub use status::{
    GroupResource, affected_resources, may_affect, recalculate, recalculate_at, status,
    status_changed, tracked_resources,
};

/// Whether quota admission looks at a request: not for the resources quota ignores
/// (events, reviews, bindings, componentstatuses); pods on creation and on the `resize`
/// subresource; services and claims on creation and update; every other resource on
/// creation. Subresources otherwise never. The caller also skips cluster-scoped
/// resources and namespace creation.
pub fn handles(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    evaluator::Evaluator::for_resource(group, resource)
        .is_some_and(|ev| ev.handles(operation, subresource))
}

/// What one object counts for in quota, at time `now` (which decides whether a pod
/// being deleted is past its grace period).
pub fn usage_at(group: &str, resource: &str, object: &Value, now: Timestamp) -> ResourceList {
    evaluator::Evaluator::for_resource(group, resource)
        .map(|ev| ev.usage(object, now))
        .unwrap_or_default()
}

/// What one object counts for in quota, now. Resources quota ignores count nothing.
pub fn usage(group: &str, resource: &str, object: &Value) -> ResourceList {
    usage_at(group, resource, object, Timestamp::now())
}

/// Whether an object satisfies all of a quota's scopes (`spec.scopes` and
/// `spec.scopeSelector`). A quota without scopes matches everything; a scoped quota
/// matches only pods. The error is Kubernetes' message for an unusable selector.
pub fn matches_scopes(
    quota: &Value,
    group: &str,
    resource: &str,
    object: &Value,
) -> Result<bool, String> {
    let selectors = scopes::selectors(quota);
    match evaluator::Evaluator::for_resource(group, resource) {
        Some(ev) => ev.scopes_match(&selectors, object),
        None => Ok(selectors.is_empty()),
    }
}

/// The quota admission decision for one write, at time `now`.
///
/// `quotas` are the namespace's ResourceQuotas (checked in the order given: sort them by
/// name for stable answers); `new` the object being written, `old` the stored one on an
/// update. Operations quota does not handle for the resource ([`handles`]) change
/// nothing; for pods an `Update` is taken to be the `resize` subresource (the only pod
/// update quota sees). Returns the quotas whose `status.used` must be written (the
/// caller writes them with compare-and-swap on `resource_version` before persisting the
/// object and, on a conflict, re-reads the quotas and calls this again; a dry run writes
/// nothing), or the refusal.
pub fn check_at(
    quotas: &[Value],
    group: &str,
    resource: &str,
    operation: Operation,
    new: Option<&Value>,
    old: Option<&Value>,
    now: Timestamp,
) -> Result<Vec<QuotaUpdate>, QuotaError> {
    let Some(ev) = evaluator::Evaluator::for_resource(group, resource) else {
        return Ok(Vec::new());
    };
    let subresource = if ev.kind == evaluator::Kind::Pods && operation == Operation::Update {
        "resize"
    } else {
        ""
    };
    if !ev.handles(operation, subresource) || quotas.is_empty() {
        return Ok(Vec::new());
    }
    let Some(new) = new else {
        return Ok(Vec::new());
    };
    admission::check(quotas, &ev, operation, new, old, now)
}

/// [`check_at`] at the current time.
pub fn check(
    quotas: &[Value],
    group: &str,
    resource: &str,
    operation: Operation,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<Vec<QuotaUpdate>, QuotaError> {
    check_at(
        quotas,
        group,
        resource,
        operation,
        new,
        old,
        Timestamp::now(),
    )
}

#[cfg(test)]
mod tests;
