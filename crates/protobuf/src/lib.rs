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
    let object = encode(object)?;
    let mut extension = Vec::with_capacity(object.len() + 8);
    wire::put_bytes(&mut extension, 1, &object);
    let mut event = Vec::with_capacity(extension.len() + event_type.len() + 16);
    wire::put_bytes(&mut event, 1, event_type.as_bytes());
    wire::put_bytes(&mut event, 2, &extension);
    let len = u32::try_from(event.len()).map_err(|_| EncodeError::TooLarge)?;
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// Encodes an object's JSON form as the raw protobuf of the given type (no envelope).
pub fn encode_object(api_version: &str, kind: &str, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let index = schema::lookup_kind(api_version, kind).ok_or_else(|| EncodeError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })?;
    encode::object(index, value, 0)
}
