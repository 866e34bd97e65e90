//! The three patch formats of the Kubernetes API, applied to objects in their JSON form
//! (`serde_json::Value`, as the API server stores and serves them):
//!
//! - [`json_patch`]: JSON patch, RFC 6902 (`application/json-patch+json`);
//! - [`merge_patch`]: JSON merge patch, RFC 7386 (`application/merge-patch+json`);
//! - [`strategic`]: strategic merge patch (`application/strategic-merge-patch+json`),
//!   whose list semantics come from `kyb-openapi`.
//!
//! Each applies a patch to the current object and returns the patched object, or a
//! [`PatchError`] carrying the status code and reason Kubernetes answers with. Decoding,
//! defaulting and validating the result is the caller's job.
//!
//! Patches come from untrusted clients: nothing here panics on input, and documents
//! nested more than [`MAX_DEPTH`] levels are refused before anything recurses into them.

mod error;
pub mod json_patch;
pub mod merge_patch;
mod nesting;
pub mod strategic;

pub use error::{INVALID_MESSAGE, PatchError};
pub use nesting::MAX_DEPTH;
