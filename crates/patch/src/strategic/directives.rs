//! The directives a strategic merge patch carries besides data: `$patch` (in a map or a
//! list item), `$retainKeys`, `$setElementOrder/<field>` and
//! `$deleteFromPrimitiveList/<field>`, and the clean-up of directives and `null`s in
//! values the patch adds where the object has nothing to merge with.

use super::errors;
use crate::PatchError;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// `$patch`: `replace` or `delete` a map or list, or delete one list item.
pub(super) const PATCH: &str = "$patch";
/// `$retainKeys: [...]`: the keys of the object to keep; the others are cleared.
pub(super) const RETAIN_KEYS: &str = "$retainKeys";
/// `$setElementOrder/<field>: [...]`: the order of the merged list.
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";
/// `$deleteFromPrimitiveList/<field>: [...]`: values to remove from a list of scalars.
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// The field a `<prefix>/<field>` directive key names; `None` when the key is not of
/// that form (`$setElementOrderX`, or no `/`).
pub(super) fn field_of<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    let (head, field) = key.split_once('/')?;
    (head == prefix).then_some(field)
}

/// Whether `item` is a map carrying a `$patch` directive.
pub(super) fn has_patch_directive(item: &Value) -> bool {
    item.as_object().is_some_and(|m| m.contains_key(PATCH))
}

/// Whether `item` is a map with `$patch: delete`.
pub(super) fn is_delete_item(item: &Value) -> bool {
    item.get(PATCH).and_then(Value::as_str) == Some("delete")
}

/// A value the patch adds as it is, without its maps that carry `$patch` (those are
/// dropped, in lists too); `None` if the value itself is such a map.
pub(super) fn without_patch_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(PATCH) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| without_patch_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(items) => Some(Value::Array(
            items
                .into_iter()
                .filter_map(without_patch_directives)
                .collect(),
        )),
        scalar => Some(scalar),
    }
}

/// Drops the `null` members of every map in `value` (list items that are `null` stay).
pub(super) fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Applies and removes the patch's `$retainKeys`: the keys of `original` not listed are
/// cleared. Every key the patch sets must be listed.
pub(super) fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retained) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retained) = retained else {
        return Err(errors::bad_retain_keys());
    };
    let retained: BTreeSet<&str> = retained.iter().filter_map(Value::as_str).collect();
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !retained.contains(key.as_str()) {
            return Err(errors::bad_retain_keys());
        }
    }
    original.retain(|key, _| retained.contains(key.as_str()));
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn directive_keys() {
        assert_eq!(
            field_of("$setElementOrder/containers", SET_ELEMENT_ORDER),
            Some("containers")
        );
        assert_eq!(
            field_of("$setElementOrder/a/b", SET_ELEMENT_ORDER),
            Some("a/b")
        );
        assert_eq!(field_of("$setElementOrderX/a", SET_ELEMENT_ORDER), None);
        assert_eq!(field_of("$setElementOrder", SET_ELEMENT_ORDER), None);
        assert_eq!(
            field_of(
                "$deleteFromPrimitiveList/finalizers",
                DELETE_FROM_PRIMITIVE_LIST
            ),
            Some("finalizers")
        );
    }

    #[test]
    fn removes_maps_with_patch_directives() {
        let value =
            json!({"a": {"$patch": "delete"}, "b": [{"$patch": "replace"}, {"c": 1}], "d": 2});
        assert_eq!(
            without_patch_directives(value),
            Some(json!({"b": [{"c": 1}], "d": 2}))
        );
        assert_eq!(without_patch_directives(json!({"$patch": "delete"})), None);
        // Other directives are kept.
        assert_eq!(
            without_patch_directives(json!({"$retainKeys": ["a"]})),
            Some(json!({"$retainKeys": ["a"]}))
        );
    }

    #[test]
    fn discards_nulls_in_maps_only() {
        let mut value = json!({"a": null, "b": [null, {"c": null, "d": 1}], "e": {"f": null}});
        discard_nulls(&mut value);
        assert_eq!(value, json!({"b": [null, {"d": 1}], "e": {}}));
    }

    #[test]
    fn retain_keys() {
        let mut original = map(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}));
        let mut patch = map(json!({"$retainKeys": ["type"], "type": "Recreate"}));
        apply_retain_keys(&mut original, &mut patch).unwrap();
        assert_eq!(Value::Object(original), json!({"type": "RollingUpdate"}));
        assert_eq!(Value::Object(patch), json!({"type": "Recreate"}));

        // A key set by the patch but not retained is malformed; nulls and directives pass.
        let mut original = Map::new();
        let mut patch = map(json!({"$retainKeys": ["a"], "b": 1}));
        assert_eq!(
            apply_retain_keys(&mut original, &mut patch),
            Err(PatchError::BadRequest(
                "invalid patch format of retainKeys".into()
            ))
        );
        let mut patch = map(json!({
            "$retainKeys": ["a"], "b": null,
            "$setElementOrder/a": [], "$deleteFromPrimitiveList/a": []
        }));
        assert!(apply_retain_keys(&mut original, &mut patch).is_ok());

        let mut patch = map(json!({"$retainKeys": "a"}));
        assert_eq!(
            apply_retain_keys(&mut original, &mut patch).map_err(|e| e.code()),
            Err(400)
        );
    }
}
