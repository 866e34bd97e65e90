//! Merging a list whose field has the `merge` patch strategy.
//!
//! - Lists of scalars: the union, without duplicates (`finalizers`); with
//!   `$deleteFromPrimitiveList/<field>`, the listed values are removed instead.
//! - Lists of maps: items are matched by the merge key; a patch item whose key the list
//!   has is merged into it, a new one is added; `{"<key>": ..., "$patch": "delete"}`
//!   deletes the items with that key, `{"$patch": "replace"}` replaces the whole list by
//!   the patch's other items.
//!
//! Kubernetes orders the result with the live list as it stands after the patch's
//! deletions and additions, in place (see [`Merged::live_view`]), so this module tracks
//! that view too.

use super::directives::PATCH;
use super::errors;
use super::merge_map::merge_map;
use super::order;
use super::schema::Field;
use crate::PatchError;
use kyb_apimachinery::gofmt;
use order::id_key;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// A merged list.
pub(super) struct Merged {
    /// The merged items, in order.
    pub(super) items: Vec<Value>,
    /// The identities of the first `n` slots of the live list after the merge, `n` being
    /// its original length: deletions shift later items forward, and the first items
    /// added fill the slots freed at the end. Kubernetes orders the list's live-only
    /// items by this view when the patch has a `$setElementOrder`.
    pub(super) live_view: Vec<Value>,
}

/// The JSON kind of list elements, as Go distinguishes them after decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    List,
    Map,
}

pub(super) fn kind(value: &Value) -> Kind {
    match value {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if gofmt::is_float(n) => Kind::Float,
        Value::Number(_) => Kind::Int,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::List,
        Value::Object(_) => Kind::Map,
    }
}

/// The one kind of every element of both lists.
pub(super) fn element_kind(original: &[Value], patch: &[Value]) -> Result<Kind, PatchError> {
    let mut found: Option<Kind> = None;
    for element in original.iter().chain(patch) {
        let this = kind(element);
        match found {
            None if this == Kind::List => return Err(errors::list_of_lists()),
            None if this == Kind::Null => return Err(errors::mixed_elements(original, patch)),
            None => found = Some(this),
            Some(first) if first != this => return Err(errors::mixed_elements(original, patch)),
            Some(_) => {}
        }
    }
    found.ok_or_else(errors::no_elements)
}

/// Merges `patch` into `original`, a list in a field described by `field`. With
/// `delete_list`, `patch` is a `$deleteFromPrimitiveList`.
pub(super) fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &Field<'_>,
    delete_list: bool,
) -> Result<Merged, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(Merged {
            items: original,
            live_view: Vec::new(),
        });
    }
    if element_kind(&original, &patch)? != Kind::Map {
        return Ok(merge_scalars(original, patch, delete_list));
    }
    let key = field
        .merge_key
        .ok_or_else(|| errors::no_merge_key_declared(field.schema.kind_name()))?;
    merge_maps(original, patch, field, key)
}

fn merge_scalars(original: Vec<Value>, patch: Vec<Value>, delete_list: bool) -> Merged {
    if delete_list {
        let doomed: HashSet<String> = patch.iter().map(id_key).collect();
        let items = original
            .iter()
            .filter(|v| !doomed.contains(&id_key(v)))
            .cloned()
            .collect();
        return Merged {
            items,
            live_view: original,
        };
    }
    let mut seen = HashSet::with_capacity(original.len() + patch.len());
    let union: Vec<Value> = original
        .iter()
        .chain(&patch)
        .filter(|v| seen.insert(id_key(v)))
        .cloned()
        .collect();
    let (mentioned, live_only) = order::partition_scalars(union, &patch);
    // Scalars carry no merge key to check, so ordering cannot fail.
    let items =
        order::normalize(mentioned, live_only, &patch, &original, None, false).unwrap_or_default();
    Merged {
        items,
        live_view: original,
    }
}

