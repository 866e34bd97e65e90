//! What Kubernetes' registry does around writes for every kind (`BeforeCreate`,
//! `BeforeUpdate`), calling the entry's strategy for the kind's own part: system metadata on
//! create, what an update may change (spec vs status), `metadata.generation`, and the
//! namespace lifecycle rule.

use super::Call;
use crate::util;
use kyb_api::{Resource, Status};
use kyb_apimachinery::meta;
use serde_json::{Map, Value};

/// Everything but metadata and status: what a generation counts.
fn spec_of(object: &Value) -> Map<String, Value> {
    object
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Prepares a new object: defaults, namespace and name, system metadata, and the kind's
/// create-time preparation. Validation comes after (Services allocate addresses first).
pub fn prepare_create(call: &Call<'_>, object: &mut Value) -> Result<(), Status> {
    let def = &call.def;
    def.strategy.default(object);
    {
        let metadata = meta::metadata_mut(object);
        set_namespace(call, metadata)?;
        let has_name = metadata
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        if !has_name
            && let Some(base) = metadata
                .get("generateName")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty())
        {
            let name = util::generate_name(base);
            metadata.insert("name".into(), name.into());
        }
        metadata.insert("uid".into(), util::new_uid().into());
        metadata.insert("creationTimestamp".into(), util::now().into());
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            metadata.remove(field);
        }
        if def.strategy.tracks_generation() {
            metadata.insert("generation".into(), 1.into());
        } else {
            metadata.remove("generation");
        }
    }
    def.strategy.prepare_for_create(object);
    def.strategy
        .prepare_for_create_by(object, &call.user.to_json());
    Ok(())
}

/// A namespaced object's namespace is the one in the URL (filled in when the body has
/// none, 400 when it has another); a cluster-scoped object has none.
pub fn set_namespace(call: &Call<'_>, metadata: &mut Map<String, Value>) -> Result<(), Status> {
    if !call.def.namespaced {
        metadata.remove("namespace");
        return Ok(());
    }
    let url = call.namespace.as_deref().unwrap_or_default();
    match metadata
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(ns) if ns != url => Err(Status::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            metadata.insert("namespace".into(), url.into());
            Ok(())
        }
    }
}

/// The namespace of a new object must exist and not be terminating.
pub async fn check_namespace(call: &Call<'_>) -> Result<(), Status> {
    let (true, Some(namespace)) = (call.def.namespaced, call.namespace.as_deref()) else {
        return Ok(());
    };
    let snapshot = call.engine.registry.snapshot();
    let Some(namespaces) = snapshot.find("", "v1", "namespaces") else {
        return Ok(());
    };
    let cache = call.engine.cache.resource(namespaces);
    let key = namespaces.key(None, namespace);
    let mut found = cache.as_ref().and_then(|c| c.get(&key));
    if found.is_none() {
        // It may have been created a moment ago: read it consistently before refusing.
        call.engine.fresh().await;
        found = cache.and_then(|c| c.get(&key));
    }
    let Some(found) = found else {
        return Err(Status::not_found("", "namespaces", namespace));
    };
    let terminating = found.shared_value().ok().is_some_and(|ns| {
        meta::deletion_timestamp(&ns).is_some()
            || ns.pointer("/status/phase") == Some(&Value::from("Terminating"))
    });
    if terminating {
        return Err(Status::forbidden(format!(
            "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
            call.def.plural,
            call.name.as_deref().unwrap_or_default()
        ))
        .with_details(&call.def.group, &call.def.plural, call.name.as_deref().unwrap_or_default()));
    }
    Ok(())
}

/// Carries over from `old` what an update of the main resource may not change, then
/// validates. `new` already has its name and namespace checked.
pub fn prepare_update(def: &Resource, new: &mut Value, old: &Value) -> Result<(), Status> {
    let name = meta::name(old).unwrap_or_default().to_string();
    if let (Some(new_uid), Some(old_uid)) = (meta::uid(new), meta::uid(old))
        && new_uid != old_uid
    {
        return Err(Status::conflict(
            &def.group,
            &def.plural,
            &name,
            &format!(
                "Precondition failed: UID in precondition: {new_uid}, UID in object meta: {old_uid}"
            ),
        ));
    }
    if let Some(old_meta) = meta::metadata(old).cloned() {
        let metadata = meta::metadata_mut(new);
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old_meta.get(field) {
                Some(value) => metadata.insert(field.into(), value.clone()),
                None => metadata.remove(field),
            };
        }
        metadata.remove("selfLink");
    }
    if meta::deletion_timestamp(old).is_some() {
        let old_finalizers = meta::finalizers(old);
        if meta::finalizers(new)
            .iter()
            .any(|f| !old_finalizers.contains(f))
        {
            return Err(Status::invalid(
                &def.group,
                &def.kind,
                &name,
                &[kyb_api::status::Cause {
                    reason: "FieldValueForbidden".into(),
                    message:
                        "Forbidden: no new finalizers can be added if the object is being deleted"
                            .into(),
                    field: "metadata.finalizers".into(),
                }],
            ));
        }
    }
    def.strategy.default(new);
    // Keeps what only /status may change, and what the kind keeps across updates.
    def.strategy.prepare_for_update(new, old);
    update_generation(def, new, old);
    if meta::resource_version(new).is_none()
        && let Some(rv) = meta::resource_version(old)
    {
        let rv = rv.to_string();
        meta::metadata_mut(new).insert("resourceVersion".into(), rv.into());
    }
    def.strategy.validate_update(new, old)
}

