//! JSON to CEL values, as Kubernetes presents unstructured objects to CEL.
//!
//! JSON objects become maps with string keys, arrays lists, numbers without a fraction
//! that fit in an int64 become `int` (every other number is a `double`, as the apiserver's
//! unstructured decoder does), strings, booleans and null map one to one. Nesting deeper
//! than [`MAX_DEPTH`] is refused instead of recursing without bound.
//!
//! The other direction is only needed for names: [`type_name`] gives the CEL type name of a
//! value the way cel-go prints it in messages (`int`, `string`, `null_type`, ...).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::Value as CelValue;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value as Json;

/// Deepest JSON nesting converted; deeper documents are reported as an evaluation error.
/// (The apiserver's own JSON decoder refuses far shallower documents than anything
/// reaching this.)
pub const MAX_DEPTH: usize = 200;

/// The JSON document nests deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep;

/// Converts a JSON value into a CEL value.
pub fn to_cel(value: &Json) -> Result<CelValue, TooDeep> {
    convert(value, 0)
}

/// Converts an optional JSON value; `None` is CEL `null`.
pub fn optional_to_cel(value: Option<&Json>) -> Result<CelValue, TooDeep> {
    value.map_or(Ok(CelValue::Null), to_cel)
}

fn convert(value: &Json, depth: usize) -> Result<CelValue, TooDeep> {
    if depth > MAX_DEPTH {
        return Err(TooDeep);
    }
    Ok(match value {
        Json::Null => CelValue::Null,
        Json::Bool(b) => CelValue::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => CelValue::Int(i),
            None => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => CelValue::String(Arc::new(s.clone())),
        Json::Array(items) => {
            let mut list = Vec::with_capacity(items.len());
            for item in items {
                list.push(convert(item, depth + 1)?);
            }
            CelValue::List(Arc::new(list))
        }
        Json::Object(fields) => {
            let mut map = HashMap::with_capacity(fields.len());
            for (key, field) in fields {
                map.insert(
                    Key::String(Arc::new(key.clone())),
                    convert(field, depth + 1)?,
                );
            }
            CelValue::Map(Map { map: Arc::new(map) })
        }
    })
}

/// The CEL type name of a value, as cel-go prints it (`int`, `double`, `null_type`, ...).
pub fn type_name(value: &CelValue) -> String {
    match value {
        CelValue::List(_) => "list".to_owned(),
        CelValue::Map(_) => "map".to_owned(),
        CelValue::Function(_, _) => "function".to_owned(),
        CelValue::Int(_) => "int".to_owned(),
        CelValue::UInt(_) => "uint".to_owned(),
        CelValue::Float(_) => "double".to_owned(),
        CelValue::String(_) => "string".to_owned(),
        CelValue::Bytes(_) => "bytes".to_owned(),
        CelValue::Bool(_) => "bool".to_owned(),
        CelValue::Duration(_) => "google.protobuf.Duration".to_owned(),
        CelValue::Timestamp(_) => "google.protobuf.Timestamp".to_owned(),
        CelValue::Opaque(o) => o.runtime_type_name().to_owned(),
        CelValue::Null => "null_type".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_follow_the_unstructured_decoder() {
        assert_eq!(to_cel(&json!(5)).unwrap(), CelValue::Int(5));
        assert_eq!(to_cel(&json!(-5)).unwrap(), CelValue::Int(-5));
        assert_eq!(to_cel(&json!(1.5)).unwrap(), CelValue::Float(1.5));
        // Beyond int64: a double, not a uint.
        assert!(matches!(
            to_cel(&json!(u64::MAX)).unwrap(),
            CelValue::Float(_)
        ));
    }

    #[test]
    fn objects_and_lists() {
        let v = to_cel(&json!({"a": [1, "x", null, true]})).unwrap();
        let CelValue::Map(m) = v else {
            panic!("not a map")
        };
        let CelValue::List(l) = m.map.get(&Key::from("a")).unwrap() else {
            panic!("not a list")
        };
        assert_eq!(l.len(), 4);
        assert_eq!(l[1], CelValue::String(Arc::new("x".into())));
        assert_eq!(l[2], CelValue::Null);
    }

    #[test]
    fn refuses_excessive_depth() {
        let mut v = json!(1);
        for _ in 0..(MAX_DEPTH + 5) {
            v = json!([v]);
        }
        assert_eq!(to_cel(&v), Err(TooDeep));
        let mut ok = json!(1);
        for _ in 0..MAX_DEPTH {
            ok = json!({"a": ok});
        }
        assert!(to_cel(&ok).is_ok());
    }

    #[test]
    fn type_names_match_cel_go() {
        assert_eq!(type_name(&CelValue::Int(1)), "int");
        assert_eq!(type_name(&CelValue::Float(1.0)), "double");
        assert_eq!(type_name(&CelValue::Null), "null_type");
        assert_eq!(
            type_name(&CelValue::String(Arc::new(String::new()))),
            "string"
        );
    }
}
