//! The ResourceQuota admission check (`CheckRequest`): which quotas a write concerns, the
//! usage it adds, and either the quotas' new `status.used` or Kubernetes' refusal.
//!
//! Enforcement reads `status.hard` and `status.used`, as Kubernetes does: a quota the
//! resource quota controller has not synced yet (no `status.hard`) constrains nothing, and a quota
//! whose `status.hard` names a resource this write touches but whose `status.used` lacks
//! it refuses with `status unknown for quota`.

use jiff::Timestamp;
use serde_json::Value;

use super::evaluator::Evaluator;
use super::scopes;
use crate::messages;
use crate::resource_list::ResourceList;
use kyb_api::Operation;
use kyb_apimachinery::json::{at, map_at, opt_str};

/// Why a write was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuotaError {
    /// `403 Forbidden` with this message after `<resource> "<name>" is forbidden: `
    /// (`exceeded quota: ...`, `failed quota: ...`, `status unknown for quota: ...`).
    #[error("{0}")]
    Forbidden(String),
    /// A quota could not be evaluated (an invalid scope selector). Kubernetes returns the
    /// plain error, which the API server answers as `500` with this message and an empty
    /// reason.
    #[error("{0}")]
    Internal(String),
}

impl QuotaError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            QuotaError::Forbidden(m) | QuotaError::Internal(m) => m,
        }
    }

    /// The whole status message: for `Forbidden`, `<resource> "<name>" is forbidden: ...`
    /// (`group` "" for the core API); for `Internal`, the message itself.
    pub fn status_message(&self, group: &str, resource: &str, name: &str) -> String {
        match self {
            QuotaError::Forbidden(m) => messages::forbidden_message(group, resource, name, m),
            QuotaError::Internal(m) => m.clone(),
        }
    }

    /// The HTTP status code Kubernetes answers with (403 or 500).
    pub fn code(&self) -> u16 {
        match self {
            QuotaError::Forbidden(_) => 403,
            QuotaError::Internal(_) => 500,
        }
    }
}

/// A quota whose `status.used` the admitted write changes. The caller writes `used` to
/// the quota's status guarded by `resource_version` (compare-and-swap) before it
/// persists the object; on a conflict it re-reads the quotas and calls `check` again.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaUpdate {
    pub namespace: String,
    pub name: String,
    pub resource_version: String,
    /// The quota's new `status.used` (all of it).
    pub used: ResourceList,
}

impl QuotaUpdate {
    /// The new `status.used` as JSON.
    pub fn used_json(&self) -> Value {
        self.used.to_json()
    }

    /// Writes the new `status.used` into a copy of the quota object.
    pub fn apply_to(&self, quota: &mut Value) {
        let Some(obj) = quota.as_object_mut() else {
            return;
        };
        let status = obj
            .entry("status")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !status.is_object() {
            *status = Value::Object(serde_json::Map::new());
        }
        if let Some(status) = status.as_object_mut() {
            status.insert("used".to_string(), self.used_json());
        }
    }
}

/// Whether `quota` matches the object for this evaluator (`generic.Matches`): its
/// `status.hard` names a resource the evaluator accounts for, and the object satisfies
/// every scope.
fn matches(
    ev: &Evaluator<'_>,
    hard: &ResourceList,
    selectors: &[scopes::ScopeSelector],
    object: &Value,
) -> Result<bool, String> {
    if !hard.names().any(|n| ev.matches_resource(n)) {
        return Ok(false);
    }
    ev.scopes_match(selectors, object)
}

/// One quota the write concerns.
struct Interesting<'q> {
    quota: &'q Value,
    hard: ResourceList,
    used: ResourceList,
    selectors: Vec<scopes::ScopeSelector>,
}

