//! `autoscaling/v1` and `autoscaling/v2`: HorizontalPodAutoscalers (defaults: one minimum
//! replica, CPU at 80% when no metric is given, full scaling behaviour rules; validation of
//! replica bounds, target reference, metrics and behaviour) and `Scale` subresources.
//! `v1` objects are validated in their `v2` shape, with `v2` field paths, as Kubernetes does.

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::kinds::{Kind, MetaMode};
use crate::meta::nonnegative_field;
use crate::selector::validate_label_selector;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, child_object, default_value, field, obj_mut};
use kyb_apimachinery::names;
use kyb_apimachinery::quantity::{Quantity, canonicalize_value};

/// The rules of an `autoscaling` kind.
pub(crate) fn lookup(version: &str, kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    match (version, kind) {
        ("v2", "HorizontalPodAutoscaler") => Some(
            Kind::new(subdomain)
                .with_status()
                .defaults(default_hpa_v2)
                .prepare(|o| reset_status(o, json!({"desiredReplicas": 0})))
                .validate(|o, _| validate_hpa_spec(field(o, "spec")))
                .status(validate_hpa_status),
        ),
        ("v1", "HorizontalPodAutoscaler") => Some(
            Kind::new(subdomain)
                .with_status()
                .defaults(default_hpa_v1)
                .prepare(|o| reset_status(o, json!({"currentReplicas": 0, "desiredReplicas": 0})))
                .validate(|o, _| validate_hpa_spec(&v1_spec_as_v2(field(o, "spec"))))
                .status(validate_hpa_status),
        ),
        ("v1", "Scale") => Some(
            Kind::new(subdomain)
                .meta(MetaMode::Core)
                .validate(validate_scale),
        ),
        _ => None,
    }
}

/// The scale-up rules a behaviour gets when it leaves them out.
fn default_scale_up() -> Value {
    json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15}
    ]})
}

/// The scale-down rules a behaviour gets when it leaves them out (the stabilization window
/// stays unset: the controller's flag decides it).
fn default_scale_down() -> Value {
    json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
}

fn fill_rules(behavior: &mut Map<String, Value>, key: &str, defaults: Value) {
    let mut merged = defaults;
    if let (Some(given), Some(m)) = (
        behavior.get(key).and_then(Value::as_object),
        merged.as_object_mut(),
    ) {
        for k in [
            "selectPolicy",
            "stabilizationWindowSeconds",
            "policies",
            "tolerance",
        ] {
            if let Some(v) = given.get(k).filter(|v| !v.is_null()) {
                m.insert(k.to_string(), v.clone());
            }
        }
    }
    behavior.insert(key.to_string(), merged);
}

fn canonicalize_targets(spec: &mut Map<String, Value>) {
    if let Some(metrics) = spec.get_mut("metrics").and_then(Value::as_array_mut) {
        for m in metrics {
            for source in [
                "resource",
                "containerResource",
                "pods",
                "object",
                "external",
            ] {
                if let Some(t) = m
                    .get_mut(source)
                    .and_then(|s| s.get_mut("target"))
                    .and_then(Value::as_object_mut)
                {
                    for k in ["value", "averageValue"] {
                        if let Some(v) = t.get_mut(k) {
                            canonicalize_value(v, false);
                        }
                    }
                }
            }
        }
    }
}

