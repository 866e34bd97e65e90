//! Removing what an applier stopped applying (structured-merge-diff's `prune`).
//!
//! After merging, a field the applier applied last time but not this time is removed
//! from the object when nobody owns it any more (its new configuration included);
//! fields someone else still owns stay. Removing a struct removes everything in it
//! nobody else owns. Only fields of the applier's previous set are ever removed.
//!
//! The computation follows structured-merge-diff step by step: remove the previous
//! set; add back what anyone owns; then remove from the merged object only what was
//! lost and was in the previous set. Field sets are first completed with their named
//! struct fields ("ensure named fields are members"), so owning `spec.replicas`
//! also protects `spec` itself.

use crate::fieldset::{self, Set};
use crate::list_items;
use crate::path::Step;
use crate::schema::{ListKind, Resolved, TypeRef};
use crate::to_set;
use crate::walk::{self, WalkError};
use serde_json::{Map, Value};

/// `merged` without what the applier (whose previous set is `last`) dropped, given
/// the union of every manager's set after this apply.
pub(crate) fn prune(
    merged: Value,
    owned: &Set,
    last: &Set,
    ty: &TypeRef,
) -> Result<Value, WalkError> {
    if fieldset::is_empty(last) {
        return Ok(merged);
    }
    let last = ensure_named(last, ty)?;
    let pruned = remove(&merged, &last, ty)?;
    // Add back what anyone still owns.
    let merged_set = ensure_named(&to_set::field_set(&merged, ty, false)?, ty)?;
    let mut keep = ensure_named(&to_set::field_set(&pruned, ty, false)?, ty)?;
    fieldset::union_into(&mut keep, &ensure_named(owned, ty)?);
    let mut lost = merged_set.clone();
    fieldset::subtract(&mut lost, &keep);
    let pruned = remove(&merged, &lost, ty)?;
    // Only what the applier owned before may go.
    let pruned_set = ensure_named(&to_set::field_set(&pruned, ty, false)?, ty)?;
    let mut gone = merged_set;
    fieldset::subtract(&mut gone, &pruned_set);
    let gone = fieldset::intersection(&gone, &last);
    remove(&merged, &gone, ty)
}

/// `set` with every declared struct field on the way to a member made a member too.
pub(crate) fn ensure_named(set: &Set, ty: &TypeRef) -> Result<Set, WalkError> {
    let mut out = set.clone();
    mark_named(&mut out, ty, 0)?;
    Ok(out)
}

fn mark_named(set: &mut Set, ty: &TypeRef, depth: usize) -> Result<(), WalkError> {
    walk::check_depth(depth)?;
    let resolved = ty.resolve();
    for (key, child) in set.iter_mut() {
        let Value::Object(children) = child else {
            continue;
        };
        if children.is_empty() || (children.len() == 1 && children.contains_key(".")) {
            continue;
        }
        let child_type = if let Some(name) = key.strip_prefix("f:") {
            let (t, declared) = resolved.member(name);
            if declared && resolved_is_struct(resolved) && !children.contains_key(".") {
                children.insert(".".to_owned(), Value::Object(Map::new()));
            }
            t
        } else if key.starts_with("k:") {
            match resolved {
                Resolved::List { item, .. } => item,
                _ => crate::schema::deduced(),
            }
        } else {
            // Below set items and indices nothing is a named field.
            continue;
        };
        mark_named(children, child_type, depth + 1)?;
    }
    Ok(())
}

fn resolved_is_struct(r: Resolved<'_>) -> bool {
    matches!(r, Resolved::Struct { .. } | Resolved::DeducedRoot)
}

/// `v` without the members of `set` (structured-merge-diff's `RemoveItems`). Maps and
/// lists left empty become null, as there.
pub(crate) fn remove(v: &Value, set: &Set, ty: &TypeRef) -> Result<Value, WalkError> {
    let mut path = Vec::new();
    remove_at(v, set, ty, &mut path, 0)
}

fn remove_at<'v>(
    v: &'v Value,
    set: &Set,
    ty: &TypeRef,
    path: &mut Vec<Step<'v>>,
    depth: usize,
) -> Result<Value, WalkError> {
    walk::check_depth(depth)?;
    let resolved = ty.resolve();
    match resolved {
        Resolved::Scalar(_) => Ok(v.clone()),
        Resolved::Struct { atomic: true, .. } | Resolved::Map { atomic: true, .. } => Ok(match v {
            Value::Object(_) => Value::Null,
            other => other.clone(),
        }),
        Resolved::List {
            kind: ListKind::Atomic,
            ..
        } => Ok(match v {
            Value::Array(_) => Value::Null,
            other => other.clone(),
        }),
        Resolved::Deduced => match v {
            Value::Object(_) => remove_map(v, set, resolved, path, depth),
            Value::Array(_) => Ok(Value::Null),
            other => Ok(other.clone()),
        },
        Resolved::Struct { .. } | Resolved::Map { .. } | Resolved::DeducedRoot => {
            remove_map(v, set, resolved, path, depth)
        }
        Resolved::List { item, kind } => {
            let Value::Array(items) = v else {
                return Ok(v.clone());
            };
            let mut out = Vec::with_capacity(items.len());
            for entry in items {
                let pe =
                    list_items::item_pe(entry, kind, item).map_err(|e| WalkError::at(path, &e))?;
                if fieldset::has_member(set, &pe) {
                    continue;
                }
                match fieldset::child(set, &pe) {
                    Some(sub) => {
                        path.push(Step::Owned(pe.clone()));
                        let kept = remove_at(entry, sub, item, path, depth + 1);
                        path.pop();
                        out.push(kept?);
                    }
                    None => out.push(entry.clone()),
                }
            }
            Ok(if out.is_empty() {
                Value::Null
            } else {
                Value::Array(out)
            })
        }
    }
}

