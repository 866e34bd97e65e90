//! Request bodies: from bytes (JSON, YAML or protobuf) to a normalized object of the
//! expected kind, with `fieldValidation` applied to unknown fields.

use super::Call;
use crate::kinds;
use crate::negotiation::{self, BodyFormat};
use kyb_api::registry::split_api_version;
use kyb_api::{Resource, Status};
use serde_json::Value;

/// What a body is decoded as.
#[derive(Clone, Copy)]
pub enum Kind<'a> {
    /// A registry entry's kind, through its strategy.
    Of(&'a Resource),
    /// A built-in kind by group, version and kind, through its type: the bodies of
    /// subresources (Scale, Binding, Eviction, TokenRequest).
    Builtin(&'a str, &'a str, &'a str),
}

impl Kind<'_> {
    fn gvk(&self) -> (&str, &str, &str) {
        match self {
            Kind::Of(def) => (&def.group, &def.version, &def.kind),
            Kind::Builtin(group, version, kind) => (group, version, kind),
        }
    }
}

/// How unknown fields are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

pub fn field_validation(call: &Call<'_>) -> Result<FieldValidation, Status> {
    super::options::check_field_validation(call)?;
    Ok(match call.query.value("fieldValidation") {
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        _ => FieldValidation::Warn,
    })
}

/// The body parsed to JSON, whatever its format (patches excluded).
pub fn parse(call: &Call<'_>) -> Result<Value, Status> {
    let content_type = call.header("content-type");
    parse_bytes(&call.body, negotiation::object_body_format(content_type)?)
}

pub fn parse_bytes(body: &[u8], format: BodyFormat) -> Result<Value, Status> {
    if body.is_empty() {
        return Err(Status::bad_request("the request body is empty"));
    }
    match format {
        BodyFormat::Json
        | BodyFormat::MergePatch
        | BodyFormat::JsonPatch
        | BodyFormat::StrategicMergePatch => serde_json::from_slice(body).map_err(|e| {
            Status::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
        BodyFormat::Yaml | BodyFormat::ApplyPatch => serde_saphyr::from_slice::<Value>(body)
            .map_err(|e| Status::bad_request(format!("error converting YAML to JSON: {e}"))),
        BodyFormat::Protobuf => crate::protobuf::decode(body),
    }
}

/// An object decoded from the body as `group/version, Kind=kind`: the type metadata checked
/// against what the URL implies, unknown fields handled per `fieldValidation` (warnings
/// are returned).
pub fn decode_object(call: &Call<'_>, kind: Kind<'_>) -> Result<(Value, Vec<String>), Status> {
    let value = parse(call)?;
    let duplicates = duplicate_fields(call)?;
    let (object, mut warnings) = normalize(call, value, kind)?;
    warnings.extend(duplicates);
    Ok((object, warnings))
}

/// A request object whose `status` the server fills in (reviews, TokenRequest): decoded
/// like [`decode_object`], with whatever status the client sent dropped first.
pub fn decode_request(call: &Call<'_>, kind: Kind<'_>) -> Result<(Value, Vec<String>), Status> {
    let mut value = parse(call)?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("status");
    }
    let duplicates = duplicate_fields(call)?;
    let (object, mut warnings) = normalize(call, value, kind)?;
    warnings.extend(duplicates);
    Ok((object, warnings))
}

/// Duplicate fields in a JSON body: warnings, or 400 with `fieldValidation=Strict`.
pub fn duplicate_fields(call: &Call<'_>) -> Result<Vec<String>, Status> {
    let validation = field_validation(call)?;
    let json = matches!(
        negotiation::body_format(call.header("content-type")),
        Ok(BodyFormat::Json | BodyFormat::MergePatch | BodyFormat::StrategicMergePatch)
    );
    if validation == FieldValidation::Ignore || !json {
        return Ok(Vec::new());
    }
    let messages: Vec<String> = crate::duplicates::find(&call.body)
        .iter()
        .map(|path| format!("duplicate field {path:?}"))
        .collect();
    if validation == FieldValidation::Strict && !messages.is_empty() {
        return Err(Status::bad_request(format!(
            "strict decoding error: {}",
            messages.join(", ")
        )));
    }
    Ok(messages)
}

/// A body value decoded as `as_kind`: its `apiVersion` and `kind` checked, decoded through
/// the kind's type, unknown fields handled per `fieldValidation` (warnings are returned).
pub fn normalize(
    call: &Call<'_>,
    value: Value,
    as_kind: Kind<'_>,
) -> Result<(Value, Vec<String>), Status> {
    let (group, version, kind) = as_kind.gvk();
    if !value.is_object() {
        return Err(Status::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let expected = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    if let Some(api_version) = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        let (body_group, _) = split_api_version(api_version);
        if api_version != expected {
            let message = if body_group == group {
                format!(
                    "the API version in the data ({api_version}) does not match the expected API version ({expected})"
                )
            } else {
                format!(
                    "the object provided is unrecognized: apiVersion {api_version:?} is not {expected:?}"
                )
            };
            return Err(Status::bad_request(message));
        }
    }
    if let Some(body_kind) = value
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        && body_kind != kind
    {
        return Err(Status::bad_request(format!(
            "the kind in the data ({body_kind}) does not match the expected kind ({kind})"
        )));
    }
    let decoded = match as_kind {
        Kind::Of(def) => Some(def.strategy.normalize(value)),
        Kind::Builtin(..) => kinds::normalize(group, version, kind, value),
    };
    let normalized = match decoded {
        Some(result) => {
            result.map_err(|e| Status::bad_request(format!("error decoding {kind}: {e}")))?
        }
        None => {
            return Err(Status::internal(format!(
                "no type for {expected}, Kind={kind}"
            )));
        }
    };
    let mut warnings = Vec::new();
    if !normalized.unknown.is_empty() {
        let messages: Vec<String> = normalized
            .unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        match field_validation(call)? {
            FieldValidation::Strict => {
                return Err(Status::bad_request(format!(
                    "strict decoding error: {}",
                    messages.join(", ")
                )));
            }
            FieldValidation::Warn => warnings = messages,
            FieldValidation::Ignore => {}
        }
    }
    Ok((normalized.object, warnings))
}
