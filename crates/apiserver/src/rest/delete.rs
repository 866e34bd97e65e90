//! `delete` and `deletecollection`: preconditions, graceful deletion of pods bound to a node,
//! finalizers (an object with finalizers only gets a `deletionTimestamp`), and propagation
//! policies recorded as the `orphan` / `foregroundDeletion` finalizers for the garbage
//! collector.

use super::write::{self, set_revision};
use super::{Call, present, read};
use crate::admission::{self, Operation};
use crate::engine::storage_error;
use crate::kinds;
use crate::response::Response;
use crate::util;
use http::StatusCode;
use kyb_api::Status;
use kyb_apimachinery::meta;
use serde_json::{Value, json};

/// The parsed `DeleteOptions` (from the body and the query).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub grace_period: Option<i64>,
    pub propagation: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

impl DeleteOptions {
    /// The options of a `DeleteOptions` object (a delete's body, an eviction's field).
    pub fn from_value(value: &Value) -> Self {
        let text = |pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Self {
            grace_period: value.get("gracePeriodSeconds").and_then(Value::as_i64),
            propagation: text("/propagationPolicy"),
            orphan_dependents: value.get("orphanDependents").and_then(Value::as_bool),
            precondition_uid: text("/preconditions/uid"),
            precondition_rv: text("/preconditions/resourceVersion"),
            dry_run: value
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|d| d.iter().any(|v| v == "All")),
        }
    }
}

pub fn options(call: &Call<'_>) -> Result<DeleteOptions, Status> {
    let mut options = DeleteOptions::default();
    if !call.body.iter().all(u8::is_ascii_whitespace) {
        let value = super::body::parse(call)?;
        let value = kinds::delete_options(value)
            .map_err(|e| Status::bad_request(format!("invalid DeleteOptions: {e}")))?;
        options = DeleteOptions::from_value(&value);
    }
    if let Some(grace) = call.query.number("gracePeriodSeconds")? {
        options.grace_period = Some(grace);
    }
    if let Some(policy) = call.query.value("propagationPolicy") {
        options.propagation = Some(policy.to_string());
    }
    if call.query.get("orphanDependents").is_some() {
        options.orphan_dependents = Some(call.query.flag("orphanDependents"));
    }
    options.dry_run |= super::options::dry_run(call)?;
    super::options::validate_delete(options.orphan_dependents, options.propagation.as_deref())?;
    if options.grace_period.is_some_and(|g| g < 0) {
        options.grace_period = Some(0);
    }
    Ok(options)
}

/// What a delete did.
pub enum Outcome {
    /// Gone; the last state.
    Deleted(Value),
    /// Marked for deletion (grace period or finalizers); the new state.
    Pending(Value),
}

pub async fn delete(call: &Call<'_>) -> Result<Response, Status> {
    let name = call.name()?.to_string();
    let options = options(call)?;
    let outcome = delete_object(call, &name, &options).await?;
    super::service::release_deleted(call, &outcome, &options).await;
    match outcome {
        Outcome::Pending(object) => present::stored_value(call, &object, StatusCode::OK),
        Outcome::Deleted(object) if call.def.returns_deleted_object => {
            present::stored_value(call, &object, StatusCode::OK)
        }
        Outcome::Deleted(object) => Ok(present::value_response(
            call,
            &kyb_api::status::success(&call.def.group, &call.def.plural, &name, meta::uid(&object)),
            StatusCode::OK,
        )),
    }
}

pub async fn delete_collection(call: &Call<'_>) -> Result<Response, Status> {
    let options = options(call)?;
    let filter = read::filter(call)?;
    call.engine.fresh().await;
    let prefix = call.def.list_prefix(filter.namespace.as_deref());
    let page = call
        .cache
        .list(&prefix, &filter, 0, call.engine.cache.revision());
    let mut deleted = Vec::new();
    for object in &page.items {
        let namespace = object.namespace().map(str::to_string);
        let scoped = call.for_object(namespace.or_else(|| call.namespace.clone()), object.name());
        let outcome = delete_object(&scoped, object.name(), &options).await;
        if let Ok(outcome) = &outcome {
            super::service::release_deleted(call, outcome, &options).await;
        }
        match outcome {
            Ok(Outcome::Deleted(value) | Outcome::Pending(value)) => deleted.push(value),
            Err(status) if status.code == 404 => {}
            Err(status) => return Err(status),
        }
    }
    let revision = call.engine.cache.revision();
    let items = deleted
        .iter()
        .map(|v| {
            let key = call
                .def
                .key(meta::namespace(v), meta::name(v).unwrap_or_default());
            crate::cache::object::CachedObject::from_value(
                call.storage(),
                key.as_bytes(),
                v,
                revision,
            )
            .map(std::sync::Arc::new)
            .map_err(Status::internal)
        })
        .collect::<Result<Vec<_>, _>>()?;
    present::list(call, &items, revision, None)
}

