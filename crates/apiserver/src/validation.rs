//! The per-kind rules of built-in kinds, from `kyb-validation`: defaults, create- and
//! update-time preparation, and validation. Failures become `422 Invalid` with one cause per
//! field, worded as Kubernetes words them.

use kyb_api::{ResourceDef, Status};
use kyb_apimachinery::meta;
use kyb_validation::FieldError;
use serde_json::{Value, json};

pub fn default_object(def: &ResourceDef, object: &mut Value) {
    kyb_validation::default_object(def.group, def.version, def.kind, object);
}

pub fn prepare_for_create(def: &ResourceDef, object: &mut Value) {
    kyb_validation::prepare_for_create(def.group, def.version, def.kind, object);
}

pub fn prepare_for_update(def: &ResourceDef, new: &mut Value, old: &Value) {
    if def.is_untyped()
        && def.has_subresource(kyb_api::Subresource::Status)
        && let Some(fields) = new.as_object_mut()
    {
        // As for custom resources with a status subresource: status only via /status.
        match old.get("status") {
            Some(status) => fields.insert("status".into(), status.clone()),
            None => fields.remove("status"),
        };
    }
    kyb_validation::prepare_for_update(def.group, def.version, def.kind, new, old);
}

pub fn prepare_for_status_update(def: &ResourceDef, new: &mut Value, old: &Value) {
    kyb_validation::prepare_for_status_update(def.group, def.version, def.kind, new, old);
}

/// `422 Invalid` for a list of field errors (Ok when there are none).
pub fn check(group: &str, kind: &str, object: &Value, errors: &[FieldError]) -> Result<(), Status> {
    if errors.is_empty() {
        return Ok(());
    }
    let name = meta::name(object).unwrap_or_default();
    let mut status = Status::new(
        422,
        "Invalid",
        kyb_validation::invalid_message(group, kind, name, errors),
    )
    .with_details(group, kind, name);
    if let Some(Value::Object(details)) = &mut status.details {
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.kind.reason(), "message": e.body(), "field": e.field}))
            .collect();
        details.insert("causes".into(), Value::Array(causes));
    }
    Err(status)
}

pub fn validate_create(def: &ResourceDef, object: &Value) -> Result<(), Status> {
    let mut errors =
        kyb_validation::validate_create(def.group, def.version, def.kind, def.namespaced, object);
    errors.extend(cel_errors(def, object));
    check(def.group, def.kind, object, &errors)
}

pub fn validate_update(def: &ResourceDef, new: &Value, old: &Value) -> Result<(), Status> {
    let mut errors =
        kyb_validation::validate_update(def.group, def.version, def.kind, def.namespaced, new, old);
    errors.extend(cel_errors(def, new));
    check(def.group, def.kind, new, &errors)
}

/// CEL expressions that do not compile, in admission policies and webhook match
/// conditions (`kyb-validation` checks the rest of these kinds).
fn cel_errors(def: &ResourceDef, object: &Value) -> Vec<FieldError> {
    let found = match (def.group, def.kind) {
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            kyb_cel::check_policy(&object["spec"])
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => object["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .filter(|(_, hook)| hook.get("matchConditions").is_some())
            .flat_map(|(i, hook)| {
                kyb_cel::check_match_conditions(
                    &hook["matchConditions"],
                    &format!("webhooks[{i}].matchConditions"),
                )
            })
            .collect(),
        _ => return Vec::new(),
    };
    found
        .into_iter()
        .map(|(field, detail)| FieldError {
            kind: kyb_validation::ErrorKind::Invalid,
            value: value_at(object, &field).cloned(),
            field,
            detail,
        })
        .collect()
}

/// The value at a field path such as `spec.validations[0].expression`.
fn value_at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut value = object;
    for part in path.split('.') {
        let (name, indexes) = part.split_once('[').unwrap_or((part, ""));
        value = value.get(name)?;
        for index in indexes.split('[').filter(|i| !i.is_empty()) {
            let index: usize = index.trim_end_matches(']').parse().ok()?;
            value = value.get(index)?;
        }
    }
    Some(value)
}

pub fn validate_status_update(def: &ResourceDef, new: &Value, old: &Value) -> Result<(), Status> {
    let errors = kyb_validation::validate_status_update(
        def.group,
        def.version,
        def.kind,
        def.namespaced,
        new,
        old,
    );
    check(def.group, def.kind, new, &errors)
}

pub fn validate_namespace_finalize(new: &Value, old: &Value) -> Result<(), Status> {
    check(
        "",
        "Namespace",
        new,
        &kyb_validation::validate_namespace_finalize(new, old),
    )
}
