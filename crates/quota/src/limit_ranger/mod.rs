//! The LimitRanger admission plugin: defaults and min/max/ratio constraints of a
//! namespace's LimitRanges applied to Pods and PersistentVolumeClaims.
//!
//! Kubernetes runs it in two phases: the mutating phase ([`mutate_pod`]) writes defaults
//! for every LimitRange in turn, and the validating phase ([`validate_pod`],
//! [`admit_pvc`]) checks the object against each LimitRange in turn, refusing with the
//! errors of the first LimitRange that has any. [`admit_pod`] runs both back to back.
//!
//! What it looks at ([`applies`]): pod creation, the `pods/resize` subresource (in-place
//! resize, on in 1.33), and claim creation and update — never other pod updates (a pod's
//! containers cannot change), never other subresources. On an update whose old object
//! is being deleted it does nothing ([`skips_update_of`]).
//!
//! The request-defaults-to-limit rule (a container giving only a limit requests that
//! much) belongs to pod defaulting (`SetDefaults_Pod`), which runs when the request is
//! decoded, before admission; [`mutate_pod`] re-applies it first (a no-op on a defaulted
//! pod) so the result is right even for a caller that skipped defaulting.
//!
//! Quantities that do not parse are treated as absent (the API server rejects such
//! objects when it decodes or validates them); LimitRanges are taken in the order given
//! (Kubernetes' lister order is unspecified: sort by name for stable answers), and the
//! resources of one LimitRange item are checked in name order.

mod constraints;
mod defaults;

use serde_json::Value;

use crate::messages;
use crate::pod_resources::{self, SPEC_ONLY, Which};
use crate::resource_list::ResourceList;
use kyb_api::Operation;
use kyb_apimachinery::json::{at, items, map_at, opt_str};

pub use defaults::LIMIT_RANGER_ANNOTATION;

/// LimitRanger's refusal: the messages of the first LimitRange the object violates.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct LimitError {
    /// The name of the LimitRange that refused.
    pub limit_range: String,
    /// Each violated constraint, in the order checked.
    pub errors: Vec<String>,
}

impl LimitError {
    /// The errors joined as Kubernetes joins them (`[e1, e2]`, or `e1` alone); the API
    /// server answers `403 Forbidden` with `pods "x" is forbidden: <message>`.
    pub fn message(&self) -> String {
        messages::aggregate(&self.errors)
    }

    /// The whole `Forbidden` status message for the object (`group` "" for the core API).
    pub fn forbidden_message(&self, group: &str, resource: &str, name: &str) -> String {
        messages::forbidden_message(group, resource, name, &self.message())
    }
}

/// Whether LimitRanger acts on a request.
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    if !group.is_empty() {
        return false;
    }
    matches!(
        (resource, subresource, operation),
        ("pods", "", Operation::Create)
            | ("pods", "resize", Operation::Update)
            | (
                "persistentvolumeclaims",
                "",
                Operation::Create | Operation::Update
            )
    )
}

/// On an update, LimitRanger ignores objects already marked for deletion: true when the
/// old object has a `metadata.deletionTimestamp`.
pub fn skips_update_of(old: &Value) -> bool {
    at(old, &["metadata", "deletionTimestamp"]).is_some()
}

/// The mutating phase for a pod: the defaults of each LimitRange's `Container` items
/// written into containers and init containers lacking them, and the
/// `kubernetes.io/limit-ranger` annotation (`LimitRanger plugin set: cpu, memory request
/// for container nginx; cpu, memory limit for container nginx`; a later LimitRange that
/// sets something rewrites it).
pub fn mutate_pod(pod: &mut Value, limit_ranges: &[Value]) {
    defaults::requests_from_limits(pod);
    for lr in limit_ranges {
        defaults::apply(pod, &defaults::ContainerDefaults::of(lr));
    }
}

/// One container's lists.
struct ContainerLists {
    requests: ResourceList,
    limits: ResourceList,
}

fn container_lists(pod: &Value) -> Vec<ContainerLists> {
    items(pod, &["spec", "containers"])
        .iter()
        .chain(items(pod, &["spec", "initContainers"]))
        .map(|c| ContainerLists {
            requests: pod_resources::container_list(c, Which::Requests),
            limits: pod_resources::container_list(c, Which::Limits),
        })
        .collect()
}

/// An item's constraint list (`min`, `max`, ...), sorted by resource name.
fn item_list(item: &Value, key: &str) -> ResourceList {
    ResourceList::from_opt(at(item, &[key]))
}

