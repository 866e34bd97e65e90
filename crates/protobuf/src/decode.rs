//! Protobuf → JSON: walks a message's wire bytes with its schema and builds the JSON
//! form Kubernetes' Go JSON encoder would produce for the same object.
//!
//! Presence follows Go: Kubernetes' encoder writes every non-pointer field, zero or not,
//! so a zero scalar is dropped unless its Go field is a pointer (`POINTER`) or required
//! (`ALWAYS`, no `omitempty`); required fields missing from the wire get their zero value;
//! empty lists and maps are left out.

use serde_json::{Map, Number, Value};

use crate::envelope;
use crate::error::{DecodeError, Problem};
use crate::schema::{self, ALWAYS, Field, INLINE, Kind, Message, POINTER, REPEATED, Special};
use crate::wire::{FIXED64, LEN, Reader, VARINT};
use kyb_apimachinery::base64;
use kyb_apimachinery::time;

/// How deeply messages (and embedded objects) may nest.
pub(crate) const MAX_DEPTH: usize = 100;

/// Decodes an object of a served kind, and sets its "apiVersion" and "kind".
pub(crate) fn typed_object(
    api_version: &str,
    kind: &str,
    data: &[u8],
    depth: usize,
) -> Result<Map<String, Value>, DecodeError> {
    let index = schema::lookup_kind(api_version, kind).ok_or_else(|| DecodeError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    if depth > MAX_DEPTH {
        return Err(DecodeError::TooDeep { limit: MAX_DEPTH });
    }
    let mut obj = Map::new();
    obj.insert(
        "apiVersion".to_owned(),
        Value::String(api_version.to_owned()),
    );
    obj.insert("kind".to_owned(), Value::String(kind.to_owned()));
    obj.extend(fields(schema::message(index), data, depth)?);
    Ok(obj)
}

/// The JSON form of one message, or `None` when Go would write `null` (a zero time, an
/// empty raw extension) and the field is therefore left out.
fn value(index: u16, data: &[u8], depth: usize) -> Result<Option<Value>, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::TooDeep { limit: MAX_DEPTH });
    }
    let msg = schema::message(index);
    // Takes a decoded field out of a special message's fields by number.
    let take = |obj: &mut Map<String, Value>, number: u32| -> Option<Value> {
        msg.field(number).and_then(|f| obj.remove(f.json))
    };
    let mut obj = match msg.special {
        Special::None => return fields(msg, data, depth).map(|m| Some(Value::Object(m))),
        Special::Time | Special::MicroTime => return time_value(msg, data),
        Special::FieldsV1 | Special::Json => {
            return match raw_field(msg, data, 1)? {
                None | Some([]) => Ok(None),
                Some(raw) => embedded_json(msg, raw).map(Some),
            };
        }
        Special::RawExtension => {
            return match raw_field(msg, data, 1)? {
                None | Some([]) => Ok(None),
                Some(raw) if raw.starts_with(envelope::MAGIC) => {
                    envelope::decode(raw, depth + 1).map(|m| Some(Value::Object(m)))
                }
                Some(raw) => embedded_json(msg, raw).map(Some),
            };
        }
        _ => fields(msg, data, depth)?,
    };
    Ok(match msg.special {
        Special::StringList => Some(take(&mut obj, 1).unwrap_or_else(|| Value::Array(Vec::new()))),
        // Go's zero Quantity is written as "0".
        Special::Quantity => Some(take(&mut obj, 1).unwrap_or_else(|| Value::from("0"))),
        Special::IntOrString => match take(&mut obj, 1).and_then(|v| v.as_i64()).unwrap_or(0) {
            0 => Some(take(&mut obj, 2).unwrap_or_else(|| Value::from(0))),
            1 => Some(take(&mut obj, 3).unwrap_or_else(|| Value::from(""))),
            other => return Err(malformed(msg, None, Problem::InvalidIntOrString(other))),
        },
        // A non-empty list wins over the schema, as in Go's MarshalJSON.
        Special::SchemaOrArray | Special::SchemaOrStringArray => {
            take(&mut obj, 2).or_else(|| take(&mut obj, 1))
        }
        Special::SchemaOrBool => Some(take(&mut obj, 2).unwrap_or_else(|| {
            Value::Bool(take(&mut obj, 1).and_then(|v| v.as_bool()).unwrap_or(false))
        })),
        _ => Some(Value::Object(obj)),
    })
}

/// What has been read for one field so far.
#[derive(Clone)]
enum Slot {
    Absent,
    /// The last value of a singular field (`None`: a message whose JSON is null).
    Single(Option<Value>),
    List(Vec<Value>),
    Map(Map<String, Value>),
}

