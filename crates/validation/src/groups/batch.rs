//! `batch/v1`: Jobs and CronJobs — defaults, the generated Job selector and labels,
//! completions/parallelism/backoff rules, restart policy, pod failure policies, cron
//! schedules and time zones, and what may change on update.

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::core::pod_defaults::default_template_at;
use crate::core::pod_spec::validate_pod_template_spec;
use crate::core::{reset_status, with_spec};
use crate::cron;
use crate::kinds::Kind;
use crate::meta::{FIELD_IMMUTABLE_MSG, immutable, nonnegative_field, validate_qualified_name};
use crate::selector::{self, validate_label_selector};
use kyb_apimachinery::equality::semantic_eq;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, child_object, default_str, default_value, field, field_at};
use kyb_apimachinery::names;

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_JOB_NAME: &str = "job-name";

/// The rules of a `batch/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    Some(match kind {
        "Job" => Kind::new(subdomain)
            .with_status()
            .defaults(default_job)
            .prepare(prepare_job)
            .validate(validate_job)
            .update(validate_job_update)
            .status(validate_job_status),
        "CronJob" => Kind::new(subdomain)
            .with_status()
            .defaults(default_cron_job)
            .prepare(|o| reset_status(o, json!({})))
            .validate(validate_cron_job),
        _ => return None,
    })
}

/// `SetDefaults_Job` plus the pod template's defaults.
pub(crate) fn default_job(obj: &mut Value) {
    let template_labels = field_at(obj, &["spec", "template", "metadata", "labels"]).clone();
    with_spec(obj, |spec| {
        let completions_unset = spec.get("completions").is_none_or(Value::is_null);
        let parallelism_unset = spec.get("parallelism").is_none_or(Value::is_null);
        if completions_unset && parallelism_unset {
            spec.insert("completions".to_string(), json!(1));
        }
        default_value(spec, "parallelism", json!(1));
        let per_index = spec
            .get("backoffLimitPerIndex")
            .is_some_and(|v| !v.is_null());
        default_value(
            spec,
            "backoffLimit",
            json!(if per_index { i32::MAX } else { 6 }),
        );
        default_value(spec, "completionMode", json!("NonIndexed"));
        default_value(spec, "suspend", json!(false));
        let has_failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
        if let Some(rules) = spec
            .get_mut("podFailurePolicy")
            .and_then(|p| p.get_mut("rules"))
            .and_then(Value::as_array_mut)
        {
            for rule in rules {
                if let Some(patterns) = rule
                    .get_mut("onPodConditions")
                    .and_then(Value::as_array_mut)
                {
                    for p in patterns {
                        if let Some(p) = p.as_object_mut() {
                            default_str(p, "status", "True");
                        }
                    }
                }
            }
        }
        default_value(
            spec,
            "podReplacementPolicy",
            json!(if has_failure_policy {
                "Failed"
            } else {
                "TerminatingOrFailed"
            }),
        );
    });
    if template_labels.as_object().is_some_and(|m| !m.is_empty())
        && let Some(o) = obj.as_object_mut()
        && let Some(meta) = child_object(o, "metadata")
        && meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        meta.insert("labels".to_string(), template_labels);
    }
    default_template_at(obj, &["spec", "template"]);
}

/// Create: empty status, and unless `manualSelector` is set, the selector and pod labels
/// generated from the Job's name and uid (set `metadata.uid` before calling).
fn prepare_job(obj: &mut Value) {
    reset_status(obj, json!({}));
    if field_at(obj, &["spec", "manualSelector"]).as_bool() == Some(true) {
        return;
    }
    let name = field_at(obj, &["metadata", "name"])
        .as_str()
        .unwrap_or_default()
        .to_string();
    let uid = field_at(obj, &["metadata", "uid"])
        .as_str()
        .unwrap_or_default()
        .to_string();
    if uid.is_empty() {
        return;
    }
    with_spec(obj, |spec| {
        if let Some(t) = child_object(spec, "template")
            && let Some(meta) = child_object(t, "metadata")
            && let Some(labels) = child_object(meta, "labels")
        {
            for (k, v) in [
                (LEGACY_JOB_NAME, &name),
                (JOB_NAME, &name),
                (LEGACY_CONTROLLER_UID, &uid),
                (CONTROLLER_UID, &uid),
            ] {
                labels
                    .entry(k.to_string())
                    .or_insert_with(|| Value::String(v.clone()));
            }
        }
        if let Some(sel) = child_object(spec, "selector")
            && let Some(ml) = child_object(sel, "matchLabels")
        {
            ml.entry(CONTROLLER_UID.to_string())
                .or_insert_with(|| Value::String(uid.clone()));
        }
    });
}

