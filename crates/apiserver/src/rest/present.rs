//! Responses in the representation the client negotiated — the object itself (converted to
//! the requested version), a Table, or metadata only — serialized as it asked: JSON (the
//! cached objects' bytes as they are), YAML, or protobuf (each cached object's encoding
//! made once and kept beside its JSON; lists assembled from those pieces).

use super::Call;
use crate::cache::object::CachedObject;
use crate::negotiation::{Format, Output};
use crate::response::{self, Response};
use http::StatusCode;
use kyb_api::{Resource, Status};
use serde_json::{Value, json};
use std::sync::Arc;

/// The object's JSON in the requested version.
pub fn object_bytes(call: &Call<'_>, object: &CachedObject) -> Result<bytes::Bytes, Status> {
    if call.in_storage_version() {
        return Ok(object.json.clone());
    }
    let value = object.value().map_err(Status::internal)?;
    let converted = from_storage(call, value)?;
    serde_json::to_vec(&converted)
        .map(Into::into)
        .map_err(|e| Status::internal(e.to_string()))
}

/// An object in the storage version converted to the requested one.
fn from_storage(call: &Call<'_>, value: Value) -> Result<Value, Status> {
    let storage = call.storage();
    storage.strategy.convert(value, storage, &call.def)
}

fn object_value(call: &Call<'_>, object: &CachedObject) -> Result<Value, Status> {
    let value = object.value().map_err(Status::internal)?;
    if call.in_storage_version() {
        Ok(value)
    } else {
        from_storage(call, value)
    }
}

/// One object from the cache.
pub fn cached(
    call: &Call<'_>,
    object: &CachedObject,
    code: StatusCode,
) -> Result<Response, Status> {
    match (call.output, call.format) {
        (Output::Json, Format::Json) => Ok(response::json_bytes(code, object_bytes(call, object)?)),
        (Output::Json, Format::Protobuf) if call.in_storage_version() => {
            let raw = object.protobuf().map_err(Status::internal)?;
            let body = kyb_protobuf::envelope(&call.def.api_version(), &call.def.kind, &raw);
            Ok(response::bytes(code, Format::Protobuf.media_type(), body))
        }
        _ => {
            let value = object_value(call, object)?;
            Ok(value_response(call, &value, code))
        }
    }
}

/// One object (in the storage version, as written).
pub fn stored_value(call: &Call<'_>, value: &Value, code: StatusCode) -> Result<Response, Status> {
    if call.in_storage_version() {
        return Ok(value_response(call, value, code));
    }
    let converted = from_storage(call, value.clone())?;
    Ok(value_response(call, &converted, code))
}

/// One object already in the requested version, in the negotiated representation and
/// format. A `Status` (the answer of a delete, binding or eviction) is never transformed.
pub fn value_response(call: &Call<'_>, value: &Value, code: StatusCode) -> Response {
    let is_status = value.get("kind").and_then(Value::as_str) == Some("Status");
    match call.output {
        _ if is_status => response::encoded(code, call.format, value),
        Output::Json | Output::Discovery(_) => response::encoded(code, call.format, value),
        Output::Table(version) => {
            let revision = value.pointer("/metadata/resourceVersion").cloned();
            let table = table_for(
                &call.def,
                version,
                std::iter::once(value.clone()),
                revision,
                None,
            );
            response::encoded(code, call.format, &table)
        }
        Output::PartialObjectMetadata(version) | Output::PartialObjectMetadataList(version) => {
            response::encoded(code, call.format, &partial(value, version))
        }
    }
}

/// A list of cached objects.
pub fn list(
    call: &Call<'_>,
    items: &[Arc<CachedObject>],
    revision: u64,
    next: Option<String>,
) -> Result<Response, Status> {
    let mut list_meta = json!({"resourceVersion": revision.to_string()});
    if let Some(token) = &next {
        list_meta["continue"] = token.clone().into();
    }
    match (call.output, call.format) {
        (Output::Json | Output::Discovery(_), Format::Json) => {
            // The cached objects' bytes go out as they are, between the list's own pieces:
            // no copy into one large buffer.
            let mut pieces = std::collections::VecDeque::with_capacity(2 * items.len() + 2);
            pieces.push_back(bytes::Bytes::from(format!(
                "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
                call.def.list_kind(),
                call.def.api_version(),
                list_meta
            )));
            for (i, object) in items.iter().enumerate() {
                if i > 0 {
                    pieces.push_back(bytes::Bytes::from_static(b","));
                }
                pieces.push_back(object_bytes(call, object)?);
            }
            pieces.push_back(bytes::Bytes::from_static(b"]}"));
            Ok(response::json_pieces(StatusCode::OK, pieces))
        }
        (Output::Json | Output::Discovery(_), Format::Protobuf) => {
            // Likewise each object's protobuf encoding, made once and kept in the cache.
            let raws = items
                .iter()
                .map(|o| object_protobuf(call, o))
                .collect::<Result<Vec<_>, _>>()?;
            protobuf_list(
                &call.def.api_version(),
                &call.def.list_kind(),
                &list_meta,
                raws,
            )
        }
        (Output::Json | Output::Discovery(_), Format::Yaml) => {
            let values = items
                .iter()
                .map(|o| object_value(call, o))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(response::encoded(
                StatusCode::OK,
                call.format,
                &json!({
                    "kind": call.def.list_kind(),
                    "apiVersion": call.def.api_version(),
                    "metadata": list_meta,
                    "items": values,
                }),
            ))
        }
        (Output::Table(version), _) => {
            let values = items
                .iter()
                .map(|o| object_value(call, o))
                .collect::<Result<Vec<_>, _>>()?;
            let table = table_for(
                &call.def,
                version,
                values.into_iter(),
                Some(list_meta["resourceVersion"].clone()),
                next,
            );
            Ok(response::encoded(StatusCode::OK, call.format, &table))
        }
        (
            Output::PartialObjectMetadata(version) | Output::PartialObjectMetadataList(version),
            _,
        ) => {
            let items = items
                .iter()
                .map(|o| object_value(call, o).map(|v| partial(&v, version)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(response::encoded(
                StatusCode::OK,
                call.format,
                &json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": format!("meta.k8s.io/{version}"),
                    "metadata": list_meta,
                    "items": items,
                }),
            ))
        }
    }
}