fn merge_maps(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &Field<'_>,
    key: &'static str,
) -> Result<Merged, PatchError> {
    // The special items first: deletions and a replace marker.
    let mut plain = Vec::with_capacity(patch.len());
    let mut deletions = Vec::new();
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(PATCH) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => match item.get(key) {
                Some(value) => deletions.push(id_key(value)),
                None => return Err(errors::no_merge_key(&item, key)),
            },
            Some("replace") => replace = true,
            Some("merge") => return Err(errors::merge_directive_in_list()),
            _ => {
                let map = item.as_object().cloned().unwrap_or_default();
                return Err(errors::bad_patch_type(directive, &map));
            }
        }
    }
    let (remaining, mut live_view) = delete_items(original, &deletions, key);
    let live_len = live_view.len();
    let (mut current, plain) = if replace {
        (plain, Vec::new())
    } else {
        (remaining, plain)
    };
    let live_after_deletions = order::identities(&current, Some(key));
    // What the ordering needs of the plain items: their merge keys.
    let patch_order: Vec<Value> = plain.iter().map(|item| key_only(item, key)).collect();

    // Then the plain items: merged into the first item with their key, or added.
    let mut by_key: HashMap<String, usize> = HashMap::with_capacity(current.len());
    for (index, item) in current.iter().enumerate() {
        if let Some(value) = item.get(key) {
            by_key.entry(id_key(value)).or_insert(index);
        }
    }
    for item in plain {
        let Value::Object(patch_map) = item else {
            return Err(errors::bad_arg_type(errors::MAP, &item));
        };
        let Some(value) = patch_map.get(key) else {
            return Err(errors::no_merge_key(&Value::Object(patch_map), key));
        };
        let id = id_key(value);
        match by_key.get(&id).copied() {
            Some(index) => {
                let Some(slot) = current.get_mut(index) else {
                    continue;
                };
                let live = match std::mem::take(slot) {
                    Value::Object(live) => live,
                    other => return Err(errors::bad_arg_type(errors::MAP, &other)),
                };
                *slot = Value::Object(merge_map(live, patch_map, field.schema)?);
            }
            None => {
                let added = Value::Object(patch_map);
                // The first additions land in the live list's freed slots.
                if let Some(slot) = live_view.get_mut(current.len())
                    && current.len() < live_len
                {
                    *slot = order::identity(&added, Some(key)).clone();
                }
                by_key.insert(id, current.len());
                current.push(added);
            }
        }
    }

    let (mentioned, live_only) = order::partition_maps(current, &patch_order, key)?;
    let items = order::normalize(
        mentioned,
        live_only,
        &patch_order,
        &live_after_deletions,
        Some(key),
        true,
    )?;
    Ok(Merged { items, live_view })
}

/// Deletes, directive after directive, every item whose merge key has the value (in
/// [`id_key`] form) the directive names. Returns the remaining items and the live view:
/// their identities, then in each freed slot what Go's in-place removal leaves there,
/// the list's last item at the time that slot was freed.
fn delete_items(original: Vec<Value>, deletions: &[String], key: &str) -> (Vec<Value>, Vec<Value>) {
    let ids = order::identities(&original, Some(key));
    let mut view = ids.clone();
    if deletions.is_empty() {
        return (original, view);
    }
    let mut positions: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, item) in original.iter().enumerate() {
        if let Some(value) = item.get(key) {
            positions.entry(id_key(value)).or_default().push(index);
        }
    }
    let mut removed = vec![false; original.len()];
    let mut len = original.len();
    let mut last = original.len(); // one past the last remaining item
    for deletion in deletions {
        for index in positions.remove(deletion).unwrap_or_default() {
            while last > 0 && removed.get(last - 1).copied().unwrap_or(false) {
                last -= 1;
            }
            if let (Some(slot), Some(tail)) = (
                view.get_mut(len.saturating_sub(1)),
                ids.get(last.saturating_sub(1)),
            ) {
                *slot = tail.clone();
            }
            if let Some(flag) = removed.get_mut(index) {
                *flag = true;
            }
            len = len.saturating_sub(1);
        }
    }
    let remaining: Vec<Value> = original
        .into_iter()
        .zip(&removed)
        .filter(|(_, removed)| !**removed)
        .map(|(item, _)| item)
        .collect();
    for (slot, id) in view
        .iter_mut()
        .zip(order::identities(&remaining, Some(key)))
    {
        *slot = id;
    }
    (remaining, view)
}