/// Deletes one object (or marks it for deletion) with compare-and-swap, retrying on
/// conflicts.
pub async fn delete_object(
    call: &Call<'_>,
    name: &str,
    options: &DeleteOptions,
) -> Result<Outcome, Status> {
    let key = call.key(name);
    let def = call.storage();
    let (mut current, mut revision) = write::current(call, name).await?;
    // An eviction was admitted as the create it is.
    if call.subresource.is_none() {
        let kind = call.def.gvk();
        let attributes = admission::attributes(call, Operation::Delete, kind, name, Some(&current));
        admission::mutate(call, &attributes, None).await?;
        admission::validate(call, &attributes, None).await?;
    }
    for _ in 0..64 {
        if let Some(uid) = &options.precondition_uid
            && meta::uid(&current) != Some(uid.as_str())
        {
            return Err(Status::conflict(
                &def.group,
                &def.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta::uid(&current).unwrap_or_default()
                ),
            ));
        }
        if let Some(rv) = &options.precondition_rv
            && *rv != revision.to_string()
        {
            return Err(Status::conflict(
                &def.group,
                &def.plural,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {revision}"
                ),
            ));
        }
        let marked = mark_for_deletion(call, &current, options);
        let (outcome, write) = match marked {
            Some(new) if write::changed_for_delete(&new, &current) => {
                if options.dry_run {
                    return Ok(Outcome::Pending(new));
                }
                let result = call
                    .engine
                    .store
                    .update(key.as_bytes(), write::encode(&new)?, revision)
                    .await;
                (Outcome::Pending(new), result)
            }
            Some(unchanged) => return Ok(Outcome::Pending(unchanged)),
            None => {
                if options.dry_run {
                    return Ok(Outcome::Deleted(current));
                }
                let result = call
                    .engine
                    .store
                    .delete(key.as_bytes(), Some(revision))
                    .await
                    .map(|d| d.revision);
                (Outcome::Deleted(current.clone()), result)
            }
        };
        match write {
            Ok(written) => {
                return Ok(match outcome {
                    Outcome::Pending(mut new) => {
                        set_revision(&mut new, written);
                        Outcome::Pending(new)
                    }
                    deleted => deleted,
                });
            }
            Err(kyb_storage::Error::Conflict {
                current: latest, ..
            }) => {
                current = write::decode_stored(&latest.value, latest.mod_revision)?;
                revision = latest.mod_revision;
            }
            Err(kyb_storage::Error::NotFound { .. }) => return Err(call.not_found(name)),
            Err(other) => return Err(storage_error(other)),
        }
    }
    Err(write::too_many_conflicts())
}

/// The state an object goes to instead of being deleted at once, if it must wait (a
/// grace period, finalizers); `None` when it can be deleted now.
fn mark_for_deletion(call: &Call<'_>, current: &Value, options: &DeleteOptions) -> Option<Value> {
    let def = call.storage();
    let mut new = current.clone();
    let mut finalizers: Vec<String> = meta::finalizers(current)
        .iter()
        .map(|s| s.to_string())
        .collect();
    let policy = match (options.propagation.as_deref(), options.orphan_dependents) {
        (Some(policy), _) => Some(policy),
        (None, Some(true)) => Some("Orphan"),
        (None, Some(false)) => Some("Background"),
        (None, None) => None,
    };
    let wanted = match policy {
        Some("Orphan") => Some("orphan"),
        Some("Foreground") => Some("foregroundDeletion"),
        _ => None,
    };
    if let Some(wanted) = wanted {
        finalizers.retain(|f| f != "orphan" && f != "foregroundDeletion");
        finalizers.push(wanted.to_string());
    } else if policy == Some("Background") {
        finalizers.retain(|f| f != "orphan" && f != "foregroundDeletion");
    }
    let grace = grace_period(def, current, options);
    let namespace_finalizing = def.group.is_empty()
        && def.kind == "Namespace"
        && current
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
    if finalizers.is_empty() && grace == 0 && !namespace_finalizing {
        return None;
    }
    let metadata = meta::metadata_mut(&mut new);
    if finalizers.is_empty() {
        metadata.remove("finalizers");
    } else {
        metadata.insert("finalizers".into(), json!(finalizers));
    }
    let existing_grace = metadata
        .get("deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    let start =
        metadata.get("deletionTimestamp").is_none() || existing_grace.is_some_and(|g| grace < g);
    if start {
        let when = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
        metadata.insert("deletionTimestamp".into(), util::timestamp(when).into());
        metadata.insert("deletionGracePeriodSeconds".into(), grace.into());
        if let Some(generation) = metadata
            .get("generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
        {
            metadata.insert("generation".into(), (generation + 1).into());
        }
    }
    if namespace_finalizing && let Some(map) = new.as_object_mut() {
        let status = map.entry("status").or_insert_with(|| json!({}));
        status["phase"] = "Terminating".into();
    }
    Some(new)
}

/// The grace period the kind's strategy gives (pods bound to a node wait for their
/// kubelet); everything else is deleted at once.
fn grace_period(def: &kyb_api::Resource, current: &Value, options: &DeleteOptions) -> i64 {
    def.strategy.grace_period(current, options.grace_period)
}
