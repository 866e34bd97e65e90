//! `apps/v1`: Deployments, ReplicaSets, StatefulSets, DaemonSets and ControllerRevisions —
//! their defaults (strategies, replicas, history limits, pod template defaults), status
//! reset on create, selectors that must match the template, rolling update parameters,
//! and what may change on update.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::pod_defaults::default_template_at;
use crate::core::pod_spec::{validate_pod_annotations, validate_pod_template_spec};
use crate::core::replication::validate_replica_counts;
use crate::core::storage::{default_pvc, validate_pvc_spec, validate_template_meta};
use crate::core::{reset_status, with_spec};
use crate::kinds::Kind;
use crate::meta::{immutable, nonnegative_field, validate_annotations, validate_labels};
use crate::selector::{self, validate_label_selector};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{
    Obj, as_int, child_object, default_str, default_value, field, field_at, obj_mut,
};
use kyb_apimachinery::labels::Selector;
use kyb_apimachinery::names;

/// The rules of an `apps/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    Some(match kind {
        "Deployment" => Kind::new(subdomain)
            .with_status()
            .defaults(default_deployment)
            .prepare(|o| reset_status(o, json!({})))
            .validate(validate_deployment)
            .update(validate_selector_immutable)
            .status(validate_deployment_status),
        "ReplicaSet" => Kind::new(subdomain)
            .with_status()
            .defaults(default_replica_set)
            .prepare(|o| reset_status(o, json!({"replicas": 0})))
            .validate(validate_replica_set)
            .update(validate_selector_immutable)
            .status(validate_replica_set_status),
        "StatefulSet" => Kind::new(subdomain)
            .with_status()
            .defaults(default_stateful_set)
            .prepare(|o| reset_status(o, json!({"replicas": 0, "availableReplicas": 0})))
            .validate(validate_stateful_set)
            .update(validate_stateful_set_update)
            .status(validate_stateful_set_status),
        "DaemonSet" => Kind::new(subdomain)
            .with_status()
            .defaults(default_daemon_set)
            .prepare(|o| {
                reset_status(
                    o,
                    json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}),
                )
            })
            .validate(validate_daemon_set)
            .update(validate_selector_immutable)
            .status(validate_daemon_set_status),
        "ControllerRevision" => Kind::new(subdomain)
            .validate(validate_controller_revision)
            .update(|new, old, _| immutable(field(new, "data"), field(old, "data"), &Path::new("data"))),
        _ => return None,
    })
}

