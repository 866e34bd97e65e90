//! Object metadata in its JSON form (`metadata.name`, labels, annotations, ...), read with
//! the rules of [`crate::json`]: `null` and wrong types are absent, and the identifying
//! strings (`name`, `namespace`, `uid`, ...) are absent when empty, as Go's `""`.

use serde_json::{Map, Value};

pub fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata").and_then(Value::as_object)
}

/// `metadata`, created if missing (and replacing a non-object).
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let Value::Object(map) = object else {
        unreachable!("just made an object")
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    match metadata {
        Value::Object(m) => m,
        _ => unreachable!("just made an object"),
    }
}

fn str_field<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    metadata(object)?.get(field)?.as_str()
}

pub fn name(object: &Value) -> Option<&str> {
    str_field(object, "name").filter(|s| !s.is_empty())
}

pub fn namespace(object: &Value) -> Option<&str> {
    str_field(object, "namespace").filter(|s| !s.is_empty())
}

pub fn generate_name(object: &Value) -> Option<&str> {
    str_field(object, "generateName").filter(|s| !s.is_empty())
}

pub fn uid(object: &Value) -> Option<&str> {
    str_field(object, "uid").filter(|s| !s.is_empty())
}

pub fn resource_version(object: &Value) -> Option<&str> {
    str_field(object, "resourceVersion").filter(|s| !s.is_empty())
}

pub fn deletion_timestamp(object: &Value) -> Option<&str> {
    str_field(object, "deletionTimestamp")
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(object: &Value) -> bool {
    metadata(object)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null())
}

/// The string value of annotation `key`.
pub fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    metadata(object)?
        .get("annotations")?
        .as_object()?
        .get(key)?
        .as_str()
}

/// Whether `metadata.annotations` has `key` (whatever its value), as Go's
/// `_, ok := m[key]`.
pub fn has_annotation(object: &Value, key: &str) -> bool {
    metadata(object)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(key))
}

pub fn labels(object: &Value) -> Option<&Map<String, Value>> {
    metadata(object)?.get("labels")?.as_object()
}

pub fn finalizers(object: &Value) -> Vec<&str> {
    metadata(object)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `apiVersion` and `kind` of an object, if present.
pub fn type_meta(object: &Value) -> (Option<&str>, Option<&str>) {
    (
        object.get("apiVersion").and_then(Value::as_str),
        object.get("kind").and_then(Value::as_str),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accessors() {
        let mut object = json!({"metadata": {"name": "a", "namespace": "", "finalizers": ["x"]}});
        assert_eq!(name(&object), Some("a"));
        assert_eq!(namespace(&object), None);
        assert_eq!(finalizers(&object), vec!["x"]);
        metadata_mut(&mut object).insert("uid".into(), "u".into());
        assert_eq!(uid(&object), Some("u"));
        let mut broken = json!("string");
        metadata_mut(&mut broken).insert("name".into(), "n".into());
        assert_eq!(name(&broken), Some("n"));
        let annotated = json!({"metadata": {"annotations": {"a": "1", "b": null},
            "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(annotation(&annotated, "a"), Some("1"));
        assert!(has_annotation(&annotated, "b") && !has_annotation(&annotated, "c"));
        assert!(is_deleting(&annotated) && !is_deleting(&object));
    }
}
