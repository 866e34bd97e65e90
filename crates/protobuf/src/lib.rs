//! Kubernetes protobuf bodies ↔ their JSON form.
//!
//! kubectl's generator commands (`kubectl create deployment|secret|...`, `create token`,
//! `auth can-i`) send `application/vnd.kubernetes.protobuf` bodies: the magic `k8s\0`,
//! then a `runtime.Unknown` envelope whose `raw` field is the object's protobuf encoding.
//! [`decode`] turns such a body into the JSON Kubernetes' Go JSON encoder would write for
//! the same object (the form k8s-openapi's serde reads and writes), and [`encode`] does
//! the reverse for answering protobuf clients.
//!
//! Both walk the wire format with one generated schema table (`schema_table.rs`, made by
//! `gen/gen_schema.py`) covering every type reachable from the served kinds, and apply
//! Kubernetes' JSON conventions: times as RFC 3339 strings, quantities as strings,
//! IntOrString as a number or string, `[]byte` as base64, RawExtension as embedded JSON.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let json = serde_json::json!({
//!     "apiVersion": "v1",
//!     "kind": "ConfigMap",
//!     "metadata": {"name": "settings"},
//!     "data": {"mode": "fast"},
//! });
//! let body = kyb_protobuf::encode(&json)?;
//! assert!(body.starts_with(b"k8s\0"));
//! assert_eq!(kyb_protobuf::decode(&body)?, json);
//! # Ok(())
//! # }
//! ```

mod decode;
mod encode;
mod envelope;
mod error;
mod schema;
#[rustfmt::skip]
mod schema_table;
mod wire;

#[cfg(test)]
mod round_trip;

use serde_json::Value;

pub use error::{DecodeError, EncodeError, Problem};

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Decodes an enveloped body (`k8s\0` + `runtime.Unknown`). The result is the object's
/// JSON form with "apiVersion" and "kind" set from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    envelope::decode(body, 0).map(Value::Object)
}

/// Decodes the raw protobuf of one object of the given type (no envelope). The result
/// has "apiVersion" and "kind" set from the arguments.
pub fn decode_object(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, DecodeError> {
    decode::typed_object(api_version, kind, raw, 0).map(Value::Object)
}

/// Whether a type is known (apiVersion like "v1" or "apps/v1", kind). The meta/v1 kinds
/// (Status, DeleteOptions, CreateOptions, ...) are known under every served apiVersion
/// and under "meta.k8s.io/v1".
pub fn is_known(api_version: &str, kind: &str) -> bool {
    schema::lookup_kind(api_version, kind).is_some()
}

/// Encodes an object's JSON form, which must carry "apiVersion" and "kind", as an
/// enveloped protobuf body.
pub fn encode(value: &Value) -> Result<Vec<u8>, EncodeError> {
    let type_of = |key: &str| value.get(key).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (type_of("apiVersion"), type_of("kind")) else {
        return Err(EncodeError::MissingTypeMeta);
    };
    let raw = encode_object(api_version, kind, value)?;
    Ok(envelope::wrap(api_version, kind, &raw))
}

/// Encodes one event of a protobuf watch stream
/// (`application/vnd.kubernetes.protobuf;stream=watch`): a 4-byte big-endian length, then
/// a `metav1.WatchEvent` without envelope whose `object` holds the enveloped object.
/// `event_type` is "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR" (with a Status).
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    watch_frame(event_type, &encode(object)?)
}

/// One frame of a protobuf watch stream around an object already enveloped (see
/// [`encode_watch_event`]).
pub fn watch_frame(event_type: &str, enveloped: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let mut extension = Vec::with_capacity(enveloped.len() + 8);
    wire::put_bytes(&mut extension, 1, enveloped);
    let mut event = Vec::with_capacity(extension.len() + event_type.len() + 16);
    wire::put_bytes(&mut event, 1, event_type.as_bytes());
    wire::put_bytes(&mut event, 2, &extension);
    let len = u32::try_from(event.len()).map_err(|_| EncodeError::TooLarge)?;
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// Wraps the raw protobuf of an object (from [`encode_object`]) in the envelope
/// (`k8s\0` + `runtime.Unknown`), as a whole protobuf body.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    envelope::wrap(api_version, kind, raw)
}

/// The bytes around the items of an enveloped list body whose items are encoded
/// separately (each item's raw protobuf, no envelope): send `head`, then for each item
/// [`ListFraming::item_header`] and the item's bytes, then `tail`. Lists are assembled
/// from objects encoded once this way, never copied into one message.
#[derive(Debug)]
pub struct ListFraming {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    items_field: u32,
}

impl ListFraming {
    /// The framing of a list of `kind` (a list kind, such as "PodList") with the list
    /// metadata `metadata` (`ListMeta` as JSON) and items of the given raw lengths.
    pub fn new(
        api_version: &str,
        kind: &str,
        metadata: &Value,
        item_lengths: impl IntoIterator<Item = usize>,
    ) -> Result<Self, EncodeError> {
        let index =
            schema::lookup_kind(api_version, kind).ok_or_else(|| EncodeError::UnknownKind {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })?;
        let message = schema::message(index);
        let items_field = message
            .fields
            .iter()
            .find(|f| f.json == "items")
            .map(|f| f.number)
            .ok_or_else(|| EncodeError::UnknownKind {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })?;
        let mut only_metadata = serde_json::Map::new();
        only_metadata.insert("metadata".into(), metadata.clone());
        let list_meta = encode::object(index, &Value::Object(only_metadata), 0)?;
        let mut raw_len = list_meta.len() as u64;
        for len in item_lengths {
            raw_len += (wire::tag_len(items_field) + wire::varint_len(len as u64) + len) as u64;
        }
        let mut head = Vec::with_capacity(64 + list_meta.len());
        head.extend_from_slice(envelope::MAGIC);
        let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
        wire::put_bytes(&mut type_meta, 1, api_version.as_bytes());
        wire::put_bytes(&mut type_meta, 2, kind.as_bytes());
        wire::put_bytes(&mut head, 1, &type_meta);
        wire::put_tag(&mut head, 2, wire::LEN);
        wire::put_varint(&mut head, raw_len);
        head.extend_from_slice(&list_meta);
        let mut tail = Vec::with_capacity(4);
        wire::put_bytes(&mut tail, 3, b"");
        wire::put_bytes(&mut tail, 4, b"");
        Ok(Self {
            head,
            tail,
            items_field,
        })
    }

    /// What precedes an item of `len` raw bytes.
    pub fn item_header(&self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(8);
        wire::put_tag(&mut out, self.items_field, wire::LEN);
        wire::put_varint(&mut out, len as u64);
        out
    }
}

/// Encodes an object's JSON form as the raw protobuf of the given type (no envelope).
pub fn encode_object(api_version: &str, kind: &str, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let index = schema::lookup_kind(api_version, kind).ok_or_else(|| EncodeError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    encode::object(index, value, 0)
}
