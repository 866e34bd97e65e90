//! Merging an applied configuration into the live object (structured-merge-diff's
//! `Merge`).
//!
//! The configuration wins at every leaf; maps and structs merge key by key; set and
//! map lists merge item by item, the configuration's items in its order with the
//! live object's other items kept around them; atomic values are replaced whole. A
//! value empty or null on both sides is a leaf (the configuration's spelling wins).
//! An item the live object repeats is replaced by the configured one, or kept as is
//! when the configuration does not mention it.

use crate::list_items::{self, Item, Keyed};
use crate::path::Step;
use crate::schema::{ListKind, Resolved, TypeRef};
use crate::walk::{self, WalkError};
use serde_json::{Map, Value};

/// `config` merged into `live`.
pub(crate) fn merge(live: &Value, config: &Value, ty: &TypeRef) -> Result<Value, WalkError> {
    let mut m = Merger { path: Vec::new() };
    Ok(m.walk(Some(live), Some(config), ty, 0)?
        .unwrap_or(Value::Null))
}

struct Merger<'v> {
    path: Vec<Step<'v>>,
}

impl<'v> Merger<'v> {
    fn walk(
        &mut self,
        lhs: Option<&'v Value>,
        rhs: Option<&'v Value>,
        ty: &TypeRef,
        depth: usize,
    ) -> Result<Option<Value>, WalkError> {
        walk::check_depth(depth)?;
        let (lhs, rhs) = match (lhs, rhs) {
            (None, None) => return Ok(None),
            (Some(l), None) => return Ok(Some(l.clone())),
            (None, Some(r)) => return Ok(Some(r.clone())),
            (Some(l), Some(r)) => (l, r),
        };
        let resolved = ty.resolve();
        let merged = match resolved {
            Resolved::Scalar(_)
            | Resolved::Struct { atomic: true, .. }
            | Resolved::Map { atomic: true, .. }
            | Resolved::List {
                kind: ListKind::Atomic,
                ..
            } => rhs.clone(),
            Resolved::Deduced => {
                if lhs.is_object() && (rhs.is_object() || rhs.is_null()) {
                    self.walk_map(lhs, rhs, resolved, depth)?
                } else {
                    rhs.clone()
                }
            }
            Resolved::Struct { .. } | Resolved::Map { .. } | Resolved::DeducedRoot => {
                self.walk_map(lhs, rhs, resolved, depth)?
            }
            Resolved::List { item, kind } => self.walk_list(lhs, rhs, item, kind, depth)?,
        };
        Ok(Some(merged))
    }

    fn walk_map(
        &mut self,
        lhs: &'v Value,
        rhs: &'v Value,
        resolved: Resolved<'_>,
        depth: usize,
    ) -> Result<Value, WalkError> {
        if walk::empty_map(Some(lhs)) && walk::empty_map(Some(rhs)) {
            return Ok(rhs.clone());
        }
        let (lm, rm) = (lhs.as_object(), rhs.as_object());
        let mut out = Map::new();
        for key in walk::union_keys(lm, rm) {
            let (child_type, _) = resolved.member(key);
            self.path.push(Step::Field(key));
            let merged = self.walk(
                lm.and_then(|m| m.get(key)),
                rm.and_then(|m| m.get(key)),
                child_type,
                depth + 1,
            );
            self.path.pop();
            if let Some(v) = merged? {
                out.insert(key.to_owned(), v);
            }
        }
        Ok(Value::Object(out))
    }

    fn walk_list(
        &mut self,
        lhs: &'v Value,
        rhs: &'v Value,
        item_type: &TypeRef,
        kind: &ListKind,
        depth: usize,
    ) -> Result<Value, WalkError> {
        if walk::empty_list(Some(lhs)) && walk::empty_list(Some(rhs)) {
            return Ok(rhs.clone());
        }
        let key = |v: &'v Value, path: &[Step<'_>]| match v.as_array() {
            Some(items) => list_items::key(items, kind, item_type, true)
                .map_err(|e| WalkError::at(path, &e.message())),
            None => Ok(Keyed::default()),
        };
        let left = key(lhs, &self.path)?;
        let right = key(rhs, &self.path)?;
        let mut out = Vec::with_capacity(left.items.len().max(right.items.len()));
        for step in order(&left, &right) {
            match step {
                Take::Left(i) => {
                    if let Some(item) = left.items.get(i) {
                        out.extend(item.values.iter().map(|v| (*v).clone()));
                    }
                }
                Take::Right(i) => {
                    let Some(r) = right.items.get(i) else {
                        continue;
                    };
                    match left.find(&r.pe) {
                        Some(l) => self.merge_item(l, r, item_type, depth, &mut out)?,
                        None => out.extend(r.values.iter().map(|v| (*v).clone())),
                    }
                }
            }
        }
        Ok(Value::Array(out))
    }

    fn merge_item(
        &mut self,
        l: &Item<'v>,
        r: &Item<'v>,
        item_type: &TypeRef,
        depth: usize,
        out: &mut Vec<Value>,
    ) -> Result<(), WalkError> {
        match (l.single(), r.single()) {
            (Some(lv), Some(rv)) => {
                self.path.push(Step::Owned(r.pe.clone()));
                let merged = self.walk(Some(lv), Some(rv), item_type, depth + 1);
                self.path.pop();
                if let Some(v) = merged? {
                    out.push(v);
                }
            }
            // A repeated item is replaced by what the configuration says.
            _ => out.extend(r.values.iter().map(|v| (*v).clone())),
        }
        Ok(())
    }
}

/// Where the next merged item comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// An item only the live list has (by index into its items).
    Left(usize),
    /// An item of the configuration, merged with the live one if any.
    Right(usize),
}

