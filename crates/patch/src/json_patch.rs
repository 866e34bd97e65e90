//! JSON patch (RFC 6902, `application/json-patch+json`): a list of operations (`add`,
//! `remove`, `replace`, `move`, `copy`, `test`) applied in order to a document.
//!
//! The patch is applied the way the Kubernetes API server applies it (with the
//! `evanphx/json-patch` v4 library), which goes beyond the RFC in a few places a client
//! may notice:
//! - negative array indices count from the end (`/items/-1` is the last item);
//! - an `add` or `replace` without `value` sets `null`; a `test` of a missing location
//!   succeeds when `value` is `null` or absent;
//! - a path is split at `/` and its first segment ignored, so `a/b` means `/b`; the
//!   whole-document path `""` is refused;
//! - `copy` operations may add at most [`MAX_COPY_BYTES`] (serialized) in total;
//! - a patch of more than [`MAX_OPERATIONS`] operations is refused with `413`.
//!
//! Failures: a patch that is not a list of operations is `400`; every failure while
//! applying (an unknown `op`, a missing path, a failed `test`) is `422`, and nothing of
//! the patch is applied.

mod pointer;

use crate::PatchError;
use crate::nesting::{self, MAX_DEPTH};
use pointer::{Location, Pointer};
use serde_json::{Map, Value};

/// The most operations Kubernetes accepts in one JSON patch.
pub const MAX_OPERATIONS: usize = 10_000;

/// The most bytes (serialized) the `copy` operations of one patch may add, as the
/// Kubernetes API server allows by default (`--json-patch-max-copy-bytes`).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Applies the JSON patch `patch` to `document`.
///
/// Atomic: on error the whole patch is refused and nothing is returned but the error.
pub fn apply(document: Value, patch: &Value) -> Result<Value, PatchError> {
    let operations = match decode(patch) {
        Ok(operations) => operations,
        Err(error) => {
            nesting::dispose(document);
            return Err(error);
        }
    };
    if nesting::depth_within(&document, MAX_DEPTH).is_none() {
        nesting::dispose(document);
        return Err(nesting::too_deep("the object"));
    }
    let mut document = document;
    let mut copied = 0usize;
    for operation in operations {
        if let Err(error) = apply_operation(&mut document, operation, &mut copied) {
            nesting::dispose(document);
            return Err(error);
        }
    }
    Ok(document)
}

/// Checks the patch's shape: a list of operation objects (or `null`, an empty patch),
/// not too many, not nested too deeply.
fn decode(patch: &Value) -> Result<Vec<Option<&Map<String, Value>>>, PatchError> {
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                json_kind(other)
            )));
        }
    };
    let mut operations = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(map) => operations.push(Some(map)),
            Value::Null => operations.push(None),
            other => {
                return Err(PatchError::BadRequest(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    json_kind(other)
                )));
            }
        }
    }
    if operations.len() > MAX_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
            operations.len()
        )));
    }
    nesting::check(patch, "the patch")?;
    Ok(operations)
}

/// The name Go's JSON decoder gives a value's kind in its errors.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn invalid(message: impl Into<String>) -> PatchError {
    PatchError::Invalid(message.into())
}

fn apply_operation(
    document: &mut Value,
    operation: Option<&Map<String, Value>>,
    copied: &mut usize,
) -> Result<(), PatchError> {
    let empty = Map::new();
    let operation = operation.unwrap_or(&empty);
    let kind = operation
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    match kind {
        "add" => {
            let path = pointer_field(operation, "path", kind)?;
            let value = operation.get("value").cloned().unwrap_or(Value::Null);
            add(document, &path, value)
        }
        "remove" => {
            let path = pointer_field(operation, "path", kind)?;
            remove(document, &path).map(drop)
        }
        "replace" => {
            let path = pointer_field(operation, "path", kind)?;
            let value = operation.get("value").cloned().unwrap_or(Value::Null);
            replace(document, &path, value)
        }
        "move" => {
            let from = pointer_field(operation, "from", kind)?;
            let path = pointer_field(operation, "path", kind)?;
            let value = remove(document, &from)?;
            if path.depth() > from.depth() {
                ensure_fits(&path, &value)?;
            }
            add_unchecked(document, &path, value)
        }
        "copy" => {
            let from = pointer_field(operation, "from", kind)?;
            let path = pointer_field(operation, "path", kind)?;
            let value = copy_of(document, &from)?;
            *copied = copied.saturating_add(serialized_len(&value));
            if *copied > MAX_COPY_BYTES {
                return Err(invalid(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}"
                )));
            }
            add(document, &path, value)
        }
        "test" => {
            let path = pointer_field(operation, "path", kind)?;
            test(document, &path, operation.get("value"))
        }
        other => Err(invalid(format!("Unexpected kind: {other}"))),
    }
}

