//! Semantic equality of objects in JSON form, as Kubernetes' `equality.Semantic.DeepEqual`
//! sees two decoded objects, and a small differ naming the fields that changed. Used for
//! immutability checks (validation) and NodeRestriction's "may only change" rules.
//!
//! The rules, one set for every caller:
//! - A struct field that is absent equals one holding its zero value (`null`, `""`, `0`,
//!   `false`, `[]`, `{}`): Go decodes both to the same struct. Empty and missing lists
//!   and maps are equal (`Semantic` treats nil and empty alike).
//! - The keys of Go maps (`labels`, `annotations`, resource lists, `data`, …; see
//!   [`is_map_field`]) are data: `{"a": ""}` differs from `{}`.
//! - Quantities compare by value (`1` equals `1000m`), but only where the API has a
//!   quantity: the values of resource lists ([`is_quantity_map`]) and `sizeLimit`.
//!   (Validation's copy compared any two strings that parsed as quantities, which made
//!   `"1e3"` equal `"1000"` in an image tag or an environment variable; NodeRestriction's
//!   compared none.)
//! - Timestamps compare by instant: two strings that are both RFC 3339 times equal when
//!   they name the same instant (`…T01:00:00+01:00` and `…T00:00:00Z`).
//! - Numbers compare by value (`1` and `1.0`).
//!
//! One approximation remains: without the schema a nil pointer (`replicas` absent) and a
//! pointer to a zero value (`replicas: 0`) read alike, where Go tells them apart.

use serde_json::Value;

use crate::json::{NULL, is_zero};
use crate::quantity::Quantity;
use crate::time::parse_rfc3339;

/// Fields that are Go maps (`map[string]...`) rather than structs: their keys are data, so
/// a key holding a zero value differs from a missing key.
const MAP_FIELDS: &[&str] = &[
    "labels",
    "annotations",
    "matchLabels",
    "nodeSelector",
    "data",
    "binaryData",
    "stringData",
    "parameters",
    "volumeAttributes",
    "allocatedResourceStatuses",
];

/// Fields that are resource lists (`map[ResourceName]Quantity`): Go maps of quantities.
const QUANTITY_MAPS: &[&str] = &[
    "requests",
    "limits",
    "capacity",
    "allocatable",
    "allocatedResources",
    "overhead",
    "hard",
    "used",
    "default",
    "defaultRequest",
    "max",
    "min",
    "maxLimitRequestRatio",
];

/// Fields holding one quantity.
const QUANTITY_FIELDS: &[&str] = &["sizeLimit"];

/// Whether the object under `key` is a Go map (its keys are data).
pub fn is_map_field(key: &str) -> bool {
    MAP_FIELDS.contains(&key) || is_quantity_map(key)
}

/// Whether the object under `key` is a resource list (a map of quantities).
pub fn is_quantity_map(key: &str) -> bool {
    QUANTITY_MAPS.contains(&key)
}

/// How a value is compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A struct or a plain value.
    Plain,
    /// A Go map of plain values.
    Map,
    /// A Go map of quantities.
    QuantityMap,
    /// One quantity.
    Quantity,
}

impl Shape {
    fn of_field(key: &str) -> Shape {
        if is_quantity_map(key) {
            Shape::QuantityMap
        } else if MAP_FIELDS.contains(&key) {
            Shape::Map
        } else if QUANTITY_FIELDS.contains(&key) {
            Shape::Quantity
        } else {
            Shape::Plain
        }
    }
}

/// Whether two values (structs or plain values) are semantically equal.
pub fn semantic_eq(a: &Value, b: &Value) -> bool {
    eq(a, b, Shape::Plain)
}

/// Whether two Go maps (`map[string]…`) are semantically equal: the same keys, with equal
/// values; a missing map equals an empty one.
pub fn semantic_eq_map(a: &Value, b: &Value) -> bool {
    eq(a, b, Shape::Map)
}

