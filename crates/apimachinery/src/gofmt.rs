//! How Go prints a JSON value, for messages that must read exactly like Kubernetes' own.
//!
//! Kubernetes decodes JSON into `interface{}`: objects become `map[string]interface {}`,
//! arrays `[]interface {}`, integers that fit become `int64` and every other number a
//! `float64` (see [`is_float`]). Its messages then print those values with one of Go's
//! `fmt` verbs or with `encoding/json`, and these disagree on strings, floats and maps:
//!
//! | value         | `%v` ([`v`])   | `%#v` ([`sharp_v`])                              | `json.Marshal` ([`json`]) |
//! |---------------|----------------|--------------------------------------------------|---------------------------|
//! | `"a<b"`       | `a<b`          | `"a<b"`                                          | `"a\u003cb"`              |
//! | `1000000.0`   | `1e+06`        | `1e+06`                                          | `1000000`                 |
//! | `{"k": null}` | `map[k:<nil>]` | `map[string]interface {}{"k":interface {}(nil)}` | `{"k":null}`              |
//!
//! `%s` ([`s`]), `%T` ([`t`]) and `%q` ([`quote`]) complete the set. Maps print with their
//! keys sorted, as both `fmt` and `encoding/json` print them.
//!
//! The printers recurse once per level of nesting. Callers print values whose depth they
//! have bounded (`serde_json` parses at most 128 levels).

use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// Go's name of the type of a decoded JSON array.
pub const SLICE_TYPE: &str = "[]interface {}";

/// Go's name of the type of a decoded JSON object.
pub const MAP_TYPE: &str = "map[string]interface {}";

/// What `%s` prints for a nil operand, such as the null value or the `reflect.Type` of it.
pub const NIL_S: &str = "%!s(<nil>)";

/// Whether Kubernetes decodes `n` as a `float64` rather than an `int64`: numbers written
/// with a fraction or an exponent, and integers outside the range of `int64`.
pub fn is_float(n: &Number) -> bool {
    n.as_i64().is_none()
}

/// `reflect.TypeOf(value).String()` of the decoded value; `None` for null, whose type is
/// the nil `reflect.Type`.
pub fn type_name(value: &Value) -> Option<&'static str> {
    let name = match value {
        Value::Null => return None,
        Value::Bool(_) => "bool",
        Value::Number(n) if is_float(n) => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => SLICE_TYPE,
        Value::Object(_) => MAP_TYPE,
    };
    Some(name)
}

/// `%T` of the decoded value: its type name, `<nil>` for null.
pub fn t(value: &Value) -> &'static str {
    type_name(value).unwrap_or("<nil>")
}

/// `%v` of the decoded value: strings bare, null as `<nil>`, arrays as `[a b]`, objects
/// as `map[k:v]`, an `int64` in decimal and a `float64` as [`float_v`] formats it.
pub fn v(value: &Value) -> String {
    let mut out = String::new();
    write_v(&mut out, value);
    out
}

/// Appends `%v` of the decoded value (see [`v`]).
pub fn write_v(out: &mut String, value: &Value) {
    write_verb(out, value, Verb::V, false);
}

/// `%#v` of the decoded value, Go syntax for it: strings quoted, arrays as
/// `[]interface {}{"a", 1}`, objects as `map[string]interface {}{"k":true}`, a null
/// inside them as `interface {}(nil)`. Numbers print as with `%v`.
pub fn sharp_v(value: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, value, Verb::SharpV, false);
    out
}

/// `%s` of the decoded value: strings bare, and like `%v` for arrays and objects, except
/// that booleans and numbers, which `%s` cannot print, come out as Go's complaint naming
/// type and value (`%!s(int64=1)`), and a null operand as [`NIL_S`].
pub fn s(value: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, value, Verb::S, false);
    out
}

/// `%q` of a string (Go's `strconv.Quote`): double-quoted, with `"` and `\` escaped, and
/// control characters and whitespace other than the ASCII space written as Go escapes
/// (`\n`, `\a`, `\x01`, `\u0085`, `\u00a0`).
///
/// Go also escapes the remaining runes Unicode does not class as printable (format
/// characters, unassigned code points); those are copied as they are here.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_quoted(&mut out, s);
    out
}

