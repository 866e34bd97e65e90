//! `create` and `update`, and the compare-and-swap update loop every write path shares.

use super::{Call, body, managed, present, service, strategy};
use crate::admission::{self, Operation};
use crate::engine::storage_error;
use crate::response::{self, Response};
use http::StatusCode;
use kyb_api::Status;
use kyb_api::registry::Subresource;
use kyb_apimachinery::meta;
use kyb_storage::Revision;
use serde_json::Value;

pub async fn create(call: &Call<'_>) -> Result<Response, Status> {
    if call.name.is_some() {
        return Err(Status::method_not_supported());
    }
    let (object, warnings) = body::decode_object(call, body::Kind::Of(&call.def))?;
    let object = to_storage(call, object)?;
    let created = create_object(call, object, true).await?;
    let response = present::stored_value(call, &created, StatusCode::CREATED)?;
    Ok(response::with_warnings(response, &warnings))
}

/// Prepares, validates and stores a new object (in the storage version); returns it as
/// stored, `resourceVersion` included. `record` adds the creator's managedFields entry
/// (server-side apply has made its own).
pub async fn create_object(
    call: &Call<'_>,
    mut object: Value,
    record: bool,
) -> Result<Value, Status> {
    strategy::check_namespace(call).await?;
    let dry_run = super::options::dry_run(call)?;
    // Mutating admission sees the defaulted object, before the system fields are set.
    call.storage().strategy.default(&mut object);
    {
        let name = meta::name(&object).unwrap_or_default().to_string();
        let kind = call.def.gvk();
        let attributes = admission::attributes(call, Operation::Create, kind, &name, None);
        admission::mutate(call, &attributes, Some(&mut object)).await?;
    }
    strategy::prepare_create(call, &mut object)?;
    if record {
        managed::record(call, None, &mut object, None)?;
    }
    let name = meta::name(&object).unwrap_or_default().to_string();
    let key = call.key(&name);
    if call.def.group.is_empty() && call.def.kind == "Service" {
        return service::create(call, object, &key, dry_run).await;
    }
    call.def.strategy.validate(&object)?;
    validate_create_admission(call, &object).await?;
    if dry_run {
        return Ok(object);
    }
    store_new(call, &key, object).await
}

/// The validating admission of a new object, once it is prepared and valid.
pub async fn validate_create_admission(call: &Call<'_>, object: &Value) -> Result<(), Status> {
    let name = meta::name(object).unwrap_or_default();
    let kind = call.def.gvk();
    let attributes = admission::attributes(call, Operation::Create, kind, name, None);
    admission::validate(call, &attributes, Some(object)).await
}

/// Writes a prepared new object.
pub async fn store_new(call: &Call<'_>, key: &str, mut object: Value) -> Result<Value, Status> {
    let bytes = encode(&object)?;
    match call.engine.store.create(key.as_bytes(), bytes).await {
        Ok(revision) => {
            set_revision(&mut object, revision);
            Ok(object)
        }
        Err(kyb_storage::Error::AlreadyExists { .. }) => Err(Status::already_exists(
            &call.def.group,
            &call.def.plural,
            meta::name(&object).unwrap_or_default(),
        )),
        Err(other) => Err(storage_error(other)),
    }
}

pub async fn update(call: &Call<'_>) -> Result<Response, Status> {
    let name = call.name()?.to_string();
    let (object, warnings) = body::decode_object(call, body::Kind::Of(&call.def))?;
    let object = check_identity(call, object, &name)?;
    let object = to_storage(call, object)?;
    let precondition = meta::resource_version(&object).map(str::to_string);
    let def = call.storage();
    let (updated, _) = guaranteed_update(call, &name, precondition.as_deref(), |current| {
        let mut new = object.clone();
        strategy::prepare_update(def, &mut new, current)?;
        managed::record(call, Some(current), &mut new, None)?;
        Ok(new)
    })
    .await?;
    let response = present::stored_value(call, &updated, StatusCode::OK)?;
    Ok(response::with_warnings(response, &warnings))
}