/// An update through `/status`: the stored object with the new status.
pub fn prepare_status_update(def: &Resource, new: &Value, old: &Value) -> Result<Value, Status> {
    let mut result = new.clone();
    def.strategy.prepare_for_status_update(&mut result, old);
    if meta::resource_version(&result).is_none()
        && let Some(rv) = meta::resource_version(old)
    {
        let rv = rv.to_string();
        meta::metadata_mut(&mut result).insert("resourceVersion".into(), rv.into());
    }
    def.strategy.validate_status_update(&result, old)?;
    Ok(result)
}

/// An update through `/approval` (CertificateSigningRequests): the stored object with
/// what the kind lets an approver change.
pub fn prepare_approval_update(def: &Resource, new: &Value, old: &Value) -> Result<Value, Status> {
    let mut result = new.clone();
    def.strategy.prepare_for_approval_update(&mut result, old);
    if let Some(rv) = meta::resource_version(new).or_else(|| meta::resource_version(old)) {
        let rv = rv.to_string();
        meta::metadata_mut(&mut result).insert("resourceVersion".into(), rv.into());
    }
    def.strategy.validate_approval_update(&result, old)?;
    Ok(result)
}

fn update_generation(def: &Resource, new: &mut Value, old: &Value) {
    let old_generation = meta::metadata(old)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64);
    let metadata = meta::metadata_mut(new);
    match old_generation {
        Some(generation) => {
            metadata.insert("generation".into(), generation.into());
        }
        None => {
            metadata.remove("generation");
        }
    }
    if def.strategy.tracks_generation() && spec_of(new) != spec_of(old) {
        let next = old_generation.unwrap_or(0) + 1;
        meta::metadata_mut(new).insert("generation".into(), next.into());
    }
}

/// Whether two states differ in anything but `resourceVersion` (a missing or non-object
/// `metadata` counts as empty, as does a state that is not an object). Compares in place:
/// this runs on every update.
pub fn changed(new: &Value, old: &Value) -> bool {
    fn fields(v: &Value) -> Option<&Map<String, Value>> {
        v.as_object()
    }
    fn outside(m: Option<&Map<String, Value>>) -> impl Iterator<Item = (&String, &Value)> {
        m.into_iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != "metadata")
    }
    fn metadata(m: Option<&Map<String, Value>>) -> impl Iterator<Item = (&String, &Value)> {
        m.and_then(|m| m.get("metadata"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != "resourceVersion")
    }
    let (new, old) = (fields(new), fields(old));
    !outside(new).eq(outside(old)) || !metadata(new).eq(metadata(old))
}

#[cfg(test)]
mod tests {
    use super::changed;
    use serde_json::json;

    #[test]
    fn changed_ignores_only_the_resource_version() {
        let old = json!({"metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 1}});
        let same = json!({"metadata": {"name": "a", "resourceVersion": "2"}, "spec": {"x": 1}});
        assert!(!changed(&same, &old));
        let spec = json!({"metadata": {"name": "a", "resourceVersion": "1"}, "spec": {"x": 2}});
        assert!(changed(&spec, &old));
        let label = json!({"metadata": {"name": "a", "labels": {"l": "v"}}, "spec": {"x": 1}});
        assert!(changed(&label, &old));
        let extra = json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {}});
        assert!(changed(&extra, &old));
        // No metadata, empty metadata and metadata with only a resourceVersion are alike.
        let bare = json!({"spec": {"x": 1}});
        let empty = json!({"metadata": {}, "spec": {"x": 1}});
        let only_rv = json!({"metadata": {"resourceVersion": "9"}, "spec": {"x": 1}});
        assert!(!changed(&bare, &empty));
        assert!(!changed(&only_rv, &bare));
        assert!(!changed(&json!("text"), &json!({"metadata": {}})));
    }
}