/// Whether field `key` of two objects is semantically equal, compared as what the field is
/// (a Go map, a resource list, a quantity or a struct; see [`is_map_field`]).
pub fn semantic_eq_field(a: &Value, b: &Value, key: &str) -> bool {
    eq(
        a.get(key).unwrap_or(&NULL),
        b.get(key).unwrap_or(&NULL),
        Shape::of_field(key),
    )
}

fn eq(a: &Value, b: &Value, shape: Shape) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y))
            if matches!(shape, Shape::Map | Shape::QuantityMap) =>
        {
            let values = if shape == Shape::QuantityMap {
                Shape::Quantity
            } else {
                Shape::Plain
            };
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| eq(v, w, values)))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.iter()
                .all(|(k, v)| eq(v, y.get(k).unwrap_or(&NULL), Shape::of_field(k)))
                && y.iter()
                    .filter(|(k, _)| !x.contains_key(*k))
                    .all(|(k, v)| eq(&NULL, v, Shape::of_field(k)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq(p, q, Shape::Plain))
        }
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) if x == y => true,
        (Value::Bool(x), Value::Bool(y)) if x == y => true,
        _ if shape == Shape::Quantity && quantity_eq(a, b) => true,
        (Value::String(x), Value::String(y)) => instant_eq(x, y),
        _ => is_zero(a) && is_zero(b),
    }
}

/// Two quantities (strings, or numbers as clients sometimes send) of equal value.
fn quantity_eq(a: &Value, b: &Value) -> bool {
    match (Quantity::from_json(a), Quantity::from_json(b)) {
        (Ok(p), Ok(q)) => p.cmp_q(&q).is_eq(),
        _ => false,
    }
}

/// Two RFC 3339 timestamps naming the same instant.
fn instant_eq(x: &str, y: &str) -> bool {
    match (parse_rfc3339(x), parse_rfc3339(y)) {
        (Some(p), Some(q)) => p == q,
        _ => false,
    }
}

/// The paths (relative to `prefix`) at which two values differ semantically, at most
/// `limit` of them.
pub fn diff_paths(a: &Value, b: &Value, prefix: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(a, b, prefix, limit, &mut out);
    out
}

/// A short human-readable diff of two values, one `- old` / `+ new` pair per changed field,
/// standing in for the `cmp.Diff` output Kubernetes appends to some messages.
pub fn diff_text(old: &Value, new: &Value) -> String {
    let mut lines = Vec::new();
    for p in diff_paths(old, new, "", 20) {
        let pick = |v: &Value| -> String {
            let mut cur = v;
            for seg in split_path(&p) {
                cur = match seg {
                    Seg::Key(k) => cur.get(k).unwrap_or(&NULL),
                    Seg::Index(i) => cur.get(i).unwrap_or(&NULL),
                };
            }
            crate::field::render_value(cur)
        };
        lines.push(format!("  - {p}: {}", pick(old)));
        lines.push(format!("  + {p}: {}", pick(new)));
    }
    lines.join("\n")
}

enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

fn split_path(p: &str) -> Vec<Seg<'_>> {
    let mut out = Vec::new();
    for part in p.split('.').filter(|s| !s.is_empty()) {
        match part.split_once('[') {
            Some((key, indexes)) => {
                if !key.is_empty() {
                    out.push(Seg::Key(key));
                }
                for idx in indexes.split('[') {
                    if let Some(Ok(n)) = idx.strip_suffix(']').map(str::parse) {
                        out.push(Seg::Index(n));
                    }
                }
            }
            None => out.push(Seg::Key(part)),
        }
    }
    out
}