/// The pointer in `field` (`path` or `from`) of an operation.
fn pointer_field(
    operation: &Map<String, Value>,
    field: &str,
    kind: &str,
) -> Result<Pointer, PatchError> {
    match operation.get(field) {
        Some(Value::String(text)) => Pointer::parse(text).ok_or_else(|| {
            invalid(format!(
                "{kind} operation does not apply: doc is missing path: \"{text}\": missing value"
            ))
        }),
        Some(Value::Null) | None => Err(invalid(format!(
            "{kind} operation failed to decode {field}: missing value"
        ))),
        Some(_) => Err(invalid(format!(
            "{kind} operation failed to decode {field}: json: cannot unmarshal non-string into Go value of type string"
        ))),
    }
}

/// Refuses a value whose insertion at `path` would nest the document too deeply.
fn ensure_fits(path: &Pointer, value: &Value) -> Result<(), PatchError> {
    let room = MAX_DEPTH.saturating_sub(path.depth());
    match nesting::depth_within(value, room) {
        Some(_) => Ok(()),
        None => Err(nesting::too_deep("the patched object")),
    }
}

fn add(document: &mut Value, path: &Pointer, value: Value) -> Result<(), PatchError> {
    ensure_fits(path, &value)?;
    add_unchecked(document, path, value)
}

fn add_unchecked(document: &mut Value, path: &Pointer, value: Value) -> Result<(), PatchError> {
    let missing = || {
        invalid(format!(
            "add operation does not apply: doc is missing path: \"{}\": missing value",
            path.text()
        ))
    };
    match path.locate(document).ok_or_else(missing)? {
        Location::Member(map, key) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Location::Element(items, key) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let index = pointer::insertion_index(key, items.len())
                .map_err(|e| invalid(format!("error in add for path: '{}': {e}", path.text())))?;
            items.insert(index, value);
            Ok(())
        }
    }
}

fn remove(document: &mut Value, path: &Pointer) -> Result<Value, PatchError> {
    let missing = || {
        invalid(format!(
            "remove operation does not apply: doc is missing path: \"{}\": missing value",
            path.text()
        ))
    };
    match path.locate(document).ok_or_else(missing)? {
        Location::Member(map, key) => map.remove(key).ok_or_else(|| {
            invalid(format!(
                "error in remove for path: '{}': Unable to remove nonexistent key: {key}: missing value",
                path.text()
            ))
        }),
        Location::Element(items, key) => {
            let index = pointer::existing_index(key, items.len()).map_err(|e| {
                invalid(format!("error in remove for path: '{}': {e}", path.text()))
            })?;
            Ok(items.remove(index))
        }
    }
}

fn replace(document: &mut Value, path: &Pointer, value: Value) -> Result<(), PatchError> {
    ensure_fits(path, &value)?;
    let missing = || {
        invalid(format!(
            "replace operation does not apply: doc is missing key: {}: missing value",
            path.text()
        ))
    };
    let slot = match path.locate(document).ok_or_else(missing)? {
        Location::Member(map, key) => map.get_mut(key).ok_or_else(missing)?,
        Location::Element(items, key) => {
            let index = pointer::existing_index(key, items.len()).map_err(|_| missing())?;
            items.get_mut(index).ok_or_else(missing)?
        }
    };
    *slot = value;
    Ok(())
}

/// A copy of the value at `path`.
fn copy_of(document: &mut Value, path: &Pointer) -> Result<Value, PatchError> {
    let missing = || {
        invalid(format!(
            "doc is missing from path: {}: missing value",
            path.text()
        ))
    };
    match path.locate(document).ok_or_else(missing)? {
        Location::Member(map, key) => map.get(key).cloned().ok_or_else(missing),
        Location::Element(items, key) => {
            let index = pointer::existing_index(key, items.len()).map_err(|_| missing())?;
            items.get(index).cloned().ok_or_else(missing)
        }
    }
}

