//! Comparing and printing JSON values the way structured-merge-diff does.
//!
//! Field ownership compares values semantically (`1` equals `1.0`), orders list keys
//! and set items by a fixed order of kinds (numbers, strings, booleans, lists, maps,
//! null) and prints values in paths as structured-merge-diff's `value.ToString` does.
//! How Go itself prints a value (`%v`, `%q`, `encoding/json`) is `kyb_apimachinery::gofmt`. All
//! of these are iterative or bounded by the depth checks of the walkers that call them.

use kyb_apimachinery::gofmt;
use serde_json::{Number, Value};
use std::cmp::Ordering;

/// Deep equality where numbers compare by value (`1 == 1.0`), as structured-merge-diff
/// compares leaves.
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y) == Ordering::Equal,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|other| equal(v, other)))
        }
        _ => false,
    }
}

fn number_cmp(a: &Number, b: &Number) -> Ordering {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x.cmp(&y);
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x.cmp(&y);
    }
    let x = a.as_f64().unwrap_or(0.0);
    let y = b.as_f64().unwrap_or(0.0);
    x.partial_cmp(&y).unwrap_or(Ordering::Equal)
}

fn kind_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// structured-merge-diff's total order of values: numbers (by value), strings, booleans
/// (false first), lists (item by item, then length), maps (by sorted key and value, then
/// size), null.
pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (x, y) in x.iter().zip(y) {
                match compare(x, y) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Both maps iterate in sorted key order.
            for ((kx, vx), (ky, vy)) in x.iter().zip(y) {
                match kx.as_bytes().cmp(ky.as_bytes()) {
                    Ordering::Equal => {}
                    other => return other,
                }
                match compare(vx, vy) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        _ => kind_rank(a).cmp(&kind_rank(b)),
    }
}

/// structured-merge-diff's `value.ToString`, used in printed paths: strings quoted with
/// `%q`, numbers and booleans with `%v`, lists in brackets, maps as `k=v` pairs.
pub(crate) fn write_display(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(_) | Value::Number(_) => gofmt::write_v(out, v),
        Value::String(s) => gofmt::write_quoted(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_display(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            for (k, item) in map {
                out.push_str(k);
                out.push('=');
                write_display(out, item);
            }
        }
    }
}

/// How deep a value nests (an iterative walk, safe on hostile input).
pub(crate) fn depth(v: &Value) -> usize {
    depth_without(v, None)
}

/// How deep `v` nests when the value `skip` (a node inside `v`, compared by address)
/// is left out.
pub(crate) fn depth_without(v: &Value, skip: Option<&Value>) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        if skip.is_some_and(|s| std::ptr::eq(s, v)) {
            continue;
        }
        max = max.max(d);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value() {
        assert!(equal(&json!(1), &json!(1.0)));
        assert!(!equal(&json!(1), &json!(2)));
        assert!(equal(&json!({"a": [1, "x"]}), &json!({"a": [1.0, "x"]})));
        assert!(!equal(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!equal(&json!(null), &json!({})));
    }

    #[test]
    fn values_order_by_kind_then_content() {
        let mut v = vec![
            json!(null),
            json!({"a": 1}),
            json!([1]),
            json!(true),
            json!(false),
            json!("b"),
            json!("a"),
            json!(10),
            json!(9.5),
        ];
        v.sort_by(compare);
        assert_eq!(
            v,
            vec![
                json!(9.5),
                json!(10),
                json!("a"),
                json!("b"),
                json!(false),
                json!(true),
                json!([1]),
                json!({"a": 1}),
                json!(null)
            ]
        );
    }

    #[test]
    fn display_uses_go_verbs() {
        let mut s = String::new();
        write_display(&mut s, &json!("nginx"));
        write_display(&mut s, &json!(80));
        write_display(&mut s, &json!(["a", 1]));
        write_display(&mut s, &json!({"k": 1e6, "q": "x\ny"}));
        assert_eq!(s, r#""nginx"80["a",1]k=1e+06q="x\ny""#);
    }

    #[test]
    fn depth_is_measured_without_recursion() {
        let mut v = json!(1);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(depth(&v), 100_001);
        // Dropping a deep value recursively would overflow; dismantle it iteratively.
        let mut cur = v;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
    }
}
