//! The `requestObject` and `responseObject` of an event: the body the server already has,
//! embedded in Go's compact form, optionally without `metadata.managedFields` (on the
//! object itself, and on each of a list's `items`), as `omitManagedFields` asks.
//!
//! Raw bodies are only parsed into a tree when managed fields must go and the body
//! mentions them; otherwise they are validated and compacted in one pass each.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::json;

const MANAGED_FIELDS: &str = "managedFields";

/// A body as it will appear in the event, or `None` when it is not one JSON value (such
/// a body is left out; Kubernetes logs only objects it could encode as JSON).
pub(crate) fn from_bytes(raw: &[u8], omit_managed_fields: bool) -> Option<String> {
    if omit_managed_fields && mentions_managed_fields(raw) {
        let value: Value = serde_json::from_slice(raw).ok()?;
        return from_value(&value, true);
    }
    if !json::is_valid(raw) {
        return None;
    }
    String::from_utf8(json::compact(raw)).ok()
}

/// A decoded object as it will appear in the event.
pub(crate) fn from_value(value: &Value, omit_managed_fields: bool) -> Option<String> {
    let written = if omit_managed_fields {
        serde_json::to_vec(&WithoutManagedFields { value, top: true })
    } else {
        serde_json::to_vec(value)
    };
    // serde_json writes compact JSON; this only adds Go's escapes.
    String::from_utf8(json::compact(&written.ok()?)).ok()
}

fn mentions_managed_fields(raw: &[u8]) -> bool {
    let needle = b"\"managedFields\"";
    raw.windows(needle.len()).any(|window| window == needle)
}

/// An object written without `metadata.managedFields`; at the top, a list's items too.
struct WithoutManagedFields<'a> {
    value: &'a Value,
    top: bool,
}

impl Serialize for WithoutManagedFields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.value else {
            return self.value.serialize(serializer);
        };
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for (key, item) in map {
            match (key.as_str(), item) {
                ("metadata", Value::Object(_)) => {
                    out.serialize_entry(key, &Metadata(item))?;
                }
                ("items", Value::Array(items)) if self.top => {
                    out.serialize_entry(key, &Items(items))?;
                }
                _ => out.serialize_entry(key, item)?,
            }
        }
        out.end()
    }
}

/// An object's metadata without `managedFields`.
struct Metadata<'a>(&'a Value);

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return self.0.serialize(serializer);
        };
        let mut out = serializer.serialize_map(None)?;
        for (key, item) in map.iter().filter(|(key, _)| key.as_str() != MANAGED_FIELDS) {
            out.serialize_entry(key, item)?;
        }
        out.end()
    }
}

/// A list's items, each without its managed fields.
struct Items<'a>(&'a [Value]);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_seq(Some(self.0.len()))?;
        for value in self.0 {
            out.serialize_element(&WithoutManagedFields { value, top: false })?;
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_bodies_are_compacted_not_parsed() {
        let raw = b"{\n  \"kind\": \"Pod\",\n  \"metadata\": {\"name\": \"web\", \"managedFields\": [{\"manager\": \"kubectl\"}]}\n}";
        assert_eq!(
            from_bytes(raw, false).as_deref(),
            Some(
                r#"{"kind":"Pod","metadata":{"name":"web","managedFields":[{"manager":"kubectl"}]}}"#
            )
        );
        assert_eq!(from_bytes(b"not json", false), None);
        assert_eq!(from_bytes(b"{\"a\":1}{}", true), None);
    }

    #[test]
    fn managed_fields_are_stripped_from_objects_and_list_items() {
        let raw = br#"{"kind":"Pod","metadata":{"name":"web","managedFields":[{"manager":"kubectl"}]},"spec":{"managedFields":"kept"}}"#;
        assert_eq!(
            from_bytes(raw, true).as_deref(),
            Some(r#"{"kind":"Pod","metadata":{"name":"web"},"spec":{"managedFields":"kept"}}"#)
        );
        // Keys in sorted order, so the output is the same with or without serde_json's
        // `preserve_order`.
        let list = json!({
            "items": [
                {"metadata": {"managedFields": [], "name": "a"}},
                {"items": [{"metadata": {"managedFields": 1}}], "metadata": {"name": "b"}}
            ],
            "kind": "PodList",
            "metadata": {"resourceVersion": "5"}
        });
        assert_eq!(
            from_value(&list, true).as_deref(),
            Some(
                r#"{"items":[{"metadata":{"name":"a"}},{"items":[{"metadata":{"managedFields":1}}],"metadata":{"name":"b"}}],"kind":"PodList","metadata":{"resourceVersion":"5"}}"#
            )
        );
    }

    #[test]
    fn values_get_go_escapes() {
        assert_eq!(
            from_value(&json!({"a": "<b>"}), false).as_deref(),
            Some(r#"{"a":"\u003cb\u003e"}"#)
        );
        assert_eq!(
            from_bytes(br#"{"a":"<b>"}"#, true).as_deref(),
            Some(r#"{"a":"\u003cb\u003e"}"#)
        );
    }
}