/// The admission decision for one write; see [`crate::check`].
pub(crate) fn check(
    quotas: &[Value],
    ev: &Evaluator<'_>,
    operation: Operation,
    new: &Value,
    old: Option<&Value>,
    now: Timestamp,
) -> Result<Vec<QuotaUpdate>, QuotaError> {
    let mut interesting: Vec<Interesting<'_>> = Vec::new();
    for quota in quotas {
        let selectors = scopes::selectors(quota);
        ev.check_scopes(&selectors, new).map_err(|e| {
            QuotaError::Internal(format!(
                "error matching scopes of quota {}, err: {e}",
                kyb_apimachinery::meta::name(quota).unwrap_or_default()
            ))
        })?;
        // Cheap test on the names before parsing any quantity.
        let tracks = map_at(quota, &["status", "hard"])
            .is_some_and(|m| m.keys().any(|n| ev.matches_resource(n)));
        if !tracks {
            continue;
        }
        let hard = ResourceList::from_opt(at(quota, &["status", "hard"]));
        if !matches(ev, &hard, &selectors, new).map_err(QuotaError::Internal)? {
            continue;
        }
        let restricted = ev.matching_resources(hard.names());
        ev.constraints(&restricted, new).map_err(|e| {
            QuotaError::Forbidden(format!(
                "failed quota: {}: {e}",
                kyb_apimachinery::meta::name(quota).unwrap_or_default()
            ))
        })?;
        let used = ResourceList::from_opt(at(quota, &["status", "used"]));
        if restricted.iter().any(|r| !used.contains(r)) {
            return Err(QuotaError::Forbidden(format!(
                "status unknown for quota: {}, resources: {}",
                kyb_apimachinery::meta::name(quota).unwrap_or_default(),
                restricted.iter().cloned().collect::<Vec<_>>().join(",")
            )));
        }
        interesting.push(Interesting {
            quota,
            hard,
            used,
            selectors,
        });
    }

    // Measured even when no quota matched: a negative usage is refused regardless.
    let input = ev.usage(new, now);
    let negative = input.negative_names();
    if !negative.is_empty() {
        return Err(QuotaError::Forbidden(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        )));
    }
    if interesting.is_empty() {
        return Ok(Vec::new());
    }

    // Per quota: the full usage, or on an update of a stored object that the quota
    // already counted, only the growth (never a credit: shrinking frees quota only when
    // the resource quota controller recalculates).
    let mut deltas: Vec<ResourceList> = vec![input.clone(); interesting.len()];
    if operation == Operation::Update {
        let Some(old) = old else {
            return Err(QuotaError::Forbidden(
                "unable to get previous usage since prior version of object was not found"
                    .to_string(),
            ));
        };
        if opt_str(old, &["metadata", "resourceVersion"]).is_some_and(|rv| !rv.is_empty()) {
            let growth = input.sub_non_negative(&ev.usage(old, now));
            for (i, q) in interesting.iter().enumerate() {
                if matches(ev, &q.hard, &q.selectors, old).map_err(QuotaError::Internal)?
                    && let Some(d) = deltas.get_mut(i)
                {
                    *d = growth.clone();
                }
            }
        }
    }

    let mut updates = Vec::new();
    for (q, mut delta) in interesting.iter().zip(deltas) {
        delta.remove_zeros();
        if delta.is_empty() {
            continue;
        }
        let requested = delta.mask(|n| q.hard.contains(n));
        let new_used = q.used.add(&requested);
        let exceeded = new_used.mask(|n| requested.contains(n)).exceeding(&q.hard);
        if !exceeded.is_empty() {
            let pick = |l: &ResourceList| l.mask(|n| exceeded.iter().any(|e| e == n)).pretty();
            return Err(QuotaError::Forbidden(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                kyb_apimachinery::meta::name(q.quota).unwrap_or_default(),
                pick(&requested),
                pick(&q.used),
                pick(&q.hard)
            )));
        }
        if !new_used.equals(&q.used) {
            updates.push(QuotaUpdate {
                namespace: opt_str(q.quota, &["metadata", "namespace"])
                    .unwrap_or_default()
                    .to_string(),
                name: kyb_apimachinery::meta::name(q.quota)
                    .unwrap_or_default()
                    .to_string(),
                resource_version: opt_str(q.quota, &["metadata", "resourceVersion"])
                    .unwrap_or_default()
                    .to_string(),
                used: new_used,
            });
        }
    }
    Ok(updates)
}