/// Decodes an ordinary message into a JSON object.
fn fields(
    msg: &'static Message,
    data: &[u8],
    depth: usize,
) -> Result<Map<String, Value>, DecodeError> {
    let mut slots = vec![Slot::Absent; msg.fields.len()];
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wire_type) = r.tag().map_err(|e| malformed(msg, None, e.into()))?;
        let Some((field, slot)) = msg
            .fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()
            .and_then(|i| Some((msg.fields.get(i)?, slots.get_mut(i)?)))
        else {
            r.skip(wire_type)
                .map_err(|e| malformed(msg, None, e.into()))?;
            continue;
        };
        let json = field.json;
        match field.kind {
            _ if field.has(INLINE) => {
                let bytes = read_len(msg, field, wire_type, &mut r)?;
                let inner = fields(schema::message(field.message), bytes, depth + 1)?;
                *slot = Slot::Single(Some(Value::Object(inner)));
            }
            Kind::MapString | Kind::MapBytes | Kind::MapMessage => {
                let bytes = read_len(msg, field, wire_type, &mut r)?;
                let (key, entry) = map_entry(msg, field, bytes, depth).map_err(|e| at(e, json))?;
                if !matches!(slot, Slot::Map(_)) {
                    *slot = Slot::Map(Map::new());
                }
                if let Slot::Map(map) = slot {
                    map.insert(key, entry);
                }
            }
            Kind::Message if !field.has(REPEATED) => {
                let bytes = read_len(msg, field, wire_type, &mut r)?;
                let v = value(field.message, bytes, depth + 1).map_err(|e| at(e, json))?;
                *slot = Slot::Single(v);
            }
            kind if field.has(REPEATED) => {
                if !matches!(slot, Slot::List(_)) {
                    *slot = Slot::List(Vec::new());
                }
                let Slot::List(list) = slot else { continue };
                if kind == Kind::Message {
                    let bytes = read_len(msg, field, wire_type, &mut r)?;
                    let index = list.len();
                    let item = value(field.message, bytes, depth + 1)
                        .map_err(|e| at(e, &format!("{json}[{index}]")))?;
                    list.push(item.unwrap_or(Value::Null));
                } else if wire_type == LEN && kind != Kind::String && kind != Kind::Bytes {
                    // A packed run of numbers.
                    let bytes = read_len(msg, field, wire_type, &mut r)?;
                    let mut packed = Reader::new(bytes);
                    let wire = if kind == Kind::Double {
                        FIXED64
                    } else {
                        VARINT
                    };
                    while !packed.is_empty() {
                        list.push(scalar(msg, field, wire, &mut packed)?);
                    }
                } else {
                    list.push(scalar(msg, field, wire_type, &mut r)?);
                }
            }
            _ => *slot = Slot::Single(Some(scalar(msg, field, wire_type, &mut r)?)),
        }
    }

    let mut obj = Map::new();
    for (field, slot) in msg.fields.iter().zip(slots) {
        let json = field.json.to_owned();
        match slot {
            Slot::Single(Some(Value::Object(inner))) if field.has(INLINE) => obj.extend(inner),
            Slot::Absent if field.has(INLINE) => {
                // Required fields of an embedded struct that was not on the wire.
                obj.extend(fields(schema::message(field.message), &[], depth + 1)?);
            }
            // A zero scalar of a plain (non-pointer, omitempty) Go field is left out.
            Slot::Single(Some(v))
                if field.kind == Kind::Message || !is_zero(&v) || field.has(ALWAYS | POINTER) =>
            {
                obj.insert(json, v);
            }
            Slot::List(list) if !list.is_empty() => {
                obj.insert(json, Value::Array(list));
            }
            Slot::Map(map) if !map.is_empty() => {
                obj.insert(json, Value::Object(map));
            }
            _ if field.has(ALWAYS) => {
                // Required in the API: present with its zero value, as Go would write it.
                let zero = match field.kind {
                    _ if field.has(REPEATED) => Some(Value::Array(Vec::new())),
                    Kind::MapString | Kind::MapBytes | Kind::MapMessage => {
                        Some(Value::Object(Map::new()))
                    }
                    Kind::Message => value(field.message, &[], depth + 1)?,
                    Kind::String | Kind::Bytes => Some(Value::String(String::new())),
                    Kind::Bool => Some(Value::Bool(false)),
                    Kind::Int32 | Kind::Int64 => Some(Value::from(0)),
                    Kind::Double => Some(Value::from(0.0)),
                };
                if let Some(zero) = zero {
                    obj.insert(json, zero);
                }
            }
            _ => {}
        }
    }
    Ok(obj)
}

/// One `map<string, V>` entry: a message with the key as field 1 and the value as 2.
fn map_entry(
    msg: &'static Message,
    field: &'static Field,
    data: &[u8],
    depth: usize,
) -> Result<(String, Value), DecodeError> {
    let mut key = String::new();
    let mut entry = None;
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wire_type) = r.tag().map_err(|e| malformed(msg, Some(field), e.into()))?;
        match number {
            1 => key = lossy(read_len(msg, field, wire_type, &mut r)?),
            2 => {
                let bytes = read_len(msg, field, wire_type, &mut r)?;
                entry = Some(match field.kind {
                    Kind::MapBytes => Value::String(base64::encode(bytes)),
                    Kind::MapMessage => {
                        value(field.message, bytes, depth + 1)?.unwrap_or(Value::Null)
                    }
                    _ => Value::String(lossy(bytes)),
                });
            }
            _ => r
                .skip(wire_type)
                .map_err(|e| malformed(msg, Some(field), e.into()))?,
        }
    }
    let entry = match entry {
        Some(entry) => entry,
        None if field.kind == Kind::MapMessage => {
            value(field.message, &[], depth + 1)?.unwrap_or(Value::Null)
        }
        None => Value::String(String::new()),
    };
    Ok((key, entry))
}

