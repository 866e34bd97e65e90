//! Kubernetes' protobuf envelope: the magic `k8s\0`, then a `runtime.Unknown` message
//! holding the object's apiVersion and kind (typeMeta, field 1), its protobuf bytes (raw,
//! field 2), contentEncoding (3) and contentType (4).

use serde_json::{Map, Value};

use crate::decode::{self, malformed};
use crate::error::{DecodeError, Problem};
use crate::schema::{self, Message};
use crate::schema_table::UNKNOWN;
use crate::wire::{LEN, Reader, put_bytes};

/// The four bytes every Kubernetes protobuf body starts with.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

/// The parts of a `runtime.Unknown`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Unknown<'a> {
    pub api_version: String,
    pub kind: String,
    pub raw: &'a [u8],
    pub content_encoding: String,
    pub content_type: String,
}

/// Reads the envelope (after the magic).
pub(crate) fn parse(data: &[u8]) -> Result<Unknown<'_>, DecodeError> {
    let unknown = schema::message(UNKNOWN);
    let mut out = Unknown::default();
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wire_type) = r.tag().map_err(|e| malformed(unknown, None, e.into()))?;
        let Some(field) = unknown.field(number) else {
            r.skip(wire_type)
                .map_err(|e| malformed(unknown, None, e.into()))?;
            continue;
        };
        let bytes = len_field(unknown, number, wire_type, &mut r)?;
        match number {
            1 => {
                let type_meta = schema::message(field.message);
                let mut t = Reader::new(bytes);
                while !t.is_empty() {
                    let (n, w) = t.tag().map_err(|e| malformed(type_meta, None, e.into()))?;
                    match n {
                        1 => out.api_version = text(len_field(type_meta, n, w, &mut t)?),
                        2 => out.kind = text(len_field(type_meta, n, w, &mut t)?),
                        _ => t
                            .skip(w)
                            .map_err(|e| malformed(type_meta, None, e.into()))?,
                    }
                }
            }
            2 => out.raw = bytes,
            3 => out.content_encoding = text(bytes),
            4 => out.content_type = text(bytes),
            _ => {}
        }
    }
    Ok(out)
}

fn len_field<'a>(
    msg: &'static Message,
    number: u32,
    wire_type: u8,
    r: &mut Reader<'a>,
) -> Result<&'a [u8], DecodeError> {
    let field = msg.field(number);
    if wire_type != LEN {
        let expected = if number == 2 && msg.name.ends_with("Unknown") {
            "bytes"
        } else {
            "string"
        };
        return Err(malformed(
            msg,
            field,
            Problem::WrongWireType {
                found: wire_type,
                expected,
            },
        ));
    }
    r.bytes().map_err(|e| malformed(msg, field, e.into()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Decodes an enveloped object into its JSON form, with apiVersion and kind set.
pub(crate) fn decode(body: &[u8], depth: usize) -> Result<Map<String, Value>, DecodeError> {
    let data = body.strip_prefix(MAGIC).ok_or(DecodeError::NotProtobuf)?;
    let unknown = parse(data)?;
    let plain = unknown.content_type.is_empty() || unknown.content_type == crate::CONTENT_TYPE;
    if !unknown.content_encoding.is_empty() || !plain {
        return Err(DecodeError::UnsupportedEncoding {
            content_encoding: unknown.content_encoding,
            content_type: unknown.content_type,
        });
    }
    decode::typed_object(&unknown.api_version, &unknown.kind, unknown.raw, depth)
}

/// Wraps an object's protobuf bytes in the envelope, as Kubernetes writes it.
pub(crate) fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(MAGIC.len() + type_meta.len() + raw.len() + 16);
    out.extend_from_slice(MAGIC);
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn wrap_and_parse_agree() {
        let body = wrap("apps/v1", "Deployment", &[1, 2, 3]);
        assert!(body.starts_with(MAGIC));
        let u = parse(&body[MAGIC.len()..]).unwrap();
        assert_eq!(
            u,
            Unknown {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                raw: &[1, 2, 3],
                ..Unknown::default()
            }
        );
    }

    #[test]
    fn refuses_bodies_without_the_magic() {
        assert_eq!(
            decode(b"{\"kind\":\"Pod\"}", 0),
            Err(DecodeError::NotProtobuf)
        );
        assert_eq!(decode(b"k8s", 0), Err(DecodeError::NotProtobuf));
    }

    #[test]
    fn refuses_compressed_objects() {
        let mut body = wrap("v1", "Pod", &[]);
        body.truncate(body.len() - 2);
        put_bytes(&mut body, 4, b"application/json");
        assert!(matches!(
            decode(&body, 0),
            Err(DecodeError::UnsupportedEncoding { .. })
        ));
    }

    #[test]
    fn names_unknown_kinds() {
        let body = wrap("example.com/v1", "Widget", &[]);
        assert_eq!(
            decode(&body, 0),
            Err(DecodeError::UnknownKind {
                api_version: "example.com/v1".into(),
                kind: "Widget".into()
            })
        );
    }
}