fn remove_map<'v>(
    v: &'v Value,
    set: &Set,
    resolved: Resolved<'_>,
    path: &mut Vec<Step<'v>>,
    depth: usize,
) -> Result<Value, WalkError> {
    let Value::Object(map) = v else {
        return Ok(v.clone());
    };
    let mut out = Map::new();
    let mut key_buf = String::new();
    for (key, child) in map {
        key_buf.clear();
        key_buf.push_str("f:");
        key_buf.push_str(key);
        if fieldset::has_member(set, &key_buf) {
            continue;
        }
        match fieldset::child(set, &key_buf) {
            Some(sub) => {
                let (child_type, _) = resolved.member(key);
                path.push(Step::Field(key));
                let kept = remove_at(child, sub, child_type, path, depth + 1);
                path.pop();
                out.insert(key.clone(), kept?);
            }
            None => {
                out.insert(key.clone(), child.clone());
            }
        }
    }
    Ok(if out.is_empty() {
        Value::Null
    } else {
        Value::Object(out)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn set(v: Value) -> Set {
        match v {
            Value::Object(m) => m,
            _ => Set::new(),
        }
    }

    fn deployment() -> TypeRef {
        TypeRef::root("io.k8s.api.apps.v1.Deployment")
    }

    #[test]
    fn named_fields_become_members() {
        let s = set(json!({"f:spec": {"f:template": {"f:metadata": {"f:labels": {"f:app": {}}}}}}));
        assert_eq!(
            Value::Object(ensure_named(&s, &deployment()).unwrap()),
            json!({"f:spec": {".": {}, "f:template": {".": {}, "f:metadata": {".": {}, "f:labels": {".": {}, "f:app": {}}}}}})
        );
    }

    #[test]
    fn removal_leaves_null_for_emptied_collections() {
        let v = json!({"metadata": {"labels": {"a": "1"}, "name": "x"}, "spec": {"replicas": 1}});
        let s = set(json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {}}));
        assert_eq!(
            remove(&v, &s, &deployment()).unwrap(),
            json!({"metadata": {"labels": null, "name": "x"}})
        );
    }

    #[test]
    fn dropped_fields_go_unless_owned_by_someone() {
        let merged = json!({"spec": {"replicas": 3, "paused": true, "minReadySeconds": 5}});
        let last =
            set(json!({"f:spec": {"f:replicas": {}, "f:paused": {}, "f:minReadySeconds": {}}}));
        // The applier now only applies paused; someone else owns minReadySeconds.
        let owned = set(json!({"f:spec": {"f:paused": {}, "f:minReadySeconds": {}}}));
        assert_eq!(
            prune(merged, &owned, &last, &deployment()).unwrap(),
            json!({"spec": {"paused": true, "minReadySeconds": 5}})
        );
    }

    #[test]
    fn unowned_fields_the_applier_never_had_stay() {
        let merged = json!({"spec": {"replicas": 3, "revisionHistoryLimit": 10, "paused": true}});
        let last = set(json!({"f:spec": {"f:replicas": {}}}));
        let owned = set(json!({"f:spec": {"f:paused": {}}}));
        assert_eq!(
            prune(merged, &owned, &last, &deployment()).unwrap(),
            json!({"spec": {"revisionHistoryLimit": 10, "paused": true}})
        );
    }

    #[test]
    fn a_struct_nobody_owns_goes_whole() {
        let merged =
            json!({"metadata": {"name": "x"}, "spec": {"replicas": 3, "revisionHistoryLimit": 10}});
        let last = set(json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(
            prune(merged, &Set::new(), &last, &deployment()).unwrap(),
            json!({"metadata": {"name": "x"}})
        );
    }

    #[test]
    fn dropping_list_items() {
        let ty = TypeRef::root("io.k8s.api.core.v1.Pod");
        let merged = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let last = set(json!({"f:spec": {"f:containers": {
            "k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:image": {}},
            "k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:image": {}}
        }}}));
        let owned = set(
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:image": {}}}}}),
        );
        assert_eq!(
            prune(merged, &owned, &last, &ty).unwrap(),
            json!({"spec": {"containers": [{"name": "b", "image": "y"}]}})
        );
    }
}
