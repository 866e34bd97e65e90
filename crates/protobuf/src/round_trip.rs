//! Every served kind, with every field of its schema set (a sample value of the field's
//! wire kind, nested messages filled in the same way), encodes and decodes back to itself.

use crate::schema::{self, ALWAYS, INLINE, Kind, REPEATED, Special};
use crate::schema_table::{KINDS, META_KINDS};
use serde_json::{Map, Value, json};

/// A sample of the message at `index`; `None` for a message already being filled further
/// out (recursive schemas: JSONSchemaProps), which is left out.
fn sample_message(index: u16, outer: &mut Vec<u16>) -> Option<Value> {
    let msg = schema::message(index);
    Some(match msg.special {
        Special::Time => json!("2024-01-02T03:04:05Z"),
        Special::MicroTime => json!("2024-01-02T03:04:05.123456Z"),
        Special::FieldsV1 | Special::Json | Special::RawExtension => json!({"f:a": {}, "n": 1}),
        Special::StringList => json!(["a", "b"]),
        Special::Quantity => json!("1500m"),
        Special::IntOrString => json!(8080),
        Special::SchemaOrBool => json!(true),
        Special::SchemaOrStringArray => json!(["a", "b"]),
        Special::SchemaOrArray => json!({"type": "string"}),
        Special::None => {
            if outer.contains(&index) {
                return None;
            }
            outer.push(index);
            let mut object = Map::new();
            fill(index, &mut object, outer);
            outer.pop();
            Value::Object(object)
        }
    })
}

fn fill(index: u16, object: &mut Map<String, Value>, outer: &mut Vec<u16>) {
    let msg = schema::message(index);
    for field in msg.fields {
        if field.has(INLINE) {
            fill(field.message, object, outer);
            continue;
        }
        let value = match field.kind {
            Kind::String => Some(json!(format!("{}-{}", field.json, field.number))),
            Kind::Bytes => Some(json!("aGVsbG8=")),
            Kind::Bool => Some(json!(true)),
            Kind::Int32 => Some(json!(7)),
            Kind::Int64 => Some(json!(1_234_567_890_123_i64)),
            Kind::Double => Some(json!(1.5)),
            Kind::Message => sample_message(field.message, outer),
            Kind::MapString => Some(json!({"k": "v"})),
            Kind::MapBytes => Some(json!({"k": "aGk="})),
            Kind::MapMessage => sample_message(field.message, outer).map(|v| json!({ "k": v })),
        };
        let value = match value {
            Some(value) => value,
            None if field.has(ALWAYS) => panic!("{}.{} cannot be left out", msg.name, field.json),
            None => continue,
        };
        let value = if field.has(REPEATED)
            && !matches!(
                field.kind,
                Kind::MapString | Kind::MapBytes | Kind::MapMessage
            ) {
            json!([value])
        } else {
            value
        };
        object.insert(field.json.to_owned(), value);
    }
}

fn round_trip(api_version: &str, kind: &str, index: u16) -> Result<(), String> {
    let mut value = sample_message(index, &mut Vec::new()).ok_or("no sample")?;
    if let Some(object) = value.as_object_mut() {
        object.insert("apiVersion".into(), api_version.into());
        object.insert("kind".into(), kind.into());
    }
    let body = crate::encode(&value).map_err(|e| format!("encode: {e}"))?;
    let decoded = crate::decode(&body).map_err(|e| format!("decode: {e}"))?;
    if decoded != value {
        return Err(format!("{decoded:#}\n!=\n{value:#}"));
    }
    Ok(())
}

#[test]
fn every_kind_with_every_field_set_round_trips() {
    let mut failures = Vec::new();
    for (api_version, kind, index) in KINDS {
        if let Err(e) = round_trip(api_version, kind, *index) {
            failures.push(format!("{api_version} {kind}: {e}"));
        }
    }
    for (kind, index) in META_KINDS {
        if let Err(e) = round_trip("meta.k8s.io/v1", kind, *index) {
            failures.push(format!("meta.k8s.io/v1 {kind}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} kinds:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
