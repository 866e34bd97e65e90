//! ReplicationControllers and PodTemplates, plus the "replicas ≥ 0, status counts
//! consistent" rules shared with the apps workloads.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::pod_defaults::default_template_at;
use crate::core::pod_spec::validate_pod_template_spec;
use crate::core::{reset_status, with_spec};
use crate::meta::nonnegative_field;
use crate::selector;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, child_object, default_value, field, field_at};

/// `SetObjectDefaults_PodTemplate`.
pub(crate) fn default_pod_template_kind(obj: &mut Value) {
    default_template_at(obj, &["template"]);
}

/// `ValidatePodTemplate` (metadata is validated by the caller).
pub(crate) fn validate_pod_template_kind(obj: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    validate_pod_template_spec(field(obj, "template"), &Path::new("template"))
}

/// `SetDefaults_ReplicationController`: selector and labels from the template, one replica.
pub(crate) fn default_rc(obj: &mut Value) {
    let labels = field_at(obj, &["spec", "template", "metadata", "labels"]).clone();
    if let Some(o) = obj.as_object_mut()
        && labels.is_object()
    {
        if let Some(spec) = child_object(o, "spec") {
            let empty = spec
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty());
            if empty {
                spec.insert("selector".to_string(), labels.clone());
            }
        }
        if let Some(meta) = child_object(o, "metadata") {
            let empty = meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty());
            if empty {
                meta.insert("labels".to_string(), labels);
            }
        }
    }
    with_spec(obj, |spec| default_value(spec, "replicas", json!(1)));
    default_template_at(obj, &["spec", "template"]);
}

/// A new controller starts with an empty status.
pub(crate) fn prepare_rc(obj: &mut Value) {
    reset_status(obj, json!({"replicas": 0}));
}

/// `ValidateReplicationControllerSpec`.
pub(crate) fn validate_rc(obj: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(obj, "spec");
    let path = Path::new("spec");
    errs.extend(nonnegative_field(spec, "minReadySeconds", &path));
    let sel = field(spec, "selector");
    if sel.as_object().is_none_or(|m| m.is_empty()) {
        errs.push(FieldError::required(&path.child("selector"), ""));
    }
    errs.extend(nonnegative_field(spec, "replicas", &path));
    let tmpl = field(spec, "template");
    let tp = path.child("template");
    if tmpl.is_null() {
        errs.push(FieldError::required(&tp, ""));
        return errs;
    }
    let s = selector::from_map(sel);
    let labels = field_at(tmpl, &["metadata", "labels"]);
    if !s.is_empty() && !s.matches(labels.as_object()) {
        errs.push(FieldError::invalid(
            &tp.child("metadata").child("labels"),
            labels.clone(),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_pod_template_spec(tmpl, &tp));
    let rp = field_at(tmpl, &["spec", "restartPolicy"])
        .as_str()
        .unwrap_or_default();
    if rp != "Always" {
        errs.push(FieldError::not_supported(
            &tp.child("spec").child("restartPolicy"),
            rp,
            &["Always"],
        ));
    }
    if !field_at(tmpl, &["spec", "activeDeadlineSeconds"]).is_null() {
        errs.push(FieldError::forbidden(
            &tp.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
    errs
}

/// Status counts: not negative, and the ready/available/labeled counts within `replicas`.
pub(crate) fn validate_replica_counts(
    status: &Value,
    path: &Path,
    keys: &[&str],
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in keys {
        errs.extend(nonnegative_field(status, key, path));
    }
    let replicas = status.int("replicas").unwrap_or(0);
    for key in [
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "currentReplicas",
        "updatedReplicas",
    ] {
        if !keys.contains(&key) {
            continue;
        }
        if let Some(v) = status.int(key)
            && v > replicas
        {
            errs.push(FieldError::invalid(
                &path.child(key),
                v,
                "cannot be greater than status.replicas",
            ));
        }
    }
    errs
}

/// `ValidateReplicationControllerStatus`.
pub(crate) fn validate_rc_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let path = Path::new("status");
    let mut errs = validate_replica_counts(
        status,
        &path,
        &[
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "observedGeneration",
        ],
    );
    let ready = status.int("readyReplicas").unwrap_or(0);
    if let Some(a) = status.int("availableReplicas")
        && a > ready
    {
        errs.push(FieldError::invalid(
            &path.child("availableReplicas"),
            a,
            "cannot be greater than readyReplicas",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    #[test]
    fn rc_defaults_and_validation() {
        let mut rc = json!({"metadata": {"name": "r"}, "spec": {"template": {"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        default_rc(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "a"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "a"}));
        assert_eq!(rc["spec"]["replicas"], json!(1));
        assert!(validate_rc(&rc, &ctx()).is_empty());
        rc["spec"]["selector"] = json!({"app": "b"});
        rc["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        let msgs: Vec<String> = validate_rc(&rc, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"a"}: `selector` does not match template `labels`"#,
                r#"spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always""#,
            ]
        );
    }

    #[test]
    fn rc_status() {
        let new = json!({"status": {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3}});
        let errs = validate_rc_status(&new, &Value::Null, &ctx());
        assert_eq!(errs.len(), 3);
    }
}
