//! `patch`: JSON patch, JSON merge patch and strategic merge patch (`kyb-patch`) applied to
//! the current object, and server-side apply (`kyb-apply`, with create on apply). Every
//! result goes through the same update path as a PUT (strategy, validation,
//! managedFields, compare-and-swap, retried on conflicts), so a patch that fails leaves the
//! object as it was.

use super::write::{self, guaranteed_update};
use super::{Call, body, managed, present, strategy};
use crate::negotiation::{self, BodyFormat};
use crate::response::{self, Response};
use crate::util;
use http::StatusCode;
use kyb_api::status::Cause;
use kyb_api::{Resource, Status};
use kyb_apimachinery::meta;
use serde_json::Value;

pub async fn patch(call: &Call<'_>) -> Result<Response, Status> {
    let name = call.name()?.to_string();
    if format(call)? == BodyFormat::ApplyPatch {
        return apply(call, &name, None).await;
    }
    let (updated, warnings) = patch_object(call, &name, None, |def, new, current| {
        strategy::prepare_update(def, new, current)
    })
    .await?;
    let response = present::stored_value(call, &updated, StatusCode::OK)?;
    Ok(response::with_warnings(response, &warnings))
}

/// The patch type of the request (415, naming the patch types, for anything else).
pub(crate) fn format(call: &Call<'_>) -> Result<BodyFormat, Status> {
    let strategic = call
        .def
        .strategy
        .definition()
        .is_some_and(kyb_patch::strategic::supported);
    negotiation::patch_format(call.header("content-type"), strategic)
}

pub(crate) fn patch_error(error: kyb_patch::PatchError) -> Status {
    Status::new(error.code(), error.reason(), error.status_message())
}

/// Applies the request's (non-apply) patch to the current object and writes the result
/// after `prepare` (which turns the patched object into what may be stored).
pub async fn patch_object(
    call: &Call<'_>,
    name: &str,
    subresource: Option<&str>,
    prepare: impl Fn(&Resource, &mut Value, &Value) -> Result<(), Status>,
) -> Result<(Value, Vec<String>), Status> {
    let format = format(call)?;
    if format == BodyFormat::ApplyPatch {
        return Err(Status::internal(
            "an apply patch on the non-apply patch path",
        ));
    }
    if call.query.get("force").is_some() {
        return Err(Status::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: may not be specified for non-apply patch".into(),
                field: "force".into(),
            }],
        ));
    }
    // Strategic merge patch needs the merge semantics of a kind's type.
    let definition = call
        .def
        .strategy
        .definition()
        .filter(|d| kyb_patch::strategic::supported(d));
    let definition = definition.unwrap_or_default();
    let patch = body::parse_bytes(&call.body, format)?;
    let mut warnings = body::duplicate_fields(call)?;
    let def = call.storage();
    let mut unknown = Vec::new();
    let (updated, _) = guaranteed_update(call, name, None, |current| {
        let requested = if call.in_storage_version() {
            current.clone()
        } else {
            def.strategy.convert(current.clone(), def, &call.def)?
        };
        let patched = match format {
            BodyFormat::JsonPatch => {
                kyb_patch::json_patch::apply(requested, &patch).map_err(patch_error)?
            }
            BodyFormat::StrategicMergePatch => {
                kyb_patch::strategic::apply(&requested, &patch, definition).map_err(patch_error)?
            }
            _ => kyb_patch::merge_patch::apply(&requested, &patch).map_err(patch_error)?,
        };
        // A resourceVersion in the result is the client's precondition.
        if meta::resource_version(&patched) != meta::resource_version(current) {
            return Err(write::modified(call, name));
        }
        let (normalized, found) = body::normalize(call, patched, body::Kind::Of(&call.def))?;
        unknown = found;
        let mut new = write::check_identity(call, normalized, name)?;
        new = write::to_storage(call, new)?;
        prepare(def, &mut new, current)?;
        managed::record(call, Some(current), &mut new, subresource)?;
        Ok(new)
    })
    .await?;
    warnings.extend(unknown);
    Ok((updated, warnings))
}

