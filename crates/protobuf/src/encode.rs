//! JSON → protobuf: writes an object's JSON form in the wire format of its type, with
//! the same schema the decoder uses. Fields are written in field-number order and map
//! entries sorted by key, as Kubernetes' Go encoder does; fields absent from the JSON (or
//! null) are not written, and JSON keys the type does not have are ignored.

use serde_json::{Map, Value};

use crate::decode::MAX_DEPTH;
use crate::error::EncodeError;
use crate::schema::{self, Field, INLINE, Kind, Message, REPEATED, Special};
use crate::wire::{FIXED64, VARINT, put_bytes, put_tag, put_varint};
use kyb_apimachinery::base64;
use kyb_apimachinery::time;

/// Encodes the object `value` as the message at `index`.
pub(crate) fn object(index: u16, value: &Value, depth: usize) -> Result<Vec<u8>, EncodeError> {
    Ok(message(index, value, depth)?.unwrap_or_default())
}

/// The bytes of one message, or `None` when the value (null) writes nothing.
fn message(index: u16, value: &Value, depth: usize) -> Result<Option<Vec<u8>>, EncodeError> {
    if depth > MAX_DEPTH {
        return Err(EncodeError::TooDeep { limit: MAX_DEPTH });
    }
    if value.is_null() {
        return Ok(None);
    }
    let msg = schema::message(index);
    let mut out = Vec::new();
    match msg.special {
        Special::None => {
            let obj = value.as_object().ok_or_else(|| invalid("object"))?;
            fields(msg, obj, &mut out, depth)?;
        }
        Special::Time | Special::MicroTime => {
            let text = value.as_str().ok_or_else(|| invalid("RFC 3339 time"))?;
            let (seconds, nanos) =
                time::parse_rfc3339(text).ok_or_else(|| invalid("RFC 3339 time"))?;
            put_varint_field(&mut out, 1, seconds as u64);
            put_varint_field(&mut out, 2, i64::from(nanos) as u64);
        }
        Special::FieldsV1 | Special::Json | Special::RawExtension => {
            let raw = serde_json::to_vec(value).map_err(|_| invalid("JSON"))?;
            put_bytes(&mut out, 1, &raw);
        }
        Special::StringList => {
            for (i, item) in value
                .as_array()
                .ok_or_else(|| invalid("array of strings"))?
                .iter()
                .enumerate()
            {
                let s = item
                    .as_str()
                    .ok_or_else(|| at(invalid("string"), &format!("[{i}]")))?;
                put_bytes(&mut out, 1, s.as_bytes());
            }
        }
        Special::Quantity => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(invalid("quantity")),
            };
            put_bytes(&mut out, 1, text.as_bytes());
        }
        Special::IntOrString => match value {
            Value::String(s) => {
                put_varint_field(&mut out, 1, 1);
                put_varint_field(&mut out, 2, 0);
                put_bytes(&mut out, 3, s.as_bytes());
            }
            Value::Number(_) => {
                let n = int32(value).ok_or_else(|| invalid("int32 or string"))?;
                put_varint_field(&mut out, 1, 0);
                put_varint_field(&mut out, 2, i64::from(n) as u64);
                put_bytes(&mut out, 3, b"");
            }
            _ => return Err(invalid("int32 or string")),
        },
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            schema_union(msg, value, &mut out, depth)?;
        }
    }
    Ok(Some(out))
}

/// The apiextensions unions: a schema object, or an array (of schemas or strings), or a
/// boolean.
fn schema_union(
    msg: &'static Message,
    value: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    let schema_field = |number: u32| msg.field(number).map(|f| f.message).unwrap_or_default();
    match (msg.special, value) {
        (Special::SchemaOrBool, Value::Bool(b)) => put_varint_field(out, 1, u64::from(*b)),
        (Special::SchemaOrBool, Value::Object(_)) => {
            put_varint_field(out, 1, 1);
            if let Some(bytes) = message(schema_field(2), value, depth + 1)? {
                put_bytes(out, 2, &bytes);
            }
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Object(_)) => {
            if let Some(bytes) = message(schema_field(1), value, depth + 1)? {
                put_bytes(out, 1, &bytes);
            }
        }
        (Special::SchemaOrArray, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let bytes = message(schema_field(2), item, depth + 1)
                    .map_err(|e| at(e, &format!("[{i}]")))?;
                put_bytes(out, 2, &bytes.unwrap_or_default());
            }
        }
        (Special::SchemaOrStringArray, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let s = item
                    .as_str()
                    .ok_or_else(|| at(invalid("string"), &format!("[{i}]")))?;
                put_bytes(out, 2, s.as_bytes());
            }
        }
        (Special::SchemaOrBool, _) => return Err(invalid("schema or boolean")),
        (Special::SchemaOrArray, _) => return Err(invalid("schema or array of schemas")),
        _ => return Err(invalid("schema or array of strings")),
    }
    Ok(())
}

