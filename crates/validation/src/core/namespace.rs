//! Namespaces: the `kubernetes.io/metadata.name` label, the `kubernetes` finalizer and
//! `Active` phase on create, finalizer names, and the phase rules of status updates.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::meta::validate_finalizer_name;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, child_object, default_str, field, field_at};

/// `SetDefaults_Namespace` and `SetDefaults_NamespaceStatus`.
pub(crate) fn default_namespace(obj: &mut Value) {
    let name = field_at(obj, &["metadata", "name"])
        .as_str()
        .unwrap_or_default()
        .to_string();
    let Some(o) = obj.as_object_mut() else { return };
    if !name.is_empty()
        && let Some(meta) = child_object(o, "metadata")
        && let Some(labels) = child_object(meta, "labels")
    {
        labels.insert(
            "kubernetes.io/metadata.name".to_string(),
            Value::String(name),
        );
    }
    if let Some(status) = child_object(o, "status") {
        default_str(status, "phase", "Active");
    }
}

/// A new namespace is `Active` and carries the `kubernetes` finalizer.
pub(crate) fn prepare(obj: &mut Value) {
    reset_status(obj, json!({"phase": "Active"}));
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    let list = spec.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(l) = list.as_array_mut()
        && !l.iter().any(|f| f.as_str() == Some("kubernetes"))
    {
        l.push(json!("kubernetes"));
    }
}

/// Updates of the main resource keep `spec.finalizers` (only `/finalize` changes them).
pub(crate) fn prepare_update(new: &mut Value, old: &Value) {
    let old_f = field_at(old, &["spec", "finalizers"]).clone();
    if let Some(o) = new.as_object_mut()
        && let Some(spec) = child_object(o, "spec")
    {
        if old_f.is_null() {
            spec.remove("finalizers");
        } else {
            spec.insert("finalizers".to_string(), old_f);
        }
    }
}

/// `ValidateNamespace` (the name rule is the metadata's).
pub(crate) fn validate(ns: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let path = Path::new("spec").child("finalizers");
    field(ns, "spec")
        .str_list("finalizers")
        .iter()
        .flat_map(|f| validate_finalizer_name(f, &path))
        .collect()
}

/// `ValidateNamespaceStatusUpdate`.
pub(crate) fn validate_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let phase = field_at(new, &["status", "phase"])
        .as_str()
        .unwrap_or_default();
    let path = Path::new("status").child("Phase");
    if field_at(new, &["metadata", "deletionTimestamp"]).is_null() {
        if phase != "Active" {
            return vec![FieldError::invalid(
                &path,
                phase,
                "may only be 'Active' if `deletionTimestamp` is empty",
            )];
        }
    } else if phase != "Terminating" {
        return vec![FieldError::invalid(
            &path,
            phase,
            "may only be 'Terminating' if `deletionTimestamp` is not empty",
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_flow() {
        let mut ns = json!({"metadata": {"name": "team-a"}});
        default_namespace(&mut ns);
        prepare(&mut ns);
        default_namespace(&mut ns);
        assert_eq!(
            ns,
            json!({"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
        );
    }

    #[test]
    fn finalizers_and_status() {
        let ctx = Ctx { old: None };
        let ns = json!({"spec": {"finalizers": ["custom", "example.com/x"]}});
        let errs = validate(&ns, &ctx);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.finalizers");
        let st = json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}, "status": {"phase": "Active"}});
        assert_eq!(
            validate_status(&st, &Value::Null, &ctx)[0].to_string(),
            r#"status.Phase: Invalid value: "Active": may only be 'Terminating' if `deletionTimestamp` is not empty"#
        );
        let mut new = json!({"spec": {"finalizers": []}});
        prepare_update(&mut new, &json!({"spec": {"finalizers": ["kubernetes"]}}));
        assert_eq!(new["spec"]["finalizers"], json!(["kubernetes"]));
    }
}