/// The body's name and namespace must agree with the URL (filled in when missing).
pub fn check_identity(call: &Call<'_>, mut object: Value, name: &str) -> Result<Value, Status> {
    let metadata = meta::metadata_mut(&mut object);
    match metadata
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(body_name) if body_name != name => {
            return Err(Status::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
        None => {
            metadata.insert("name".into(), name.into());
        }
    }
    strategy::set_namespace(call, metadata)?;
    Ok(object)
}

/// Converts a body in the requested version to the storage version.
pub fn to_storage(call: &Call<'_>, object: Value) -> Result<Value, Status> {
    if call.in_storage_version() {
        Ok(object)
    } else {
        let storage = call.storage();
        storage.strategy.convert(object, &call.def, storage)
    }
}

/// The current stored state of an object: from the cache when it is fresh, else storage.
pub async fn current(call: &Call<'_>, name: &str) -> Result<(Value, Revision), Status> {
    let object = super::read::read_object(call, name).await?;
    Ok((object.value().map_err(Status::internal)?, object.revision))
}

/// Applies `transform` to the current state and writes the result with compare-and-swap,
/// retrying on conflicts unless the client pinned a `resourceVersion` (then 409). Returns
/// the stored result and whether anything was written. An object being deleted whose last
/// finalizer is removed is deleted.
pub async fn guaranteed_update(
    call: &Call<'_>,
    name: &str,
    precondition: Option<&str>,
    mut transform: impl FnMut(&Value) -> Result<Value, Status>,
) -> Result<(Value, bool), Status> {
    let key = call.key(name);
    let dry_run = super::options::dry_run(call)?;
    let (mut current, mut revision) = current(call, name).await?;
    for _ in 0..64 {
        if let Some(rv) = precondition
            && rv != revision.to_string()
        {
            return Err(modified(call, name));
        }
        let mut new = transform(&current)?;
        admit_update(call, name, &mut new, &current).await?;
        set_revision(&mut new, revision);
        if !strategy::changed(&new, &current) {
            return Ok((current, false));
        }
        let finished = finished_deleting(&new, &current);
        if dry_run {
            return Ok((new, true));
        }
        let outcome = if finished {
            call.engine
                .store
                .delete(key.as_bytes(), Some(revision))
                .await
                .map(|d| d.revision)
        } else {
            call.engine
                .store
                .update(key.as_bytes(), encode(&new)?, revision)
                .await
        };
        match outcome {
            Ok(written) => {
                set_revision(&mut new, written);
                return Ok((new, true));
            }
            Err(kyb_storage::Error::Conflict {
                current: latest, ..
            }) => {
                if precondition.is_some() {
                    return Err(modified(call, name));
                }
                current = decode_stored(&latest.value, latest.mod_revision)?;
                revision = latest.mod_revision;
            }
            Err(kyb_storage::Error::NotFound { .. }) => return Err(call.not_found(name)),
            Err(other) => return Err(storage_error(other)),
        }
    }
    Err(too_many_conflicts())
}

/// Admission of an update (of the main resource, its status, scale or finalizers): the
/// mutating plugins may change the new state, which is then prepared and validated again;
/// then the validating plugins. Binding, eviction and token requests are admitted by their
/// own handlers, as the creates they are.
async fn admit_update(
    call: &Call<'_>,
    name: &str,
    new: &mut Value,
    current: &Value,
) -> Result<(), Status> {
    let def = call.storage();
    match call.subresource {
        None
        | Some(Subresource::Status)
        | Some(Subresource::Finalize)
        | Some(Subresource::Approval) => {
            let kind = call.def.gvk();
            let attributes =
                admission::attributes(call, Operation::Update, kind, name, Some(current));
            let before = new.clone();
            admission::mutate(call, &attributes, Some(new)).await?;
            if *new != before {
                match call.subresource {
                    Some(Subresource::Status) => {
                        *new = strategy::prepare_status_update(def, new, current)?;
                    }
                    Some(Subresource::Approval) => {
                        *new = strategy::prepare_approval_update(def, new, current)?;
                    }
                    Some(Subresource::Finalize) => {}
                    _ => strategy::prepare_update(def, new, current)?,
                }
            }
            admission::validate(call, &attributes, Some(new)).await
        }
        Some(Subresource::Scale) => {
            let old_scale = super::subresource::scale_of(def, current)?;
            let mut scale = super::subresource::scale_of(def, new)?;
            let attributes = admission::attributes(
                call,
                Operation::Update,
                ("autoscaling", "v1", "Scale"),
                name,
                Some(&old_scale),
            );
            let before = scale.clone();
            admission::mutate(call, &attributes, Some(&mut scale)).await?;
            if scale != before {
                let replicas = scale
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                super::subresource::set_replicas(def, new, replicas)?;
                strategy::prepare_update(def, new, current)?;
            }
            admission::validate(call, &attributes, Some(&scale)).await
        }
        Some(Subresource::Binding | Subresource::Eviction | Subresource::Token) => Ok(()),
    }
}

/// When a write keeps losing its compare-and-swap.
pub fn too_many_conflicts() -> Status {
    Status::new(409, "Conflict", "too many concurrent updates; try again")
}

/// Whether marking for deletion changed anything worth writing.
pub fn changed_for_delete(new: &Value, current: &Value) -> bool {
    strategy::changed(new, current)
}

/// Whether an update ends an object's deletion (Kubernetes' `ShouldDeleteDuringUpdate`): it
/// was being deleted, no finalizer is left, and no grace period is running — a pod a
/// kubelet is still stopping (`deletionGracePeriodSeconds` > 0) stays until the kubelet's
/// own delete, whatever else writes to it meanwhile (a second DisruptionTarget patch).
fn finished_deleting(new: &Value, current: &Value) -> bool {
    let grace = meta::metadata(current)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64);
    meta::deletion_timestamp(current).is_some()
        && grace.is_none_or(|g| g == 0)
        && meta::finalizers(new).is_empty()
        && no_spec_finalizers(new)
}

