//! How deeply documents may nest, and freeing deeply nested documents.
//!
//! Every patch algorithm here recurses once per level of nesting, and so do
//! `serde_json`'s `clone` and `drop`. Inputs are measured first without recursion, so a
//! malicious document is refused before anything recurses into it; and a document this
//! crate owns and refuses is taken apart iteratively instead of being dropped.

use crate::PatchError;
use serde_json::Value;

/// The deepest nesting of objects and arrays a patch or a patched document may have.
///
/// Kubernetes objects nest a few dozen levels at most (custom resource schemas inside
/// CRDs are the deepest); `serde_json` refuses to parse more than 128 by default. At
/// this bound a strategic merge patch needs well under 1 MiB of stack even unoptimized
/// (a unit test checks), so it is safe on any thread.
pub const MAX_DEPTH: usize = 256;

/// How many objects and arrays `value` nests (0 for a scalar), or `None` if more than
/// `limit`. Uses no recursion.
pub(crate) fn depth_within(value: &Value, limit: usize) -> Option<usize> {
    let mut deepest = 0;
    let mut pending = vec![(value, 0usize)];
    while let Some((value, above)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let level = above + 1;
        if level > limit {
            return None;
        }
        deepest = deepest.max(level);
        pending.extend(children.map(|child| (child, level)));
    }
    Some(deepest)
}

/// Refuses `value` if it nests more than [`MAX_DEPTH`] levels; `what` names it.
pub(crate) fn check(value: &Value, what: &str) -> Result<(), PatchError> {
    match depth_within(value, MAX_DEPTH) {
        Some(_) => Ok(()),
        None => Err(too_deep(what)),
    }
}

/// Refuses an object if it nests more than [`MAX_DEPTH`] levels (itself included).
pub(crate) fn check_map(
    map: &serde_json::Map<String, Value>,
    what: &str,
) -> Result<(), PatchError> {
    let limit = MAX_DEPTH.saturating_sub(1);
    if map.values().all(|v| depth_within(v, limit).is_some()) {
        Ok(())
    } else {
        Err(too_deep(what))
    }
}

/// The error for a document nested more than [`MAX_DEPTH`] levels.
pub(crate) fn too_deep(what: &str) -> PatchError {
    PatchError::BadRequest(format!(
        "{what} is nested more than {MAX_DEPTH} levels deep"
    ))
}

/// Drops `value` without recursion, however deep it is.
pub(crate) fn dispose(value: Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// `{"a": {"a": ... {"a": 1}}}`, `levels` objects deep, built without recursion.
    pub(crate) fn deep_object(levels: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..levels {
            let mut map = serde_json::Map::new();
            map.insert("a".into(), value);
            value = Value::Object(map);
        }
        value
    }

    /// `value` under the members `path` (`["a", "b"]`: `{"a": {"b": value}}`), built
    /// without `json!`, which would copy (recursively) what it is given.
    pub(crate) fn nest_in(path: &[&str], value: Value) -> Value {
        path.iter().rev().fold(value, |inner, key| {
            let mut map = serde_json::Map::new();
            map.insert((*key).to_string(), inner);
            Value::Object(map)
        })
    }

    #[test]
    fn measures_depth() {
        assert_eq!(depth_within(&json!(1), 10), Some(0));
        assert_eq!(depth_within(&json!({}), 10), Some(1));
        assert_eq!(
            depth_within(&json!({"a": [1, {"b": []}], "c": 2}), 10),
            Some(4)
        );
        assert_eq!(depth_within(&json!([[[]]]), 2), None);
        assert_eq!(depth_within(&json!([[[]]]), 3), Some(3));
    }

    #[test]
    fn very_deep_documents_are_measured_and_freed_without_recursion() {
        let deep = deep_object(200_000);
        assert_eq!(depth_within(&deep, MAX_DEPTH), None);
        assert_eq!(check(&deep, "the patch").map_err(|e| e.code()), Err(400));
        dispose(deep);
    }
}
