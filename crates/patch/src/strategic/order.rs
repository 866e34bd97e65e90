//! The order of a merged list, as Kubernetes computes it: the items the patch mentions
//! in the patch's order (or its `$setElementOrder`), the items only the live object has
//! in their live order, the two interleaved by where the live list had them.
//!
//! Items are compared by identity: a map item by the value of its merge key, a scalar by
//! itself.

use super::directives;
use super::errors;
use crate::PatchError;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

static NULL: Value = Value::Null;

/// What identifies `item` in a list merged by `key` (`None`: a list of scalars).
pub(super) fn identity<'v>(item: &'v Value, key: Option<&str>) -> &'v Value {
    match key {
        Some(key) => item.as_object().and_then(|m| m.get(key)).unwrap_or(&NULL),
        None => item,
    }
}

/// The identities of `items`.
pub(super) fn identities(items: &[Value], key: Option<&str>) -> Vec<Value> {
    items
        .iter()
        .map(|item| identity(item, key).clone())
        .collect()
}

/// A hashable form of an identity (its compact JSON; `1` and `1.0` stay distinct, as
/// Kubernetes' `int64` and `float64` do).
pub(super) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Where each identity first appears in a list of identities.
pub(super) struct Positions(HashMap<String, usize>);

impl Positions {
    pub(super) fn new(order: &[Value]) -> Positions {
        let mut first = HashMap::with_capacity(order.len());
        for (index, id) in order.iter().enumerate() {
            first.entry(id_key(id)).or_insert(index);
        }
        Positions(first)
    }

    pub(super) fn of(&self, id: &Value) -> Option<usize> {
        self.0.get(&id_key(id)).copied()
    }
}

/// Checks that every item is a map carrying `key`.
pub(super) fn require_merge_keys(items: &[Value], key: Option<&str>) -> Result<(), PatchError> {
    let key = key.unwrap_or("");
    for item in items {
        let Value::Object(map) = item else {
            return Err(errors::bad_arg_type(errors::MAP, item));
        };
        if !map.contains_key(key) {
            return Err(errors::no_merge_key(item, key));
        }
    }
    Ok(())
}

/// Splits merged map items into those `by` (a list of maps) mentions by `key` and the
/// others, keeping their order.
pub(super) fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut wanted = HashSet::with_capacity(by.len());
    for (index, item) in by.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(errors::not_a_map_at(index));
        };
        if let Some(value) = map.get(key) {
            wanted.insert(id_key(value));
        }
    }
    let mut mentioned = Vec::new();
    let mut others = Vec::new();
    for item in merged {
        let Value::Object(map) = &item else {
            return Err(errors::bad_arg_type(errors::MAP, &item));
        };
        let Some(value) = map.get(key) else {
            return Err(errors::no_merge_key(&item, key));
        };
        if wanted.contains(&id_key(value)) {
            mentioned.push(item);
        } else {
            others.push(item);
        }
    }
    Ok((mentioned, others))
}

/// Splits merged scalars into those in `by` and the others, keeping their order.
pub(super) fn partition_scalars(merged: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let wanted: HashSet<String> = by.iter().map(id_key).collect();
    merged
        .into_iter()
        .partition(|item| wanted.contains(&id_key(item)))
}

/// Sorts `items` by where their identities are in `order` (stable; items `order` does
/// not have go last). For maps, items with `$patch: delete` go to the very end.
fn sort_by_order(
    items: Vec<Value>,
    order: &Positions,
    key: Option<&str>,
    maps: bool,
) -> Vec<Value> {
    let (mut kept, deleted): (Vec<Value>, Vec<Value>) = if maps {
        items
            .into_iter()
            .partition(|item| !directives::is_delete_item(item))
    } else {
        (items, Vec::new())
    };
    kept.sort_by_cached_key(|item| order.of(identity(item, key)).unwrap_or(usize::MAX));
    kept.extend(deleted);
    kept
}

