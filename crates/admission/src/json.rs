//! Reading and editing objects in their JSON form without trusting their shape: a missing
//! or wrongly typed field reads as absent (Go's zero value), and edits never replace a value
//! of the wrong type.

use serde_json::{Map, Value};

/// The value at `path` (object keys), if every step exists.
pub(crate) fn get<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut current = value;
    for key in path {
        current = current.as_object()?.get(*key)?;
    }
    Some(current)
}

/// The string at `path`, if it is one.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(value, path)?.as_str()
}

/// The string at `path`, or "" (Go's zero value) when missing or not a string.
pub(crate) fn string<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    str_at(value, path).unwrap_or("")
}

/// The boolean at `path`, if it is one.
pub(crate) fn bool_at(value: &Value, path: &[&str]) -> Option<bool> {
    get(value, path)?.as_bool()
}

/// The array at `path`, or an empty slice.
pub(crate) fn array<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    match get(value, path) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

/// The array under `key` of a map, or an empty slice.
pub(crate) fn array_of<'a>(map: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    match map.get(key) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

/// The object at `path`, if it is one.
pub(crate) fn object<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    get(value, path)?.as_object()
}

/// Whether `metadata.annotations` has `key` (whatever its value), as Go's `_, ok := m[key]`.
pub(crate) fn has_annotation(object_value: &Value, key: &str) -> bool {
    object(object_value, &["metadata", "annotations"]).is_some_and(|m| m.contains_key(key))
}

/// The string value of annotation `key`.
pub(crate) fn annotation<'a>(object_value: &'a Value, key: &str) -> Option<&'a str> {
    str_at(object_value, &["metadata", "annotations", key])
}

/// Whether a JSON value is what Go decodes to a zero value: absent, null, "", 0, false,
/// an empty array or an empty object.
pub(crate) fn is_zero(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => !b,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
    }
}

/// Fields that are Go maps (`map[string]...`) rather than structs: their keys are data, so a
/// key holding a zero value differs from a missing key.
const MAP_FIELDS: &[&str] = &[
    "labels",
    "annotations",
    "matchLabels",
    "nodeSelector",
    "requests",
    "limits",
    "capacity",
    "allocatable",
    "allocatedResources",
    "allocatedResourceStatuses",
    "data",
    "binaryData",
    "stringData",
    "parameters",
    "volumeAttributes",
];

/// Whether the object under `key` is a Go map (see [`semantic_eq_as`]).
pub(crate) fn is_map_field(key: &str) -> bool {
    MAP_FIELDS.contains(&key)
}

/// Equality as Kubernetes' `equality.Semantic.DeepEqual` sees two decoded objects: a struct
/// field that is absent equals one holding its zero value, and empty and missing lists or
/// maps are equal.
pub(crate) fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    semantic_eq_as(a, b, false)
}

/// [`semantic_eq`], comparing two objects as Go maps when `map` is set (same keys, equal
/// values).
pub(crate) fn semantic_eq_as(a: Option<&Value>, b: Option<&Value>, map: bool) -> bool {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) if map => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| semantic_eq(Some(v), Some(w))))
        }
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.iter()
                .all(|(k, v)| semantic_eq_as(Some(v), y.get(k), is_map_field(k)))
                && y.iter()
                    .filter(|(k, _)| !x.contains_key(*k))
                    .all(|(_, v)| is_zero(Some(v)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(v, w)| semantic_eq(Some(v), Some(w)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (Some(x), Some(y)) if !is_zero(Some(x)) || !is_zero(Some(y)) => x == y,
        _ => is_zero(a) && is_zero(b),
    }
}

/// The object under `key` of `map`, inserted empty when absent or null; `None` when the key
/// holds another type.
pub(crate) fn child_object<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let slot = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// The array under `key` of `map`, inserted empty when absent or null; `None` when the key
/// holds another type.
pub(crate) fn child_array<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Vec<Value>> {
    let slot = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}

/// The `spec` object of an object, inserted when absent; `None` when the object or its spec
/// has another type.
pub(crate) fn spec_mut(object_value: &mut Value) -> Option<&mut Map<String, Value>> {
    child_object(object_value.as_object_mut()?, "spec")
}

/// Go's `strconv.ParseBool`: `Some` for the spellings it accepts.
pub(crate) fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_tolerate_wrong_types() {
        let v = json!({"a": {"b": 3, "c": "x", "d": [1]}, "e": "str"});
        assert_eq!(str_at(&v, &["a", "c"]), Some("x"));
        assert_eq!(str_at(&v, &["a", "b"]), None);
        assert_eq!(string(&v, &["e", "f"]), "");
        assert_eq!(array(&v, &["a", "d"]).len(), 1);
        assert!(array(&v, &["a", "c"]).is_empty());
        assert!(object(&v, &["e"]).is_none());
    }

    #[test]
    fn semantic_equality_treats_zero_values_as_absent() {
        assert!(semantic_eq(
            Some(&json!({"a": [], "b": {}})),
            Some(&json!({}))
        ));
        assert!(semantic_eq(None, Some(&json!([]))));
        assert!(semantic_eq(
            Some(&json!({"x": ""})),
            Some(&json!({"x": null}))
        ));
        assert!(!semantic_eq(Some(&json!({"x": "a"})), Some(&json!({}))));
        assert!(!semantic_eq(Some(&json!([1, 2])), Some(&json!([2, 1]))));
        assert!(semantic_eq(Some(&json!(1)), Some(&json!(1.0))));
        // Keys of maps are data: an added empty label is a change, a missing map is empty.
        assert!(!semantic_eq(
            Some(&json!({"labels": {"a": ""}})),
            Some(&json!({"labels": {}}))
        ));
        assert!(semantic_eq(Some(&json!({"labels": {}})), Some(&json!({}))));
        assert!(!semantic_eq_as(Some(&json!({"a": ""})), None, true));
    }

    #[test]
    fn child_helpers_never_replace_other_types() {
        let mut m = Map::new();
        m.insert("s".into(), json!("text"));
        assert!(child_object(&mut m, "s").is_none());
        assert!(child_array(&mut m, "s").is_none());
        assert!(child_array(&mut m, "new").is_some());
        assert_eq!(m.get("new"), Some(&json!([])));
        let mut not_object = json!([1]);
        assert!(spec_mut(&mut not_object).is_none());
    }

    #[test]
    fn go_bools() {
        assert_eq!(parse_go_bool("True"), Some(true));
        assert_eq!(parse_go_bool("0"), Some(false));
        assert_eq!(parse_go_bool("yes"), None);
    }
}
