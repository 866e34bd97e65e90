//! The resource quota controller's side (`syncResourceQuota`):
//! recalculating `status.used` from the namespace's objects, building the status object,
//! and telling which resources a quota tracks so the server can skip quota work cheaply.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::evaluator::{self, Evaluator, Kind};
use super::scopes;
use crate::resource_list::ResourceList;
use kyb_apimachinery::json::{at, map_at};

/// A (group, resource) pair; `group` is "" for the core API.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

/// The resource names a quota tracks: the keys of `spec.hard` and `status.hard`.
pub fn tracked_resources(quota: &Value) -> BTreeSet<String> {
    tracked_names(quota).map(str::to_string).collect()
}

/// The keys of `spec.hard` and `status.hard`, without allocating.
fn tracked_names(quota: &Value) -> impl Iterator<Item = &str> {
    [["spec", "hard"], ["status", "hard"]]
        .into_iter()
        .filter_map(move |path| map_at(quota, &path))
        .flat_map(|m| m.keys().map(String::as_str))
}

/// The evaluators (group, resource) that account for some of `names`: the dedicated and
/// legacy ones, plus one per object-count name.
fn evaluators_for<'n>(names: &'n BTreeSet<String>) -> Vec<Evaluator<'n>> {
    let mut out: Vec<Evaluator<'n>> = [
        ("", "pods"),
        ("", "services"),
        ("", "persistentvolumeclaims"),
        ("", "configmaps"),
        ("", "resourcequotas"),
        ("", "replicationcontrollers"),
        ("", "secrets"),
    ]
    .into_iter()
    .filter_map(|(g, r)| Evaluator::for_resource(g, r))
    .collect();
    for name in names {
        if let Some((g, r)) = evaluator::counted_resource(name)
            && !out.iter().any(|e| e.group == g && e.resource == r)
            && let Some(e) = Evaluator::for_resource(g, r)
        {
            out.push(e);
        }
    }
    out.retain(|e| names.iter().any(|n| e.matches_resource(n)));
    out
}

/// The (group, resource) pairs whose writes a quota can be charged for: a write to any
/// other resource leaves the quota alone, so when no quota of a namespace affects a
/// resource the server can skip quota admission for it.
pub fn affected_resources(quota: &Value) -> BTreeSet<GroupResource> {
    let names = tracked_resources(quota);
    evaluators_for(&names)
        .iter()
        .map(|e| GroupResource::new(e.group, e.resource))
        .collect()
}

/// Whether any of `quotas` can be charged for writes to (group, resource).
pub fn may_affect(quotas: &[Value], group: &str, resource: &str) -> bool {
    let Some(ev) = Evaluator::for_resource(group, resource) else {
        return false;
    };
    quotas
        .iter()
        .any(|q| tracked_names(q).any(|n| ev.matches_resource(n)))
}

/// The full `status.used` of a quota computed from the namespace's current objects
/// (`CalculateUsage`): for every `spec.hard` name some evaluator accounts for, the sum of
/// the usage of the matching objects (zero when none). `objects(group, resource)` lists
/// the quota's namespace's objects of that resource; it is called once per resource the
/// quota tracks. Names no evaluator accounts for are left out (see [`status`]).
pub fn recalculate_at<F, I, V>(quota: &Value, mut objects: F, now: Timestamp) -> ResourceList
where
    F: FnMut(&str, &str) -> I,
    I: IntoIterator<Item = V>,
    V: Borrow<Value>,
{
    let hard: BTreeSet<String> = map_at(quota, &["spec", "hard"])
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let selectors = scopes::selectors(quota);
    let mut total = ResourceList::new();
    for ev in evaluators_for(&hard) {
        let tracked = ev.matching_resources(hard.iter().map(String::as_str));
        let mut used = ResourceList::new();
        for name in &tracked {
            used.insert(
                name.clone(),
                kyb_apimachinery::quantity::Quantity::from_int(0),
            );
        }
        // Only pods have scopes; a scoped quota matches no other object.
        if ev.kind == Kind::Pods || selectors.is_empty() {
            for object in objects(ev.group, ev.resource) {
                let object = object.borrow();
                if ev.scopes_match(&selectors, object).unwrap_or(false) {
                    used.add_assign(&ev.usage(object, now));
                }
            }
        }
        total.add_assign(&used.mask(|n| tracked.contains(n)));
    }
    total
}

/// [`recalculate_at`] at the current time.
pub fn recalculate<F, I, V>(quota: &Value, objects: F) -> ResourceList
where
    F: FnMut(&str, &str) -> I,
    I: IntoIterator<Item = V>,
    V: Borrow<Value>,
{
    recalculate_at(quota, objects, Timestamp::now())
}

/// The quota's `status` for a recalculated usage: `hard` a copy of `spec.hard`, `used`
/// the recalculated values over the previous `status.used`, kept to the `spec.hard`
/// names (so tracked but unused resources show `0`, as `kubectl describe quota` prints
/// them). Quantities are written canonically.
pub fn status(quota: &Value, used: &ResourceList) -> Value {
    let hard = ResourceList::from_opt(at(quota, &["spec", "hard"]));
    let mut merged = ResourceList::from_opt(at(quota, &["status", "used"]));
    for (name, q) in used.iter() {
        merged.insert(name, q.clone());
    }
    let merged = merged.mask(|n| hard.contains(n));
    // Empty lists are omitted, as Kubernetes serializes them (`omitempty`).
    let mut out = Map::new();
    if !hard.is_empty() {
        out.insert("hard".to_string(), hard.to_json());
    }
    if !merged.is_empty() {
        out.insert("used".to_string(), merged.to_json());
    }
    Value::Object(out)
}

/// Whether `new_status` (from [`status`]) must be written: `status.hard` differs from
/// `spec.hard` or `status.used` from the new usage, quantities compared by value and a
/// missing list counting as empty (Kubernetes also rewrites a status whose lists are
/// missing; with nothing to track that would rewrite an unchanged status forever).
pub fn status_changed(quota: &Value, new_status: &Value) -> bool {
    let list = |path: &[&str]| ResourceList::from_opt(at(quota, path));
    let new_used = ResourceList::from_opt(at(new_status, &["used"]));
    !list(&["spec", "hard"]).equals(&list(&["status", "hard"]))
        || !new_used.equals(&list(&["status", "used"]))
}
