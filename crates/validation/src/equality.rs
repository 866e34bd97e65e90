//! Semantic equality of objects in JSON form, as Kubernetes' `apiequality.Semantic`: a field
//! that is absent, `null` or at its zero value (`""`, `0`, `false`, `[]`, `{}`) equals any
//! other such form, and quantities compare by value. Used for immutability checks, plus a
//! small differ that names the fields that changed.

use serde_json::Value;

use crate::json::{NULL, is_empty};
use crate::quantity::Quantity;

/// Whether two values are semantically equal.
pub(crate) fn semantic_eq(a: &Value, b: &Value) -> bool {
    if is_empty(a) && is_empty(b) {
        return true;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter()
                .all(|(k, v)| semantic_eq(v, y.get(k).unwrap_or(&NULL)))
                && y.iter().all(|(k, v)| x.contains_key(k) || is_empty(v))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(p, q))
        }
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => x == y || quantity_eq(x, y),
        _ => a == b,
    }
}

/// Two strings that both parse as quantities of equal value (`1` and `1000m`).
fn quantity_eq(x: &str, y: &str) -> bool {
    let starts_numeric =
        |s: &str| s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-' || c == '+');
    if !starts_numeric(x) || !starts_numeric(y) {
        return false;
    }
    match (Quantity::parse(x), Quantity::parse(y)) {
        (Ok(p), Ok(q)) => p.cmp_q(&q).is_eq(),
        _ => false,
    }
}

/// The paths (relative to `prefix`) at which two values differ semantically, at most
/// `limit` of them.
pub(crate) fn diff_paths(a: &Value, b: &Value, prefix: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(a, b, prefix, limit, &mut out);
    out
}

/// A short human-readable diff of two values, one `- old` / `+ new` pair per changed field,
/// standing in for the `cmp.Diff` output Kubernetes appends to some messages.
pub(crate) fn diff_text(old: &Value, new: &Value) -> String {
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
            crate::error::render_value(cur)
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
        assert!(semantic_eq(&json!({"cpu": "1"}), &json!({"cpu": "1000m"})));
        assert!(!semantic_eq(&json!(["a", "b"]), &json!(["b", "a"])));
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