/// A string slice as Go's `%q` prints it: each element quoted, separated by spaces, in
/// brackets (`["a" "b"]`, `[]` when empty).
pub fn quote_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_quoted(&mut out, item.as_ref());
    }
    out.push(']');
    out
}

/// Appends `%q` of a string (see [`quote`]).
pub fn write_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        if let Some(escape) = short_escape(c) {
            out.push_str(escape);
            continue;
        }
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            // The controls and whitespace beyond ASCII all lie below U+10000.
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The decoded value as Go's `json.Marshal` writes it: compact, object keys sorted,
/// strings as [`write_json_string`] writes them, floats as [`float_json`] formats them.
pub fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

/// Appends the decoded value as `json.Marshal` writes it (see [`json`]).
pub fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match float_of(n) {
            Some(f) => out.push_str(&float_json(f)),
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            write_separated(out, items, ",", write_json);
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            write_separated(out, sorted(map), ",", |out, (key, item)| {
                write_json_string(out, key);
                out.push(':');
                write_json(out, item);
            });
            out.push('}');
        }
    }
}

/// Appends a string as `encoding/json` writes it. Besides the escapes JSON requires, Go
/// escapes `<`, `>` and `&` and the line terminators U+2028 and U+2029 (`\u003c`), so
/// that its output is safe inside HTML.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        if let Some(escape) = short_escape(c) {
            out.push_str(escape);
        } else if c < ' ' || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out.push('"');
}

/// `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the fewest digits that
/// read back as `f`, in exponent form, with at least two exponent digits, when the
/// decimal exponent is below -4 or 6 and above: `1e+06`, `123456`, `0.0001`, `1e-05`,
/// `1.5e-07`.
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let decimal = Decimal::of(f);
    let mut out = String::new();
    if (-4..6).contains(&decimal.exponent) {
        decimal.write_plain(&mut out);
    } else {
        decimal.write_exponent(&mut out, 2);
    }
    out
}

/// A `float64` as `encoding/json` writes it: the fewest digits that read back as `f`,
/// plain from 1e-6 up to 1e21 (`1000000`, `0.000001`), in exponent form outside that
/// range with as few exponent digits as needed (`1e-7`, `1e+21`).
///
/// Go refuses to encode NaN and the infinities; no JSON number can hold them, and they
/// are written as `null` here.
pub fn float_json(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_string();
    }
    let decimal = Decimal::of(f);
    let magnitude = f.abs();
    let mut out = String::new();
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        decimal.write_exponent(&mut out, 1);
    } else {
        decimal.write_plain(&mut out);
    }
    out
}

/// The escapes Go string literals and JSON strings both use.
fn short_escape(c: char) -> Option<&'static str> {
    let escape = match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '\u{8}' => "\\b",
        '\u{c}' => "\\f",
        _ => return None,
    };
    Some(escape)
}

/// The `float64` Kubernetes decodes `n` into, or `None` for an `int64`.
fn float_of(n: &Number) -> Option<f64> {
    if is_float(n) { n.as_f64() } else { None }
}

/// The `fmt` verbs [`write_verb`] prints.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    V,
    SharpV,
    S,
}

impl Verb {
    /// Appends the opening of an array or object whose Go type is `go_type`: Go syntax
    /// (`[]interface {}{`) for `%#v`, else `plain` (`[`, `map[`). Returns what separates
    /// the elements and what closes the composite.
    fn open(self, out: &mut String, go_type: &str, plain: &str) -> (&'static str, char) {
        if self == Verb::SharpV {
            out.push_str(go_type);
            out.push('{');
            (", ", '}')
        } else {
            out.push_str(plain);
            (" ", ']')
        }
    }
}

