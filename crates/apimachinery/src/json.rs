//! The one tolerant reader (and defaulting writer) of objects in their JSON form.
//!
//! Objects reaching any component are untrusted: a field may be missing, `null`, or of the
//! wrong type. Every accessor here answers with what Kubernetes' Go types would hold after
//! decoding such a field — the zero value — so callers never panic and never branch on
//! malformed input themselves. The rules, the same for every caller:
//!
//! - `null` is absent. Go decodes `null` into a field's zero value, so `{"x": null}` reads
//!   exactly as `{}` (presence tests included).
//! - A wrong type is absent: a number where a string is expected reads as no string.
//! - Integers are whole JSON numbers within `i64`: `2` and `2.0` are 2, while `2.5` or
//!   `1e30` are no integer at all (Go refuses to decode them into an `int64`, so no stored
//!   object holds them).
//!
//! Two families of names: `opt_*` and [`at`] answer `None` for an absent value; `str_at`,
//! `int_at`, `bool_at`, [`items`] and [`count`] answer the zero value (`""`, `0`, `false`,
//! an empty slice). [`Obj`] offers the same reads as methods on one object or map. The
//! mutable helpers are for defaulting: they fill in what is absent and never replace a
//! value of another type.

use serde_json::{Map, Value};

/// A `null` to point at for absent values.
pub static NULL: Value = Value::Null;

static NO_ITEMS: [Value; 0] = [];

/// The value at `path` (object keys), or `None` when any step is missing or not an object,
/// or the value is `null`.
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut current = value;
    for key in path {
        current = current.as_object()?.get(*key)?;
    }
    (!current.is_null()).then_some(current)
}

/// The field `key` of `value`, or `null` when it is missing (or `value` is no object).
pub fn field<'a>(value: &'a Value, key: &str) -> &'a Value {
    value.get(key).unwrap_or(&NULL)
}

/// The value at `path`, or `null` when it is absent: [`at`] for callers that go on
/// reading with [`Obj`] or [`field`].
pub fn field_at<'a>(value: &'a Value, path: &[&str]) -> &'a Value {
    at(value, path).unwrap_or(&NULL)
}

/// The string at `path`, or `None` when it is absent or not a string.
pub fn opt_str<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

/// The string at `path`, or `""`.
pub fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    opt_str(value, path).unwrap_or("")
}

/// A JSON number as an integer: a whole number within `i64` (`2.0` counts, `2.5` does
/// not).
pub fn as_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                // A whole number well within range: the conversion is exact.
                .map(|f| f as i64)
        }),
        _ => None,
    }
}

/// The integer at `path`, or `None` when it is absent or no integer (see [`as_int`]).
pub fn opt_int(value: &Value, path: &[&str]) -> Option<i64> {
    at(value, path).and_then(as_int)
}

/// The integer at `path`, or `0`.
pub fn int_at(value: &Value, path: &[&str]) -> i64 {
    opt_int(value, path).unwrap_or(0)
}

/// The boolean at `path`, or `None` when it is absent or not a boolean.
pub fn opt_bool(value: &Value, path: &[&str]) -> Option<bool> {
    at(value, path).and_then(Value::as_bool)
}

/// The boolean at `path`, or `false`.
pub fn bool_at(value: &Value, path: &[&str]) -> bool {
    opt_bool(value, path).unwrap_or(false)
}

/// The array at `path`, or an empty slice.
pub fn items<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    match at(value, path) {
        Some(Value::Array(list)) => list,
        _ => &NO_ITEMS,
    }
}

/// The object at `path`, or `None`.
pub fn map_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    at(value, path).and_then(Value::as_object)
}

