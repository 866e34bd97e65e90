//! Merging a patch map into an object: the heart of strategic merge patch.
//!
//! A map-level `$patch` decides first (`replace`: the patch's map without the directive;
//! `delete`: an empty map). Otherwise `$retainKeys` clears the keys it does not list,
//! the `$setElementOrder` lists are merged and ordered, and every other key of the patch
//! is merged in turn:
//! - `null` deletes the key;
//! - a key the object lacks, or whose value has another JSON type, takes the patch's
//!   value (without its `null` members and its maps carrying `$patch`);
//! - two maps merge recursively, unless the field's strategy is `replace`;
//! - two lists merge item by item if the field's strategy is `merge`
//!   (or the key is a `$deleteFromPrimitiveList/<field>`), else the patch's list
//!   replaces the object's;
//! - two scalars: the patch's value.

use super::directives::{self, DELETE_FROM_PRIMITIVE_LIST, PATCH};
use super::element_order::apply_element_orders;
use super::errors;
use super::merge_list::{self, merge_list};
use super::schema::Schema;
use crate::PatchError;
use serde_json::{Map, Value};

/// Merges `patch` into `original`, an object of type `schema`.
pub(super) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema<'_>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(PATCH) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(PATCH);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(errors::bad_patch_type(directive, &patch)),
        };
    }
    directives::apply_retain_keys(&mut original, &mut patch)?;
    apply_element_orders(&mut original, &mut patch, schema)?;
    for (key, value) in patch {
        merge_member(&mut original, key, value, schema)?;
    }
    Ok(original)
}

/// Merges one member of the patch into `object`.
fn merge_member(
    object: &mut Map<String, Value>,
    key: String,
    patch_value: Value,
    schema: Schema<'_>,
) -> Result<(), PatchError> {
    let (key, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
        let field = directives::field_of(&key, DELETE_FROM_PRIMITIVE_LIST)
            .ok_or_else(errors::bad_primitive_list)?;
        (field.to_string(), true)
    } else {
        (key, false)
    };
    if patch_value.is_null() {
        object.remove(&key);
        return Ok(());
    }
    let Some(slot) = object.get_mut(&key) else {
        if !delete_list && let Some(value) = added(patch_value) {
            object.insert(key, value);
        }
        return Ok(());
    };
    if merge_list::kind(slot) != merge_list::kind(&patch_value) {
        if !delete_list {
            match added(patch_value) {
                Some(value) => *slot = value,
                None => {
                    object.remove(&key);
                }
            }
        }
        return Ok(());
    }
    match (std::mem::take(slot), patch_value) {
        (Value::Object(live), Value::Object(patch)) => {
            let field = schema.field(&key);
            *slot = if field.replaces() {
                Value::Object(patch)
            } else {
                Value::Object(merge_map(live, patch, field.schema)?)
            };
        }
        (Value::Array(live), Value::Array(patch)) => {
            let field = schema.field(&key);
            *slot = if delete_list || field.merges_lists() {
                Value::Array(merge_list(live, patch, &field, delete_list)?.items)
            } else {
                Value::Array(patch)
            };
        }
        (_, scalar) => *slot = scalar,
    }
    Ok(())
}

/// A value the patch sets where the object has nothing of the same type to merge with:
/// without `null` members, without maps carrying `$patch` (`None` if it is one).
fn added(mut value: Value) -> Option<Value> {
    directives::discard_nulls(&mut value);
    directives::without_patch_directives(value)
}