/// Reads one scalar of the field's kind.
fn scalar(
    msg: &'static Message,
    field: &'static Field,
    wire_type: u8,
    r: &mut Reader<'_>,
) -> Result<Value, DecodeError> {
    let fail = |p: Problem| malformed(msg, Some(field), p);
    let expected = kind_name(field.kind);
    let want = |w: u8| {
        if wire_type == w {
            Ok(())
        } else {
            Err(fail(Problem::WrongWireType {
                found: wire_type,
                expected,
            }))
        }
    };
    Ok(match field.kind {
        Kind::Bool => {
            want(VARINT)?;
            Value::Bool(r.varint().map_err(|e| fail(e.into()))? != 0)
        }
        Kind::Int32 => {
            want(VARINT)?;
            // int32 travels sign-extended to 64 bits; the low 32 bits are the value.
            Value::from(r.varint().map_err(|e| fail(e.into()))? as i32)
        }
        Kind::Int64 => {
            want(VARINT)?;
            Value::from(r.varint().map_err(|e| fail(e.into()))? as i64)
        }
        Kind::Double => {
            want(FIXED64)?;
            let bits = r.fixed64().map_err(|e| fail(e.into()))?;
            let n = Number::from_f64(f64::from_bits(bits))
                .ok_or_else(|| fail(Problem::NonFiniteNumber))?;
            Value::Number(n)
        }
        Kind::Bytes => Value::String(base64::encode(read_len(msg, field, wire_type, r)?)),
        _ => Value::String(lossy(read_len(msg, field, wire_type, r)?)),
    })
}

fn read_len<'a>(
    msg: &'static Message,
    field: &'static Field,
    wire_type: u8,
    r: &mut Reader<'a>,
) -> Result<&'a [u8], DecodeError> {
    if wire_type != LEN {
        let expected = kind_name(field.kind);
        return Err(malformed(
            msg,
            Some(field),
            Problem::WrongWireType {
                found: wire_type,
                expected,
            },
        ));
    }
    r.bytes().map_err(|e| malformed(msg, Some(field), e.into()))
}

/// The last value of a bytes field, read without decoding it.
fn raw_field<'a>(
    msg: &'static Message,
    data: &'a [u8],
    number: u32,
) -> Result<Option<&'a [u8]>, DecodeError> {
    let mut found = None;
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (n, wire_type) = r.tag().map_err(|e| malformed(msg, None, e.into()))?;
        match msg.field(n) {
            Some(field) if n == number => found = Some(read_len(msg, field, wire_type, &mut r)?),
            _ => r
                .skip(wire_type)
                .map_err(|e| malformed(msg, None, e.into()))?,
        }
    }
    Ok(found)
}

fn time_value(msg: &'static Message, data: &[u8]) -> Result<Option<Value>, DecodeError> {
    if data.is_empty() {
        // Go writes the zero time as an empty message, and its JSON as null.
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wire_type) = r.tag().map_err(|e| malformed(msg, None, e.into()))?;
        match msg.field(number) {
            Some(field) if number == 1 || number == 2 => {
                let v = scalar(msg, field, wire_type, &mut r)?.as_i64().unwrap_or(0);
                if number == 1 {
                    seconds = v;
                } else {
                    nanos = v;
                }
            }
            _ => r
                .skip(wire_type)
                .map_err(|e| malformed(msg, None, e.into()))?,
        }
    }
    if msg.special == Special::Time {
        // metav1.Time keeps whole seconds only.
        nanos = 0;
    }
    if seconds == time::GO_ZERO_SECONDS && nanos == 0 {
        return Ok(None);
    }
    let digits = if msg.special == Special::MicroTime {
        6
    } else {
        0
    };
    time::format_rfc3339(seconds, nanos, digits)
        .map(|t| Some(Value::String(t)))
        .ok_or_else(|| malformed(msg, None, Problem::TimeOutOfRange))
}

fn embedded_json(msg: &'static Message, raw: &[u8]) -> Result<Value, DecodeError> {
    serde_json::from_slice(raw)
        .map_err(|e| malformed(msg, msg.field(1), Problem::InvalidJson(e.to_string())))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::String => "string",
        Kind::Bytes => "bytes",
        Kind::Bool => "bool",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::Double => "double",
        Kind::Message => "message",
        Kind::MapString | Kind::MapBytes | Kind::MapMessage => "map entry",
    }
}

pub(crate) fn malformed(
    msg: &'static Message,
    field: Option<&'static Field>,
    problem: Problem,
) -> DecodeError {
    DecodeError::Malformed {
        type_name: msg.name,
        field: field.map(|f| (f.number, f.json)),
        path: String::new(),
        problem,
    }
}

/// Prefixes the JSON path of an error coming out of a nested value.
fn at(mut e: DecodeError, segment: &str) -> DecodeError {
    if let DecodeError::Malformed { path, .. } = &mut e {
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
