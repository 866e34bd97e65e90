//! Strategic merge patch (`application/strategic-merge-patch+json`), Kubernetes' own
//! patch format, as the API server applies it (`k8s.io/apimachinery`'s
//! `strategicpatch.StrategicMergeMapPatch`): a JSON merge patch whose lists merge by
//! each field's declared strategy, plus directives.
//!
//! The strategy of every field comes from `kyb-openapi`'s table of merge semantics:
//! lists with `patchStrategy: merge` merge (maps by their `patchMergeKey`, such as
//! containers by `name`; scalars as a set, such as `finalizers`); other lists are
//! replaced; maps merge key by key unless their strategy is `replace`.
//!
//! Directives:
//! - `$patch: replace` in a map replaces it by the patch's map; `{"$patch": "replace"}`
//!   as a list item replaces the list by the patch's other items;
//! - `$patch: delete` in a map empties it; as a list item with the merge key
//!   (`{"name": "x", "$patch": "delete"}`) deletes the items with that key;
//! - `$retainKeys: [...]` clears the keys of the map it is in that it does not list
//!   (volume sources, deployment strategies);
//! - `$setElementOrder/<field>: [...]` orders the merged list;
//! - `$deleteFromPrimitiveList/<field>: [...]` removes values from a list of scalars.
//!
//! Those are all the directives Kubernetes 1.33 knows; patches without
//! `$setElementOrder` (from older clients) are ordered by the patch's list then the live
//! list. Error classification follows Kubernetes: see [`crate::PatchError`].

mod directives;
mod element_order;
mod errors;
mod merge_list;
mod merge_map;
mod order;
mod schema;

use crate::PatchError;
use crate::nesting;
use schema::Schema;
use serde_json::Value;

/// The message of the `415` Kubernetes answers a strategic merge patch of a custom
/// resource with.
pub const UNSUPPORTED_MESSAGE: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// Applies the strategic merge patch `patch` to `original`, an object whose type is the
/// OpenAPI definition `definition` (`io.k8s.api.apps.v1.Deployment`).
///
/// A `null` patch changes nothing; any other patch must be an object. Types without a
/// built-in definition (custom resources) are refused with `415`.
pub fn apply(original: &Value, patch: &Value, definition: &str) -> Result<Value, PatchError> {
    if !supported(definition) {
        return Err(PatchError::UnsupportedMediaType(
            UNSUPPORTED_MESSAGE.to_string(),
        ));
    }
    nesting::check(original, "the object")?;
    let patch = match patch {
        Value::Object(patch) => patch,
        Value::Null => return Ok(original.clone()),
        other => return Err(errors::not_an_object(other)),
    };
    let Value::Object(original) = original else {
        return Err(errors::bad_json_doc());
    };
    nesting::check_map(patch, "the patch")?;
    merge_map::merge_map(original.clone(), patch.clone(), Schema::Struct(definition))
        .map(Value::Object)
}

/// Whether strategic merge patch applies to objects of the OpenAPI definition
/// `definition`: only to built-in types (Kubernetes refuses it for custom resources).
pub fn supported(definition: &str) -> bool {
    kyb_openapi::definition(definition).is_some()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::MAX_DEPTH;
    use crate::nesting::tests::{deep_object, nest_in};
    use serde_json::json;

    const POD: &str = "io.k8s.api.core.v1.Pod";

    /// Runs `f` on a thread with a small stack, as a request handler might have.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn the_deepest_accepted_documents_merge_on_a_small_stack() {
        let merged = on_small_stack(|| {
            // Both documents nest MAX_DEPTH levels: every level is merged recursively.
            let original = nest_in(&["spec", "x"], deep_object(MAX_DEPTH - 2));
            let patch = nest_in(&["spec", "x"], deep_object(MAX_DEPTH - 2));
            let merged =
                apply(&original, &patch, POD).map(|v| crate::nesting::depth_within(&v, MAX_DEPTH));
            crate::nesting::dispose(original);
            crate::nesting::dispose(patch);
            merged
        });
        assert_eq!(merged, Ok(Some(MAX_DEPTH)));
    }

    #[test]
    fn deeper_documents_are_refused() {
        let deep = nest_in(&["spec", "x"], deep_object(100_000));
        let error = apply(&json!({}), &deep, POD).unwrap_err();
        assert_eq!(error.code(), 400);
        let error = apply(&deep, &json!({}), POD).unwrap_err();
        assert_eq!(error.code(), 400);
        crate::nesting::dispose(deep);
    }
}
