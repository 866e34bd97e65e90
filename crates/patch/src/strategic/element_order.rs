//! `$setElementOrder/<field>: [...]`: the order the merged list must have, sent by
//! `kubectl apply` for every list it merges (the merge keys of all the items it wants,
//! in order, or the values for a list of scalars).
//!
//! The list's patch items must appear in the order list in the same relative order. The
//! list is merged as usual, then the items the order list names are put in its order,
//! and the live object's other items are interleaved where the live list had them.

use super::directives::{self, SET_ELEMENT_ORDER};
use super::errors;
use super::merge_list::{self, Kind, merge_list};
use super::order;
use super::schema::Schema;
use crate::PatchError;
use serde_json::{Map, Value};

/// Applies and removes every `$setElementOrder` directive of `patch`, together with the
/// lists they order (which are then removed from `patch` too).
pub(super) fn apply_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema<'_>,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let Some(order_list) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order_list) = order_list else {
            return Err(errors::bad_arg_type(errors::LIST, &order_list));
        };
        let name = directives::field_of(&key, SET_ELEMENT_ORDER)
            .ok_or_else(errors::bad_set_element_order)?;
        apply_one(original, patch, name, &order_list, schema)?;
    }
    Ok(())
}

fn apply_one(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    name: &str,
    order_list: &[Value],
    schema: Schema<'_>,
) -> Result<(), PatchError> {
    let live = match original.get(name) {
        None => None,
        Some(Value::Array(_)) => original.remove(name).and_then(into_list),
        Some(other) => return Err(errors::bad_arg_type(errors::LIST, other)),
    };
    let patched = match patch.get(name) {
        None => None,
        Some(Value::Array(_)) => patch.remove(name).and_then(into_list),
        Some(other) => return Err(errors::bad_arg_type(errors::LIST, other)),
    };
    let field = schema.field(name);
    let key = field.merge_key;
    check_order(patched.as_deref().unwrap_or_default(), order_list, key)?;
    let kind = merge_list::element_kind(
        live.as_deref().unwrap_or_default(),
        patched.as_deref().unwrap_or_default(),
    );

    let (merged, live_view) = match (live, patched) {
        (None, None) => return Ok(()),
        (Some(live), None) => {
            let view = order::identities(&live, key);
            (live, view)
        }
        (None, Some(patched)) => {
            let added = patched
                .into_iter()
                .filter_map(directives::without_patch_directives)
                .collect();
            (added, Vec::new())
        }
        (Some(live), Some(patched)) => {
            if field.merges_lists() {
                let merged = merge_list(live, patched, &field, false)?;
                (merged.items, merged.live_view)
            } else {
                let view = order::identities(&live, key);
                (patched, view)
            }
        }
    };
    let maps = kind? == Kind::Map;

    let (mentioned, live_only) = match key {
        Some(key) => order::partition_maps(merged, order_list, key)?,
        None => order::partition_scalars(merged, order_list),
    };
    let ordered = order::normalize(mentioned, live_only, order_list, &live_view, key, maps)?;
    original.insert(name.to_string(), Value::Array(ordered));
    Ok(())
}

fn into_list(value: Value) -> Option<Vec<Value>> {
    match value {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// Checks that the patch's items (other than deletions and other directives) appear in
/// `order_list` in the same relative order.
fn check_order(
    patched: &[Value],
    order_list: &[Value],
    key: Option<&str>,
) -> Result<(), PatchError> {
    if order_list.is_empty() || patched.is_empty() {
        return Ok(());
    }
    let mut items: Vec<&Value> = Vec::with_capacity(patched.len());
    for item in patched {
        if key.is_some() {
            if !item.is_object() {
                return Err(errors::bad_arg_type(errors::MAP, item));
            }
            if directives::is_delete_item(item) {
                continue;
            }
        }
        items.push(item);
    }
    // Walk both lists; a patch item matching the current order entry moves to the next
    // item, every step moves to the next order entry. Directive items are skipped.
    let (mut at_item, mut at_order) = (0, 0);
    while let (Some(item), Some(wanted)) = (items.get(at_item), order_list.get(at_order)) {
        if directives::has_patch_directive(item) {
            at_item += 1;
            continue;
        }
        if same_item(item, wanted, key)? {
            at_item += 1;
        }
        at_order += 1;
    }
    if at_item < items.len() && at_order >= order_list.len() {
        return Err(errors::order_mismatch(patched, order_list));
    }
    Ok(())
}

/// Whether a patch item and an order entry name the same item.
fn same_item(item: &Value, wanted: &Value, key: Option<&str>) -> Result<bool, PatchError> {
    let Some(key) = key else {
        return Ok(item == wanted);
    };
    let Some(item_map) = item.as_object() else {
        return Err(errors::bad_arg_type(errors::MAP, item));
    };
    let Some(wanted_map) = wanted.as_object() else {
        return Err(errors::bad_arg_type(errors::MAP, wanted));
    };
    let Some(left) = item_map.get(key) else {
        return Err(errors::no_merge_key(item, key));
    };
    let Some(right) = wanted_map.get(key) else {
        return Err(errors::no_merge_key(wanted, key));
    };
    Ok(left == right)
}