/// An object's protobuf encoding (no envelope) in the requested version: the cached one
/// in the storage version, else encoded from the converted object.
fn object_protobuf(call: &Call<'_>, object: &CachedObject) -> Result<bytes::Bytes, Status> {
    if call.in_storage_version() {
        return object.protobuf().map_err(Status::internal);
    }
    let value = object_value(call, object)?;
    kyb_protobuf::encode_object(&call.def.api_version(), &call.def.kind, &value)
        .map(Into::into)
        .map_err(|e| Status::internal(format!("encoding as protobuf: {e}")))
}

/// An enveloped protobuf list body from its items' encodings, sent as pieces.
fn protobuf_list(
    api_version: &str,
    list_kind: &str,
    list_meta: &Value,
    raws: Vec<bytes::Bytes>,
) -> Result<Response, Status> {
    let mut framing = kyb_protobuf::ListFraming::new(
        api_version,
        list_kind,
        list_meta,
        raws.iter().map(bytes::Bytes::len),
    )
    .map_err(|e| Status::internal(format!("encoding as protobuf: {e}")))?;
    let mut pieces = std::collections::VecDeque::with_capacity(2 * raws.len() + 2);
    pieces.push_back(bytes::Bytes::from(std::mem::take(&mut framing.head)));
    for raw in raws {
        pieces.push_back(bytes::Bytes::from(framing.item_header(raw.len())));
        pieces.push_back(raw);
    }
    pieces.push_back(bytes::Bytes::from(std::mem::take(&mut framing.tail)));
    Ok(response::pieces(
        StatusCode::OK,
        Format::Protobuf.media_type(),
        pieces,
    ))
}

/// A list of objects computed for the request, never stored (`componentstatuses`, the
/// metrics API): a `list_kind` list without a resource version, a Table, or partial
/// metadata, as negotiated.
pub fn computed_list(call: &Call<'_>, list_kind: &str, items: Vec<Value>) -> Response {
    match call.output {
        Output::Table(version) => response::encoded(
            StatusCode::OK,
            call.format,
            &table_for(&call.def, version, items.into_iter(), None, None),
        ),
        Output::PartialObjectMetadata(version) | Output::PartialObjectMetadataList(version) => {
            response::encoded(
                StatusCode::OK,
                call.format,
                &json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": format!("meta.k8s.io/{version}"),
                    "metadata": {},
                    "items": items.iter().map(|s| partial(s, version)).collect::<Vec<_>>(),
                }),
            )
        }
        _ => response::encoded(
            StatusCode::OK,
            call.format,
            &json!({
                "kind": list_kind,
                "apiVersion": call.def.api_version(),
                "metadata": {},
                "items": items,
            }),
        ),
    }
}

/// `PartialObjectMetadata` of an object.
pub fn partial(value: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": value.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A `meta.k8s.io` Table of objects of one resource.
pub fn table_for(
    def: &Resource,
    version: &str,
    objects: impl Iterator<Item = Value>,
    revision: Option<Value>,
    next: Option<String>,
) -> Value {
    let now = std::time::SystemTime::now();
    let rows: Vec<Value> = objects
        .map(|object| {
            json!({
                "cells": def.strategy.table_cells(&object, now),
                "object": partial(&object, version),
            })
        })
        .collect();
    let mut metadata = json!({});
    if let Some(revision) = revision {
        metadata["resourceVersion"] = revision;
    }
    if let Some(next) = next {
        metadata["continue"] = next.into();
    }
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "columnDefinitions": def.strategy.table_columns(),
        "rows": rows,
    })
}
