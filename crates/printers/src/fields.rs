//! Lenient reads from an object's JSON form.
//!
//! Objects reaching the printers are untrusted: any field may be missing, `null`, or of the
//! wrong type. Every accessor here answers with the value Kubernetes' Go types would hold in
//! that case (the zero value: `""`, `0`, `false`, an empty list), so printers never panic and
//! never need to branch on malformed input themselves.

use serde_json::{Map, Value};

static NO_ITEMS: [Value; 0] = [];

/// The value at `path`, or `None` when any step is missing, not an object, or the value is
/// `null` (Go decodes `null` to the zero value, so it means "absent" here too).
pub(crate) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut current = value;
    for key in path {
        current = current.as_object()?.get(*key)?;
    }
    if current.is_null() {
        None
    } else {
        Some(current)
    }
}

/// The string at `path`, or `None` when it is missing or not a string.
pub(crate) fn opt_str<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

/// The string at `path`, or `""`.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    opt_str(value, path).unwrap_or("")
}

/// A JSON number as an integer: integral values as they are, others truncated.
pub(crate) fn as_int(value: &Value) -> Option<i64> {
    if let Some(n) = value.as_i64() {
        return Some(n);
    }
    if let Some(n) = value.as_u64() {
        return Some(i64::try_from(n).unwrap_or(i64::MAX));
    }
    // Saturating float-to-integer conversion is the intent here.
    value.as_f64().map(|f| f as i64)
}

/// The integer at `path`, or `None` when it is missing or not a number.
pub(crate) fn opt_int(value: &Value, path: &[&str]) -> Option<i64> {
    at(value, path).and_then(as_int)
}

/// The integer at `path`, or `0`.
pub(crate) fn int_at(value: &Value, path: &[&str]) -> i64 {
    opt_int(value, path).unwrap_or(0)
}

/// The boolean at `path`, or `None` when it is missing or not a boolean.
pub(crate) fn opt_bool(value: &Value, path: &[&str]) -> Option<bool> {
    at(value, path).and_then(Value::as_bool)
}

/// The boolean at `path`, or `false`.
pub(crate) fn bool_at(value: &Value, path: &[&str]) -> bool {
    opt_bool(value, path).unwrap_or(false)
}

/// The array at `path`, or an empty slice.
pub(crate) fn items<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    match at(value, path) {
        Some(Value::Array(list)) => list,
        _ => &NO_ITEMS,
    }
}

/// The object at `path`, or `None`.
pub(crate) fn map_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    at(value, path).and_then(Value::as_object)
}

/// How many entries the list or map at `path` holds (0 when missing).
pub(crate) fn count(value: &Value, path: &[&str]) -> i64 {
    let n = match at(value, path) {
        Some(Value::Array(list)) => list.len(),
        Some(Value::Object(map)) => map.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `metadata.name`.
pub(crate) fn name(object: &Value) -> &str {
    str_at(object, &["metadata", "name"])
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(object: &Value) -> bool {
    at(object, &["metadata", "deletionTimestamp"]).is_some()
}

/// A string cell holding a copy of `value`.
pub(crate) fn text(value: &str) -> Value {
    Value::String(value.to_owned())
}

/// `text`, but `replacement` when the string is empty.
pub(crate) fn text_or(value: &str, replacement: &str) -> Value {
    text(if value.is_empty() { replacement } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_null_and_mistyped_fields_read_as_zero_values() {
        let v = json!({"a": {"s": "x", "n": 3, "b": true, "z": null, "l": [1, 2], "m": {"k": 1}}});
        assert_eq!(str_at(&v, &["a", "s"]), "x");
        assert_eq!(str_at(&v, &["a", "n"]), "");
        assert_eq!(str_at(&v, &["a", "s", "deeper"]), "");
        assert_eq!(int_at(&v, &["a", "n"]), 3);
        assert_eq!(int_at(&v, &["a", "s"]), 0);
        assert!(bool_at(&v, &["a", "b"]));
        assert!(!bool_at(&v, &["a", "missing"]));
        assert!(at(&v, &["a", "z"]).is_none());
        assert_eq!(items(&v, &["a", "l"]).len(), 2);
        assert!(items(&v, &["a", "m"]).is_empty());
        assert_eq!(count(&v, &["a", "l"]), 2);
        assert_eq!(count(&v, &["a", "m"]), 1);
        assert_eq!(count(&v, &["a", "s"]), 0);
        assert_eq!(name(&json!("not an object")), "");
    }

    #[test]
    fn numbers_of_any_json_shape_become_integers() {
        assert_eq!(as_int(&json!(-4)), Some(-4));
        assert_eq!(as_int(&json!(u64::MAX)), Some(i64::MAX));
        assert_eq!(as_int(&json!(2.9)), Some(2));
        assert_eq!(as_int(&json!("2")), None);
    }
}
