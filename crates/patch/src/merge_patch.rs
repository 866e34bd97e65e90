//! JSON merge patch (RFC 7386, `application/merge-patch+json`): objects merge
//! recursively, `null` deletes a member, anything else replaces.
//!
//! Applied as the Kubernetes API server applies it (the `evanphx/json-patch` library),
//! which differs from the RFC in two ways a client can see:
//! - a patch that is `null` or a scalar is refused (`400 Invalid JSON Patch`) instead
//!   of replacing the document;
//! - `null` members are dropped from every object the patch adds, including objects
//!   inside arrays it adds (`{"a": [{"b": null}]}` adds `[{}]`), not only from objects
//!   that are merged.

use crate::PatchError;
use crate::nesting;
use serde_json::{Map, Value};

/// The message Kubernetes answers a merge patch it cannot read with.
pub const INVALID_PATCH_MESSAGE: &str = "Invalid JSON Patch";

/// Applies the merge patch `patch` to `target`.
pub fn apply(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch {
        Value::Object(_) | Value::Array(_) => {}
        _ => return Err(PatchError::BadRequest(INVALID_PATCH_MESSAGE.to_string())),
    }
    nesting::check(patch, "the patch")?;
    nesting::check(target, "the object")?;
    Ok(match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            let mut merged = target.clone();
            merge_members(&mut merged, patch);
            Value::Object(merged)
        }
        _ => added(patch),
    })
}

/// Merges the members of `patch` into `target`.
fn merge_members(target: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
            continue;
        }
        match (target.get_mut(key), value) {
            (Some(Value::Object(current)), Value::Object(patch)) => merge_members(current, patch),
            // An object replaced by something else takes the patch's value as it is.
            (Some(slot @ Value::Object(_)), other) => *slot = other.clone(),
            (Some(slot), other) => *slot = added(other),
            (None, other) => {
                target.insert(key.clone(), added(other));
            }
        }
    }
}

/// A copy of a value the patch adds, with the `null` members of its objects dropped.
fn added(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), added(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(added).collect()),
        scalar => scalar.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn labels_merge_and_null_deletes() {
        let target = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}});
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}});
        assert_eq!(
            apply(&target, &patch).unwrap(),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}, "name": "x"}})
        );
    }

    #[test]
    fn nulls_are_dropped_from_added_values_even_inside_arrays() {
        assert_eq!(
            apply(&json!({}), &json!({"a": [{"b": null, "c": 1}, null]})).unwrap(),
            json!({"a": [{"c": 1}, null]})
        );
        assert_eq!(
            apply(&json!({"a": null}), &json!({"a": {"b": null, "c": 1}})).unwrap(),
            json!({"a": {"c": 1}})
        );
        // A value replacing an object is taken as it is.
        assert_eq!(
            apply(&json!({"a": {"x": 1}}), &json!({"a": [{"b": null}]})).unwrap(),
            json!({"a": [{"b": null}]})
        );
    }

    #[test]
    fn scalar_and_null_patches_are_refused() {
        for patch in [Value::Null, json!("x"), json!(1), json!(true)] {
            assert_eq!(
                apply(&json!({}), &patch),
                Err(PatchError::BadRequest("Invalid JSON Patch".into()))
            );
        }
    }

    #[test]
    fn deep_inputs_are_refused() {
        let deep = crate::nesting::tests::deep_object(100_000);
        assert_eq!(apply(&json!({}), &deep).map_err(|e| e.code()), Err(400));
        assert_eq!(
            apply(&deep, &json!({"a": 1})).map_err(|e| e.code()),
            Err(400)
        );
        crate::nesting::dispose(deep);
    }
}