/// `SetDefaults_Deployment` plus the pod template's defaults.
pub(crate) fn default_deployment(obj: &mut Value) {
    with_spec(obj, |spec| {
        default_value(spec, "replicas", json!(1));
        if let Some(strategy) = child_object(spec, "strategy") {
            default_str(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = child_object(strategy, "rollingUpdate")
            {
                default_value(ru, "maxUnavailable", json!("25%"));
                default_value(ru, "maxSurge", json!("25%"));
            }
        }
        default_value(spec, "revisionHistoryLimit", json!(10));
        default_value(spec, "progressDeadlineSeconds", json!(600));
    });
    default_template_at(obj, &["spec", "template"]);
}

fn default_replica_set(obj: &mut Value) {
    with_spec(obj, |spec| default_value(spec, "replicas", json!(1)));
    default_template_at(obj, &["spec", "template"]);
}

fn default_daemon_set(obj: &mut Value) {
    with_spec(obj, |spec| {
        if let Some(us) = child_object(spec, "updateStrategy") {
            default_str(us, "type", "RollingUpdate");
            if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = child_object(us, "rollingUpdate")
            {
                default_value(ru, "maxUnavailable", json!(1));
                default_value(ru, "maxSurge", json!(0));
            }
        }
        default_value(spec, "revisionHistoryLimit", json!(10));
    });
    default_template_at(obj, &["spec", "template"]);
}

fn default_stateful_set(obj: &mut Value) {
    with_spec(obj, |spec| {
        default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(us) = child_object(spec, "updateStrategy") {
            let unset = us
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if unset {
                us.insert("type".to_string(), json!("RollingUpdate"));
                default_value(us, "rollingUpdate", json!({}));
            }
            if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = obj_mut(us, "rollingUpdate")
            {
                default_value(ru, "partition", json!(0));
            }
        }
        if let Some(p) = child_object(spec, "persistentVolumeClaimRetentionPolicy") {
            default_str(p, "whenDeleted", "Retain");
            default_str(p, "whenScaled", "Retain");
        }
        default_value(spec, "replicas", json!(1));
        default_value(spec, "revisionHistoryLimit", json!(10));
        if let Some(list) = spec
            .get_mut("volumeClaimTemplates")
            .and_then(Value::as_array_mut)
        {
            for t in list {
                if let Some(o) = t.as_object_mut() {
                    default_str(o, "apiVersion", "v1");
                    default_str(o, "kind", "PersistentVolumeClaim");
                }
                default_pvc(t);
            }
        }
    });
    default_template_at(obj, &["spec", "template"]);
}

/// A non-negative integer or a percentage (`ValidatePositiveIntOrPercent`).
pub(crate) fn validate_int_or_percent(v: &Value, path: &Path) -> Vec<FieldError> {
    match v {
        Value::String(s) => names::percent_errors(s)
            .into_iter()
            .map(|m| FieldError::invalid(path, s.as_str(), m))
            .collect(),
        Value::Null => Vec::new(),
        other => match as_int(other) {
            Some(n) if n < 0 => vec![FieldError::invalid(path, n, crate::meta::IS_NEGATIVE_MSG)],
            Some(_) => Vec::new(),
            None => vec![FieldError::invalid(
                path,
                other.clone(),
                "must be an integer or percentage (e.g '5%')",
            )],
        },
    }
}

/// The number or percentage an int-or-percent holds (0 for garbage).
pub(crate) fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::String(s) => s
            .strip_suffix('%')
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        other => as_int(other).unwrap_or(0),
    }
}

fn not_more_than_100(v: &Value, path: &Path) -> Vec<FieldError> {
    if let Value::String(s) = v
        && s.ends_with('%')
        && int_or_percent_value(v) > 100
    {
        return vec![FieldError::invalid(
            path,
            s.as_str(),
            "must not be greater than 100%",
        )];
    }
    Vec::new()
}

/// The selector rules shared by Deployments and ReplicaSets, returning the parsed
/// selector when it is usable.
fn validate_required_selector(
    spec: &Value,
    kind_word: &str,
    path: &Path,
    errs: &mut Vec<FieldError>,
) -> Option<Selector> {
    let sel = field(spec, "selector");
    let sp = path.child("selector");
    if sel.is_null() {
        errs.push(FieldError::required(&sp, ""));
    } else {
        errs.extend(validate_label_selector(sel, false, &sp));
        let empty = sel.obj("matchLabels").is_none_or(|m| m.is_empty())
            && sel.arr("matchExpressions").is_empty();
        if empty {
            errs.push(FieldError::invalid(
                &sp,
                sel.clone(),
                format!("empty selector is invalid for {kind_word}"),
            ));
        }
    }
    match selector::parse(sel) {
        Ok(s) => Some(s),
        Err(()) => {
            errs.push(FieldError::invalid(
                &sp,
                sel.clone(),
                "invalid label selector",
            ));
            None
        }
    }
}

