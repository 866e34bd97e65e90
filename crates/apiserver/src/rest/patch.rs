//! `patch`: the patch is applied to the current state, and the result goes through the same
//! update path as a PUT (strategy, validation, compare-and-swap, retried on conflicts).
//!
//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902) are here; strategic merge patch is
//! applied as a merge patch until its list semantics land, and server-side apply is not yet
//! supported.

use super::write::{self, guaranteed_update};
use super::{Call, body, present, strategy};
use crate::negotiation::{self, BodyFormat};
use crate::response::{self, Response};
use http::StatusCode;
use kyb_api::{Status, meta};
use serde_json::Value;

pub async fn patch(call: &Call<'_>) -> Result<Response, Status> {
    let name = call.name()?.to_string();
    let (updated, warnings) = patch_object(call, &name, |def, new, current| {
        strategy::prepare_update(def, new, current)
    })
    .await?;
    let response = present::stored_value(call, &updated, StatusCode::OK)?;
    Ok(response::with_warnings(response, &warnings))
}

/// Applies the request's patch to the current object and writes the result after
/// `prepare` (which turns the patched object into what may be stored).
pub async fn patch_object(
    call: &Call<'_>,
    name: &str,
    prepare: impl Fn(&'static kyb_api::ResourceDef, &mut Value, &Value) -> Result<(), Status>,
) -> Result<(Value, Vec<String>), Status> {
    let format = negotiation::body_format(call.header("content-type"))?;
    let patch = match format {
        BodyFormat::MergePatch | BodyFormat::StrategicMergePatch | BodyFormat::JsonPatch => {
            body::parse_bytes(&call.body, format)?
        }
        BodyFormat::ApplyPatch => {
            return Err(Status::new(
                415,
                "UnsupportedMediaType",
                "server-side apply is not supported yet",
            ));
        }
        _ => {
            return Err(Status::unsupported_media_type(
                call.header("content-type").unwrap_or_default(),
            ));
        }
    };
    let def = call.storage();
    let (group, version, kind) = (call.def.group, call.def.version, call.def.kind);
    let mut warnings = Vec::new();
    let mut precondition = None;
    if let Some(rv) = patch
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        precondition = Some(rv.to_string());
    }
    let (updated, _) = guaranteed_update(call, name, precondition.as_deref(), |current| {
        let requested = if std::ptr::eq(call.def, def) {
            current.clone()
        } else {
            crate::convert::convert(def, call.def, current.clone())?
        };
        let patched = match format {
            BodyFormat::JsonPatch => json_patch(requested, &patch)?,
            _ => {
                let mut target = requested;
                merge_patch(&mut target, &patch);
                target
            }
        };
        let (normalized, unknown) = body::normalize(call, patched, group, version, kind)?;
        warnings = unknown;
        let mut new = write::check_identity(call, normalized, name)?;
        new = write::to_storage(call, new)?;
        meta::metadata_mut(&mut new).remove("resourceVersion");
        prepare(def, &mut new, current)?;
        Ok(new)
    })
    .await?;
    Ok((updated, warnings))
}

/// RFC 7386: objects merge recursively, `null` deletes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// RFC 6902: add, remove, replace, move, copy, test.
pub fn json_patch(mut document: Value, patch: &Value) -> Result<Value, Status> {
    let operations = patch
        .as_array()
        .ok_or_else(|| Status::bad_request("a JSON patch must be a list of operations"))?;
    for (i, op) in operations.iter().enumerate() {
        let bad = |why: &str| {
            Status::new(
                422,
                "Invalid",
                format!(
                    "the server rejected our request due to an error in our request: operation {i}: {why}"
                ),
            )
        };
        let kind = op
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| Status::bad_request(format!("operation {i} has no op")))?;
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| Status::bad_request(format!("operation {i} has no path")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| Status::bad_request(format!("operation {i} has no value")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| Status::bad_request(format!("operation {i} has no from")))
        };
        match kind {
            "add" => add(&mut document, path, value()?).map_err(|e| bad(&e))?,
            "remove" => {
                remove(&mut document, path).map_err(|e| bad(&e))?;
            }
            "replace" => {
                remove(&mut document, path).map_err(|e| bad(&e))?;
                add(&mut document, path, value()?).map_err(|e| bad(&e))?;
            }
            "move" => {
                let moved = remove(&mut document, from()?).map_err(|e| bad(&e))?;
                add(&mut document, path, moved).map_err(|e| bad(&e))?;
            }
            "copy" => {
                let copied = document
                    .pointer(from()?)
                    .cloned()
                    .ok_or_else(|| bad("from does not exist"))?;
                add(&mut document, path, copied).map_err(|e| bad(&e))?;
            }
            "test" => {
                if document.pointer(path) != Some(&value()?) {
                    return Err(bad("test failed"));
                }
            }
            other => {
                return Err(Status::bad_request(format!(
                    "unknown JSON patch operation {other:?}"
                )));
            }
        }
    }
    Ok(document)
}

fn split(path: &str) -> Result<(String, String), String> {
    let (parent, last) = path
        .rsplit_once('/')
        .ok_or_else(|| format!("invalid path {path:?}"))?;
    Ok((
        parent.to_string(),
        last.replace("~1", "/").replace("~0", "~"),
    ))
}

fn add(document: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *document = value;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    match document.pointer_mut(&parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
            Ok(())
        }
        Some(Value::Array(list)) => {
            let index = if last == "-" {
                list.len()
            } else {
                last.parse()
                    .map_err(|_| format!("invalid index {last:?}"))?
            };
            if index > list.len() {
                return Err(format!("index {index} out of bounds"));
            }
            list.insert(index, value);
            Ok(())
        }
        _ => Err(format!("the parent of {path:?} does not exist")),
    }
}

fn remove(document: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split(path)?;
    match document.pointer_mut(&parent) {
        Some(Value::Object(map)) => map
            .remove(&last)
            .ok_or_else(|| format!("{path:?} does not exist")),
        Some(Value::Array(list)) => {
            let index: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if index >= list.len() {
                return Err(format!("index {index} out of bounds"));
            }
            Ok(list.remove(index))
        }
        _ => Err(format!("the parent of {path:?} does not exist")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patches() {
        let mut target = json!({"a": {"b": 1, "c": 2}, "list": [1, 2]});
        merge_patch(&mut target, &json!({"a": {"b": null, "d": 3}, "list": [3]}));
        assert_eq!(target, json!({"a": {"c": 2, "d": 3}, "list": [3]}));
    }

    #[test]
    fn json_patches() {
        let doc =
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}]}});
        let patched = json_patch(
            doc,
            &json!([
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "replace", "path": "/spec/containers/0/name", "value": "d"},
                {"op": "add", "path": "/spec/containers/-", "value": {"name": "e"}},
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "remove", "path": "/metadata/labels/a"}
            ]),
        );
        assert_eq!(
            patched.ok(),
            Some(
                json!({"metadata": {"labels": {"b": "2"}}, "spec": {"containers": [{"name": "d"}, {"name": "e"}]}})
            )
        );
        assert!(
            json_patch(
                json!({}),
                &json!([{"op": "test", "path": "/x", "value": 1}])
            )
            .is_err()
        );
        assert!(json_patch(json!({}), &json!([{"op": "remove", "path": "/x/y"}])).is_err());
    }
}