/// Appends `value` as `verb` prints it; `nested` when the value sits inside an array or
/// object, where Go prints a null differently than as an operand of its own.
fn write_verb(out: &mut String, value: &Value, verb: Verb, nested: bool) {
    match value {
        Value::Null => out.push_str(match (verb, nested) {
            (Verb::SharpV, true) => "interface {}(nil)",
            (Verb::S, false) => NIL_S,
            _ => "<nil>",
        }),
        Value::String(s) if verb == Verb::SharpV => write_quoted(out, s),
        Value::String(s) => out.push_str(s),
        Value::Bool(_) | Value::Number(_) if verb == Verb::S => {
            out.push_str("%!s(");
            out.push_str(t(value));
            out.push('=');
            write_verb(out, value, Verb::V, nested);
            out.push(')');
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match float_of(n) {
            Some(f) => out.push_str(&float_v(f)),
            None => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            let (separator, close) = verb.open(out, SLICE_TYPE, "[");
            write_separated(out, items, separator, |out, item| {
                write_verb(out, item, verb, true);
            });
            out.push(close);
        }
        Value::Object(map) => {
            let (separator, close) = verb.open(out, MAP_TYPE, "map[");
            write_separated(out, sorted(map), separator, |out, (key, item)| {
                if verb == Verb::SharpV {
                    write_quoted(out, key);
                } else {
                    out.push_str(key);
                }
                out.push(':');
                write_verb(out, item, verb, true);
            });
            out.push(close);
        }
    }
}

/// Appends each of `items` with `write_item`, with `separator` between two of them.
fn write_separated<I: IntoIterator>(
    out: &mut String,
    items: I,
    separator: &str,
    mut write_item: impl FnMut(&mut String, I::Item),
) {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        write_item(out, item);
    }
}

/// The entries of an object in the order Go prints a map's: by key, bytewise.
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    entries
}

/// A finite float as its shortest round-tripping decimal digits: the value is
/// `0.d₁d₂… × 10^(exponent + 1)`, so `exponent` is the power of ten of the first digit.
struct Decimal {
    negative: bool,
    /// At least one digit, with no trailing zeros (`"0"` for zero).
    digits: String,
    exponent: i32,
}

impl Decimal {
    fn of(f: f64) -> Self {
        // Rust's `{:e}` picks the same fewest round-tripping digits as Go's precision -1
        // and never pads them: `1.5e-7`, `1e6`, `0e0`.
        let text = format!("{:e}", f.abs());
        let (mantissa, exponent) = text.split_once('e').unwrap_or((text.as_str(), "0"));
        Decimal {
            negative: f.is_sign_negative(),
            digits: mantissa.replace('.', ""),
            exponent: exponent.parse().unwrap_or(0),
        }
    }

    /// `d.ddde±xx`, the exponent written with at least `exponent_width` digits.
    fn write_exponent(&self, out: &mut String, exponent_width: usize) {
        if self.negative {
            out.push('-');
        }
        let (first, rest) = self
            .digits
            .split_at_checked(1)
            .unwrap_or((self.digits.as_str(), ""));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if self.exponent < 0 { '-' } else { '+' });
        let _ = write!(out, "{:0exponent_width$}", self.exponent.unsigned_abs());
    }

    /// `ddd.ddd` without an exponent, padded with zeros as the exponent requires.
    fn write_plain(&self, out: &mut String) {
        if self.negative {
            out.push('-');
        }
        let whole = i64::from(self.exponent) + 1;
        let count = self.digits.len() as i64;
        if whole <= 0 {
            out.push_str("0.");
            push_zeros(out, -whole);
            out.push_str(&self.digits);
        } else if whole >= count {
            out.push_str(&self.digits);
            push_zeros(out, whole - count);
        } else {
            let (integer, fraction) = self.digits.split_at(whole as usize);
            out.push_str(integer);
            out.push('.');
            out.push_str(fraction);
        }
    }
}