/// Writes the fields of an ordinary message from a JSON object.
fn fields(
    msg: &'static Message,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    for field in msg.fields {
        if field.has(INLINE) {
            // An embedded struct: its fields sit in the same JSON object.
            let mut inner = Vec::new();
            fields(schema::message(field.message), obj, &mut inner, depth + 1)?;
            put_bytes(out, field.number, &inner);
            continue;
        }
        let json = field.json;
        let Some(value) = obj.get(json).filter(|v| !v.is_null()) else {
            continue;
        };
        match field.kind {
            Kind::MapString | Kind::MapBytes | Kind::MapMessage => {
                let map = value
                    .as_object()
                    .ok_or_else(|| at(invalid("object"), json))?;
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    let Some(v) = map.get(key) else { continue };
                    let mut entry = Vec::new();
                    put_bytes(&mut entry, 1, key.as_bytes());
                    map_value(field, v, &mut entry, depth)
                        .map_err(|e| at(e, &format!("{json}.{key}")))?;
                    put_bytes(out, field.number, &entry);
                }
            }
            _ if field.has(REPEATED) => {
                let items = value.as_array().ok_or_else(|| at(invalid("array"), json))?;
                for (i, item) in items.iter().enumerate() {
                    element(field, item, out, depth).map_err(|e| at(e, &format!("{json}[{i}]")))?;
                }
            }
            _ => element(field, value, out, depth).map_err(|e| at(e, json))?,
        }
    }
    Ok(())
}

/// Writes one value of a (possibly repeated) field.
fn element(
    field: &'static Field,
    value: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    let n = field.number;
    match field.kind {
        Kind::Message => {
            // A null list element is Go's zero value: an empty message.
            let bytes = message(field.message, value, depth + 1)?;
            if bytes.is_some() || field.has(REPEATED) {
                put_bytes(out, n, &bytes.unwrap_or_default());
            }
        }
        Kind::String => put_bytes(
            out,
            n,
            value.as_str().ok_or_else(|| invalid("string"))?.as_bytes(),
        ),
        Kind::Bytes => {
            let text = value.as_str().ok_or_else(|| invalid("base64 string"))?;
            put_bytes(
                out,
                n,
                &base64::decode(text).map_err(|_| invalid("base64 string"))?,
            );
        }
        Kind::Bool => put_varint_field(
            out,
            n,
            u64::from(value.as_bool().ok_or_else(|| invalid("boolean"))?),
        ),
        Kind::Int32 => put_varint_field(
            out,
            n,
            i64::from(int32(value).ok_or_else(|| invalid("int32"))?) as u64,
        ),
        Kind::Int64 => put_varint_field(
            out,
            n,
            value.as_i64().ok_or_else(|| invalid("int64"))? as u64,
        ),
        Kind::Double => {
            put_tag(out, n, FIXED64);
            out.extend_from_slice(
                &value
                    .as_f64()
                    .ok_or_else(|| invalid("number"))?
                    .to_le_bytes(),
            );
        }
        Kind::MapString | Kind::MapBytes | Kind::MapMessage => return Err(invalid("object")),
    }
    Ok(())
}

/// Writes field 2 of a map entry.
fn map_value(
    field: &'static Field,
    value: &Value,
    entry: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    match field.kind {
        Kind::MapMessage => {
            let bytes = message(field.message, value, depth + 1)?.unwrap_or_default();
            put_bytes(entry, 2, &bytes);
        }
        Kind::MapBytes => {
            let text = value.as_str().ok_or_else(|| invalid("base64 string"))?;
            put_bytes(
                entry,
                2,
                &base64::decode(text).map_err(|_| invalid("base64 string"))?,
            );
        }
        _ => put_bytes(
            entry,
            2,
            value.as_str().ok_or_else(|| invalid("string"))?.as_bytes(),
        ),
    }
    Ok(())
}

fn int32(value: &Value) -> Option<i32> {
    value.as_i64().and_then(|n| i32::try_from(n).ok())
}

fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_tag(out, number, VARINT);
    put_varint(out, value);
}

fn invalid(expected: &'static str) -> EncodeError {
    EncodeError::InvalidValue {
        path: String::new(),
        expected,
    }
}

/// Prefixes the JSON path of an error coming out of a nested value.
fn at(mut e: EncodeError, segment: &str) -> EncodeError {
    if let EncodeError::InvalidValue { path, .. } = &mut e {
        *path = if path.is_empty() {
            segment.to_owned()
        } else if path.starts_with('[') {
            format!("{segment}{path}")
        } else {
            format!("{segment}.{path}")
        };
    }
    e
}