fn test(document: &mut Value, path: &Pointer, expected: Option<&Value>) -> Result<(), PatchError> {
    let failed = || invalid(format!("testing value {} failed: test failed", path.text()));
    let location = path.locate(document).ok_or_else(|| {
        invalid(format!(
            "test operation does not apply: is missing path: {}: missing value",
            path.text()
        ))
    })?;
    let actual = match location {
        Location::Member(map, key) => map.get(key),
        Location::Element(items, key) => {
            let index = pointer::existing_index(key, items.len())
                .map_err(|e| invalid(format!("error in test for path: '{}': {e}", path.text())))?;
            items.get(index)
        }
    };
    let expected = expected.filter(|v| !v.is_null());
    match (actual.filter(|v| !v.is_null()), expected) {
        (None, None) => Ok(()),
        (Some(actual), Some(expected)) if json_equal(actual, expected) => Ok(()),
        _ => Err(failed()),
    }
}

/// Equality of JSON values, numbers compared by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64() && x.as_f64().is_some(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// The length of the value serialized as compact JSON.
fn serialized_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn patched(document: Value, patch: Value) -> Result<Value, PatchError> {
        apply(document, &patch)
    }

    #[test]
    fn negative_indices_count_from_the_end() {
        let doc = json!({"a": [1, 2, 3]});
        assert_eq!(
            patched(doc.clone(), json!([{"op": "remove", "path": "/a/-1"}])).unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "add", "path": "/a/-1", "value": 9}])
            )
            .unwrap(),
            json!({"a": [1, 2, 3, 9]})
        );
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "replace", "path": "/a/-3", "value": 0}])
            )
            .unwrap(),
            json!({"a": [0, 2, 3]})
        );
        assert_eq!(
            patched(doc, json!([{"op": "remove", "path": "/a/-4"}])).map_err(|e| e.code()),
            Err(422)
        );
    }

    #[test]
    fn indices_out_of_range_or_malformed_are_refused() {
        let doc = json!({"a": [1]});
        for path in ["/a/2", "/a/x", "/a/1.0", "/a/"] {
            let result = patched(
                doc.clone(),
                json!([{"op": "add", "path": path, "value": 0}]),
            );
            assert_eq!(result.map_err(|e| e.code()), Err(422), "{path}");
        }
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "add", "path": "/a/1", "value": 0}])
            )
            .unwrap(),
            json!({"a": [1, 0]})
        );
        assert_eq!(
            patched(doc, json!([{"op": "replace", "path": "/a/1", "value": 0}]))
                .map_err(|e| e.code()),
            Err(422)
        );
    }

    #[test]
    fn missing_value_means_null() {
        assert_eq!(
            patched(json!({}), json!([{"op": "add", "path": "/a"}])).unwrap(),
            json!({"a": null})
        );
        assert!(patched(json!({"a": 1}), json!([{"op": "test", "path": "/b"}])).is_ok());
        assert!(
            patched(
                json!({"a": 1}),
                json!([{"op": "test", "path": "/b", "value": null}])
            )
            .is_ok()
        );
        assert!(patched(json!({"a": 1}), json!([{"op": "test", "path": "/a"}])).is_err());
    }

    #[test]
    fn replace_needs_an_existing_member() {
        let error = patched(
            json!({"a": 1}),
            json!([{"op": "replace", "path": "/b", "value": 2}]),
        )
        .unwrap_err();
        assert_eq!(error.code(), 422);
        assert_eq!(
            error.message(),
            "replace operation does not apply: doc is missing key: /b: missing value"
        );
    }

    #[test]
    fn malformed_patches_are_bad_requests() {
        for (patch, text) in [
            (
                json!({"op": "add"}),
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
            ),
            (
                json!("x"),
                "json: cannot unmarshal string into Go value of type jsonpatch.Patch",
            ),
            (
                json!([1]),
                "json: cannot unmarshal number into Go value of type jsonpatch.Operation",
            ),
            (
                json!([[]]),
                "json: cannot unmarshal array into Go value of type jsonpatch.Operation",
            ),
        ] {
            let error = patched(json!({}), patch).unwrap_err();
            assert_eq!(error, PatchError::BadRequest(text.into()));
        }
    }

    #[test]
    fn operations_that_cannot_apply_are_invalid() {
        for patch in [
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"path": "/a"}]),
            json!([null]),
            json!([{"op": "add", "value": 1}]),
            json!([{"op": "add", "path": 7, "value": 1}]),
            json!([{"op": "add", "path": "", "value": 1}]),
            json!([{"op": "remove", "path": "/nope"}]),
            json!([{"op": "move", "from": "/nope", "path": "/b"}]),
            json!([{"op": "copy", "from": "/a", "path": "/x/y"}]),
            json!([{"op": "move", "from": "/a", "path": "/a/b"}]),
        ] {
            let error = patched(json!({"a": {"b": 1}}), patch.clone()).unwrap_err();
            assert_eq!(error.code(), 422, "{patch}");
        }
        let error = patched(json!({}), json!([{"op": "frobnicate"}])).unwrap_err();
        assert_eq!(error.message(), "Unexpected kind: frobnicate");
    }

    #[test]
    fn a_null_patch_changes_nothing() {
        assert_eq!(
            patched(json!({"a": 1}), Value::Null).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            patched(json!({"a": 1}), json!([])).unwrap(),
            json!({"a": 1})
        );
    }

    #[test]
    fn too_many_operations_is_too_large() {
        let ops: Vec<Value> = (0..=MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        let error = patched(json!({"a": 1}), Value::Array(ops)).unwrap_err();
        assert_eq!(error.code(), 413);
        assert_eq!(
            error.status_message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        let ops: Vec<Value> = (0..MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        assert!(patched(json!({"a": 1}), Value::Array(ops)).is_ok());
    }

    #[test]
    fn copies_are_limited_in_total_size() {
        let big = "x".repeat(1024 * 1024);
        let doc = json!({"a": big});
        let copy = |to: &str| json!({"op": "copy", "from": "/a", "path": to});
        assert!(patched(doc.clone(), json!([copy("/b"), copy("/c")])).is_ok());
        let error = patched(doc, json!([copy("/b"), copy("/c"), copy("/d")])).unwrap_err();
        assert_eq!(error.code(), 422);
        assert!(error.message().starts_with("Unable to complete the copy"));
    }

    #[test]
    fn copying_into_itself_cannot_nest_without_bound() {
        // Each copy nests the document one level deeper; the depth bound stops it.
        let ops: Vec<Value> = (0..MAX_DEPTH + 10)
            .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/a"}))
            .collect();
        let error = patched(json!({"a": {}}), Value::Array(ops)).unwrap_err();
        assert_eq!(error.code(), 400);
        let ops: Vec<Value> = (0..MAX_DEPTH - 10)
            .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/a"}))
            .collect();
        let result = patched(json!({"a": {}}), Value::Array(ops)).unwrap();
        assert_eq!(
            crate::nesting::depth_within(&result, MAX_DEPTH),
            Some(MAX_DEPTH - 8)
        );
    }

    #[test]
    fn deep_documents_and_patches_are_refused() {
        let deep = crate::nesting::tests::deep_object(100_000);
        let error = patched(deep, json!([])).unwrap_err();
        assert_eq!(error.code(), 400);

        let value = crate::nesting::tests::deep_object(100_000);
        let patch = json!([{"op": "add", "path": "/x", "value": null}]);
        let mut patch = patch;
        if let Some(op) = patch.pointer_mut("/0/value") {
            *op = value;
        }
        let error = apply(json!({}), &patch).unwrap_err();
        assert_eq!(error.code(), 400);
        crate::nesting::dispose(patch);
    }

    #[test]
    fn numbers_compare_by_value_in_tests() {
        assert!(
            patched(
                json!({"a": 1}),
                json!([{"op": "test", "path": "/a", "value": 1.0}])
            )
            .is_ok()
        );
        assert!(
            patched(
                json!({"a": {"x": [1, "2"]}}),
                json!([{"op": "test", "path": "/a", "value": {"x": [1, "2"]}}])
            )
            .is_ok()
        );
        assert!(
            patched(
                json!({"a": {"x": 1, "y": 2}}),
                json!([{"op": "test", "path": "/a", "value": {"x": 1}}])
            )
            .is_err()
        );
    }
}