/// `ValidatePodTemplateSpecForReplicaSet`.
fn validate_template_for_replicas(
    tmpl: &Value,
    selector: &Selector,
    kind_word: &str,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if tmpl.is_null() {
        return vec![FieldError::required(path, "")];
    }
    let labels = field_at(tmpl, &["metadata", "labels"]);
    if !selector.is_empty() && !selector.matches(labels.as_object()) {
        errs.push(FieldError::invalid(
            &path.child("metadata").child("labels"),
            labels.clone(),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_pod_template_spec(tmpl, path));
    let rp = field_at(tmpl, &["spec", "restartPolicy"])
        .as_str()
        .unwrap_or_default();
    if rp != "Always" {
        errs.push(FieldError::not_supported(
            &path.child("spec").child("restartPolicy"),
            rp,
            &["Always"],
        ));
    }
    let ads = field_at(tmpl, &["spec", "activeDeadlineSeconds"]);
    if !ads.is_null() {
        errs.push(FieldError::invalid(
            &path.child("spec").child("activeDeadlineSeconds"),
            ads.clone(),
            format!("activeDeadlineSeconds in {kind_word} is not Supported"),
        ));
    }
    errs
}

fn validate_deployment(d: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(d, "spec");
    let path = Path::new("spec");
    errs.extend(nonnegative_field(spec, "replicas", &path));
    if let Some(sel) = validate_required_selector(spec, "deployment", &path, &mut errs) {
        errs.extend(validate_template_for_replicas(
            field(spec, "template"),
            &sel,
            "ReplicaSet",
            &path.child("template"),
        ));
    }
    let strategy = field(spec, "strategy");
    let sp = path.child("strategy");
    match strategy.str("type") {
        "Recreate" => {
            if strategy.has("rollingUpdate") {
                errs.push(FieldError::forbidden(
                    &sp.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            let ru = field(strategy, "rollingUpdate");
            let rp = sp.child("rollingUpdate");
            if ru.is_null() {
                errs.push(FieldError::required(
                    &rp,
                    "this should be defaulted and never be nil",
                ));
            } else {
                let mu = field(ru, "maxUnavailable");
                let ms = field(ru, "maxSurge");
                errs.extend(validate_int_or_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(validate_int_or_percent(ms, &rp.child("maxSurge")));
                if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                    errs.push(FieldError::invalid(
                        &rp.child("maxUnavailable"),
                        mu.clone(),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                errs.extend(not_more_than_100(mu, &rp.child("maxUnavailable")));
            }
        }
        _ => errs.push(FieldError::not_supported(
            &sp,
            strategy.clone(),
            &["Recreate", "RollingUpdate"],
        )),
    }
    errs.extend(nonnegative_field(spec, "minReadySeconds", &path));
    errs.extend(nonnegative_field(spec, "revisionHistoryLimit", &path));
    if let Some(pds) = spec.int("progressDeadlineSeconds") {
        errs.extend(nonnegative_field(spec, "progressDeadlineSeconds", &path));
        if pds <= spec.int("minReadySeconds").unwrap_or(0) {
            errs.push(FieldError::invalid(
                &path.child("progressDeadlineSeconds"),
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

fn validate_replica_set(rs: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(rs, "spec");
    let path = Path::new("spec");
    errs.extend(nonnegative_field(spec, "replicas", &path));
    errs.extend(nonnegative_field(spec, "minReadySeconds", &path));
    if let Some(sel) = validate_required_selector(spec, "deployment", &path, &mut errs) {
        errs.extend(validate_template_for_replicas(
            field(spec, "template"),
            &sel,
            "ReplicaSet",
            &path.child("template"),
        ));
    }
    errs
}

/// apps/v1 selectors may not change.
fn validate_selector_immutable(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    immutable(
        field_at(new, &["spec", "selector"]),
        field_at(old, &["spec", "selector"]),
        &Path::new("spec").child("selector"),
    )
}

fn validate_daemon_set(ds: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(ds, "spec");
    let path = Path::new("spec");
    let sel = field(spec, "selector");
    errs.extend(validate_label_selector(sel, false, &path.child("selector")));
    let tmpl = field(spec, "template");
    let labels = field_at(tmpl, &["metadata", "labels"]);
    if let Ok(s) = selector::parse(sel)
        && !s.matches(labels.as_object())
    {
        errs.push(FieldError::invalid(
            &path.child("template").child("metadata").child("labels"),
            labels.clone(),
            "`selector` does not match template `labels`",
        ));
    }
    if !sel.is_null()
        && sel.obj("matchLabels").is_none_or(|m| m.is_empty())
        && sel.arr("matchExpressions").is_empty()
    {
        errs.push(FieldError::invalid(
            &path.child("selector"),
            sel.clone(),
            "empty selector is invalid for daemonset",
        ));
    }
    let tp = path.child("template");
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
    let ads = field_at(tmpl, &["spec", "activeDeadlineSeconds"]);
    if !ads.is_null() {
        errs.push(FieldError::invalid(
            &tp.child("spec").child("activeDeadlineSeconds"),
            ads.clone(),
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    errs.extend(nonnegative_field(spec, "minReadySeconds", &path));
    let us = field(spec, "updateStrategy");
    let up = path.child("updateStrategy");
    match us.str("type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let ru = field(us, "rollingUpdate");
            let rp = up.child("rollingUpdate");
            if ru.is_null() {
                errs.push(FieldError::required(&rp, ""));
            } else {
                let mu = field(ru, "maxUnavailable");
                let ms = field(ru, "maxSurge");
                errs.extend(validate_int_or_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(validate_int_or_percent(ms, &rp.child("maxSurge")));
                errs.extend(not_more_than_100(mu, &rp.child("maxUnavailable")));
                errs.extend(not_more_than_100(ms, &rp.child("maxSurge")));
                let has_u = int_or_percent_value(mu) != 0;
                let has_s = int_or_percent_value(ms) != 0;
                if has_u && has_s {
                    errs.push(FieldError::invalid(
                        &rp.child("maxSurge"),
                        ms.clone(),
                        "may not be set when maxUnavailable is non-zero",
                    ));
                } else if !has_u && !has_s {
                    errs.push(FieldError::required(
                        &rp.child("maxUnavailable"),
                        "cannot be 0 when maxSurge is 0",
                    ));
                }
            }
        }
        _ => errs.push(FieldError::not_supported(
            &up,
            us.clone(),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs.extend(nonnegative_field(spec, "revisionHistoryLimit", &path));
    errs
}

fn validate_stateful_set(ss: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(ss, "spec");
    let path = Path::new("spec");
    match spec.str("podManagementPolicy") {
        "" => errs.push(FieldError::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(FieldError::invalid(
            &path.child("podManagementPolicy"),
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let us = field(spec, "updateStrategy");
    let up = path.child("updateStrategy");
    match us.str("type") {
        "" => errs.push(FieldError::required(&up, "")),
        "OnDelete" => {
            if us.has("rollingUpdate") {
                errs.push(FieldError::invalid(
                    &up.child("rollingUpdate"),
                    field(us, "rollingUpdate").clone(),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            let ru = field(us, "rollingUpdate");
            if !ru.is_null() {
                errs.extend(nonnegative_field(
                    ru,
                    "partition",
                    &up.child("rollingUpdate"),
                ));
                let mu = field(ru, "maxUnavailable");
                if !mu.is_null() {
                    let mp = up.child("rollingUpdate").child("maxUnavailable");
                    errs.extend(validate_int_or_percent(mu, &mp));
                    if int_or_percent_value(mu) == 0 {
                        errs.push(FieldError::invalid(&mp, mu.clone(), "cannot be 0"));
                    }
                    errs.extend(not_more_than_100(mu, &mp));
                }
            }
        }
        _ => errs.push(FieldError::invalid(
            &up,
            us.clone(),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    let policy = field(spec, "persistentVolumeClaimRetentionPolicy");
    if !policy.is_null() {
        let pp = path.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = policy.str(key);
            if v != "Retain" && v != "Delete" {
                errs.push(FieldError::not_supported(
                    &pp.child(key),
                    v,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    errs.extend(nonnegative_field(spec, "replicas", &path));
    errs.extend(nonnegative_field(spec, "minReadySeconds", &path));
    if let Some(ord) = spec.obj("ordinals")
        && let Some(start) = ord.get("start").and_then(as_int)
        && start < 0
    {
        errs.push(FieldError::invalid(
            &path.child("ordinals").child("start"),
            start,
            crate::meta::IS_NEGATIVE_MSG,
        ));
    }
    let sel = field(spec, "selector");
    let sp = path.child("selector");
    if sel.is_null() {
        errs.push(FieldError::required(&sp, ""));
    } else {
        errs.extend(validate_label_selector(sel, false, &sp));
        if sel.obj("matchLabels").is_none_or(|m| m.is_empty())
            && sel.arr("matchExpressions").is_empty()
        {
            errs.push(FieldError::invalid(
                &sp,
                sel.clone(),
                "empty selector is invalid for statefulset",
            ));
        }
    }
    let tmpl = field(spec, "template");
    let tp = path.child("template");
    match selector::parse(sel) {
        Err(()) => errs.push(FieldError::invalid(&sp, sel.clone(), "")),
        Ok(s) => {
            let labels = field_at(tmpl, &["metadata", "labels"]);
            if !s.is_empty() && !s.matches(labels.as_object()) {
                errs.push(FieldError::invalid(
                    &tp.child("metadata").child("labels"),
                    labels.clone(),
                    "`selector` does not match template `labels`",
                ));
            }
            let meta = field(tmpl, "metadata");
            errs.extend(validate_labels(field(meta, "labels"), &tp.child("labels")));
            errs.extend(validate_annotations(
                field(meta, "annotations"),
                &tp.child("annotations"),
            ));
            errs.extend(validate_pod_annotations(
                meta,
                field(tmpl, "spec"),
                &tp.child("annotations"),
            ));
        }
    }
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
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    for (i, t) in spec.arr("volumeClaimTemplates").iter().enumerate() {
        let p = path.child("volumeClaimTemplates").index(i);
        let meta = field(t, "metadata");
        errs.extend(validate_template_meta_names(meta, &p.child("metadata")));
        errs.extend(validate_pvc_spec(field(t, "spec"), &p.child("spec")));
    }
    errs
}

/// Claim templates of a StatefulSet carry a name (used in the claims' names) and may
/// carry labels and annotations.
fn validate_template_meta_names(meta: &Value, path: &Path) -> Vec<FieldError> {
    let mut trimmed = meta.clone();
    let name = meta.str("name").to_string();
    if let Some(m) = trimmed.as_object_mut() {
        for key in ["name", "namespace", "creationTimestamp"] {
            m.remove(key);
        }
    }
    let mut errs = validate_template_meta(&trimmed, path);
    if !name.is_empty() {
        for m in names::name_is_dns_subdomain(&name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name.as_str(), m));
        }
    }
    errs
}

const STS_UPDATABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

fn validate_stateful_set_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let strip = |v: &Value| {
        let mut s = field(v, "spec").clone();
        if let Some(m) = s.as_object_mut() {
            for key in STS_UPDATABLE {
                m.remove(*key);
            }
        }
        s
    };
    if !kyb_apimachinery::equality::semantic_eq(&strip(new), &strip(old)) {
        return vec![FieldError::forbidden(
            &Path::new("spec"),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )];
    }
    Vec::new()
}

fn collision_count_decremented(new: &Value, old: &Value) -> Vec<FieldError> {
    let n = field_at(new, &["status", "collisionCount"]).as_i64();
    let o = field_at(old, &["status", "collisionCount"]).as_i64();
    let decremented = match (n, o) {
        (None, Some(_)) => true,
        (Some(a), Some(b)) => a < b,
        _ => false,
    };
    if decremented {
        vec![FieldError::invalid(
            &Path::new("status").child("collisionCount"),
            n.unwrap_or(0),
            "cannot be decremented",
        )]
    } else {
        Vec::new()
    }
}

fn validate_deployment_status(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let path = Path::new("status");
    let mut errs = nonnegative_field(status, "observedGeneration", &path);
    errs.extend(validate_replica_counts(
        status,
        &path,
        &[
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "collisionCount",
        ],
    ));
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
    errs.extend(collision_count_decremented(new, old));
    errs
}

/// A ReplicaSet's status follows the same rules as a ReplicationController's.
fn validate_replica_set_status(new: &Value, old: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    crate::core::replication::validate_rc_status(new, old, ctx)
}

fn validate_stateful_set_status(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let path = Path::new("status");
    let mut errs = validate_replica_counts(
        status,
        &path,
        &[
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "observedGeneration",
            "collisionCount",
        ],
    );
    errs.extend(collision_count_decremented(new, old));
    errs
}

fn validate_daemon_set_status(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let path = Path::new("status");
    let mut errs = Vec::new();
    for key in [
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ] {
        errs.extend(nonnegative_field(status, key, &path));
    }
    errs.extend(collision_count_decremented(new, old));
    errs
}

fn validate_controller_revision(cr: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !cr.has("data") {
        errs.push(FieldError::required(
            &Path::new("data"),
            "data is mandatory",
        ));
    }
    errs.extend(nonnegative_field(cr, "revision", &Path::new("")));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    fn deployment() -> Value {
        let mut d = json!({"metadata": {"name": "d", "namespace": "default"}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}});
        default_deployment(&mut d);
        d
    }

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn deployment_defaults() {
        let d = deployment();
        let spec = &d["spec"];
        assert_eq!(spec["replicas"], json!(1));
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], json!(10));
        assert_eq!(spec["progressDeadlineSeconds"], json!(600));
        assert_eq!(spec["template"]["spec"]["restartPolicy"], json!("Always"));
        assert_eq!(
            spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
            json!("IfNotPresent")
        );
        assert!(validate_deployment(&d, &ctx()).is_empty());
    }

    #[test]
    fn deployment_mistakes() {
        let mut d = deployment();
        d["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
        d["spec"]["replicas"] = json!(-1);
        assert_eq!(
            msgs(validate_deployment(&d, &ctx())),
            vec![
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`"#,
            ]
        );
        let mut d = deployment();
        if let Some(s) = d["spec"].as_object_mut() {
            s.remove("selector");
        }
        assert_eq!(
            msgs(validate_deployment(&d, &ctx())),
            vec![
                "spec.selector: Required value",
                r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`"#,
            ]
        );
        let mut d = deployment();
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
        assert_eq!(
            msgs(validate_deployment(&d, &ctx())),
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
            ]
        );
        let mut new = deployment();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "x": "y"}});
        assert_eq!(
            validate_selector_immutable(&new, &deployment(), &ctx())[0].detail,
            "field is immutable"
        );
    }

    #[test]
    fn stateful_sets() {
        let mut s = json!({"spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "db"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}});
        default_stateful_set(&mut s);
        assert_eq!(
            s["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(
            s["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(
            s["spec"]["volumeClaimTemplates"][0]["status"],
            json!({"phase": "Pending"})
        );
        assert_eq!(
            s["spec"]["volumeClaimTemplates"][0]["kind"],
            json!("PersistentVolumeClaim")
        );
        assert!(validate_stateful_set(&s, &ctx()).is_empty());
        let mut changed = s.clone();
        changed["spec"]["serviceName"] = json!("other");
        assert_eq!(validate_stateful_set_update(&changed, &s, &ctx()).len(), 1);
        changed = s.clone();
        changed["spec"]["replicas"] = json!(5);
        assert!(validate_stateful_set_update(&changed, &s, &ctx()).is_empty());
        s["spec"]["volumeClaimTemplates"][0]["spec"] =
            json!({"resources": {"requests": {"storage": "1Gi"}}});
        assert_eq!(
            msgs(validate_stateful_set(&s, &ctx())),
            vec![
                "spec.volumeClaimTemplates[0].spec.accessModes: Required value: at least 1 access mode is required"
            ]
        );
    }

    #[test]
    fn daemon_sets() {
        let mut ds = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
        default_daemon_set(&mut ds);
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert!(validate_daemon_set(&ds, &ctx()).is_empty());
        ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] = json!(1);
        assert_eq!(
            msgs(validate_daemon_set(&ds, &ctx())),
            vec![
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"
            ]
        );
    }
}
