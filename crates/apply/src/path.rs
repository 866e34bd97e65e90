//! Path elements: how one step into an object is written in `fieldsV1`, printed in
//! conflict messages, and ordered.
//!
//! A step is a struct field or map key (`f:<name>`), a list-map item identified by its
//! key fields (`k:{"name":"nginx"}`, keys sorted by name), a set item
//! (`v:"value"`) or a list index (`i:3`). Field sets store steps in this serialized
//! form; printing (`.spec.containers[name="nginx"].image`) and ordering parse them back.

use crate::value;
use kyb_apimachinery::gofmt;
use serde_json::Value;
use std::cmp::Ordering;

/// One step of a path while walking an object. Field names are borrowed from the
/// object; other steps are serialized when the list items are keyed.
#[derive(Debug, Clone)]
pub(crate) enum Step<'a> {
    /// `f:<name>`.
    Field(&'a str),
    /// An already serialized step (`k:…`, `v:…`, `i:…`).
    Owned(String),
}

impl Step<'_> {
    /// Writes the serialized step into `buf` (cleared first).
    pub(crate) fn write_into(&self, buf: &mut String) {
        buf.clear();
        match self {
            Step::Field(name) => {
                buf.push_str("f:");
                buf.push_str(name);
            }
            Step::Owned(raw) => buf.push_str(raw),
        }
    }

    /// The serialized step.
    pub(crate) fn serialized(&self) -> String {
        let mut s = String::new();
        self.write_into(&mut s);
        s
    }
}

/// `f:<name>`.
pub(crate) fn field(name: &str) -> String {
    format!("f:{name}")
}

/// `k:{...}` for the key fields of a list-map item, given sorted by name.
pub(crate) fn key(fields: &[(&str, &Value)]) -> String {
    let mut out = String::from("k:{");
    for (i, (name, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        gofmt::write_json_string(&mut out, name);
        out.push(':');
        gofmt::write_json(&mut out, v);
    }
    out.push('}');
    out
}

/// `v:<json>` for a set item.
pub(crate) fn set_item(v: &Value) -> String {
    let mut out = String::from("v:");
    gofmt::write_json(&mut out, v);
    out
}

/// `i:<index>`.
pub(crate) fn index(i: usize) -> String {
    format!("i:{i}")
}

/// A parsed step, for printing and ordering.
enum Parsed {
    Field(String),
    Key(Vec<(String, Value)>),
    Value(Value),
    Index(i64),
    Invalid,
}

fn parse(step: &str) -> Parsed {
    if let Some(name) = step.strip_prefix("f:") {
        return Parsed::Field(name.to_owned());
    }
    if let Some(json) = step.strip_prefix("k:") {
        return match serde_json::from_str::<Value>(json) {
            // serde_json's maps iterate sorted by key, the order keys are printed in.
            Ok(Value::Object(map)) => Parsed::Key(map.into_iter().collect()),
            _ => Parsed::Invalid,
        };
    }
    if let Some(json) = step.strip_prefix("v:") {
        return serde_json::from_str(json).map_or(Parsed::Invalid, Parsed::Value);
    }
    if let Some(n) = step.strip_prefix("i:") {
        return n.parse().map_or(Parsed::Invalid, Parsed::Index);
    }
    Parsed::Invalid
}

/// Whether `step` is a syntactically valid serialized path element.
pub(crate) fn is_valid(step: &str) -> bool {
    !matches!(parse(step), Parsed::Invalid)
}

/// The canonical serialization of a (possibly differently spelled) step, as
/// structured-merge-diff re-serializes what it parses.
pub(crate) fn canonical(step: &str) -> Option<String> {
    match parse(step) {
        Parsed::Field(name) => Some(field(&name)),
        Parsed::Key(fields) => {
            let refs: Vec<(&str, &Value)> = fields.iter().map(|(k, v)| (k.as_str(), v)).collect();
            Some(key(&refs))
        }
        Parsed::Value(v) => Some(set_item(&v)),
        Parsed::Index(i) => usize::try_from(i).ok().map(index),
        Parsed::Invalid => None,
    }
}

/// Appends one step as Kubernetes prints it in paths.
pub(crate) fn write_display(out: &mut String, step: &str) {
    match parse(step) {
        Parsed::Field(name) => {
            out.push('.');
            out.push_str(&name);
        }
        Parsed::Key(fields) => {
            out.push('[');
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(k);
                out.push('=');
                value::write_display(out, v);
            }
            out.push(']');
        }
        Parsed::Value(v) => {
            out.push_str("[=");
            value::write_display(out, &v);
            out.push(']');
        }
        Parsed::Index(i) => {
            out.push('[');
            out.push_str(&i.to_string());
            out.push(']');
        }
        Parsed::Invalid => out.push_str("{{invalid path element}}"),
    }
}

