//! Server-side apply: merging an applied configuration into the live object and
//! recording the applier's fields.
//!
//! The steps are Kubernetes' field manager's: check the configuration's type; bring
//! the recorded sets up to date with the schema; before the first apply to an object
//! nobody tracks, record everything it has as owned by `before-first-apply`; merge;
//! replace the applier's set by the configuration's fields; prune what the applier
//! dropped and nobody owns; refuse fields other managers own with a different value
//! (unless forced, which takes them); take changed and removed fields from the other
//! managers; cap the update entries. An apply that changes nothing leaves the entry's
//! time alone. For the manager `kubectl`, the client-side apply
//! annotation may excuse conflicts and is kept in sync.

use crate::compare;
use crate::conflict::Conflict;
use crate::fieldset::{self, Set};
use crate::last_applied;
use crate::managed::{self, Entry, Managed, Operation};
use crate::merge;
use crate::path;
use crate::prune;
use crate::reconcile;
use crate::schema::TypeRef;
use crate::to_set;
use crate::update::{self, UNKNOWN_MANAGER};
use crate::value;
use crate::walk::{self, MAX_DEPTH, WalkError};
use crate::zero;
use crate::{ApplyError, Writer};
use serde_json::Value;

/// The manager recording what an object had before its first apply.
pub(crate) const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// See [`crate::apply`].
pub(crate) fn apply(
    definition: &str,
    live: Option<&Value>,
    config: &Value,
    writer: &Writer<'_>,
    force: bool,
    ignored: &[&str],
) -> Result<Value, ApplyError> {
    if value::depth(config) > MAX_DEPTH {
        return Err(ApplyError::BadRequest(format!(
            "the applied configuration nests deeper than {MAX_DEPTH} levels"
        )));
    }
    if live.is_some_and(walk::too_deep) {
        return Err(ApplyError::Internal(format!(
            "the live object nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let stored = live.and_then(|l| l.pointer("/metadata/managedFields"));
    let mut managed = managed::decode(stored, true)
        .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?;
    check_type(definition, config, writer)?;
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let root = TypeRef::root(definition);
    let config_set = to_set::field_set(config, &root, true).map_err(|e| {
        ApplyError::InvalidObject(format!(
            "failed to create typed patch object ({}): {}",
            object_description(config),
            e.message()
        ))
    })?;
    reconcile::managed_fields(&mut managed, &root).map_err(|e| {
        ApplyError::Internal(format!(
            "failed to reconcile managed fields: {}",
            e.message()
        ))
    })?;
    let mut live_value = match live {
        Some(l) => l.clone(),
        None => zero::object(definition),
    };
    update::take_managed_fields(&mut live_value);
    let ignored = fieldset::from_dotted(ignored);
    let run = Run {
        definition,
        root: &root,
        live: &live_value,
        config,
        config_set: &config_set,
        writer,
        ignored: &ignored,
    };
    let outcome = match run.apply(managed.clone(), force) {
        Err(Failure::Conflicts(conflicts)) if writer.manager == last_applied::KUBECTL => {
            excuse_conflicts(&run, live.unwrap_or(&live_value), managed, conflicts)
        }
        other => other,
    };
    let (mut object, managed) = outcome.map_err(|f| f.into_error(live.unwrap_or(&live_value)))?;
    if writer.manager == last_applied::KUBECTL {
        last_applied::sync_annotation(&mut object, config);
    }
    update::set_managed_fields(&mut object, managed.encode());
    Ok(object)
}

/// The apply of `kubectl` may go ahead despite conflicts on fields its client-side
/// annotation still describes.
fn excuse_conflicts(
    run: &Run<'_>,
    live: &Value,
    managed: Managed,
    conflicts: Vec<(Conflict, Vec<String>)>,
) -> Result<(Value, Managed), Failure> {
    let Some(allowed) = last_applied::allowed_conflicts(live, run.writer.api_version, run.root)
    else {
        return Err(Failure::Conflicts(conflicts));
    };
    let remaining: Vec<(Conflict, Vec<String>)> = conflicts
        .into_iter()
        .filter(|(_, p)| !fieldset::contains(&allowed, p))
        .collect();
    if remaining.is_empty() {
        run.apply(managed, true)
    } else {
        Err(Failure::Conflicts(remaining))
    }
}

/// Why an attempt failed.
enum Failure {
    /// Conflicts, each with its path (serialized steps).
    Conflicts(Vec<(Conflict, Vec<String>)>),
    Walk(WalkError),
}

impl From<WalkError> for Failure {
    fn from(e: WalkError) -> Self {
        Failure::Walk(e)
    }
}

impl Failure {
    fn into_error(self, live: &Value) -> ApplyError {
        match self {
            Failure::Conflicts(c) => ApplyError::Conflicts(c.into_iter().map(|(c, _)| c).collect()),
            Failure::Walk(e) => ApplyError::Internal(format!(
                "failed to create typed live object ({}): {}",
                object_description(live),
                e.message()
            )),
        }
    }
}

struct Run<'a> {
    definition: &'a str,
    root: &'a TypeRef,
    /// The live object (or the kind's zero value), without managed fields.
    live: &'a Value,
    config: &'a Value,
    config_set: &'a Set,
    writer: &'a Writer<'a>,
    ignored: &'a Set,
}

impl Run<'_> {
    fn apply(&self, mut managed: Managed, force: bool) -> Result<(Value, Managed), Failure> {
        let writer = self.writer;
        let subresource = writer.subresource.unwrap_or("");
        if managed.is_empty() {
            let zero = zero::object(self.definition);
            update::record_write(
                &mut managed,
                self.root,
                &zero,
                self.live,
                writer,
                BEFORE_FIRST_APPLY,
                self.ignored,
            )?;
            managed.cap_updates();
        }
        let manager = if writer.manager.is_empty() {
            UNKNOWN_MANAGER
        } else {
            writer.manager
        };
        let merged = merge::merge(self.live, self.config, self.root)?;
        let last = managed.take(manager, Operation::Apply, writer.api_version, subresource);
        let mut applied = self.config_set.clone();
        fieldset::subtract_recursive(&mut applied, self.ignored);
        let mut owned = managed.union();
        fieldset::union_into(&mut owned, &applied);
        let last_set = last.as_ref().map(|e| e.fields.clone()).unwrap_or_default();
        let merged = prune::prune(merged, &owned, &last_set, self.root)?;

        let mut cmp = compare::compare(self.live, &merged, self.root)?;
        cmp.exclude(self.ignored);
        let changed = cmp.changed();
        let mut conflicts = Vec::new();
        for e in &managed.entries {
            let clash = fieldset::intersection(&e.fields, &changed);
            if fieldset::is_empty(&clash) {
                continue;
            }
            for p in fieldset::members(&clash) {
                conflicts.push((conflict_of(e, &p), p));
            }
        }
        if !force && !conflicts.is_empty() {
            conflicts.sort_by(|(a, pa), (b, pb)| {
                let ida = managed::identifier(
                    &a.manager,
                    op_of(a),
                    a.api_version.as_deref().unwrap_or(""),
                    a.subresource.as_deref().unwrap_or(""),
                );
                let idb = managed::identifier(
                    &b.manager,
                    op_of(b),
                    b.api_version.as_deref().unwrap_or(""),
                    b.subresource.as_deref().unwrap_or(""),
                );
                ida.cmp(&idb).then_with(|| fieldset::compare_paths(pa, pb))
            });
            return Err(Failure::Conflicts(conflicts));
        }
        let touched = cmp.touched();
        for e in &mut managed.entries {
            fieldset::subtract(&mut e.fields, &touched);
        }
        managed.drop_empty();

        managed::strip(&mut applied);
        let changed_object = !value::equal(self.live, &merged);
        if !fieldset::is_empty(&applied) {
            let previous_time = last.and_then(|e| e.time);
            managed.entries.push(Entry {
                manager: manager.to_owned(),
                operation: Operation::Apply,
                api_version: writer.api_version.to_owned(),
                subresource: subresource.to_owned(),
                time: if changed_object {
                    Some(writer.time.to_owned())
                } else {
                    previous_time
                },
                fields: applied,
            });
        }
        // Kubernetes caps the update entries after every write, applies included.
        managed.cap_updates();
        let object = if changed_object {
            merged
        } else {
            self.live.clone()
        };
        Ok((object, managed))
    }
}

fn op_of(c: &Conflict) -> Operation {
    if c.api_version.is_some() {
        Operation::Update
    } else {
        Operation::Apply
    }
}

fn conflict_of(e: &Entry, p: &[String]) -> Conflict {
    Conflict {
        manager: e.manager.clone(),
        api_version: (e.operation == Operation::Update).then(|| e.api_version.clone()),
        subresource: (!e.subresource.is_empty()).then(|| e.subresource.clone()),
        field: path::display(p),
    }
}

/// Refuses a configuration of another type or version, as Kubernetes does.
fn check_type(definition: &str, config: &Value, writer: &Writer<'_>) -> Result<(), ApplyError> {
    let Value::Object(map) = config else {
        return Err(ApplyError::BadRequest(format!(
            "error decoding YAML: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(config)
        )));
    };
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let expected_kind = definition.rsplit('.').next().unwrap_or(definition);
    if api_version != writer.api_version || kind != expected_kind {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk(api_version, kind)
        )));
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

/// Go's `GroupVersionKind.String()` of an object's `apiVersion` and `kind`.
fn gvk(api_version: &str, kind: &str) -> String {
    match api_version.matches('/').count() {
        0 => format!("/{api_version}, Kind={kind}"),
        1 => {
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            format!("{group}/{version}, Kind={kind}")
        }
        // Kubernetes cannot parse the version, and prints an empty kind.
        _ => "/, Kind=".to_owned(),
    }
}

/// `<namespace>/<name>; <group>/<version>, Kind=<kind>`, as Kubernetes names objects
/// in these errors.
fn object_description(obj: &Value) -> String {
    let meta = |key: &str| {
        obj.pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}; {}",
        meta("namespace"),
        meta("name"),
        gvk(api_version, kind)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gvk_strings() {
        assert_eq!(gvk("apps/v1", "Deployment"), "apps/v1, Kind=Deployment");
        assert_eq!(gvk("v1", "Pod"), "/v1, Kind=Pod");
        assert_eq!(gvk("a/b/c", "X"), "/, Kind=");
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "admin-api", "namespace": "general"}});
        assert_eq!(
            object_description(&cm),
            "general/admin-api; /v1, Kind=Service"
        );
    }
}
