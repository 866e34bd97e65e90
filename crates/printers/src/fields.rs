//! Cell values: the strings a printer puts in a row. Objects are read with
//! `kyb_apimachinery::json` (missing, `null` and mistyped fields read as Go's zero values),
//! so printers never panic and never branch on malformed input themselves.

use serde_json::Value;

/// A string cell holding a copy of `value`.
pub(crate) fn text(value: &str) -> Value {
    Value::String(value.to_owned())
}

/// `text`, but `replacement` when the string is empty.
pub(crate) fn text_or(value: &str, replacement: &str) -> Value {
    text(if value.is_empty() { replacement } else { value })
}