/// A whole path as Kubernetes prints it: `.spec.template.spec.containers[name="nginx"].image`.
pub(crate) fn display<S: AsRef<str>>(path: &[S]) -> String {
    let mut out = String::new();
    for step in path {
        write_display(&mut out, step.as_ref());
    }
    out
}

/// A path of walker steps as Kubernetes prints it.
pub(crate) fn display_steps(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    let mut buf = String::new();
    for step in path {
        step.write_into(&mut buf);
        write_display(&mut out, &buf);
    }
    out
}

fn rank(p: &Parsed) -> u8 {
    match p {
        Parsed::Field(_) => 0,
        Parsed::Key(_) => 1,
        Parsed::Value(_) => 2,
        Parsed::Index(_) => 3,
        Parsed::Invalid => 4,
    }
}

/// structured-merge-diff's order of path elements: fields (by name), then keys (field
/// by field), then set values, then indices.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    let (pa, pb) = (parse(a), parse(b));
    match (&pa, &pb) {
        (Parsed::Field(x), Parsed::Field(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Parsed::Key(x), Parsed::Key(y)) => {
            for ((kx, vx), (ky, vy)) in x.iter().zip(y) {
                match kx.as_bytes().cmp(ky.as_bytes()) {
                    Ordering::Equal => {}
                    other => return other,
                }
                match value::compare(vx, vy) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        (Parsed::Value(x), Parsed::Value(y)) => value::compare(x, y),
        (Parsed::Index(x), Parsed::Index(y)) => x.cmp(y),
        _ => rank(&pa).cmp(&rank(&pb)).then_with(|| a.cmp(b)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn serializes_steps() {
        assert_eq!(field("replicas"), "f:replicas");
        let port = json!(80);
        let tcp = json!("TCP");
        assert_eq!(
            key(&[("containerPort", &port), ("protocol", &tcp)]),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(set_item(&json!("foo<")), r#"v:"foo\u003c""#);
        assert_eq!(index(3), "i:3");
    }

    #[test]
    fn prints_paths_like_kubernetes() {
        let path = [
            "f:spec",
            "f:template",
            "f:spec",
            r#"k:{"name":"nginx"}"#,
            "f:image",
        ];
        assert_eq!(display(&path), r#".spec.template.spec[name="nginx"].image"#);
        assert_eq!(
            display(&["f:ports", r#"k:{"containerPort":80,"protocol":"TCP"}"#]),
            r#".ports[containerPort=80,protocol="TCP"]"#
        );
        assert_eq!(
            display(&["f:finalizers", r#"v:"a""#]),
            r#".finalizers[="a"]"#
        );
        assert_eq!(display(&["f:x", "i:2"]), ".x[2]");
        assert_eq!(display(&["zz"]), "{{invalid path element}}");
    }

    #[test]
    fn orders_like_structured_merge_diff() {
        let mut steps = vec![
            "i:0",
            r#"v:"a""#,
            r#"k:{"port":443}"#,
            r#"k:{"port":80}"#,
            "f:b",
            "f:a",
        ];
        steps.sort_by(|a, b| compare(a, b));
        assert_eq!(
            steps,
            vec![
                "f:a",
                "f:b",
                r#"k:{"port":80}"#,
                r#"k:{"port":443}"#,
                r#"v:"a""#,
                "i:0"
            ]
        );
    }

    #[test]
    fn canonicalizes_keys() {
        assert_eq!(
            canonical(r#"k:{ "b": 1, "a": "x" }"#).unwrap(),
            r#"k:{"a":"x","b":1}"#
        );
        assert!(canonical("q:1").is_none());
        assert!(canonical("k:[1]").is_none());
        assert!(is_valid("f:"));
        assert!(!is_valid("i:-1x"));
    }
}