/// `ValidateHasLabel`.
fn has_label(meta: &Value, path: &Path, key: &str, expected: &str) -> Vec<FieldError> {
    let labels = field(meta, "labels");
    let lp = path.child("labels").key(key);
    match labels.get(key).and_then(Value::as_str) {
        None => vec![FieldError::required(&lp, format!("must be '{expected}'"))],
        Some(v) if v != expected => vec![FieldError::invalid(
            &lp,
            labels.clone(),
            format!("must be '{expected}'"),
        )],
        _ => Vec::new(),
    }
}

fn validate_generated_selector(job: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if field_at(job, &["spec", "manualSelector"]).as_bool() == Some(true) {
        return errs;
    }
    let uid = field_at(job, &["metadata", "uid"])
        .as_str()
        .unwrap_or_default();
    if uid.is_empty() {
        return errs;
    }
    let name = field_at(job, &["metadata", "name"])
        .as_str()
        .unwrap_or_default();
    let tmeta = field_at(job, &["spec", "template", "metadata"]);
    let mp = Path::new("spec").child("template").child("metadata");
    errs.extend(has_label(tmeta, &mp, LEGACY_CONTROLLER_UID, uid));
    errs.extend(has_label(tmeta, &mp, LEGACY_JOB_NAME, name));
    errs.extend(has_label(tmeta, &mp, CONTROLLER_UID, uid));
    errs.extend(has_label(tmeta, &mp, JOB_NAME, name));
    let sel = field_at(job, &["spec", "selector"]);
    let expected = json!({"matchLabels": {CONTROLLER_UID: uid}});
    if !semantic_eq(sel, &expected) {
        errs.push(FieldError::invalid(
            &Path::new("spec").child("selector"),
            sel.clone(),
            "`selector` not auto-generated",
        ));
    }
    errs
}

fn validate_pod_failure_policy(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy = field(spec, "podFailurePolicy");
    let rules = policy.arr("rules");
    let rp = path.child("rules");
    if rules.len() > 20 {
        errs.push(FieldError::too_many(&rp, rules.len(), 20));
    }
    let per_index = spec.has("backoffLimitPerIndex");
    let mut containers: Vec<&str> = Vec::new();
    let tspec = field_at(spec, &["template", "spec"]);
    for key in ["initContainers", "containers"] {
        containers.extend(tspec.arr(key).iter().map(|c| c.str("name")));
    }
    for (i, rule) in rules.iter().enumerate() {
        let p = rp.index(i);
        let action = rule.str("action");
        let mut actions = vec!["Count", "FailIndex", "FailJob", "Ignore"];
        if !per_index {
            actions.retain(|a| *a != "FailIndex");
        }
        if action.is_empty() {
            errs.push(FieldError::required(&p.child("action"), ""));
        } else if action == "FailIndex" && !per_index {
            errs.push(FieldError::forbidden(
                &p.child("action"),
                "The action FailIndex is only supported when backoffLimitPerIndex is set",
            ));
        } else if !actions.contains(&action) {
            errs.push(FieldError::not_supported(
                &p.child("action"),
                action,
                &actions,
            ));
        }
        let exit = field(rule, "onExitCodes");
        let conds = rule.arr("onPodConditions");
        if !exit.is_null() && !conds.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                "",
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ));
        } else if exit.is_null() && conds.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                "",
                "specifying one of OnExitCodes and OnPodConditions is required",
            ));
        }
        if !exit.is_null() {
            let ep = p.child("onExitCodes");
            if let Some(c) = exit.opt_str("containerName")
                && !containers.contains(&c)
            {
                errs.push(FieldError::invalid(
                    &ep.child("containerName"),
                    c,
                    "must be one of the container or initContainer names in the pod template",
                ));
            }
            let op = exit.str("operator");
            if op != "In" && op != "NotIn" {
                errs.push(FieldError::not_supported(
                    &ep.child("operator"),
                    op,
                    &["In", "NotIn"],
                ));
            }
            let values: Vec<i64> = exit
                .arr("values")
                .iter()
                .filter_map(kyb_apimachinery::json::as_int)
                .collect();
            if values.is_empty() {
                errs.push(FieldError::required(
                    &ep.child("values"),
                    "at least one value is required",
                ));
            }
            if values.len() > 255 {
                errs.push(FieldError::too_many(&ep.child("values"), values.len(), 255));
            }
            for (j, v) in values.iter().enumerate() {
                if j > 0 && values.get(j - 1).is_some_and(|prev| prev == v) {
                    errs.push(FieldError::duplicate(&ep.child("values").index(j), *v));
                } else if j > 0 && values.get(j - 1).is_some_and(|prev| prev > v) {
                    errs.push(FieldError::invalid(
                        &ep.child("values").index(j),
                        *v,
                        "must be ordered",
                    ));
                }
                if op == "In" && *v == 0 {
                    errs.push(FieldError::invalid(
                        &ep.child("values").index(j),
                        *v,
                        "must not be 0 for the In operator",
                    ));
                }
            }
        }
        for (j, c) in conds.iter().enumerate() {
            let cp = p.child("onPodConditions").index(j);
            errs.extend(validate_qualified_name(c.str("type"), &cp.child("type")));
            let status = c.str("status");
            if !["True", "False", "Unknown"].contains(&status) {
                errs.push(FieldError::not_supported(
                    &cp.child("status"),
                    status,
                    &["True", "False", "Unknown"],
                ));
            }
        }
    }
    errs
}

