//! JSON output as Go's `encoding/json` writes it, which is what Kubernetes' audit log
//! contains: compact, with `<`, `>`, `&`, U+2028 and U+2029 escaped inside strings. Also
//! embedding JSON produced elsewhere (request and response bodies) in that form without
//! parsing it into a tree.

use std::collections::BTreeMap;

/// Appends `"key":` to an object being written (after a comma unless it is the first
/// member, which the caller writes without this helper).
pub(crate) fn key(out: &mut String, key: &str) {
    out.push(',');
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
}

/// Appends a JSON string with Go's escapes.
pub(crate) fn string(out: &mut String, s: &str) {
    kyb_apimachinery::gofmt::write_json_string(out, s);
}

/// Appends a JSON array of strings.
pub(crate) fn strings(out: &mut String, items: &[String]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, item);
    }
    out.push(']');
}

/// Appends a JSON object of strings, keys sorted (as Go writes maps).
pub(crate) fn string_map(out: &mut String, map: &BTreeMap<String, String>) {
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, k);
        out.push(':');
        string(out, v);
    }
    out.push('}');
}

/// Appends `,"key":"value"` unless `value` is empty (Go's `omitempty`).
pub(crate) fn optional_string(out: &mut String, name: &str, value: &str) {
    if !value.is_empty() {
        key(out, name);
        string(out, value);
    }
}

/// Whether `raw` holds exactly one JSON value (surrounding whitespace allowed).
pub(crate) fn is_valid(raw: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(raw).is_ok()
}

/// Valid JSON in Go's form: whitespace between tokens removed, and Go's HTML-safe escapes
/// applied inside strings. `raw` must be valid JSON (see [`is_valid`]); the result is
/// then valid UTF-8 JSON.
pub(crate) fn compact(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    // `run` is the start of the bytes not yet copied.
    let mut run = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < raw.len() {
        let byte = raw[i];
        if in_string {
            match byte {
                b'\\' => {
                    // An escape: the next byte is never the end of the string.
                    i += 2;
                    continue;
                }
                b'"' => in_string = false,
                b'<' | b'>' | b'&' => {
                    out.extend_from_slice(&raw[run..i]);
                    out.extend_from_slice(match byte {
                        b'<' => b"\\u003c",
                        b'>' => b"\\u003e",
                        _ => b"\\u0026",
                    });
                    run = i + 1;
                }
                // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
                0xE2 if raw.get(i + 1) == Some(&0x80)
                    && matches!(raw.get(i + 2), Some(0xA8 | 0xA9)) =>
                {
                    out.extend_from_slice(&raw[run..i]);
                    out.extend_from_slice(if raw.get(i + 2) == Some(&0xA8) {
                        b"\\u2028"
                    } else {
                        b"\\u2029"
                    });
                    i += 3;
                    run = i;
                    continue;
                }
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b' ' | b'\t' | b'\n' | b'\r' => {
                    out.extend_from_slice(&raw[run..i]);
                    run = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    if run < raw.len() {
        out.extend_from_slice(&raw[run..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compacted(s: &str) -> String {
        assert!(is_valid(s.as_bytes()), "{s}");
        String::from_utf8(compact(s.as_bytes())).unwrap_or_default()
    }

    #[test]
    fn compacts_outside_strings_only() {
        assert_eq!(
            compacted("{\n  \"a\" : [1, 2],\r\n\t\"b c\": \"x y\"\n}\n"),
            r#"{"a":[1,2],"b c":"x y"}"#
        );
        assert_eq!(
            compacted(r#"{"q":"say \"hi there\" \\ ok"}"#),
            r#"{"q":"say \"hi there\" \\ ok"}"#
        );
    }

    #[test]
    fn escapes_like_go() {
        assert_eq!(
            compacted(r#"{"h":"<a href='x'>&</a>"}"#),
            r#"{"h":"\u003ca href='x'\u003e\u0026\u003c/a\u003e"}"#
        );
        assert_eq!(
            compacted("\"a\u{2028}b\u{2029}c é\""),
            r#""a\u2028b\u2029c é""#
        );
        let mut out = String::new();
        string(&mut out, "<&>\n");
        assert_eq!(out, r#""\u003c\u0026\u003e\n""#);
    }

    #[test]
    fn validity() {
        assert!(is_valid(b" {\"a\":1} \n"));
        assert!(!is_valid(b"{\"a\":1} x"));
        assert!(!is_valid(b"a: 1\n"));
        assert!(!is_valid(b""));
    }
}
