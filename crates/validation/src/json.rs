//! Tolerant accessors over objects in their JSON form. Inputs are untrusted: a field of the
//! wrong type reads as absent, never as a panic. The mutable helpers are for defaulting.

use serde_json::{Map, Value};

/// Read access to a JSON object's fields; every accessor treats `null` and wrong types as
/// "not set", which is what Go's zero values amount to.
pub(crate) trait Obj {
    /// The field's value, `None` when missing or `null`.
    fn get_field(&self, key: &str) -> Option<&Value>;

    /// The field as a string; `""` when missing or not a string.
    fn str(&self, key: &str) -> &str {
        self.get_field(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The field as a string, distinguishing "not set" from `""`.
    fn opt_str(&self, key: &str) -> Option<&str> {
        self.get_field(key).and_then(Value::as_str)
    }

    /// The field as a list; empty when missing or not a list.
    fn arr(&self, key: &str) -> &[Value] {
        match self.get_field(key) {
            Some(Value::Array(a)) => a,
            _ => &[],
        }
    }

    /// The field as an object.
    fn obj(&self, key: &str) -> Option<&Map<String, Value>> {
        self.get_field(key).and_then(Value::as_object)
    }

    /// The field as an integer (floats with no fraction count too).
    fn int(&self, key: &str) -> Option<i64> {
        self.get_field(key).and_then(as_int)
    }

    /// The field as a boolean; `false` when missing.
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
        match self.get(key) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }
}

impl Obj for Map<String, Value> {
    fn get_field(&self, key: &str) -> Option<&Value> {
        match self.get(key) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }
}

/// A JSON number as an integer.
pub(crate) fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
        }),
        _ => None,
    }
}

/// An empty JSON value reference for absent objects.
pub(crate) static NULL: Value = Value::Null;

/// The field of `v` at `key`, or `null`.
pub(crate) fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&NULL)
}

/// Follows a chain of object keys; `null` when any step is missing.
pub(crate) fn at<'a>(v: &'a Value, keys: &[&str]) -> &'a Value {
    let mut cur = v;
    for k in keys {
        cur = field(cur, k);
    }
    cur
}

/// Whether a value is "empty" as Go would see it: null, "", 0, false, [] or {}.
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// The child object at `key`, created as `{}` when missing or `null`; `None` when the field
/// holds something that is not an object (left untouched).
pub(crate) fn child_obj<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let entry = m.entry(key.to_string()).or_insert(Value::Null);
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// The existing child object at `key`, if it is one.
pub(crate) fn obj_mut<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The existing child list at `key`, if it is one.
pub(crate) fn arr_mut<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    m.get_mut(key).and_then(Value::as_array_mut)
}

/// Calls `f` on every object element of the list at `key`.
pub(crate) fn each_obj(
    m: &mut Map<String, Value>,
    key: &str,
    mut f: impl FnMut(&mut Map<String, Value>),
) {
    if let Some(list) = arr_mut(m, key) {
        for item in list.iter_mut() {
            if let Some(o) = item.as_object_mut() {
                f(o);
            }
        }
    }
}

/// Sets `key` to `value` when it is missing or `null`.
pub(crate) fn default_value(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.to_string(), value);
    }
}

/// Sets a string field when it is missing, `null` or `""` (Go's empty string).
pub(crate) fn default_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    let empty = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if empty {
        m.insert(key.to_string(), Value::String(value.to_string()));
    }
}

/// Sets an integer field when it is missing, `null` or `0` (Go's zero value).
pub(crate) fn default_nonzero(m: &mut Map<String, Value>, key: &str, value: i64) {
    let empty = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(v) => as_int(v) == Some(0),
    };
    if empty {
        m.insert(key.to_string(), Value::from(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accessors_tolerate_wrong_types() {
        let v = json!({"a": 1, "b": "x", "c": [1, "y"], "d": null, "e": {"k": "v", "n": 2}});
        assert_eq!(v.str("a"), "");
        assert_eq!(v.str("b"), "x");
        assert_eq!(v.arr("b").len(), 0);
        assert_eq!(v.str_list("c"), vec!["y"]);
        assert!(!v.has("d"));
        assert_eq!(v.int("a"), Some(1));
        assert_eq!(v.str_map("e"), vec![("k", "v")]);
        assert_eq!(at(&v, &["e", "k"]), &json!("v"));
        assert!(at(&v, &["x", "y", "z"]).is_null());
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
    fn child_obj_does_not_clobber() {
        let mut m = json!({"x": 1, "y": null})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(child_obj(&mut m, "x").is_none());
        assert!(child_obj(&mut m, "y").is_some());
        assert!(child_obj(&mut m, "z").is_some());
        assert_eq!(Value::Object(m), json!({"x": 1, "y": {}, "z": {}}));
    }
}