/// The item reduced to its merge key (what ordering compares), or as it is if it is
/// not a map.
fn key_only(item: &Value, key: &str) -> Value {
    match item.as_object() {
        Some(map) => Value::Object(
            map.get_key_value(key)
                .map(|(k, v)| (k.clone(), v.clone()))
                .into_iter()
                .collect::<Map<String, Value>>(),
        ),
        None => item.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::strategic::schema::Schema;
    use serde_json::json;

    fn field(key: Option<&'static str>) -> Field<'static> {
        Field {
            schema: Schema::Free,
            strategy: Some(kyb_openapi::PatchStrategy::Merge),
            merge_key: key,
        }
    }

    fn list(value: Value) -> Vec<Value> {
        match value {
            Value::Array(items) => items,
            _ => unreachable!(),
        }
    }

    #[test]
    fn element_kinds() {
        assert_eq!(element_kind(&[json!(1)], &[json!(2)]), Ok(Kind::Int));
        assert_eq!(
            element_kind(&[json!([1])], &[]),
            Err(errors::list_of_lists())
        );
        assert_eq!(
            element_kind(&[json!(1)], &[json!("a")]).map_err(|e| e.message().to_string()),
            Err("list element types are not identical: [[1] [a]]".to_string())
        );
        assert_eq!(element_kind(&[], &[]), Err(errors::no_elements()));
        assert!(element_kind(&[json!(1)], &[json!(1.5)]).is_err());
    }

    #[test]
    fn deletions_leave_the_old_last_items_in_freed_slots() {
        let items = list(json!([{"name": 1}, {"name": 2}, {"name": 3}, {"name": 4}]));
        // Delete 1 then 4: after removing 1 the last slot keeps 4; after removing 4 (the
        // last item) its slot keeps 4 too.
        let (remaining, view) = delete_items(items.clone(), &["1".into(), "4".into()], "name");
        assert_eq!(remaining, list(json!([{"name": 2}, {"name": 3}])));
        assert_eq!(view, vec![json!(2), json!(3), json!(4), json!(4)]);
        // Delete 3 then 4 then 1.
        let (_, view) = delete_items(items, &["3".into(), "4".into(), "1".into()], "name");
        assert_eq!(view, vec![json!(2), json!(2), json!(4), json!(4)]);
    }

    #[test]
    fn deletion_and_addition_fill_the_live_view() {
        // Live [1, 4], delete 1, add 2 and 3: the view is [4, 2] (3 lands past it).
        let merged = merge_list(
            list(json!([{"name": 1}, {"name": 4}])),
            list(json!([{"name": 2}, {"name": 3}, {"name": 1, "$patch": "delete"}])),
            &field(Some("name")),
            false,
        )
        .unwrap();
        assert_eq!(merged.live_view, vec![json!(4), json!(2)]);
        assert_eq!(
            merged.items,
            list(json!([{"name": 2}, {"name": 3}, {"name": 4}]))
        );
    }

    #[test]
    fn scalars_union_and_delete() {
        let merged = merge_list(
            list(json!(["a", "b", "a"])),
            list(json!(["c", "b"])),
            &field(None),
            false,
        )
        .unwrap();
        // New values come first unless the live list orders them: "c" is new.
        assert_eq!(merged.items, list(json!(["c", "a", "b"])));
        let merged = merge_list(
            list(json!(["a", "b", "a"])),
            list(json!(["a"])),
            &field(None),
            true,
        )
        .unwrap();
        assert_eq!(merged.items, list(json!(["b"])));
    }

    #[test]
    fn maps_need_a_merge_key() {
        let error = merge_list(
            list(json!([{"a": 1}])),
            list(json!([{"a": 2}])),
            &field(None),
            false,
        )
        .err()
        .unwrap();
        assert_eq!(
            error.message(),
            "cannot merge lists without merge key for struct"
        );
        let error = merge_list(
            list(json!([{"name": 1}])),
            list(json!([{"$patch": "merge"}])),
            &field(Some("name")),
            false,
        )
        .err()
        .unwrap();
        assert_eq!(
            error.message(),
            "merging lists cannot yet be specified in the patch"
        );
        let error = merge_list(
            list(json!([{"name": 1}])),
            list(json!([{"$patch": "frob", "name": 1}])),
            &field(Some("name")),
            false,
        )
        .err()
        .unwrap();
        assert_eq!(
            error.message(),
            "unknown patch type: frob in map: map[$patch:frob name:1]"
        );
        let error = merge_list(
            list(json!([{"name": 1}])),
            list(json!([{"$patch": "delete"}])),
            &field(Some("name")),
            false,
        )
        .err()
        .unwrap();
        assert_eq!(error.code(), 500);
    }
}
