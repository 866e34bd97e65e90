//! Small read helpers over `serde_json::Value` objects: a field that is missing, `null` or
//! of the wrong type reads as absent, so hostile objects never panic.

use serde_json::{Map, Value};

/// The value at a `/`-separated path of object keys.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// The string at a path; absent unless it is a JSON string.
pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

/// The object at a path.
pub(crate) fn obj_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    at(v, path).and_then(Value::as_object)
}

/// The array at a path, or an empty slice.
pub(crate) fn arr_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `metadata.name`, or "".
pub(crate) fn name(v: &Value) -> &str {
    str_at(v, &["metadata", "name"]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_types_read_as_absent() {
        let v = json!({"a": {"b": null, "c": 3, "d": [1]}, "s": "x"});
        assert!(at(&v, &["a", "b"]).is_none());
        assert!(str_at(&v, &["a", "c"]).is_none());
        assert!(obj_at(&v, &["s"]).is_none());
        assert_eq!(arr_at(&v, &["a", "d"]).len(), 1);
        assert!(arr_at(&v, &["s", "x"]).is_empty());
        assert_eq!(name(&json!("not an object")), "");
    }
}
