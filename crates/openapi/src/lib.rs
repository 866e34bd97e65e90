//! OpenAPI v2 and v3 documents for the built-in Kubernetes API, and the merge
//! semantics of its fields.
//!
//! The API server serves these documents at `/openapi/v2`, `/openapi/v3` (the index)
//! and `/openapi/v3/<path>` (one per group-version: `api/v1`, `apis/apps/v1`, ...).
//! kubectl reads them for `kubectl explain`, for client-side `kubectl apply` (strategic
//! merge patch follows `x-kubernetes-patch-strategy`/`-merge-key`) and to decide whether
//! the server validates fields itself (`fieldValidation` on the kind's PATCH operation).
//!
//! Everything is generated from k8s-openapi's schemas (definition names are the
//! Kubernetes ones, such as `io.k8s.api.core.v1.Pod`) plus this crate's table of merge
//! semantics, which k8s-openapi does not carry.
//!
//! Entry points:
//! - [`Documents`]: made from the served [`ResourceSpec`]s (each one
//!   [`ResourceSpec::of`] a registry entry); hands out each document
//!   as cached bytes with its hash, generating it on first use.
//! - [`v2`], [`v3_index`], [`v3`]: the same documents as JSON values, uncached.
//! - [`list_semantics`], [`struct_map_type`], [`field_type`]: the merge semantics table,
//!   for strategic merge patch and server-side apply.

mod documents;
mod operations;
mod registry;
mod render;
mod resource;
mod schemas;
mod semantics;

pub use documents::{DEFAULT_SERVER_VERSION, Document, Documents};
pub use resource::ResourceSpec;
pub use semantics::{
    ListSemantics, ListType, MapType, PatchStrategy, field_type, list_semantics, struct_map_type,
};

/// The schema of a built-in definition (`io.k8s.api.core.v1.PodSpec`) in OpenAPI v3
/// form, with the merge-semantics extensions but without `x-kubernetes-group-version-kind`.
pub fn definition(name: &str) -> Option<&'static serde_json::Value> {
    schemas::builtin().get(name)
}

/// Every built-in definition with its schema (as [`definition`] gives them), in name order.
pub fn definitions() -> impl Iterator<Item = (&'static str, &'static serde_json::Value)> {
    schemas::builtin()
        .iter()
        .map(|(name, schema)| (name.as_str(), schema))
}

/// The Swagger 2.0 document of `resources`.
pub fn v2(resources: &[ResourceSpec]) -> serde_json::Value {
    Documents::new(resources.to_vec()).v2_value()
}

/// The v3 index: `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}}}`.
pub fn v3_index(resources: &[ResourceSpec]) -> serde_json::Value {
    Documents::new(resources.to_vec()).v3_index_value()
}

/// The OpenAPI 3.0 document of one path (`api/v1`, `apis/apps/v1`), `None` if the
/// resources have no such path.
pub fn v3(resources: &[ResourceSpec], path: &str) -> Option<serde_json::Value> {
    Documents::new(resources.to_vec()).v3_value(path)
}