fn limit_range_items(lr: &Value) -> impl Iterator<Item = (&str, &Value)> {
    items(lr, &["spec", "limits"])
        .iter()
        .filter_map(|item| opt_str(item, &["type"]).map(|t| (t, item)))
}

/// Checks the three constraint kinds of one item against one pair of lists.
fn check_lists(
    limit_type: &str,
    item: &Value,
    requests: &ResourceList,
    limits: &ResourceList,
    errors: &mut Vec<String>,
) {
    for (name, q) in item_list(item, "min").iter() {
        errors.extend(constraints::min(limit_type, name, q, requests, limits));
    }
    for (name, q) in item_list(item, "max").iter() {
        errors.extend(constraints::max(limit_type, name, q, requests, limits));
    }
    for (name, q) in item_list(item, "maxLimitRequestRatio").iter() {
        errors.extend(constraints::ratio(limit_type, name, q, requests, limits));
    }
}

/// The validating phase for a pod: `Container` items against each container and init
/// container, `Pod` items against the pod's totals (sum of containers raised to the
/// largest init container, sidecars included; no overhead).
pub fn validate_pod(pod: &Value, limit_ranges: &[Value]) -> Result<(), LimitError> {
    let mut containers: Option<Vec<ContainerLists>> = None;
    let mut totals: Option<ContainerLists> = None;
    for lr in limit_ranges {
        let mut errors = Vec::new();
        for (limit_type, item) in limit_range_items(lr) {
            match limit_type {
                "Container" => {
                    for c in containers
                        .get_or_insert_with(|| container_lists(pod))
                        .iter()
                    {
                        check_lists(limit_type, item, &c.requests, &c.limits, &mut errors);
                    }
                }
                "Pod" => {
                    let t = totals.get_or_insert_with(|| ContainerLists {
                        requests: pod_resources::pod_total(pod, Which::Requests, SPEC_ONLY),
                        limits: pod_resources::pod_total(pod, Which::Limits, SPEC_ONLY),
                    });
                    check_lists(limit_type, item, &t.requests, &t.limits, &mut errors);
                }
                _ => {}
            }
        }
        if !errors.is_empty() {
            return Err(LimitError {
                limit_range: kyb_apimachinery::meta::name(lr)
                    .unwrap_or_default()
                    .to_string(),
                errors,
            });
        }
    }
    Ok(())
}

/// Both phases for a pod, as one request sees them: [`mutate_pod`] then [`validate_pod`].
pub fn admit_pod(pod: &mut Value, limit_ranges: &[Value]) -> Result<(), LimitError> {
    mutate_pod(pod, limit_ranges);
    validate_pod(pod, limit_ranges)
}

/// The validating phase for a PersistentVolumeClaim: `PersistentVolumeClaim` items'
/// `min` and `max` against `spec.resources.requests` (claims are never defaulted and
/// their limits are not looked at).
pub fn admit_pvc(pvc: &Value, limit_ranges: &[Value]) -> Result<(), LimitError> {
    let requests = ResourceList::from_opt(at(pvc, &["spec", "resources", "requests"]));
    let no_limits = ResourceList::new();
    for lr in limit_ranges {
        let mut errors = Vec::new();
        for (limit_type, item) in limit_range_items(lr) {
            if limit_type != "PersistentVolumeClaim" {
                continue;
            }
            for (name, q) in item_list(item, "min").iter() {
                errors.extend(constraints::min(limit_type, name, q, &requests, &no_limits));
            }
            for (name, q) in item_list(item, "max").iter() {
                errors.extend(constraints::max_request(limit_type, name, q, &requests));
            }
        }
        if !errors.is_empty() {
            return Err(LimitError {
                limit_range: kyb_apimachinery::meta::name(lr)
                    .unwrap_or_default()
                    .to_string(),
                errors,
            });
        }
    }
    Ok(())
}

/// Whether any LimitRange has an item that could affect the given kind (`Container` or
/// `Pod` items for pods, `PersistentVolumeClaim` items for claims) — a cheap pre-check.
pub fn has_limits_for(limit_ranges: &[Value], resource: &str) -> bool {
    limit_ranges.iter().any(|lr| {
        limit_range_items(lr).any(|(t, item)| {
            let relevant = match resource {
                "pods" => t == "Container" || t == "Pod",
                "persistentvolumeclaims" => t == "PersistentVolumeClaim",
                _ => false,
            };
            relevant
                && [
                    "min",
                    "max",
                    "default",
                    "defaultRequest",
                    "maxLimitRequestRatio",
                ]
                .iter()
                .any(|k| map_at(item, &[k]).is_some_and(|m| !m.is_empty()))
        })
    })
}

#[cfg(test)]
mod tests;
