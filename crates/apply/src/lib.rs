//! Server-side apply and managed fields, on objects in their JSON form.
//!
//! Kubernetes records on every object which *field manager* set which fields
//! (`metadata.managedFields`) and implements server-side apply on top of that record
//! (`PATCH` with `application/apply-patch+yaml`, `kubectl apply --server-side`). This
//! crate is that machinery — structured-merge-diff and the API server's field manager
//! — for JSON objects, with the merge semantics of every built-in field taken from
//! `kyb-openapi` (list types and keys, map and struct types). Kinds without a
//! definition are handled as structured-merge-diff's *deduced* schema: maps granular,
//! lists atomic.
//!
//! Entry points:
//! - [`apply`]: the object after a field manager applies a configuration, or the
//!   conflicts that stop it ([`ApplyError`], [`conflict_message`]).
//! - [`update`]: records any other write (create, update, patch, subresource write)
//!   in the new object's `metadata.managedFields`.
//!
//! Module map: `schema` (field shapes from kyb-openapi), `fieldset` (sets of paths in
//! `fieldsV1` form), `path`, `value` and `list_items` (path elements, value order,
//! list keys), the typed walks `to_set`, `compare`, `merge` and `prune`, `managed`
//! (entries: identity, order, cap), `reconcile` (entries after schema changes),
//! `zero` (empty objects), `update`, `apply`,
//! `last_applied` (client-side apply migration), `conflict`, `time`, `walk`.

mod apply;
mod compare;
mod conflict;
mod fieldset;
mod last_applied;
mod list_items;
mod managed;
mod merge;
mod path;
mod prune;
mod reconcile;
mod schema;
mod to_set;
mod update;
mod value;
mod walk;
mod zero;

pub use conflict::{Conflict, conflict_message};
pub use walk::MAX_DEPTH;

use serde_json::Value;

/// Who writes, and when.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    /// The field manager (`fieldManager`, or what Kubernetes derives from the user
    /// agent for non-apply writes). Empty is recorded as `unknown`.
    pub manager: &'a str,
    /// The API version of the request (`apps/v1`), recorded in the entry. For an
    /// apply, also the `apiVersion` the configuration must have.
    pub api_version: &'a str,
    /// The subresource written (`status`, `scale`), `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// Now, as RFC 3339 with whole seconds in UTC (`2025-01-01T00:00:00Z`), the
    /// form Kubernetes stores in `managedFields[].time`.
    pub time: &'a str,
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// Other managers own fields the configuration sets to other values: `409
    /// Conflict`, reason `Conflict`, message [`conflict_message`], one cause per
    /// conflict (reason [`Conflict::CAUSE_REASON`], message [`Conflict::message`],
    /// field [`Conflict::field`]), no name or kind in the details.
    Conflicts(Vec<Conflict>),
    /// `400 BadRequest`: the configuration is not an object of the request's type and
    /// version (`invalid object type: apps/v1, Kind=Deployment`), sets
    /// `metadata.managedFields` (`metadata.managedFields must be nil`), or nests too deep.
    BadRequest(String),
    /// The configuration does not fit the kind's schema: an undeclared field, a value
    /// of the wrong type, a list item without its keys, a repeated item. Kubernetes
    /// 1.33 answers `500 InternalError` with this message (`failed to create typed
    /// patch object (default/web; apps/v1, Kind=Deployment): .spec.foo: field not
    /// declared in schema`).
    InvalidObject(String),
    /// The live object or its managed fields could not be processed (`500
    /// InternalError`).
    Internal(String),
}

impl ApplyError {
    /// The HTTP status code Kubernetes answers with.
    pub fn code(&self) -> u16 {
        match self {
            ApplyError::Conflicts(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::InvalidObject(_) | ApplyError::Internal(_) => 500,
        }
    }

    /// The `Status` reason Kubernetes gives.
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::Conflicts(_) => "Conflict",
            ApplyError::BadRequest(_) => "BadRequest",
            ApplyError::InvalidObject(_) | ApplyError::Internal(_) => "InternalError",
        }
    }

    /// The `Status` message.
    pub fn message(&self) -> String {
        match self {
            ApplyError::Conflicts(c) => conflict_message(c),
            ApplyError::BadRequest(m) | ApplyError::InvalidObject(m) | ApplyError::Internal(m) => {
                m.clone()
            }
        }
    }
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyError {}

/// Server-side apply: the object after `writer` applies `config` to `live` (`None`
/// when the object does not exist yet: apply creates it).
///
/// `definition` names the object's type (`io.k8s.api.apps.v1.Deployment`; for kinds
/// without one, any name ending in `.<Kind>`, such as `com.example.v1.Widget`).
/// `ignored` lists the reset fields of the write, as dotted paths (`status`,
/// `metadata.labels`): the applier neither gains nor conflicts on them, though their
/// configured values are merged (the strategy resets them afterwards).
///
/// The result carries the updated `metadata.managedFields`. On conflicts without
/// `force`, nothing is returned and nothing changes.
pub fn apply(
    definition: &str,
    live: Option<&Value>,
    config: &Value,
    writer: &Writer<'_>,
    force: bool,
    ignored: &[&str],
) -> Result<Value, ApplyError> {
    apply::apply(definition, live, config, writer, force, ignored)
}

/// Records a non-apply write (create when `old` is `None`, update, patch, subresource
/// write) as an `Update` operation of `writer`, in `new`'s `metadata.managedFields`.
///
/// Fields `new` adds or changes become the writer's and leave other managers; fields
/// it removes leave every manager. Managed fields sent by the client are honoured as
/// Kubernetes does: `[]` or `[{}]` clears them (and the object then stays untracked),
/// anything else readable replaces the stored ones, unreadable ones are ignored;
/// writes through a subresource always keep the stored ones. Never fails: if the
/// object cannot be processed, `new` gets `old`'s managed fields back.
pub fn update(
    definition: &str,
    old: Option<&Value>,
    new: &mut Value,
    writer: &Writer<'_>,
    ignored: &[&str],
) {
    update::update(definition, old, new, writer, ignored);
}

#[cfg(test)]
mod tests {
    /// Field sets and lists are built by walking `serde_json` maps in key order: the
    /// crate relies on `serde_json` without its `preserve_order` feature. If a
    /// dependency ever turns that feature on, this fails before anything subtler does.
    #[test]
    fn json_maps_iterate_in_key_order() {
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"b": 1, "c": 2, "a": 3}"#).unwrap_or_default();
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(keys, ["a", "b", "c"]);
    }
}