fn push_zeros(out: &mut String, count: i64) {
    for _ in 0..count {
        out.push('0');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoted_lists() {
        assert_eq!(quote_list::<&str>(&[]), "[]");
        assert_eq!(quote_list(&["", "pods", "a\"b"]), r#"["" "pods" "a\"b"]"#);
    }

    #[test]
    fn percent_v_prints_decoded_values() {
        assert_eq!(
            v(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(v(&json!({"name": {"x": true}})), "map[name:map[x:true]]");
        assert_eq!(v(&json!([[1, 2], [3]])), "[[1 2] [3]]");
        assert_eq!(v(&json!({})), "map[]");
        assert_eq!(v(&json!("a b")), "a b");
        assert_eq!(v(&Value::Null), "<nil>");
        assert_eq!(v(&json!(80)), "80");
        assert_eq!(v(&json!(80.5)), "80.5");
        assert_eq!(v(&json!(2.0)), "2");
        assert_eq!(v(&json!(-7)), "-7");
        // Beyond int64, Kubernetes has a float64.
        assert_eq!(v(&json!(u64::MAX)), "1.8446744073709552e+19");
    }

    #[test]
    fn percent_sharp_v_is_go_syntax() {
        assert_eq!(sharp_v(&json!(3)), "3");
        assert_eq!(sharp_v(&json!("a\"b")), r#""a\"b""#);
        assert_eq!(
            sharp_v(&json!({"b": [1, "x", null], "a": 1.5})),
            r#"map[string]interface {}{"a":1.5, "b":[]interface {}{1, "x", interface {}(nil)}}"#
        );
        assert_eq!(sharp_v(&json!([])), "[]interface {}{}");
        assert_eq!(sharp_v(&Value::Null), "<nil>");
    }

    #[test]
    fn percent_s_complains_about_non_strings() {
        assert_eq!(s(&json!("merge")), "merge");
        assert_eq!(s(&json!(1)), "%!s(int64=1)");
        assert_eq!(s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(s(&json!(true)), "%!s(bool=true)");
        assert_eq!(s(&Value::Null), "%!s(<nil>)");
        assert_eq!(
            s(&json!({"a": [1, "x", null]})),
            "map[a:[%!s(int64=1) x <nil>]]"
        );
    }

    #[test]
    fn type_names() {
        assert_eq!(type_name(&json!("a")), Some("string"));
        assert_eq!(type_name(&json!(1)), Some("int64"));
        assert_eq!(type_name(&json!(1.5)), Some("float64"));
        assert_eq!(type_name(&json!(u64::MAX)), Some("float64"));
        assert_eq!(type_name(&json!(false)), Some("bool"));
        assert_eq!(type_name(&json!([])), Some("[]interface {}"));
        assert_eq!(type_name(&json!({})), Some("map[string]interface {}"));
        assert_eq!(type_name(&Value::Null), None);
        assert_eq!(t(&Value::Null), "<nil>");
        assert_eq!(t(&json!("x")), "string");
    }

    #[test]
    fn quote_escapes_like_strconv() {
        assert_eq!(quote("a\"b\n\u{1}"), r#""a\"b\n\x01""#);
        assert_eq!(quote("é"), "\"é\"");
        assert_eq!(quote("\\\u{7}\u{b}\u{7f}\u{85}"), r#""\\\a\v\x7f\u0085""#);
        assert_eq!(quote("<&> x"), r#""<&> x""#);
        assert_eq!(quote("\u{a0}\u{2028}\u{3000}"), r#""\u00a0\u2028\u3000""#);
    }

    #[test]
    fn json_escapes_html_and_sorts_keys() {
        assert_eq!(
            json(&json!({"b": 1, "a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e","b":1}"#
        );
        assert_eq!(
            json(&json!("tab\there\u{8}\u{1}")),
            r#""tab\there\b\u0001""#
        );
        assert_eq!(
            json(&json!([null, true, {"k": []}])),
            r#"[null,true,{"k":[]}]"#
        );
        assert_eq!(json(&json!("\u{2028}")), r#""\u2028""#);
    }

    #[test]
    fn floats_print_like_go() {
        let cases = [
            // (value, %v, encoding/json)
            (0.0, "0", "0"),
            (-0.0, "-0", "-0"),
            (1.5, "1.5", "1.5"),
            (-2.5, "-2.5", "-2.5"),
            (2.0, "2", "2"),
            (123456.0, "123456", "123456"),
            (1e6, "1e+06", "1000000"),
            (123456789.0, "1.23456789e+08", "123456789"),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (0.000001, "1e-06", "0.000001"),
            (1.5e-7, "1.5e-07", "1.5e-7"),
            (1e20, "1e+20", "100000000000000000000"),
            (1e21, "1e+21", "1e+21"),
            (1e100, "1e+100", "1e+100"),
            (-1.25e-10, "-1.25e-10", "-1.25e-10"),
        ];
        for (f, percent_v, json) in cases {
            assert_eq!(float_v(f), percent_v, "%v of {f:e}");
            assert_eq!(float_json(f), json, "json of {f:e}");
        }
        assert_eq!(float_v(f64::NAN), "NaN");
        assert_eq!(float_v(f64::NEG_INFINITY), "-Inf");
        assert_eq!(float_json(f64::INFINITY), "null");
    }
}