/// `validateJobSpec` (shared by Jobs and CronJob job templates).
fn validate_job_spec_common(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        errs.extend(nonnegative_field(spec, key, path));
    }
    if spec.has("maxFailedIndexes") {
        errs.extend(nonnegative_field(spec, "maxFailedIndexes", path));
        if !spec.has("backoffLimitPerIndex") {
            errs.push(FieldError::required(
                &path.child("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(mb) = spec.opt_str("managedBy") {
        errs.extend(validate_qualified_name(mb, &path.child("managedBy")));
        if mb.len() > 63 {
            errs.push(FieldError::too_long(&path.child("managedBy"), 63));
        }
    }
    let mode = spec.opt_str("completionMode");
    if let Some(m) = mode {
        if m != "NonIndexed" && m != "Indexed" {
            errs.push(FieldError::not_supported(
                &path.child("completionMode"),
                m,
                &["NonIndexed", "Indexed"],
            ));
        }
        if m == "Indexed" {
            if !spec.has("completions") {
                errs.push(FieldError::required(
                    &path.child("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(p) = spec.int("parallelism")
                && p > 100_000
            {
                errs.push(FieldError::invalid(
                    &path.child("parallelism"),
                    p,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(m)) = (spec.int("completions"), spec.int("maxFailedIndexes"))
                && m > c
            {
                errs.push(FieldError::invalid(
                    &path.child("maxFailedIndexes"),
                    m,
                    "must be less than or equal to completions",
                ));
            }
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        for key in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(v) = spec.int(key) {
                errs.push(FieldError::invalid(
                    &path.child(key),
                    v,
                    "requires indexed completion mode",
                ));
            }
        }
    }
    if spec.has("podFailurePolicy") {
        errs.extend(validate_pod_failure_policy(
            spec,
            &path.child("podFailurePolicy"),
        ));
    }
    if let Some(prp) = spec.opt_str("podReplacementPolicy") {
        let p = path.child("podReplacementPolicy");
        if spec.has("podFailurePolicy") {
            if prp != "Failed" {
                errs.push(FieldError::not_supported(&p, prp, &["Failed"]));
            }
        } else if prp != "TerminatingOrFailed" && prp != "Failed" {
            errs.push(FieldError::not_supported(
                &p,
                prp,
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let tmpl = field(spec, "template");
    let tp = path.child("template");
    errs.extend(validate_pod_template_spec(tmpl, &tp));
    let rp = field_at(tmpl, &["spec", "restartPolicy"])
        .as_str()
        .unwrap_or_default();
    let rpp = tp.child("spec").child("restartPolicy");
    if rp == "Always" || rp.is_empty() {
        errs.push(FieldError::required(
            &rpp,
            "valid values: \"OnFailure\", \"Never\"",
        ));
    } else if rp != "OnFailure" && rp != "Never" {
        errs.push(FieldError::not_supported(&rpp, rp, &["OnFailure", "Never"]));
    } else if spec.has("podFailurePolicy") && rp != "Never" {
        errs.push(FieldError::invalid(
            &rpp,
            rp,
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
    errs
}

fn validate_job(job: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_generated_selector(job);
    let spec = field(job, "spec");
    let path = Path::new("spec");
    errs.extend(validate_job_spec_common(spec, &path));
    let sel = field(spec, "selector");
    if sel.is_null() {
        errs.push(FieldError::required(&path.child("selector"), ""));
    } else {
        errs.extend(validate_label_selector(sel, false, &path.child("selector")));
    }
    if let Ok(s) = selector::parse(sel) {
        let labels = field_at(spec, &["template", "metadata", "labels"]);
        if !s.matches(labels.as_object()) {
            errs.push(FieldError::invalid(
                &path.child("template").child("metadata").child("labels"),
                labels.clone(),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if spec.str("completionMode") == "Indexed"
        && let Some(c) = spec.int("completions")
        && c > 0
    {
        let name = field_at(job, &["metadata", "name"])
            .as_str()
            .unwrap_or_default();
        let host = format!("{name}-{}", c - 1);
        if !names::dns1123_label_errors(&host).is_empty() {
            errs.push(FieldError::invalid(
                &Path::new("metadata").child("name"),
                name,
                format!("will not able to create pod with invalid DNS label: {host}"),
            ));
        }
    }
    errs
}

/// The template fields a suspended, never-started Job may change.
const MUTABLE_WHEN_SUSPENDED: &[&[&str]] = &[
    &["metadata", "labels"],
    &["metadata", "annotations"],
    &["spec", "nodeSelector"],
    &["spec", "tolerations"],
    &["spec", "affinity"],
    &["spec", "schedulingGates"],
];

fn without(tmpl: &Value, paths: &[&[&str]]) -> Value {
    let mut t = tmpl.clone();
    for p in paths {
        if let [a, b] = p
            && let Some(m) = t.get_mut(*a).and_then(Value::as_object_mut)
        {
            m.remove(*b);
        }
    }
    t
}

fn validate_job_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = field(new, "spec");
    let os = field(old, "spec");
    let path = Path::new("spec");
    let elastic =
        ns.str("completionMode") == "Indexed" && ns.int("completions") == ns.int("parallelism");
    if !elastic {
        errs.extend(immutable(
            field(ns, "completions"),
            field(os, "completions"),
            &path.child("completions"),
        ));
    }
    errs.extend(immutable(
        field(ns, "selector"),
        field(os, "selector"),
        &path.child("selector"),
    ));
    let nt = field(ns, "template");
    let ot = field(os, "template");
    let mutable = os.flag("suspend") && field_at(old, &["status", "startTime"]).is_null();
    let (a, b) = if mutable {
        (
            without(nt, MUTABLE_WHEN_SUSPENDED),
            without(ot, MUTABLE_WHEN_SUSPENDED),
        )
    } else {
        (nt.clone(), ot.clone())
    };
    if !semantic_eq(&a, &b) {
        errs.push(FieldError::invalid(
            &path.child("template"),
            nt.clone(),
            FIELD_IMMUTABLE_MSG,
        ));
    }
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(immutable(field(ns, key), field(os, key), &path.child(key)));
    }
    errs
}

fn validate_job_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let path = Path::new("status");
    let mut errs = Vec::new();
    for key in ["active", "succeeded", "failed", "ready", "terminating"] {
        errs.extend(nonnegative_field(status, key, &path));
    }
    errs
}

/// `SetDefaults_CronJob` plus the job template's pod template defaults.
fn default_cron_job(obj: &mut Value) {
    with_spec(obj, |spec| {
        default_str(spec, "concurrencyPolicy", "Allow");
        default_value(spec, "suspend", json!(false));
        default_value(spec, "successfulJobsHistoryLimit", json!(3));
        default_value(spec, "failedJobsHistoryLimit", json!(1));
    });
    default_template_at(obj, &["spec", "jobTemplate", "spec", "template"]);
}

fn validate_time_zone(tz: &Value, path: &Path) -> Vec<FieldError> {
    let Some(tz) = tz.as_str() else {
        return Vec::new();
    };
    if tz.is_empty() {
        return vec![FieldError::invalid(
            path,
            tz,
            "timeZone must be nil or non-empty string",
        )];
    }
    for part in tz.split('/') {
        let ok_chars = !part.is_empty()
            && part.len() <= 14
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c));
        if part == "." || part == ".." || part.starts_with('-') || !ok_chars {
            return vec![FieldError::invalid(
                path,
                tz,
                format!("unknown time zone {tz}"),
            )];
        }
    }
    let mut errs = Vec::new();
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            path,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if !cron::time_zone_exists(tz) {
        errs.push(FieldError::invalid(
            path,
            tz,
            format!("unknown time zone {tz}"),
        ));
    }
    errs
}

fn validate_cron_job(cj: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(cj, "spec");
    let path = Path::new("spec");
    let old_spec = ctx.old.map(|o| field(o, "spec"));
    let schedule = spec.str("schedule");
    let sp = path.child("schedule");
    if schedule.is_empty() {
        errs.push(FieldError::required(&sp, ""));
    } else {
        if let Err(e) = cron::parse_standard(schedule) {
            errs.push(FieldError::invalid(&sp, schedule, e));
        }
        let allow_tz = old_spec.is_some_and(|o| o.str("schedule").contains("TZ"));
        if allow_tz && schedule.contains("TZ") && spec.has("timeZone") {
            errs.push(FieldError::invalid(
                &sp,
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(FieldError::invalid(
                &sp,
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    errs.extend(nonnegative_field(spec, "startingDeadlineSeconds", &path));
    let tz = field(spec, "timeZone");
    if old_spec.is_none_or(|o| field(o, "timeZone") != tz) {
        errs.extend(validate_time_zone(tz, &path.child("timeZone")));
    }
    match spec.str("concurrencyPolicy") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(FieldError::required(&path.child("concurrencyPolicy"), "")),
        other => errs.push(FieldError::not_supported(
            &path.child("concurrencyPolicy"),
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let jt = field(spec, "jobTemplate");
    let jp = path.child("jobTemplate");
    let jspec = field(jt, "spec");
    errs.extend(validate_job_spec_common(jspec, &jp.child("spec")));
    if let Some(sel) = jspec.get_field("selector") {
        errs.push(FieldError::invalid(
            &jp.child("spec").child("selector"),
            sel.clone(),
            "`selector` will be auto-generated",
        ));
    }
    if jspec.opt_flag("manualSelector") == Some(true) {
        errs.push(FieldError::not_supported(
            &jp.child("spec").child("manualSelector"),
            true,
            &["nil", "false"],
        ));
    }
    errs.extend(nonnegative_field(spec, "successfulJobsHistoryLimit", &path));
    errs.extend(nonnegative_field(spec, "failedJobsHistoryLimit", &path));
    if ctx.old.is_none() {
        let name = field_at(cj, &["metadata", "name"])
            .as_str()
            .unwrap_or_default();
        if name.len() > 52 {
            errs.push(FieldError::invalid(
                &Path::new("metadata").child("name"),
                name,
                "must be no more than 52 characters",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn job() -> Value {
        let mut j = json!({"metadata": {"name": "pi", "namespace": "default", "uid": "u-1"},
            "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}}}});
        default_job(&mut j);
        prepare_job(&mut j);
        default_job(&mut j);
        j
    }

    #[test]
    fn job_defaults_and_selector() {
        let j = job();
        let spec = &j["spec"];
        assert_eq!(spec["completions"], json!(1));
        assert_eq!(spec["parallelism"], json!(1));
        assert_eq!(spec["backoffLimit"], json!(6));
        assert_eq!(spec["completionMode"], json!("NonIndexed"));
        assert_eq!(spec["suspend"], json!(false));
        assert_eq!(spec["podReplacementPolicy"], json!("TerminatingOrFailed"));
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        assert_eq!(
            spec["template"]["metadata"]["labels"]["job-name"],
            json!("pi")
        );
        assert_eq!(j["status"], json!({}));
        assert!(
            validate_job(&j, &ctx()).is_empty(),
            "{:?}",
            validate_job(&j, &ctx())
        );
    }

    #[test]
    fn job_mistakes() {
        let mut j = job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        j["spec"]["backoffLimit"] = json!(-1);
        assert_eq!(
            msgs(validate_job(&j, &ctx())),
            vec![
                "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#,
            ]
        );
        let mut new = job();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:2");
        let errs = validate_job_update(&new, &job(), &ctx());
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template");
    }

    #[test]
    fn cron_jobs() {
        let mut cj = json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}}});
        default_cron_job(&mut cj);
        assert_eq!(cj["spec"]["concurrencyPolicy"], json!("Allow"));
        assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], json!(3));
        assert!(validate_cron_job(&cj, &ctx()).is_empty());
        cj["spec"]["schedule"] = json!("61 * * * *");
        cj["spec"]["timeZone"] = json!("Mars/Olympus_Mons_Base");
        cj["metadata"]["name"] = json!("x".repeat(53));
        let errs = msgs(validate_cron_job(&cj, &ctx()));
        assert_eq!(
            errs[0],
            r#"spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#
        );
        assert!(errs[1].starts_with("spec.timeZone: Invalid value: "));
        assert!(
            errs.last()
                .is_some_and(|e| e.ends_with("must be no more than 52 characters"))
        );
        cj["spec"]["schedule"] = json!("TZ=UTC * * * * *");
        assert!(msgs(validate_cron_job(&cj, &ctx())).iter().any(|e| {
            e.ends_with("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        }));
    }
}