/// How many entries the list or map at `path` holds (0 when absent).
pub fn count(value: &Value, path: &[&str]) -> i64 {
    let n = match at(value, path) {
        Some(Value::Array(list)) => list.len(),
        Some(Value::Object(map)) => map.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether a JSON value is what Go decodes to a zero value: `null`, `""`, `0`, `false`,
/// `[]` or `{}`.
pub fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Go's `strconv.ParseBool`: `Some` for the spellings it accepts.
pub fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Read access to one object's fields, with the rules of this module.
pub trait Obj {
    /// The field's value, `None` when missing or `null`.
    fn get_field(&self, key: &str) -> Option<&Value>;

    /// The field as a string; `""` when absent or not a string.
    fn str(&self, key: &str) -> &str {
        self.get_field(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The field as a string, distinguishing "not set" from `""`.
    fn opt_str(&self, key: &str) -> Option<&str> {
        self.get_field(key).and_then(Value::as_str)
    }

    /// The field as a list; empty when absent or not a list.
    fn arr(&self, key: &str) -> &[Value] {
        match self.get_field(key) {
            Some(Value::Array(a)) => a,
            _ => &NO_ITEMS,
        }
    }

    /// The field as an object.
    fn obj(&self, key: &str) -> Option<&Map<String, Value>> {
        self.get_field(key).and_then(Value::as_object)
    }

    /// The field as an integer (see [`as_int`]).
    fn int(&self, key: &str) -> Option<i64> {
        self.get_field(key).and_then(as_int)
    }

    /// The field as a boolean; `false` when absent.
    fn flag(&self, key: &str) -> bool {
        self.get_field(key)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The field as an optional boolean.
    fn opt_flag(&self, key: &str) -> Option<bool> {
        self.get_field(key).and_then(Value::as_bool)
    }

    /// Whether the field is set (present and not `null`).
    fn has(&self, key: &str) -> bool {
        self.get_field(key).is_some()
    }

    /// The field as a map of strings (labels, selectors, annotations), skipping non-string
    /// values.
    fn str_map(&self, key: &str) -> Vec<(&str, &str)> {
        match self.get_field(key) {
            Some(Value::Object(m)) => m
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The field as a list of strings, skipping non-strings.
    fn str_list(&self, key: &str) -> Vec<&str> {
        self.arr(key).iter().filter_map(Value::as_str).collect()
    }
}

impl Obj for Value {
    fn get_field(&self, key: &str) -> Option<&Value> {
        self.get(key).filter(|v| !v.is_null())
    }
}

impl Obj for Map<String, Value> {
    fn get_field(&self, key: &str) -> Option<&Value> {
        self.get(key).filter(|v| !v.is_null())
    }
}

/// The object under `key` of `map`, inserted empty when absent or `null`; `None` when the
/// key holds another type (left untouched).
pub fn child_object<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let slot = map.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
}

/// The array under `key` of `map`, inserted empty when absent or `null`; `None` when the
/// key holds another type (left untouched).
pub fn child_array<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    let slot = map.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}

/// The `spec` object of an object, inserted when absent; `None` when the object or its
/// spec has another type.
pub fn spec_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    child_object(object.as_object_mut()?, "spec")
}

/// The existing child object at `key`, if it is one.
pub fn obj_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The existing child list at `key`, if it is one.
pub fn arr_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    map.get_mut(key).and_then(Value::as_array_mut)
}

/// Calls `f` on every object element of the list at `key`.
pub fn each_obj(
    map: &mut Map<String, Value>,
    key: &str,
    mut f: impl FnMut(&mut Map<String, Value>),
) {
    if let Some(list) = arr_mut(map, key) {
        for item in list.iter_mut() {
            if let Some(o) = item.as_object_mut() {
                f(o);
            }
        }
    }
}

/// Sets `key` to `value` when it is missing or `null`.
pub fn default_value(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Sets a string field when it is missing, `null` or `""` (Go's empty string).
pub fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    let empty = match map.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if empty {
        map.insert(key.to_string(), Value::String(value.to_string()));
    }
}

/// Sets an integer field when it is missing, `null` or `0` (Go's zero value).
pub fn default_nonzero(map: &mut Map<String, Value>, key: &str, value: i64) {
    let empty = match map.get(key) {
        None | Some(Value::Null) => true,
        Some(v) => as_int(v) == Some(0),
    };
    if empty {
        map.insert(key.to_string(), Value::from(value));
    }
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
        assert_eq!(opt_str(&v, &["a", "n"]), None);
        assert_eq!(str_at(&v, &["a", "s", "deeper"]), "");
        assert_eq!(int_at(&v, &["a", "n"]), 3);
        assert_eq!(int_at(&v, &["a", "s"]), 0);
        assert!(bool_at(&v, &["a", "b"]));
        assert!(!bool_at(&v, &["a", "missing"]));
        assert!(at(&v, &["a", "z"]).is_none());
        assert!(field_at(&v, &["a", "z"]).is_null());
        assert!(field(&v, "nothing").is_null());
        assert_eq!(items(&v, &["a", "l"]).len(), 2);
        assert!(items(&v, &["a", "m"]).is_empty());
        assert!(map_at(&v, &["a", "s"]).is_none());
        assert_eq!(count(&v, &["a", "l"]), 2);
        assert_eq!(count(&v, &["a", "m"]), 1);
        assert_eq!(count(&v, &["a", "s"]), 0);
        assert_eq!(str_at(&json!("not an object"), &["metadata", "name"]), "");
    }

    #[test]
    fn null_is_absent_even_for_presence_tests() {
        let v = json!({"x": null, "y": 0});
        assert!(!v.has("x"));
        assert!(v.has("y"));
        assert!(at(&v, &["x"]).is_none());
        assert_eq!(v.opt_str("x"), None);
    }

    #[test]
    fn integers_are_whole_numbers_within_i64() {
        assert_eq!(as_int(&json!(-4)), Some(-4));
        assert_eq!(as_int(&json!(2.0)), Some(2));
        // Go refuses these for an int64 field: they are no integer here either.
        assert_eq!(as_int(&json!(2.9)), None);
        assert_eq!(as_int(&json!(u64::MAX)), None);
        assert_eq!(as_int(&json!(1e30)), None);
        assert_eq!(as_int(&json!("2")), None);
    }

    #[test]
    fn object_accessors_tolerate_wrong_types() {
        let v = json!({"a": 1, "b": "x", "c": [1, "y"], "d": null, "e": {"k": "v", "n": 2}});
        assert_eq!(v.str("a"), "");
        assert_eq!(v.str("b"), "x");
        assert_eq!(v.arr("b").len(), 0);
        assert_eq!(v.str_list("c"), vec!["y"]);
        assert!(!v.has("d"));
        assert_eq!(v.int("a"), Some(1));
        assert_eq!(v.str_map("e"), vec![("k", "v")]);
    }

    #[test]
    fn defaults_only_fill_empty() {
        let mut m = json!({"a": "", "b": "set", "c": 0, "d": 5, "e": 7})
            .as_object()
            .cloned()
            .unwrap_or_default();
        default_str(&mut m, "a", "A");
        default_str(&mut m, "b", "B");
        default_nonzero(&mut m, "c", 1);
        default_nonzero(&mut m, "d", 1);
        default_str(&mut m, "e", "E");
        assert_eq!(
            Value::Object(m),
            json!({"a": "A", "b": "set", "c": 1, "d": 5, "e": 7})
        );
    }

    #[test]
    fn child_helpers_never_replace_other_types() {
        let mut m = json!({"x": 1, "y": null, "s": "text"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(child_object(&mut m, "x").is_none());
        assert!(child_object(&mut m, "y").is_some());
        assert!(child_object(&mut m, "z").is_some());
        assert!(child_array(&mut m, "s").is_none());
        assert!(child_array(&mut m, "new").is_some());
        assert_eq!(
            Value::Object(m),
            json!({"x": 1, "y": {}, "z": {}, "s": "text", "new": []})
        );
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
