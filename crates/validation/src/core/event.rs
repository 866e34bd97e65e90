//! Events, through both APIs: `v1` Events get the lenient legacy checks (namespace
//! agreement, reporting fields of new-style events, length limits); `events.k8s.io/v1`
//! Events also the strict ones (event time, type, series, deprecated fields unset) and an
//! immutable body on update. Kubernetes reports both with the internal field names
//! (`message`, `involvedObject`, `source`, ...), and so does this module.

use serde_json::{Map, Value};

use crate::Ctx;
use crate::meta::{immutable, validate_qualified_name};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_apimachinery::names;

/// An event in the core API's field names.
fn core_view(ev: &Value, events_api: bool) -> Value {
    if !events_api {
        return ev.clone();
    }
    let mut m = Map::new();
    let renames = [
        ("note", "message"),
        ("regarding", "involvedObject"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("reportingController", "reportingComponent"),
    ];
    if let Value::Object(o) = ev {
        for (k, v) in o {
            let key = renames
                .iter()
                .find(|(from, _)| from == k)
                .map_or(k.as_str(), |(_, to)| to);
            m.insert(key.to_string(), v.clone());
        }
    }
    Value::Object(m)
}

fn legacy(ev: &Value, events_api: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let controller_field = if events_api {
        "reportingController"
    } else {
        "reportingComponent"
    };
    let ns = field_at(ev, &["metadata", "namespace"])
        .as_str()
        .unwrap_or_default();
    let involved_ns = field_at(ev, &["involvedObject", "namespace"])
        .as_str()
        .unwrap_or_default();
    let ns_path = Path::new("involvedObject").child("namespace");
    const MISMATCH: &str = "does not match event.namespace";
    if ev.str("eventTime").is_empty() {
        if involved_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                errs.push(FieldError::invalid(&ns_path, involved_ns, MISMATCH));
            }
        } else if ns != involved_ns {
            errs.push(FieldError::invalid(&ns_path, involved_ns, MISMATCH));
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(FieldError::invalid(&ns_path, involved_ns, MISMATCH));
        }
        let controller = ev.str("reportingComponent");
        if controller.is_empty() {
            errs.push(FieldError::required(&Path::new(controller_field), ""));
        }
        errs.extend(validate_qualified_name(
            controller,
            &Path::new(controller_field),
        ));
        for (key, limit, required) in [
            ("reportingInstance", 128, true),
            ("action", 128, true),
            ("reason", 128, true),
            ("message", 1024, false),
        ] {
            let v = ev.str(key);
            if required && v.is_empty() {
                errs.push(FieldError::required(&Path::new(key), ""));
            }
            if v.len() > limit {
                errs.push(FieldError::invalid(
                    &Path::new(key),
                    "",
                    format!("can have at most {limit} characters"),
                ));
            }
        }
    }
    for m in names::dns1123_subdomain_errors(ns) {
        errs.push(FieldError::invalid(&Path::new("namespace"), ns, m));
    }
    errs
}

fn strict(ev: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let series = field(ev, "series");
    if !series.is_null() {
        if series.int("count").unwrap_or(0) < 2 {
            errs.push(FieldError::invalid(
                &Path::new("series.count"),
                "",
                "should be at least 2",
            ));
        }
        if series.str("lastObservedTime").is_empty() {
            errs.push(FieldError::required(
                &Path::new("series.lastObservedTime"),
                "",
            ));
        }
    }
    if ev.str("eventTime").is_empty() {
        errs.push(FieldError::required(&Path::new("eventTime"), ""));
    }
    let t = ev.str("type");
    if t != "Normal" && t != "Warning" {
        errs.push(FieldError::invalid(
            &Path::new("type"),
            "",
            format!("has invalid value: {t}"),
        ));
    }
    for key in ["firstTimestamp", "lastTimestamp"] {
        if !ev.str(key).is_empty() {
            errs.push(FieldError::invalid(
                &Path::new(key),
                "",
                "needs to be unset",
            ));
        }
    }
    if ev.int("count").unwrap_or(0) != 0 {
        errs.push(FieldError::invalid(
            &Path::new("count"),
            "",
            "needs to be unset",
        ));
    }
    let src = field(ev, "source");
    if !src.str("component").is_empty() || !src.str("host").is_empty() {
        errs.push(FieldError::invalid(
            &Path::new("source"),
            "",
            "needs to be unset",
        ));
    }
    errs
}

/// A `v1` Event (create or update): legacy checks only.
pub(crate) fn validate(ev: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    legacy(ev, false)
}

/// `v1` Event updates have no further rules.
pub(crate) fn validate_update(_new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    Vec::new()
}

/// An `events.k8s.io/v1` Event; strict rules apply on create.
pub(crate) fn validate_events_api(ev: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    let view = core_view(ev, true);
    let mut errs = legacy(&view, true);
    if ctx.old.is_none() {
        errs.extend(strict(&view));
    }
    errs
}

/// `events.k8s.io/v1` updates may change only the count, last time and series.
pub(crate) fn validate_events_api_update(
    new: &Value,
    old: &Value,
    _ctx: &Ctx<'_>,
) -> Vec<FieldError> {
    let n = core_view(new, true);
    let o = core_view(old, true);
    let mut errs = Vec::new();
    for (key, path) in [
        ("involvedObject", "involvedObject"),
        ("reason", "reason"),
        ("message", "message"),
        ("source", "source"),
        ("firstTimestamp", "firstTimestamp"),
        ("action", "action"),
        ("related", "related"),
        ("reportingComponent", "reportingController"),
        ("type", "type"),
    ] {
        errs.extend(immutable(field(&n, key), field(&o, key), &Path::new(path)));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn core_events() {
        let ctx = Ctx { old: None };
        let ok = json!({"metadata": {"name": "e", "namespace": "default"}, "involvedObject": {"kind": "Pod", "namespace": "default"}});
        assert!(validate(&ok, &ctx).is_empty());
        let bad = json!({"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "b"}});
        assert_eq!(
            validate(&bad, &ctx)[0].to_string(),
            r#"involvedObject.namespace: Invalid value: "b": does not match event.namespace"#
        );
        let new_style = json!({"metadata": {"namespace": "default"}, "eventTime": "2024-01-01T00:00:00.000000Z"});
        let fields: Vec<String> = validate(&new_style, &ctx)
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(
            fields,
            vec![
                "reportingComponent",
                "reportingComponent",
                "reportingComponent",
                "reportingInstance",
                "action",
                "reason"
            ]
        );
    }

    #[test]
    fn events_api() {
        let ctx = Ctx { old: None };
        let ev = json!({"metadata": {"name": "e", "namespace": "default"}, "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/ctl", "reportingInstance": "i", "action": "Do", "reason": "Because",
            "type": "Normal", "regarding": {"namespace": "default"}});
        assert!(validate_events_api(&ev, &ctx).is_empty());
        let mut bad = ev.clone();
        bad["type"] = json!("Odd");
        bad["deprecatedCount"] = json!(3);
        let msgs: Vec<String> = validate_events_api(&bad, &ctx)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"type: Invalid value: "": has invalid value: Odd"#,
                r#"count: Invalid value: "": needs to be unset"#
            ]
        );
        let mut changed = ev.clone();
        changed["note"] = json!("different");
        assert_eq!(validate_events_api_update(&changed, &ev, &ctx).len(), 1);
    }
}
