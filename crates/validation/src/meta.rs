//! `metadata` validation, as apimachinery's `ValidateObjectMeta` and
//! `ValidateObjectMetaUpdate` plus the core group's finalizer rule: names per kind,
//! generateName, namespace required or forbidden, labels, annotations (syntax and the
//! 256 KiB total), owner references, finalizers and managed fields; on update the fields
//! that may never change.

use serde_json::Value;

use kyb_apimachinery::field::Path;
use kyb_apimachinery::field::{FieldError, render_value};
use kyb_apimachinery::json::{Obj, as_int, field};
use kyb_apimachinery::names;

/// How the names of a kind are checked: `(name, is_generate_name_prefix) -> messages`.
pub(crate) type NameFn = fn(&str, bool) -> Vec<String>;

/// Total size limit of annotations (keys plus values), in bytes.
pub(crate) const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Messages Kubernetes uses in many places.
pub(crate) const IS_NEGATIVE_MSG: &str = "must be greater than or equal to 0";
pub(crate) const FIELD_IMMUTABLE_MSG: &str = "field is immutable";

/// Options of metadata validation beyond the name rule and scope.
#[derive(Clone, Copy)]
pub(crate) struct MetaRules {
    pub(crate) name_fn: NameFn,
    /// Apply the core group's rule that unqualified finalizer names must be standard ones.
    pub(crate) kube_finalizers: bool,
}

/// Validates `metadata` of a new object.
pub(crate) fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    rules: MetaRules,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name_fn = rules.name_fn;
    let generate_name = meta.str("generateName");
    if !generate_name.is_empty() {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                generate_name,
                msg,
            ));
        }
    }
    let name = meta.str("name");
    if name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for msg in name_fn(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, msg));
        }
    }
    let namespace = meta.str("namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(&path.child("namespace"), ""));
        } else {
            for msg in names::name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid(
                    &path.child("namespace"),
                    namespace,
                    msg,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.int("generation")
        && g < 0
    {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            g,
            IS_NEGATIVE_MSG,
        ));
    }
    errs.extend(validate_common(meta, rules, path));
    errs
}

/// The checks shared by create and update: labels, annotations, owner references,
/// finalizers, managed fields.
fn validate_common(meta: &Value, rules: MetaRules, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(validate_labels(
        field(meta, "labels"),
        &path.child("labels"),
    ));
    errs.extend(validate_annotations(
        field(meta, "annotations"),
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        meta.arr("ownerReferences"),
        &path.child("ownerReferences"),
    ));
    errs.extend(validate_finalizers(
        meta.arr("finalizers"),
        &path.child("finalizers"),
    ));
    if rules.kube_finalizers {
        for (i, f) in meta.arr("finalizers").iter().enumerate() {
            if let Some(f) = f.as_str() {
                errs.extend(validate_kube_finalizer_name(
                    f,
                    &path.child("finalizers").index(i),
                ));
            }
        }
    }
    errs.extend(validate_managed_fields(
        meta.arr("managedFields"),
        &path.child("managedFields"),
    ));
    errs
}

/// Validates `metadata` on update: everything checked on create except the name format,
/// plus the fields that may not change.
pub(crate) fn validate_object_meta_update(
    new: &Value,
    old: &Value,
    rules: MetaRules,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if old.has("deletionTimestamp") {
        let old_f = old.str_list("finalizers");
        let mut extra: Vec<&str> = new
            .str_list("finalizers")
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        if !extra.is_empty() {
            let list = Value::from(extra.iter().map(|s| Value::from(*s)).collect::<Vec<_>>());
            errs.push(FieldError::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    render_value(&list)
                ),
            ));
        }
    }
    if let (Some(n), Some(o)) = (new.int("generation"), old.int("generation"))
        && n < o
    {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            n,
            "must not be decremented",
        ));
    }
    for key in ["name", "namespace"] {
        let n = new.str(key);
        if n != old.str(key) {
            errs.push(FieldError::invalid(
                &path.child(key),
                n,
                FIELD_IMMUTABLE_MSG,
            ));
        }
    }
    // The engine carries these over from the stored object when a request leaves them out;
    // only an explicit different value is an error.
    for key in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        if let Some(n) = new.get_field(key)
            && old.get_field(key) != Some(n)
        {
            errs.push(FieldError::invalid(
                &path.child(key),
                n.clone(),
                FIELD_IMMUTABLE_MSG,
            ));
        }
    }
    errs.extend(validate_common(new, rules, path));
    errs
}

