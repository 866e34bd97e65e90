//! What the typed walks over objects share: the depth bound, their errors, and how
//! they look at values.
//!
//! Every walk descends one level per struct field, map key or list item and fails
//! with [`WalkError::TooDeep`] beyond [`MAX_DEPTH`], so hostile documents cannot
//! exhaust the stack. The entry points also measure the depth of their inputs
//! iteratively before cloning or comparing them.

use crate::path::{self, Step};
use crate::value;
use serde_json::{Map, Value};

/// The deepest nesting accepted (JSON parsers in front of us stop at 128 by default).
pub const MAX_DEPTH: usize = 256;

/// How much deeper than [`MAX_DEPTH`] an object's `metadata.managedFields` may nest:
/// a field set is as deep as the paths it records, wrapped in the list, the entry
/// and `fieldsV1`.
const MANAGED_FIELDS_SLACK: usize = 3;

/// Whether a stored object nests too deep to be walked: beyond [`MAX_DEPTH`] outside
/// its managed fields, or beyond what its field sets need inside them. (Measuring the
/// object as a whole would refuse objects this crate wrote itself, whose managed
/// fields nest a few levels deeper than their deepest field.)
pub(crate) fn too_deep(obj: &Value) -> bool {
    let managed = obj.pointer("/metadata/managedFields");
    value::depth_without(obj, managed) > MAX_DEPTH
        || managed.is_some_and(|m| value::depth(m) > MAX_DEPTH + MANAGED_FIELDS_SLACK)
}

/// Why a walk over an object failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WalkError {
    /// The value nests deeper than [`MAX_DEPTH`].
    TooDeep,
    /// The value does not fit its schema: messages prefixed by the path, as
    /// structured-merge-diff reports them.
    Invalid(Vec<String>),
}

impl WalkError {
    /// One error at `path`.
    pub(crate) fn at(path: &[Step<'_>], message: &str) -> WalkError {
        WalkError::Invalid(vec![located(path, message)])
    }

    /// structured-merge-diff's rendering of the error list.
    pub(crate) fn message(&self) -> String {
        match self {
            WalkError::TooDeep => format!("the object nests deeper than {MAX_DEPTH} levels"),
            WalkError::Invalid(errors) => match errors.as_slice() {
                [one] => one.clone(),
                many => {
                    let mut s = String::from("errors:");
                    for e in many {
                        s.push_str("\n  ");
                        s.push_str(e);
                    }
                    s
                }
            },
        }
    }
}

/// `<path>: <message>` (just the message at the root).
pub(crate) fn located(path: &[Step<'_>], message: &str) -> String {
    let p = path::display_steps(path);
    if p.is_empty() {
        message.to_owned()
    } else {
        format!("{p}: {message}")
    }
}

/// Fails when `depth` is past the bound.
pub(crate) fn check_depth(depth: usize) -> Result<(), WalkError> {
    if depth > MAX_DEPTH {
        Err(WalkError::TooDeep)
    } else {
        Ok(())
    }
}

/// Whether `key` under `path` is `metadata.managedFields` of the object itself, which
/// the walks leave alone.
pub(crate) fn skipped(path: &[Step<'_>], key: &str) -> bool {
    key == "managedFields" && matches!(path, [Step::Field("metadata")])
}

/// The map of a value, if it is one.
pub(crate) fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

/// Absent, null, not a map, or an empty map: structured-merge-diff's "empty" operand.
pub(crate) fn empty_map(v: Option<&Value>) -> bool {
    as_map(v).is_none_or(Map::is_empty)
}

/// Absent, null, not a list, or an empty list.
pub(crate) fn empty_list(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_none_or(Vec::is_empty)
}

/// The keys of two maps, each once, in sorted order.
pub(crate) fn union_keys<'a>(
    a: Option<&'a Map<String, Value>>,
    b: Option<&'a Map<String, Value>>,
) -> Vec<&'a str> {
    let mut keys: Vec<&str> = Vec::with_capacity(a.map_or(0, Map::len) + b.map_or(0, Map::len));
    let mut ia = a.into_iter().flat_map(|m| m.keys()).peekable();
    let mut ib = b.into_iter().flat_map(|m| m.keys()).peekable();
    loop {
        match (ia.peek(), ib.peek()) {
            (Some(x), Some(y)) => match x.cmp(y) {
                std::cmp::Ordering::Less => {
                    keys.push(x);
                    ia.next();
                }
                std::cmp::Ordering::Greater => {
                    keys.push(y);
                    ib.next();
                }
                std::cmp::Ordering::Equal => {
                    keys.push(x);
                    ia.next();
                    ib.next();
                }
            },
            (Some(x), None) => {
                keys.push(x);
                ia.next();
            }
            (None, Some(y)) => {
                keys.push(y);
                ib.next();
            }
            (None, None) => break,
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_merged_in_order() {
        let a = json!({"a": 1, "c": 1});
        let b = json!({"b": 1, "c": 2, "d": 1});
        assert_eq!(
            union_keys(a.as_object(), b.as_object()),
            vec!["a", "b", "c", "d"]
        );
        assert_eq!(union_keys(None, b.as_object()), vec!["b", "c", "d"]);
    }

    #[test]
    fn empties() {
        assert!(empty_map(None));
        assert!(empty_map(Some(&json!(null))));
        assert!(empty_map(Some(&json!({}))));
        assert!(empty_map(Some(&json!("x"))));
        assert!(!empty_map(Some(&json!({"a": 1}))));
        assert!(empty_list(Some(&json!([]))));
        assert!(!empty_list(Some(&json!([1]))));
    }

    #[test]
    fn messages() {
        let one = WalkError::at(&[Step::Field("spec"), Step::Field("x")], "boom");
        assert_eq!(one.message(), ".spec.x: boom");
        let many = WalkError::Invalid(vec!["a".into(), "b".into()]);
        assert_eq!(many.message(), "errors:\n  a\n  b");
        assert!(skipped(&[Step::Field("metadata")], "managedFields"));
        assert!(!skipped(&[Step::Field("spec")], "managedFields"));
    }
}