/// Interleaves `server_only` (in live order) into `mentioned` (in the patch's order):
/// a live-only item goes before a mentioned one when the live list had it before.
fn interleave(
    server_only: Vec<Value>,
    mentioned: Vec<Value>,
    live: &Positions,
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(server_only.len() + mentioned.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = mentioned.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (live.of(identity(l, key)), live.of(identity(r, key))) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// The final order of a merged list: `mentioned` sorted by `patch_order` (items),
/// `server_only` sorted by `live` (identities of the live list), then interleaved.
pub(super) fn normalize(
    mentioned: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    live: &[Value],
    key: Option<&str>,
    maps: bool,
) -> Result<Vec<Value>, PatchError> {
    if maps {
        require_merge_keys(&mentioned, key)?;
        require_merge_keys(patch_order, key)?;
        require_merge_keys(&server_only, key)?;
    }
    let patch_positions = Positions::new(&identities(patch_order, key));
    let live = Positions::new(live);
    let mentioned = sort_by_order(mentioned, &patch_positions, key, maps);
    let server_only = sort_by_order(server_only, &live, key, maps);
    Ok(interleave(server_only, mentioned, &live, key))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn names(items: &[Value]) -> Vec<i64> {
        items
            .iter()
            .filter_map(|i| i.get("name").and_then(Value::as_i64))
            .collect()
    }

    fn named(names: &[i64]) -> Vec<Value> {
        names.iter().map(|n| json!({"name": n})).collect()
    }

    #[test]
    fn new_items_come_before_live_only_items_they_are_not_ordered_against() {
        let live = identities(&named(&[1, 2, 3]), Some("name"));
        let out = normalize(
            named(&[4]),
            named(&[1, 2, 3]),
            &named(&[4]),
            &live,
            Some("name"),
            true,
        )
        .unwrap();
        assert_eq!(names(&out), vec![4, 1, 2, 3]);
    }

    #[test]
    fn live_only_items_keep_their_place() {
        // Live [1, 2, 9, 3, 4], the patch orders [2, 1, 4, 3]: 9 stays between 1 and 4.
        let live = identities(&named(&[1, 2, 9, 3, 4]), Some("name"));
        let out = normalize(
            named(&[1, 2, 3, 4]),
            named(&[9]),
            &named(&[2, 1, 4, 3]),
            &live,
            Some("name"),
            true,
        )
        .unwrap();
        assert_eq!(names(&out), vec![2, 1, 9, 4, 3]);
    }

    #[test]
    fn scalars() {
        let live = vec![json!(1), json!(4), json!(2)];
        let out = normalize(
            vec![json!(1), json!(2), json!(3)],
            vec![json!(4)],
            &[json!(3), json!(1), json!(2)],
            &live,
            None,
            false,
        )
        .unwrap();
        assert_eq!(out, vec![json!(3), json!(1), json!(4), json!(2)]);
    }

    #[test]
    fn merge_keys_are_required() {
        let error =
            normalize(vec![json!({"x": 1})], vec![], &[], &[], Some("name"), true).unwrap_err();
        assert_eq!(
            error.message(),
            "map: map[x:1] does not contain declared merge key: name"
        );
        let error = normalize(vec![], vec![], &[json!("a")], &[], Some("name"), true).unwrap_err();
        assert_eq!(
            error.message(),
            "expected a map[string]interface {}, but received a string"
        );
    }

    #[test]
    fn partitions() {
        let (mentioned, others) =
            partition_maps(named(&[1, 2, 3]), &named(&[3, 1]), "name").unwrap();
        assert_eq!((names(&mentioned), names(&others)), (vec![1, 3], vec![2]));
        assert!(partition_maps(vec![json!({"x": 1})], &[], "name").is_err());
        assert_eq!(
            partition_maps(vec![], &[json!("a")], "name")
                .unwrap_err()
                .message(),
            "value for key 0 is not a map"
        );
        let positions = Positions::new(&[json!(1), json!("1"), json!(1)]);
        assert_eq!(
            (positions.of(&json!(1)), positions.of(&json!("1"))),
            (Some(0), Some(1))
        );
        assert_eq!(positions.of(&json!(1.0)), None);
        let (a, b) = partition_scalars(vec![json!(1), json!(2)], &[json!(2)]);
        assert_eq!((a, b), (vec![json!(2)], vec![json!(1)]));
    }
}