/// Validates a label map (`metadata.labels`, selectors' `matchLabels`, `nodeSelector`).
pub(crate) fn validate_labels(labels: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(m) = labels {
        for (k, v) in m {
            errs.extend(validate_label_name(k, path));
            match v {
                Value::String(v) => {
                    for msg in names::label_value_errors(v) {
                        errs.push(FieldError::invalid(path, v.as_str(), msg));
                    }
                }
                Value::Null => {}
                other => errs.push(FieldError::invalid(path, other.clone(), "must be a string")),
            }
        }
    }
    errs
}

/// Validates a label key.
pub(crate) fn validate_label_name(name: &str, path: &Path) -> Vec<FieldError> {
    names::qualified_name_errors(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect()
}

/// Validates a qualified name at a field.
pub(crate) fn validate_qualified_name(value: &str, path: &Path) -> Vec<FieldError> {
    validate_label_name(value, path)
}

/// Validates an annotation map: keys are qualified names (case-insensitive), and keys plus
/// values stay within 256 KiB.
pub(crate) fn validate_annotations(annotations: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(m) = annotations {
        let mut total = 0usize;
        for (k, v) in m {
            for msg in names::qualified_name_errors(&k.to_lowercase()) {
                errs.push(FieldError::invalid(path, k.as_str(), msg));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
        }
    }
    errs
}

/// Splits an `apiVersion` into group and version as Kubernetes' `ParseGroupVersion` does;
/// malformed values give empty parts.
pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    let parts: Vec<&str> = api_version.split('/').collect();
    match parts.as_slice() {
        [v] => ("", v),
        [g, v] => (g, v),
        _ => ("", ""),
    }
}

fn validate_owner_references(refs: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let api_version = r.str("apiVersion");
        let kind = r.str("kind");
        let (group, version) = split_api_version(api_version);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("kind"),
                kind,
                "must not be empty",
            ));
        }
        if r.str("name").is_empty() {
            errs.push(FieldError::invalid(
                &path.child("name"),
                r.str("name"),
                "must not be empty",
            ));
        }
        if r.str("uid").is_empty() {
            errs.push(FieldError::invalid(
                &path.child("uid"),
                r.str("uid"),
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                r.clone(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.flag("controller") {
            let current = format!("{}/{}", kind, r.str("name"));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    Value::from(refs.to_vec()),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

fn validate_finalizers(finalizers: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut orphan = false;
    let mut foreground = false;
    for f in finalizers {
        let Some(f) = f.as_str() else { continue };
        for msg in names::qualified_name_errors(f) {
            errs.push(FieldError::invalid(path, f, msg));
        }
        orphan |= f == "orphan";
        foreground |= f == "foregroundDeletion";
    }
    if orphan && foreground {
        errs.push(FieldError::invalid(
            path,
            Value::from(finalizers.to_vec()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// The core group's rule: a finalizer without a '/' must be a standard one.
pub(crate) fn validate_kube_finalizer_name(name: &str, path: &Path) -> Vec<FieldError> {
    if !name.contains('/') && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion") {
        vec![FieldError::invalid(
            path,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
        )]
    } else {
        Vec::new()
    }
}

/// A finalizer in `spec.finalizers` of a Namespace: qualified, and standard if unqualified.
pub(crate) fn validate_finalizer_name(name: &str, path: &Path) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = names::qualified_name_errors(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect();
    errs.extend(validate_kube_finalizer_name(name, path));
    errs
}

fn validate_managed_fields(entries: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let p = path.index(i);
        let op = e.str("operation");
        if op != "Apply" && op != "Update" {
            errs.push(FieldError::invalid(
                &p.child("operation"),
                op,
                "must be `Apply` or `Update`",
            ));
        }
        let ft = e.str("fieldsType");
        if !ft.is_empty() && ft != "FieldsV1" {
            errs.push(FieldError::invalid(
                &p.child("fieldsType"),
                ft,
                "must be `FieldsV1`",
            ));
        }
        let manager = e.str("manager");
        if manager.len() > 128 {
            errs.push(FieldError::too_long(&p.child("manager"), 128));
        }
        for (pos, c) in manager.char_indices() {
            if c.is_control() {
                errs.push(FieldError::invalid(
                    &p.child("manager"),
                    manager,
                    format!("invalid character U+{:04X} (at position {pos})", c as u32),
                ));
            }
        }
        if e.str("subresource").len() > 256 {
            errs.push(FieldError::too_long(&p.child("subresource"), 256));
        }
    }
    errs
}

/// `ValidateNonnegativeField`.
pub(crate) fn nonnegative(v: Option<i64>, path: &Path) -> Vec<FieldError> {
    match v {
        Some(n) if n < 0 => vec![FieldError::invalid(path, n, IS_NEGATIVE_MSG)],
        _ => Vec::new(),
    }
}

/// `ValidateNonnegativeField` on a JSON field that may be absent.
pub(crate) fn nonnegative_field(obj: &Value, key: &str, path: &Path) -> Vec<FieldError> {
    nonnegative(obj.get_field(key).and_then(as_int), &path.child(key))
}

/// `ValidateImmutableField`: `Invalid(path, new, "field is immutable")` when the values differ
/// (absent and `null` are the same).
pub(crate) fn immutable(new: &Value, old: &Value, path: &Path) -> Vec<FieldError> {
    if kyb_apimachinery::equality::semantic_eq(new, old) {
        Vec::new()
    } else {
        vec![FieldError::invalid(path, new.clone(), FIELD_IMMUTABLE_MSG)]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const RULES: MetaRules = MetaRules {
        name_fn: names::name_is_dns_subdomain,
        kube_finalizers: true,
    };

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_meta() {
        let m = json!({"name": "a", "namespace": "default", "labels": {"app": "x"}, "annotations": {"Example.com/A": "1"}});
        assert!(validate_object_meta(&m, true, RULES, &Path::new("metadata")).is_empty());
    }

    #[test]
    fn name_and_namespace_rules() {
        let errs = validate_object_meta(&json!({}), true, RULES, &Path::new("metadata"));
        assert_eq!(
            messages(&errs),
            vec![
                "metadata.name: Required value: name or generateName is required",
                "metadata.namespace: Required value"
            ]
        );
        let errs = validate_object_meta(
            &json!({"name": "a", "namespace": "x"}),
            false,
            RULES,
            &Path::new("metadata"),
        );
        assert_eq!(
            messages(&errs),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
        let errs = validate_object_meta(
            &json!({"name": "A_b", "namespace": "Bad"}),
            true,
            RULES,
            &Path::new("metadata"),
        );
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].field, "metadata.name");
        assert_eq!(errs[1].field, "metadata.namespace");
    }

    #[test]
    fn labels_and_annotations() {
        let errs = validate_labels(
            &json!({"a/b/c": "ok", "k": "-bad"}),
            &Path::new("metadata.labels"),
        );
        assert_eq!(errs.len(), 2);
        assert!(errs.iter().all(|e| e.field == "metadata.labels"));
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        let errs = validate_annotations(&json!({"a": big}), &Path::new("metadata.annotations"));
        assert_eq!(
            messages(&errs),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn owner_references_and_finalizers() {
        let m = json!({"name": "a", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
            {"apiVersion": "", "kind": "", "name": "", "uid": "", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "2", "controller": true}
        ], "finalizers": ["custom", "orphan", "foregroundDeletion", "example.com/ok"]});
        let errs = validate_object_meta(&m, false, RULES, &Path::new("metadata"));
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"metadata.ownerReferences.apiVersion"));
        assert!(fields.contains(&"metadata.ownerReferences.uid"));
        assert!(fields.contains(&"metadata.finalizers[0]"));
        assert!(
            errs.iter()
                .any(|e| e.detail.starts_with("Only one reference"))
        );
        assert!(
            errs.iter()
                .any(|e| e.detail == "finalizer orphan and foregroundDeletion cannot be both set")
        );
        assert!(
            errs.iter()
                .any(|e| e.detail == "/v1, Kind=Event is disallowed from being an owner")
        );
    }

    #[test]
    fn update_rules() {
        let old = json!({"name": "a", "namespace": "n", "uid": "1", "generation": 3, "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x/y"]});
        let new = json!({"name": "b", "namespace": "n", "uid": "2", "generation": 2, "finalizers": ["x/y", "a/b"]});
        let errs = validate_object_meta_update(&new, &old, RULES, &Path::new("metadata"));
        let msgs = messages(&errs);
        assert!(
            msgs.contains(&r#"metadata.name: Invalid value: "b": field is immutable"#.to_string())
        );
        assert!(
            msgs.contains(&r#"metadata.uid: Invalid value: "2": field is immutable"#.to_string())
        );
        assert!(msgs.contains(
            &"metadata.generation: Invalid value: 2: must not be decremented".to_string()
        ));
        assert!(msgs.contains(&r#"metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"a/b"}"#.to_string()));
    }
}