fn diff_into(a: &Value, b: &Value, prefix: &str, limit: usize, out: &mut Vec<String>) {
    if out.len() >= limit || semantic_eq(a, b) {
        return;
    }
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                diff_into(
                    x.get(k).unwrap_or(&NULL),
                    y.get(k).unwrap_or(&NULL),
                    &join(k),
                    limit,
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff_into(p, q, &format!("{prefix}[{i}]"), limit, out);
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empties_are_equal() {
        assert!(semantic_eq(
            &json!({"a": null, "b": [], "c": ""}),
            &json!({})
        ));
        assert!(semantic_eq(&json!({"x": {"y": 0}}), &json!({"x": {}})));
        assert!(!semantic_eq(&json!({"a": 1}), &json!({})));
        assert!(!semantic_eq(&json!(["a", "b"]), &json!(["b", "a"])));
        assert!(semantic_eq(&json!({"x": ""}), &json!({"x": null})));
        assert!(!semantic_eq(&json!({"x": "a"}), &json!({})));
        assert!(semantic_eq(&NULL, &json!([])));
        assert!(semantic_eq(&json!(1), &json!(1.0)));
        assert!(semantic_eq(&json!({"b": true}), &json!({"b": true})));
        assert!(!semantic_eq(&json!({"b": true}), &json!({"b": false})));
        assert!(!semantic_eq(&json!({"b": true}), &json!({})));
    }

    #[test]
    fn map_keys_are_data() {
        assert!(!semantic_eq(
            &json!({"labels": {"a": ""}}),
            &json!({"labels": {}})
        ));
        assert!(semantic_eq(&json!({"labels": {}}), &json!({})));
        assert!(!semantic_eq_map(&json!({"a": ""}), &NULL));
        assert!(semantic_eq_map(&json!({}), &NULL));
        assert!(!semantic_eq(
            &json!({"spec": {"nodeSelector": {"a": ""}}}),
            &json!({"spec": {}})
        ));
    }

    #[test]
    fn quantities_compare_by_value_where_the_api_has_quantities() {
        assert!(semantic_eq(
            &json!({"resources": {"requests": {"cpu": "1"}}}),
            &json!({"resources": {"requests": {"cpu": "1000m"}}})
        ));
        assert!(semantic_eq(
            &json!({"hard": {"memory": "1Gi"}}),
            &json!({"hard": {"memory": "1024Mi"}})
        ));
        assert!(semantic_eq(
            &json!({"emptyDir": {"sizeLimit": "1Gi"}}),
            &json!({"emptyDir": {"sizeLimit": "1073741824"}})
        ));
        assert!(!semantic_eq(
            &json!({"requests": {"cpu": "1"}}),
            &json!({"requests": {"cpu": "2"}})
        ));
        // Elsewhere a string is a string.
        assert!(!semantic_eq(
            &json!({"env": [{"name": "X", "value": "1e3"}]}),
            &json!({"env": [{"name": "X", "value": "1000"}]})
        ));
        assert!(!semantic_eq(&json!({"cpu": "1"}), &json!({"cpu": "1000m"})));
    }

    #[test]
    fn timestamps_compare_by_instant() {
        assert!(semantic_eq(
            &json!({"t": "2026-01-01T01:00:00+01:00"}),
            &json!({"t": "2026-01-01T00:00:00Z"})
        ));
        assert!(!semantic_eq(
            &json!({"t": "2026-01-01T00:00:01Z"}),
            &json!({"t": "2026-01-01T00:00:00Z"})
        ));
    }

    #[test]
    fn diffs_name_changed_fields() {
        let a = json!({"spec": {"x": 1, "list": [{"n": "a"}, {"n": "b"}]}});
        let b = json!({"spec": {"x": 2, "list": [{"n": "a"}, {"n": "c"}]}});
        assert_eq!(diff_paths(&a, &b, "", 10), vec!["spec.list[1].n", "spec.x"]);
        assert_eq!(
            diff_text(&a, &b),
            "  - spec.list[1].n: \"b\"\n  + spec.list[1].n: \"c\"\n  - spec.x: 1\n  + spec.x: 2"
        );
    }
}
