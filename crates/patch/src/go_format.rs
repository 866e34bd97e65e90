//! JSON values printed the way Go's `fmt` prints them once decoded into `interface{}`
//! (`map[a:1 b:[x y]]`), so that error texts read exactly like Kubernetes'.
//!
//! Kubernetes decodes integers as `int64` and other numbers as `float64`; strings print
//! bare, `null` prints `<nil>`, map keys print sorted.

use serde_json::{Number, Value};

/// `%v` of the decoded value.
pub(crate) fn value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push_str("map[");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_value(out, item);
            }
            out.push(']');
        }
    }
}

/// `%s` of the decoded value: strings bare, other scalars as Go's `%!s(type=value)`.
pub(crate) fn string_verb(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_string(),
        Value::Array(_) | Value::Object(_) => value(v),
        scalar => format!("%!s({}={})", type_name(scalar), value(scalar)),
    }
}

/// The name Go's `reflect.TypeOf` gives the decoded value, as `%s` prints it.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if is_float(n) => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Whether Kubernetes would decode the number as a `float64` (not an `int64`).
pub(crate) fn is_float(n: &Number) -> bool {
    n.is_f64() || (n.is_u64() && n.as_i64().is_none())
}

fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    match n.as_f64() {
        Some(f) => float(f),
        None => n.to_string(),
    }
}

/// `%v` of a `float64`: the shortest representation, in exponent form when the
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-07`, `123456`, `0.0001`).
fn float(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: "-1.2345e-7".
    let scientific = format!("{f:e}");
    let (negative, unsigned) = match scientific.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, scientific.as_str()),
    };
    let Some((mantissa, exponent)) = unsigned.split_once('e') else {
        return scientific;
    };
    let Ok(exponent) = exponent.parse::<i64>() else {
        return scientific;
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(-4..6).contains(&exponent) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.unsigned_abs()));
        return out;
    }
    let point = exponent + 1; // digits before the decimal point
    let count = digits.len() as i64;
    if point <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat(point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else if point >= count {
        out.push_str(&digits);
        out.push_str(&"0".repeat((point - count) as usize));
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prints_like_go() {
        assert_eq!(
            value(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(
            value(&json!({"name": {"x": true}})),
            "map[name:map[x:true]]"
        );
        assert_eq!(value(&json!([[1, 2], [3]])), "[[1 2] [3]]");
        assert_eq!(value(&json!({})), "map[]");
    }

    #[test]
    fn floats_print_like_go() {
        let cases = [
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1.5, "1.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123456789.0, "1.23456789e+08"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
            (0.0, "0"),
        ];
        for (f, expected) in cases {
            assert_eq!(float(f), expected, "{f}");
        }
        assert_eq!(value(&json!(80)), "80");
        assert_eq!(value(&json!(80.5)), "80.5");
    }

    #[test]
    fn type_names_and_string_verb() {
        assert_eq!(type_name(&json!("a")), "string");
        assert_eq!(type_name(&json!(1)), "int64");
        assert_eq!(type_name(&json!(1.5)), "float64");
        assert_eq!(type_name(&json!([])), "[]interface {}");
        assert_eq!(type_name(&json!({})), "map[string]interface {}");
        assert_eq!(type_name(&Value::Null), "%!s(<nil>)");
        assert_eq!(string_verb(&json!("merge")), "merge");
        assert_eq!(string_verb(&json!(1)), "%!s(int64=1)");
        assert_eq!(string_verb(&json!(true)), "%!s(bool=true)");
    }
}