/// The order of the merged list: the configuration's items in its order, each live
/// item the configuration does not mention kept before the next configured item that
/// follows it in the live list.
fn order(left: &Keyed<'_>, right: &Keyed<'_>) -> Vec<Take> {
    let (l_len, r_len) = (left.items.len(), right.items.len());
    let in_right = |i: usize| {
        left.items
            .get(i)
            .is_some_and(|it| right.find(&it.pe).is_some())
    };
    // Configured items the live list also has, in configured order.
    let shared: Vec<&str> = right
        .items
        .iter()
        .filter(|it| left.find(&it.pe).is_some())
        .map(|it| it.pe.as_str())
        .collect();
    let mut next_shared = shared.iter().copied().peekable();
    let mut out = Vec::with_capacity(l_len.max(r_len));
    let (mut li, mut ri) = (0, 0);
    while li < l_len || ri < r_len {
        let before = (li, ri);
        if li < l_len && ri < r_len {
            let lpe = left.items.get(li).map(|i| i.pe.as_str());
            let rpe = right.items.get(ri).map(|i| i.pe.as_str());
            if lpe == rpe {
                out.push(Take::Right(ri));
                li += 1;
                ri += 1;
                next_shared.next();
                continue;
            }
            if in_right(li) && next_shared.peek().is_some_and(|n| Some(*n) != lpe) {
                // A shared item, but not the one due now: it comes with the
                // configuration's order.
                li += 1;
                continue;
            }
        }
        if li < l_len && !in_right(li) {
            out.push(Take::Left(li));
            li += 1;
            continue;
        }
        if ri < r_len {
            let rpe = right.items.get(ri).map(|i| i.pe.as_str());
            out.push(Take::Right(ri));
            ri += 1;
            if next_shared.peek().is_some_and(|n| Some(*n) == rpe) {
                next_shared.next();
            }
        }
        if (li, ri) == before {
            // Only live items the configuration has already placed remain.
            li += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn pod() -> TypeRef {
        TypeRef::root("io.k8s.api.core.v1.Pod")
    }

    #[test]
    fn leaves_take_the_configuration() {
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"nodeSelector": {"x": "y"}}});
        let config =
            json!({"metadata": {"labels": {"a": "9"}}, "spec": {"nodeSelector": {"z": "w"}}});
        assert_eq!(
            merge(&live, &config, &pod()).unwrap(),
            json!({"metadata": {"labels": {"a": "9", "b": "2"}}, "spec": {"nodeSelector": {"z": "w"}}})
        );
    }

    #[test]
    fn map_lists_merge_by_key_in_configured_order() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "a1"}, {"name": "x", "image": "x1"}, {"name": "b", "image": "b1"}
        ]}});
        let config = json!({"spec": {"containers": [{"name": "b", "image": "b2"}, {"name": "c"}, {"name": "a"}]}});
        let merged = merge(&live, &config, &pod()).unwrap();
        assert_eq!(
            merged,
            json!({"spec": {"containers": [
                {"name": "x", "image": "x1"},
                {"name": "b", "image": "b2"},
                {"name": "c"},
                {"name": "a", "image": "a1"}
            ]}})
        );
    }

    #[test]
    fn sets_and_atomic_lists() {
        let live = json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"containers": [{"name": "c", "args": ["1", "2"]}]}});
        let config = json!({"metadata": {"finalizers": ["c"]}, "spec": {"containers": [{"name": "c", "args": ["3"]}]}});
        assert_eq!(
            merge(&live, &config, &pod()).unwrap(),
            json!({"metadata": {"finalizers": ["a", "b", "c"]}, "spec": {"containers": [{"name": "c", "args": ["3"]}]}})
        );
    }

    #[test]
    fn null_does_not_clear_a_granular_map() {
        let live = json!({"metadata": {"labels": {"a": "1"}}});
        let config = json!({"metadata": {"labels": null}});
        assert_eq!(merge(&live, &config, &pod()).unwrap(), live);
        let empty = json!({"metadata": {"labels": {}}});
        assert_eq!(merge(&empty, &config, &pod()).unwrap(), config);
    }

    #[test]
    fn repeated_live_items() {
        let ty = TypeRef::root("io.k8s.api.core.v1.Container");
        let live = json!({"env": [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}, {"name": "b", "value": "3"}]});
        assert_eq!(
            merge(&live, &json!({"env": [{"name": "a", "value": "9"}]}), &ty).unwrap(),
            json!({"env": [{"name": "a", "value": "9"}, {"name": "b", "value": "3"}]})
        );
        assert_eq!(
            merge(&live, &json!({"env": [{"name": "b", "value": "4"}]}), &ty).unwrap(),
            json!({"env": [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}, {"name": "b", "value": "4"}]})
        );
    }

    #[test]
    fn order_always_terminates() {
        let ty = TypeRef::root("io.k8s.api.core.v1.Container");
        for (l, r) in [
            (vec!["a", "b", "c"], vec!["c", "b", "a"]),
            (vec!["a", "x", "b"], vec!["b", "a"]),
            (vec!["b", "a"], vec!["a", "b", "c"]),
            (vec![], vec!["a"]),
            (vec!["a"], vec![]),
        ] {
            let list =
                |names: &[&str]| Value::Array(names.iter().map(|n| json!({"name": n})).collect());
            let merged = merge(&json!({"env": list(&l)}), &json!({"env": list(&r)}), &ty).unwrap();
            let n = merged["env"].as_array().map_or(0, Vec::len);
            let mut all: Vec<&str> = l.clone();
            all.extend(r.iter().filter(|x| !l.contains(x)));
            assert_eq!(n, all.len(), "{l:?} {r:?}");
        }
    }
}
