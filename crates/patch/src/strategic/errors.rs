//! The errors of strategic merge patch, with Kubernetes' texts and classification: four
//! malformed-directive errors are `400`, a list of lists is `422`, and everything else
//! Kubernetes does not classify and answers as `500` with its text.

use crate::PatchError;
use kyb_apimachinery::gofmt;
use serde_json::{Map, Value};

pub(super) fn bad_json_doc() -> PatchError {
    PatchError::BadRequest("invalid JSON document".into())
}

pub(super) fn bad_primitive_list() -> PatchError {
    PatchError::BadRequest("invalid patch format of primitive list".into())
}

pub(super) fn bad_retain_keys() -> PatchError {
    PatchError::BadRequest("invalid patch format of retainKeys".into())
}

pub(super) fn bad_set_element_order() -> PatchError {
    PatchError::BadRequest("invalid patch format of setElementOrder list".into())
}

/// The patch body decodes to something other than an object.
pub(super) fn not_an_object(patch: &Value) -> PatchError {
    let kind = match patch {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null | Value::Object(_) => "object",
    };
    PatchError::BadRequest(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

pub(super) fn list_of_lists() -> PatchError {
    PatchError::Invalid("lists of lists are not supported".into())
}

pub(super) fn no_merge_key(item: &Value, key: &str) -> PatchError {
    PatchError::Unknown(format!(
        "map: {} does not contain declared merge key: {key}",
        gofmt::v(item)
    ))
}

/// `expected` is Go's name of the expected type (`[]interface {}`).
pub(super) fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    PatchError::Unknown(format!(
        "expected a {expected}, but received a {}",
        // Go prints `%s` of `reflect.TypeOf(actual)`, the nil `reflect.Type` for null.
        gofmt::type_name(actual).unwrap_or(gofmt::NIL_S)
    ))
}

pub(super) const LIST: &str = gofmt::SLICE_TYPE;
pub(super) const MAP: &str = gofmt::MAP_TYPE;

pub(super) fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
    PatchError::Unknown(format!(
        "unknown patch type: {} in map: {}",
        gofmt::s(directive),
        gofmt::v(&Value::Object(map.clone()))
    ))
}

pub(super) fn merge_directive_in_list() -> PatchError {
    PatchError::Unknown("merging lists cannot yet be specified in the patch".into())
}

pub(super) fn no_merge_key_declared(kind: &str) -> PatchError {
    PatchError::Unknown(format!("cannot merge lists without merge key for {kind}"))
}

pub(super) fn mixed_elements(original: &[Value], patch: &[Value]) -> PatchError {
    let both = Value::Array(vec![
        Value::Array(original.to_vec()),
        Value::Array(patch.to_vec()),
    ]);
    PatchError::Unknown(format!(
        "list element types are not identical: {}",
        gofmt::v(&both)
    ))
}

pub(super) fn no_elements() -> PatchError {
    PatchError::Unknown("no elements in any of the given slices".into())
}

pub(super) fn order_mismatch(patch_list: &[Value], order: &[Value]) -> PatchError {
    PatchError::Unknown(format!(
        "the order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}",
        gofmt::v(&Value::Array(patch_list.to_vec())),
        gofmt::v(&Value::Array(order.to_vec()))
    ))
}

pub(super) fn not_a_map_at(index: usize) -> PatchError {
    PatchError::Unknown(format!("value for key {index} is not a map"))
}
