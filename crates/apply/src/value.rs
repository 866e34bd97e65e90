//! Comparing and printing JSON values the way structured-merge-diff does.
//!
//! Field ownership compares values semantically (`1` equals `1.0`), orders list keys
//! and set items by a fixed order of kinds (numbers, strings, booleans, lists, maps,
//! null), serializes path elements as Go's `encoding/json` does (HTML characters
//! escaped, keys sorted) and prints paths with Go's `%v`/`%q` conventions. All of these
//! are iterative or bounded by the depth checks of the walkers that call them.

use serde_json::{Number, Value};
use std::cmp::Ordering;
use std::fmt::Write as _;

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

/// Appends `s` as a JSON string the way Go's `encoding/json` writes it: `<`, `>`, `&`,
/// U+2028 and U+2029 are escaped, control characters use the short escapes Go knows.
pub(crate) fn write_go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends a number as Go's `encoding/json` writes a float64 or an integer.
pub(crate) fn write_go_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else {
        let f = n.as_f64().unwrap_or(0.0);
        out.push_str(&go_float(f, true));
    }
}

/// A float64 as Go prints it: shortest round-trip digits, exponent form outside
/// `[1e-6, 1e21)`. `json` selects `encoding/json`'s spelling (`1e-07`→`1e-7`), else `%v`.
fn go_float(f: f64, json: bool) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exponent),
        };
        if json || digits.len() >= 2 {
            format!("{mantissa}e{sign}{digits}")
        } else {
            format!("{mantissa}e{sign}0{digits}")
        }
    } else {
        format!("{f}")
    }
}

/// Appends `v` as compact JSON the way Go's `encoding/json` writes it (maps with sorted
/// keys). Nesting is bounded by the caller's depth checks.
pub(crate) fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_go_number(out, n),
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(out, k);
                out.push(':');
                write_go_json(out, item);
            }
            out.push('}');
        }
    }
}

/// `v` as compact Go-style JSON.
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, v);
    out
}

/// Appends `s` quoted the way Go's `%q` does (`strconv.Quote`).
pub(crate) fn write_go_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// structured-merge-diff's `value.ToString`, used in printed paths: strings quoted with
/// `%q`, numbers and booleans with `%v`, lists in brackets, maps as `k=v` pairs.
pub(crate) fn write_display(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                out.push_str(&go_float(n.as_f64().unwrap_or(0.0), false));
            }
        }
        Value::String(s) => write_go_quoted(out, s),
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

/// A value as Go's `%v` prints the unstructured form structured-merge-diff wraps
/// (`&{3}`, `&{map[a:b]}`), for validation messages.
pub(crate) fn go_wrapped(v: &Value) -> String {
    let mut out = String::from("&{");
    write_go_v(&mut out, v);
    out.push('}');
    out
}

fn write_go_v(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                out.push_str(&go_float(n.as_f64().unwrap_or(0.0), false));
            }
        }
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_v(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_v(out, item);
            }
            out.push(']');
        }
    }
}

/// Go's `%T` of the unstructured form of a value.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
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
    fn go_json_escapes_html_and_sorts_keys() {
        assert_eq!(
            go_json(&json!({"b": 1, "a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e","b":1}"#
        );
        assert_eq!(go_json(&json!("tab\there\u{8}")), r#""tab\there\b""#);
        assert_eq!(go_json(&json!(1.5)), "1.5");
        assert_eq!(go_json(&json!(1e21)), "1e+21");
        assert_eq!(go_json(&json!(1e-7)), "1e-7");
    }

    #[test]
    fn display_uses_go_verbs() {
        let mut s = String::new();
        write_display(&mut s, &json!("nginx"));
        write_display(&mut s, &json!(80));
        write_display(&mut s, &json!(["a", 1]));
        assert_eq!(s, r#""nginx"80["a",1]"#);
        let mut q = String::new();
        write_go_quoted(&mut q, "a\"b\n\u{1}é");
        assert_eq!(q, r#""a\"b\n\x01é""#);
    }

    #[test]
    fn go_wrapped_prints_like_percent_v() {
        assert_eq!(go_wrapped(&json!(3)), "&{3}");
        assert_eq!(go_wrapped(&json!({"a": ["x", 1]})), "&{map[a:[x 1]]}");
        assert_eq!(go_type_name(&json!("x")), "string");
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