/// Engine-side apply of the request's configuration (to the object, or its status), creating
/// the object if it does not exist.
pub async fn apply(
    call: &Call<'_>,
    name: &str,
    subresource: Option<&str>,
) -> Result<Response, Status> {
    let manager = call
        .query
        .value("fieldManager")
        .ok_or_else(|| {
            Status::bad_request(
                "PATCH /apply requires a fieldManager: fieldManager is required for apply requests",
            )
        })?
        .to_string();
    managed::field_manager(call)?;
    let force = call.query.flag("force");
    let mut config = body::parse_bytes(&call.body, BodyFormat::ApplyPatch)?;
    if !config.is_object() {
        return Err(Status::bad_request(
            "the applied configuration must be an object",
        ));
    }
    let expected = call.def.api_version();
    match meta::type_meta(&config) {
        (Some(api_version), Some(kind)) if api_version == expected && kind == call.def.kind => {}
        (Some(api_version), Some(kind)) => {
            return Err(Status::bad_request(format!(
                "the applied configuration is {api_version}, Kind={kind}, not {expected}, Kind={}",
                call.def.kind
            )));
        }
        _ => {
            return Err(Status::bad_request(
                "invalid object type: apiVersion and kind must be set",
            ));
        }
    }
    let config_name = meta::name(&config).map(str::to_string);
    match config_name {
        Some(config_name) if config_name != name => {
            return Err(Status::bad_request(format!(
                "the name of the object ({config_name}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
        None => {
            meta::metadata_mut(&mut config).insert("name".into(), name.into());
        }
    }
    // Unknown fields, as for any body (the normalized copy itself is not used: a partial
    // configuration must stay partial).
    let (_, warnings) = body::normalize(call, config.clone(), body::Kind::Of(&call.def))?;
    let config = write::to_storage(call, config)?;
    let def = call.storage();
    // Kinds without a type: maps granular, lists atomic.
    let definition = def.strategy.definition().unwrap_or_default();
    let api_version = call.def.api_version();
    let now = util::now();
    let writer = kyb_apply::Writer {
        manager: &manager,
        api_version: &api_version,
        subresource,
        time: &now,
    };
    let reset = managed::reset_fields(def, subresource);
    // A resourceVersion in the configuration is a precondition on the live object.
    let precondition = meta::resource_version(&config).map(str::to_string);
    let config = {
        let mut config = config;
        meta::metadata_mut(&mut config).remove("resourceVersion");
        config
    };
    let applied = |live: Option<&Value>| {
        kyb_apply::apply(definition, live, &config, &writer, force, reset).map_err(apply_error)
    };
    for _ in 0..16 {
        let updated = guaranteed_update(call, name, None, |current| {
            if precondition
                .as_deref()
                .is_some_and(|rv| Some(rv) != meta::resource_version(current))
            {
                return Err(write::modified(call, name));
            }
            let merged = applied(Some(current))?;
            let (normalized, _) = body::normalize(call, merged, body::Kind::Of(def))?;
            let mut new = write::check_identity(call, normalized, name)?;
            meta::metadata_mut(&mut new).remove("resourceVersion");
            match subresource {
                Some("status") => new = strategy::prepare_status_update(def, &new, current)?,
                _ => strategy::prepare_update(def, &mut new, current)?,
            }
            Ok(new)
        })
        .await;
        match updated {
            Ok((updated, _)) => {
                let response = present::stored_value(call, &updated, StatusCode::OK)?;
                return Ok(response::with_warnings(response, &warnings));
            }
            Err(status)
                if status.code != 404 || subresource.is_some() || precondition.is_some() =>
            {
                return Err(status);
            }
            Err(_) => {}
        }
        // Create on apply.
        let created = applied(None)?;
        let (created, _) = body::normalize(call, created, body::Kind::Of(def))?;
        match write::create_object(call, created, false).await {
            Ok(stored) => {
                let response = present::stored_value(call, &stored, StatusCode::CREATED)?;
                return Ok(response::with_warnings(response, &warnings));
            }
            Err(status) if status.code == 409 && status.reason == "AlreadyExists" => continue,
            Err(status) => return Err(status),
        }
    }
    Err(write::too_many_conflicts())
}

/// The Status of a failed apply: 409 with one cause per conflicting field.
fn apply_error(error: kyb_apply::ApplyError) -> Status {
    match error {
        kyb_apply::ApplyError::Conflicts(conflicts) => {
            let mut status = Status::new(409, "Conflict", kyb_apply::conflict_message(&conflicts));
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "reason": kyb_apply::Conflict::CAUSE_REASON,
                        "message": c.message(),
                        "field": c.field,
                    })
                })
                .collect();
            status.details = Some(serde_json::json!({"causes": causes}));
            status
        }
        other => Status::new(other.code(), other.reason(), other.message()),
    }
}