/// `autoscaling/v2` `SetDefaults_HorizontalPodAutoscaler`.
fn default_hpa_v2(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    default_value(spec, "minReplicas", json!(1));
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec.insert(
            "metrics".to_string(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(b) = obj_mut(spec, "behavior") {
        fill_rules(b, "scaleUp", default_scale_up());
        fill_rules(b, "scaleDown", default_scale_down());
    }
    canonicalize_targets(spec);
}

/// `autoscaling/v1` defaults (the CPU target is what the stored `v2` object gets).
fn default_hpa_v1(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = child_object(o, "spec") else {
        return;
    };
    default_value(spec, "minReplicas", json!(1));
    default_value(spec, "targetCPUUtilizationPercentage", json!(80));
}

/// A `v1` spec in `v2` shape.
fn v1_spec_as_v2(spec: &Value) -> Value {
    let mut v2 = spec.clone();
    if let Some(m) = v2.as_object_mut()
        && let Some(t) = m
            .remove("targetCPUUtilizationPercentage")
            .filter(|t| !t.is_null())
    {
        m.insert(
            "metrics".to_string(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": t}}}]),
        );
    }
    v2
}

/// `ValidateCrossVersionObjectReference`.
fn validate_object_reference(r: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["kind", "name"] {
        let v = r.str(key);
        if v.is_empty() {
            errs.push(FieldError::required(&path.child(key), ""));
        } else {
            for m in names::path_segment_name_errors(v, false) {
                errs.push(FieldError::invalid(&path.child(key), v, m));
            }
        }
    }
    errs
}

fn validate_target(t: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let typ = t.str("type");
    if typ.is_empty() {
        errs.push(FieldError::required(
            &path.child("type"),
            "must specify a metric target type",
        ));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&typ) {
        errs.push(FieldError::invalid(
            &path.child("type"),
            typ,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for key in ["value", "averageValue"] {
        let v = field(t, key);
        if !v.is_null() {
            match Quantity::from_json(v) {
                Ok(q) if q.sign() == 1 => {}
                Ok(q) => errs.push(FieldError::invalid(
                    &path.child(key),
                    q.canonical(),
                    "must be positive",
                )),
                Err(m) => errs.push(FieldError::invalid(&path.child(key), v.clone(), m)),
            }
        }
    }
    if let Some(u) = t.int("averageUtilization")
        && u < 1
    {
        errs.push(FieldError::invalid(
            &path.child("averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    errs
}

fn validate_metric_identifier(id: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = id.str("name");
    if name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "must specify a metric name",
        ));
    } else {
        for m in names::path_segment_name_errors(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, m));
        }
    }
    errs.extend(validate_label_selector(
        field(id, "selector"),
        false,
        &path.child("selector"),
    ));
    errs
}

fn validate_source(kind: &str, src: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = field(src, "target");
    let tp = path.child("target");
    match kind {
        "resource" | "containerResource" => {
            if src.str("name").is_empty() {
                errs.push(FieldError::required(
                    &path.child("name"),
                    "must specify a resource name",
                ));
            }
            if kind == "containerResource" {
                let c = src.str("container");
                if c.is_empty() {
                    errs.push(FieldError::required(
                        &path.child("container"),
                        "must specify a container",
                    ));
                } else {
                    for m in names::dns1123_label_errors(c) {
                        errs.push(FieldError::invalid(&path.child("container"), c, m));
                    }
                }
            }
            errs.extend(validate_target(target, &tp));
            let util = target.has("averageUtilization");
            let avg = target.has("averageValue");
            if !util && !avg {
                errs.push(FieldError::required(
                    &tp.child("averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            }
            if util && avg {
                errs.push(FieldError::forbidden(
                    &tp.child("averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
        "pods" => {
            errs.extend(validate_metric_identifier(
                field(src, "metric"),
                &path.child("metric"),
            ));
            errs.extend(validate_target(target, &tp));
            if !target.has("averageValue") {
                errs.push(FieldError::required(
                    &tp.child("averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        "object" => {
            errs.extend(validate_object_reference(
                field(src, "describedObject"),
                &path.child("describedObject"),
            ));
            errs.extend(validate_metric_identifier(
                field(src, "metric"),
                &path.child("metric"),
            ));
            errs.extend(validate_target(target, &tp));
            if !target.has("value") && !target.has("averageValue") {
                errs.push(FieldError::required(
                    &tp.child("averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        "external" => {
            errs.extend(validate_metric_identifier(
                field(src, "metric"),
                &path.child("metric"),
            ));
            errs.extend(validate_target(target, &tp));
            if !target.has("value") && !target.has("averageValue") {
                errs.push(FieldError::required(
                    &tp.child("averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            }
            if target.has("value") && target.has("averageValue") {
                errs.push(FieldError::forbidden(
                    &tp.child("value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
        _ => {}
    }
    errs
}

const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const SOURCES: &[(&str, &str)] = &[
    ("object", "Object"),
    ("external", "External"),
    ("pods", "Pods"),
    ("resource", "Resource"),
    ("containerResource", "ContainerResource"),
];

fn validate_metric(m: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let typ = m.str("type");
    if typ.is_empty() {
        errs.push(FieldError::required(
            &path.child("type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_TYPES.contains(&typ) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            typ,
            METRIC_TYPES,
        ));
    }
    let present: Vec<(&str, &str)> = SOURCES.iter().copied().filter(|(k, _)| m.has(k)).collect();
    if let Some((k, _)) = present.first() {
        errs.extend(validate_source(k, field(m, k), &path.child(k)));
    }
    match SOURCES.iter().find(|(_, t)| *t == typ) {
        Some((k, _)) => {
            if !m.has(k) {
                errs.push(FieldError::required(
                    &path.child(k),
                    "must populate information for the given metric source",
                ));
            }
        }
        None => errs.push(FieldError::not_supported(
            &path.child("type"),
            typ,
            METRIC_TYPES,
        )),
    }
    if present.len() != 1 {
        for (k, t) in present {
            if t != typ {
                errs.push(FieldError::forbidden(
                    &path.child(k),
                    "must populate the given metric source only",
                ));
            }
        }
    }
    errs
}

fn validate_rules(rules: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if rules.is_null() {
        return errs;
    }
    if let Some(w) = rules.int("stabilizationWindowSeconds") {
        if w < 0 {
            errs.push(FieldError::invalid(
                &path.child("stabilizationWindowSeconds"),
                w,
                "must be greater than or equal to zero",
            ));
        }
        if w > 3600 {
            errs.push(FieldError::invalid(
                &path.child("stabilizationWindowSeconds"),
                w,
                "must be less than or equal to 3600",
            ));
        }
    }
    if let Some(p) = rules.opt_str("selectPolicy")
        && !["Disabled", "Max", "Min"].contains(&p)
    {
        errs.push(FieldError::not_supported(
            &path.child("selectPolicy"),
            p,
            &["Disabled", "Max", "Min"],
        ));
    }
    let pp = path.child("policies");
    let policies = rules.arr("policies");
    if policies.is_empty() {
        errs.push(FieldError::required(
            &pp,
            "must specify at least one Policy",
        ));
    }
    for (i, p) in policies.iter().enumerate() {
        let ip = pp.index(i);
        let t = p.str("type");
        if t != "Pods" && t != "Percent" {
            errs.push(FieldError::not_supported(
                &ip.child("type"),
                t,
                &["Percent", "Pods"],
            ));
        }
        let v = p.int("value").unwrap_or(0);
        if v <= 0 {
            errs.push(FieldError::invalid(
                &ip.child("value"),
                v,
                "must be greater than zero",
            ));
        }
        let ps = p.int("periodSeconds").unwrap_or(0);
        if ps <= 0 {
            errs.push(FieldError::invalid(
                &ip.child("periodSeconds"),
                ps,
                "must be greater than zero",
            ));
        }
        if ps > 1800 {
            errs.push(FieldError::invalid(
                &ip.child("periodSeconds"),
                ps,
                "must be less than or equal to 1800",
            ));
        }
    }
    errs
}

/// `validateHorizontalPodAutoscalerSpec` on a `v2`-shaped spec.
fn validate_hpa_spec(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec");
    let min = spec.int("minReplicas");
    let max = spec.int("maxReplicas").unwrap_or(0);
    if let Some(m) = min
        && m < 1
    {
        errs.push(FieldError::invalid(
            &path.child("minReplicas"),
            m,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            "must be greater than 0",
        ));
    }
    if let Some(m) = min
        && max < m
    {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    errs.extend(validate_object_reference(
        field(spec, "scaleTargetRef"),
        &path.child("scaleTargetRef"),
    ));
    let mp = path.child("metrics");
    let metrics = spec.arr("metrics");
    for (i, m) in metrics.iter().enumerate() {
        errs.extend(validate_metric(m, &mp.index(i)));
    }
    if min == Some(0)
        && !metrics
            .iter()
            .any(|m| matches!(m.str("type"), "Object" | "External"))
    {
        errs.push(FieldError::forbidden(&mp, "must specify at least one Object or External metric to support scaling to zero replicas"));
    }
    let b = field(spec, "behavior");
    if !b.is_null() {
        errs.extend(validate_rules(
            field(b, "scaleUp"),
            &path.child("behavior").child("scaleUp"),
        ));
        errs.extend(validate_rules(
            field(b, "scaleDown"),
            &path.child("behavior").child("scaleDown"),
        ));
    }
    errs
}

fn validate_hpa_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let mut errs = nonnegative_field(status, "currentReplicas", &Path::new("status"));
    errs.extend(nonnegative_field(
        status,
        "desiredReplicas",
        &Path::new("status"),
    ));
    errs
}

/// `ValidateScale`.
fn validate_scale(scale: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    nonnegative_field(field(scale, "spec"), "replicas", &Path::new("spec"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa(spec: Value) -> Value {
        let mut h = json!({"metadata": {"name": "h", "namespace": "default"}, "spec": spec});
        default_hpa_v2(&mut h);
        h
    }

    #[test]
    fn v2_defaults() {
        let h = hpa(
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}),
        );
        assert_eq!(h["spec"]["minReplicas"], json!(1));
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"],
            json!({"type": "Utilization", "averageUtilization": 80})
        );
        assert_eq!(h["spec"]["behavior"]["scaleUp"], default_scale_up());
        assert_eq!(
            h["spec"]["behavior"]["scaleDown"],
            json!({"selectPolicy": "Max", "stabilizationWindowSeconds": 60, "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
        );
        assert!(validate_hpa_spec(&h["spec"]).is_empty());
    }

    #[test]
    fn v2_mistakes() {
        let h = hpa(
            json!({"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 3, "maxReplicas": 2,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}, "external": {
                "metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}}}]}),
        );
        let msgs: Vec<String> = validate_hpa_spec(&h["spec"])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
                "spec.scaleTargetRef.name: Required value",
                "spec.metrics[0].external: Forbidden: must populate the given metric source only",
            ]
        );
    }

    #[test]
    fn v1_shape() {
        let mut h = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 0}});
        default_hpa_v1(&mut h);
        let errs = validate_hpa_spec(&v1_spec_as_v2(&h["spec"]));
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].field,
            "spec.metrics[0].resource.target.averageUtilization"
        );
        assert!(validate_scale(&json!({"spec": {"replicas": -1}}), &Ctx { old: None }).len() == 1);
    }
}
