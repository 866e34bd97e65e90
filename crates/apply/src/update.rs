//! Recording a non-apply write (create, update, patch, subresource write) as an
//! `Update` operation of its writer.
//!
//! As Kubernetes' field manager does: the managed fields to start from are the ones
//! the client sent (an empty list, or one empty entry, clears them; anything
//! unreadable or empty falls back to the stored ones; writes through a subresource
//! always use the stored ones), brought up to date with the schema. An existing
//! object nobody tracks stays untracked. Every field the write adds or changes becomes the writer's and is taken from the
//! other managers; every field it removes leaves every manager. The writer's entry
//! gets the write's time only when it gained fields. Reset fields (`ignored`) are
//! neither taken nor given.

use crate::Writer;
use crate::compare;
use crate::fieldset::{self, Set};
use crate::managed::{self, Entry, Managed, Operation};
use crate::reconcile;
use crate::schema::TypeRef;
use crate::walk::{self, WalkError};
use crate::zero;
use serde_json::Value;

/// The manager name Kubernetes uses when a write names none.
pub(crate) const UNKNOWN_MANAGER: &str = "unknown";

/// See [`crate::update`].
pub(crate) fn update(
    definition: &str,
    old: Option<&Value>,
    new: &mut Value,
    writer: &Writer<'_>,
    ignored: &[&str],
) {
    let deep = walk::too_deep(new) || old.is_some_and(walk::too_deep);
    if deep || record(definition, old, new, writer, ignored).is_err() {
        // Kubernetes keeps the stored managed fields when it cannot update them.
        let previous = old
            .and_then(|o| o.pointer("/metadata/managedFields"))
            .cloned();
        set_managed_fields(new, previous);
    }
}

fn record(
    definition: &str,
    old: Option<&Value>,
    new: &mut Value,
    writer: &Writer<'_>,
    ignored: &[&str],
) -> Result<(), WalkError> {
    let requested = take_managed_fields(new);
    let stored = old.and_then(|o| o.pointer("/metadata/managedFields"));
    let through_subresource = writer.subresource.is_some_and(|s| !s.is_empty());
    let mut managed = if through_subresource {
        managed::decode(stored, true).unwrap_or_default()
    } else if managed::is_reset(requested.as_ref()) {
        Managed::default()
    } else {
        match managed::decode(requested.as_ref(), false) {
            Ok(m) if !m.is_empty() => m,
            _ => managed::decode(stored, true).unwrap_or_default(),
        }
    };
    if managed.is_empty() && old.is_some() {
        // Kubernetes starts tracking an untracked object only on create or apply.
        return Ok(());
    }
    let root = TypeRef::root(definition);
    reconcile::managed_fields(&mut managed, &root)?;
    let zero_object;
    let old_value = match old {
        Some(o) => o,
        None => {
            zero_object = zero::object(definition);
            &zero_object
        }
    };
    let ignored = fieldset::from_dotted(ignored);
    record_write(
        &mut managed,
        &root,
        old_value,
        new,
        writer,
        writer.manager,
        &ignored,
    )?;
    managed.cap_updates();
    set_managed_fields(new, managed.encode());
    Ok(())
}

/// Records the change from `old` to `new` as an `Update` by `manager` (with the
/// writer's version, subresource and time) into `managed`.
pub(crate) fn record_write(
    managed: &mut Managed,
    root: &TypeRef,
    old: &Value,
    new: &Value,
    writer: &Writer<'_>,
    manager: &str,
    ignored: &Set,
) -> Result<(), WalkError> {
    let mut cmp = compare::compare(old, new, root)?;
    cmp.exclude(ignored);
    // Fields the write touched leave the other managers (a create usually has none).
    if !managed.entries.is_empty() {
        let touched = cmp.touched();
        if !fieldset::is_empty(&touched) {
            for e in &mut managed.entries {
                fieldset::subtract(&mut e.fields, &touched);
            }
        }
    }
    managed.drop_empty();
    let mut own = cmp.into_changed();
    managed::strip(&mut own);
    if fieldset::is_empty(&own) {
        return Ok(());
    }
    let manager = if manager.is_empty() {
        UNKNOWN_MANAGER
    } else {
        manager
    };
    let subresource = writer.subresource.unwrap_or("");
    match managed.find_mut(manager, Operation::Update, writer.api_version, subresource) {
        Some(entry) => {
            fieldset::union_into(&mut entry.fields, &own);
            entry.time = Some(writer.time.to_owned());
            entry.api_version = writer.api_version.to_owned();
        }
        None => managed.entries.push(Entry {
            manager: manager.to_owned(),
            operation: Operation::Update,
            api_version: writer.api_version.to_owned(),
            subresource: subresource.to_owned(),
            time: Some(writer.time.to_owned()),
            fields: own,
        }),
    }
    Ok(())
}

/// Removes and returns `metadata.managedFields`.
pub(crate) fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")?
        .as_object_mut()?
        .remove("managedFields")
}

/// Sets (or, with `None`, removes) `metadata.managedFields`.
pub(crate) fn set_managed_fields(obj: &mut Value, fields: Option<Value>) {
    let Value::Object(root) = obj else {
        return;
    };
    match fields {
        Some(fields) => {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(meta) = meta {
                meta.insert("managedFields".into(), fields);
            }
        }
        None => {
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.remove("managedFields");
            }
        }
    }
}