/// Namespaces are deleted once their `spec.finalizers` are empty too.
fn no_spec_finalizers(object: &Value) -> bool {
    object
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

pub fn modified(call: &Call<'_>, name: &str) -> Status {
    Status::conflict(
        &call.def.group,
        &call.def.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// A stored value as an object with its `resourceVersion`.
pub fn decode_stored(value: &[u8], revision: Revision) -> Result<Value, Status> {
    let mut object: Value = serde_json::from_slice(value)
        .map_err(|e| Status::internal(format!("stored object: {e}")))?;
    set_revision(&mut object, revision);
    Ok(object)
}

pub fn set_revision(object: &mut Value, revision: Revision) {
    meta::metadata_mut(object).insert("resourceVersion".into(), revision.to_string().into());
}

/// The stored form: the object without its `resourceVersion` (storage tracks it), always
/// with a `metadata` object. Serialized in place, without copying the object.
pub fn encode(object: &Value) -> Result<bytes::Bytes, Status> {
    serde_json::to_vec(&Stored(object))
        .map(Into::into)
        .map_err(|e| Status::internal(format!("encoding an object: {e}")))
}

/// An object as stored: see [`encode`].
struct Stored<'a>(&'a Value);

/// `metadata` without `resourceVersion` (empty when missing or not an object).
struct StoredMetadata<'a>(Option<&'a serde_json::Map<String, Value>>);

impl serde::Serialize for Stored<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let empty = serde_json::Map::new();
        let fields = self.0.as_object().unwrap_or(&empty);
        let metadata = StoredMetadata(fields.get("metadata").and_then(Value::as_object));
        let len = fields.len() + usize::from(!fields.contains_key("metadata"));
        let mut map = serializer.serialize_map(Some(len))?;
        let mut metadata_written = false;
        for (key, value) in fields {
            // Keys come in order: a missing `metadata` goes where it sorts.
            if !metadata_written && key.as_str() >= "metadata" {
                map.serialize_entry("metadata", &metadata)?;
                metadata_written = true;
                if key == "metadata" {
                    continue;
                }
            }
            map.serialize_entry(key, value)?;
        }
        if !metadata_written {
            map.serialize_entry("metadata", &metadata)?;
        }
        map.end()
    }
}

impl serde::Serialize for StoredMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let entries = self
            .0
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k != "resourceVersion");
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::{encode, finished_deleting};
    use serde_json::{Value, json};

    #[test]
    fn an_update_ends_a_deletion_only_without_finalizers_or_a_running_grace_period() {
        let object = |deleting: bool, grace: Option<i64>, finalizers: &[&str]| {
            json!({"metadata": {
                "name": "p",
                "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z"),
                "deletionGracePeriodSeconds": grace,
                "finalizers": finalizers,
            }})
        };
        // The last finalizer removed from an object being deleted: gone.
        assert!(finished_deleting(
            &object(true, Some(0), &[]),
            &object(true, Some(0), &["example.com/hold"])
        ));
        assert!(finished_deleting(
            &object(true, None, &[]),
            &object(true, None, &["x"])
        ));
        // A pod a kubelet is still stopping stays, whatever else is written to it.
        assert!(!finished_deleting(
            &object(true, Some(30), &[]),
            &object(true, Some(30), &[])
        ));
        // Not being deleted, or finalizers left: an ordinary update.
        assert!(!finished_deleting(
            &object(false, None, &[]),
            &object(false, None, &[])
        ));
        assert!(!finished_deleting(
            &object(true, Some(0), &["x"]),
            &object(true, Some(0), &["x", "y"])
        ));
    }

    /// What `encode` must produce: the object cloned, metadata made an object, and the
    /// resourceVersion removed.
    fn by_copy(object: &Value) -> Vec<u8> {
        let mut object = object.clone();
        kyb_apimachinery::meta::metadata_mut(&mut object).remove("resourceVersion");
        serde_json::to_vec(&object).unwrap_or_default()
    }

    #[test]
    fn encode_drops_the_resource_version_in_place() {
        for object in [
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "7", "uid": "u"}, "spec": {"a": [1, 2]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {}}),
            json!({"kind": "X", "metadata": "not an object", "zzz": 1}),
            json!({"a": 1}),
            json!({"z": 1}),
            json!({}),
            json!([1, 2]),
            json!({"metadata": {"resourceVersion": "1"}}),
        ] {
            let encoded = encode(&object).map(|b| b.to_vec()).unwrap_or_default();
            assert_eq!(
                String::from_utf8_lossy(&encoded),
                String::from_utf8_lossy(&by_copy(&object)),
                "{object}"
            );
        }
    }
}
