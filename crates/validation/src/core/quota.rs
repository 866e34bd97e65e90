//! LimitRanges and ResourceQuotas: default limits and requests of container limit ranges,
//! resource names and quantities, min/max/default consistency, quota scopes and scope
//! selectors.

#[cfg(test)]
use serde_json::json;
use serde_json::{Map, Value};

use crate::Ctx;
use crate::core::reset_status;
use crate::core::resources::{
    is_overcommit_allowed, parse_quantity, validate_container_resource_name,
    validate_quantity_value, validate_resource_name,
};
use crate::core::storage::require_resource_version;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, each_obj, field, field_at, obj_mut};
use kyb_apimachinery::quantity::{Quantity, canonicalize_list};

/// `SetDefaults_LimitRangeItem` plus canonical quantities.
pub(crate) fn default_limit_range(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(spec) = obj_mut(o, "spec") else {
        return;
    };
    each_obj(spec, "limits", |item| {
        if item.get("type").and_then(Value::as_str) == Some("Container") {
            let max = item
                .get("max")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let min = item
                .get("min")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut default = item
                .get("default")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, v) in &max {
                default.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let mut default_request = item
                .get("defaultRequest")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, v) in default.iter().chain(&min) {
                default_request
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
            if !default.is_empty() {
                item.insert("default".to_string(), Value::Object(default));
            }
            if !default_request.is_empty() {
                item.insert("defaultRequest".to_string(), Value::Object(default_request));
            }
        }
        for key in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            canonicalize_list(item.get_mut(key));
        }
    });
}

fn validate_limit_type(t: &str, path: &Path) -> Vec<FieldError> {
    let errs: Vec<FieldError> = kyb_apimachinery::names::qualified_name_errors(t)
        .into_iter()
        .map(|m| FieldError::invalid(path, t, m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !t.contains('/') && !matches!(t, "Pod" | "Container" | "PersistentVolumeClaim") {
        return vec![FieldError::invalid(
            path,
            t,
            "must be a standard limit type or fully qualified",
        )];
    }
    errs
}

fn limit_resource_name(limit_type: &str, name: &str, path: &Path) -> Vec<FieldError> {
    if limit_type == "Pod" || limit_type == "Container" {
        validate_container_resource_name(name, path)
    } else {
        validate_resource_name(name, path)
    }
}

/// `ValidateLimitRange`.
pub(crate) fn validate_limit_range(lr: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec").child("limits");
    let mut types: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, item) in field_at(lr, &["spec", "limits"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = path.index(i);
        let t = item.str("type");
        errs.extend(validate_limit_type(t, &p.child("type")));
        if types.contains(t) {
            errs.push(FieldError::duplicate(&p.child("type"), t));
        }
        types.insert(t);
        let mut parsed: Vec<(&str, String, Quantity)> = Vec::new();
        let read = |key: &'static str,
                    errs: &mut Vec<FieldError>,
                    parsed: &mut Vec<(&'static str, String, Quantity)>| {
            if let Some(m) = item.obj(key) {
                for (k, v) in m {
                    let kp = p.child(key).key(k);
                    errs.extend(limit_resource_name(t, k, &kp));
                    match parse_quantity(v, &kp) {
                        Ok(q) => parsed.push((key, k.clone(), q)),
                        Err(e) => errs.push(e),
                    }
                }
            }
        };
        read("max", &mut errs, &mut parsed);
        read("min", &mut errs, &mut parsed);
        if t == "Pod" {
            if item.obj("default").is_some_and(|m| !m.is_empty()) {
                errs.push(FieldError::forbidden(
                    &p.child("default"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
            if item.obj("defaultRequest").is_some_and(|m| !m.is_empty()) {
                errs.push(FieldError::forbidden(
                    &p.child("defaultRequest"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        } else {
            read("default", &mut errs, &mut parsed);
            read("defaultRequest", &mut errs, &mut parsed);
        }
        if t == "PersistentVolumeClaim"
            && field_at(item, &["min", "storage"]).is_null()
            && field_at(item, &["max", "storage"]).is_null()
        {
            errs.push(FieldError::required(
                &p.child("limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        read("maxLimitRequestRatio", &mut errs, &mut parsed);
        let mut keys: Vec<&String> = parsed.iter().map(|(_, k, _)| k).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let get = |key: &str| {
                parsed
                    .iter()
                    .find(|(w, n, _)| *w == key && n == k)
                    .map(|(_, _, q)| q)
            };
            let (min, max, def, def_req, ratio) = (
                get("min"),
                get("max"),
                get("default"),
                get("defaultRequest"),
                get("maxLimitRequestRatio"),
            );
            let s = Quantity::canonical;
            if let (Some(mn), Some(mx)) = (min, max)
                && mn.cmp_q(mx).is_gt()
            {
                errs.push(FieldError::invalid(
                    &p.child("min").key(k),
                    s(mn),
                    format!("min value {} is greater than max value {}", s(mn), s(mx)),
                ));
            }
            if let (Some(dr), Some(mn)) = (def_req, min)
                && mn.cmp_q(dr).is_gt()
            {
                errs.push(FieldError::invalid(
                    &p.child("defaultRequest").key(k),
                    s(dr),
                    format!(
                        "min value {} is greater than default request value {}",
                        s(mn),
                        s(dr)
                    ),
                ));
            }
            if let (Some(dr), Some(mx)) = (def_req, max)
                && dr.cmp_q(mx).is_gt()
            {
                errs.push(FieldError::invalid(
                    &p.child("defaultRequest").key(k),
                    s(dr),
                    format!(
                        "default request value {} is greater than max value {}",
                        s(dr),
                        s(mx)
                    ),
                ));
            }
            if let (Some(dr), Some(d)) = (def_req, def)
                && dr.cmp_q(d).is_gt()
            {
                errs.push(FieldError::invalid(
                    &p.child("defaultRequest").key(k),
                    s(dr),
                    format!(
                        "default request value {} is greater than default limit value {}",
                        s(dr),
                        s(d)
                    ),
                ));
            }
            if let (Some(d), Some(mn)) = (def, min)
                && mn.cmp_q(d).is_gt()
            {
                errs.push(FieldError::invalid(
                    &p.child("default").key(k),
                    s(mn),
                    format!("min value {} is greater than default value {}", s(mn), s(d)),
                ));
            }
            if let (Some(d), Some(mx)) = (def, max)
                && d.cmp_q(mx).is_gt()
            {
                errs.push(FieldError::invalid(
                    &p.child("default").key(k),
                    s(mx),
                    format!("default value {} is greater than max value {}", s(d), s(mx)),
                ));
            }
            if let Some(r) = ratio
                && r.cmp_q(&Quantity::from_int(1)).is_lt()
            {
                errs.push(FieldError::invalid(
                    &p.child("maxLimitRequestRatio").key(k),
                    s(r),
                    format!("ratio {} is less than 1", s(r)),
                ));
            }
            if let (Some(r), Some(mn), Some(mx)) = (ratio, min, max) {
                let limit = mx.as_f64() / mn.as_f64();
                if r.as_f64() > limit {
                    errs.push(FieldError::invalid(
                        &p.child("maxLimitRequestRatio").key(k),
                        s(r),
                        format!("ratio {} is greater than max/min = {limit:.6}", s(r)),
                    ));
                }
            }
            if !is_overcommit_allowed(k)
                && let (Some(d), Some(dr)) = (def, def_req)
                && !d.cmp_q(dr).is_eq()
            {
                errs.push(FieldError::invalid(
                    &p.child("defaultRequest").key(k),
                    s(dr),
                    format!(
                        "default value {} must equal to defaultRequest value {} in {k}",
                        s(d),
                        s(dr)
                    ),
                ));
            }
        }
    }
    errs
}

/// Canonical quantities of a quota.
pub(crate) fn default_quota(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(spec) = obj_mut(o, "spec") {
        canonicalize_list(spec.get_mut("hard"));
    }
    if let Some(status) = obj_mut(o, "status") {
        canonicalize_list(status.get_mut("hard"));
        canonicalize_list(status.get_mut("used"));
    }
}

/// A new quota starts with an empty status.
pub(crate) fn prepare_quota(obj: &mut Value) {
    reset_status(obj, Value::Object(Map::new()));
}

const QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn quota_resource_name(name: &str, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/')
        && !QUOTA_RESOURCES.contains(&name)
        && !name.starts_with("hugepages-")
        && !name.starts_with("requests.hugepages-")
    {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
    errs
}

fn validate_quota_list(list: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(m) = list {
        for (k, v) in m {
            let p = path.key(k);
            errs.extend(quota_resource_name(k, &p));
            match parse_quantity(v, &p) {
                Ok(q) => errs.extend(validate_quantity_value(k, &q, &p)),
                Err(e) => errs.push(e),
            }
        }
    }
    errs
}

const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

fn validate_quota_spec(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_quota_list(field(spec, "hard"), &path.child("hard"));
    let hard: Vec<&str> = spec
        .obj("hard")
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let scopes = spec.str_list("scopes");
    let scopes_value = Value::from(spec.arr("scopes").to_vec());
    let sp = path.child("scopes");
    for s in &scopes {
        if !SCOPES.contains(s) {
            errs.push(FieldError::invalid(
                &sp,
                scopes_value.clone(),
                "unsupported scope",
            ));
        }
        let mut sorted = hard.clone();
        sorted.sort_unstable();
        for k in sorted {
            if QUOTA_RESOURCES.contains(&k) && !kyb_quota::scope_allows_resource(s, k) {
                errs.push(FieldError::invalid(
                    &sp,
                    scopes_value.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    let conflicting = |set: &[&str]| {
        (set.contains(&"BestEffort") && set.contains(&"NotBestEffort"))
            || (set.contains(&"Terminating") && set.contains(&"NotTerminating"))
    };
    if conflicting(&scopes) {
        errs.push(FieldError::invalid(
            &sp,
            scopes_value.clone(),
            "conflicting scopes",
        ));
    }
    let sel = field(spec, "scopeSelector");
    if !sel.is_null() {
        let ep = path.child("scopeSelector").child("matchExpressions");
        let mut names: Vec<&str> = Vec::new();
        for req in sel.arr("matchExpressions") {
            let scope = req.str("scopeName");
            if !SCOPES.contains(&scope) {
                errs.push(FieldError::invalid(
                    &ep.child("scopeName"),
                    scope,
                    "unsupported scope",
                ));
            }
            for k in &hard {
                if QUOTA_RESOURCES.contains(k) && !kyb_quota::scope_allows_resource(scope, k) {
                    errs.push(FieldError::invalid(
                        &ep,
                        sel.clone(),
                        "unsupported scope applied to resource",
                    ));
                }
            }
            let op = req.str("operator");
            if matches!(
                scope,
                "BestEffort"
                    | "NotBestEffort"
                    | "Terminating"
                    | "NotTerminating"
                    | "CrossNamespacePodAffinity"
            ) && op != "Exists"
            {
                errs.push(FieldError::invalid(
                    &ep.child("operator"),
                    op,
                    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ));
            }
            match op {
                "In" | "NotIn" => {
                    if req.arr("values").is_empty() {
                        errs.push(FieldError::required(
                            &ep.child("values"),
                            "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                        ));
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !req.arr("values").is_empty() {
                        errs.push(FieldError::invalid(
                            &ep.child("values"),
                            Value::from(req.arr("values").to_vec()),
                            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                        ));
                    }
                }
                other => errs.push(FieldError::invalid(
                    &ep.child("operator"),
                    other,
                    "not a valid selector operator",
                )),
            }
            names.push(scope);
        }
        if conflicting(&names) {
            errs.push(FieldError::invalid(&ep, scopes_value, "conflicting scopes"));
        }
    }
    errs
}

/// `ValidateResourceQuota`.
pub(crate) fn validate_quota(q: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_quota_spec(field(q, "spec"), &Path::new("spec"));
    errs.extend(validate_quota_list(
        field_at(q, &["status", "hard"]),
        &Path::new("status").child("hard"),
    ));
    errs.extend(validate_quota_list(
        field_at(q, &["status", "used"]),
        &Path::new("status").child("used"),
    ));
    errs
}

/// Quota scopes may not change.
pub(crate) fn validate_quota_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut n = field(new, "spec").str_list("scopes");
    let mut o = field(old, "spec").str_list("scopes");
    n.sort_unstable();
    n.dedup();
    o.sort_unstable();
    o.dedup();
    if n != o {
        return vec![FieldError::invalid(
            &Path::new("spec").child("scopes"),
            Value::from(
                field_at(new, &["spec", "scopes"])
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            ),
            crate::meta::FIELD_IMMUTABLE_MSG,
        )];
    }
    Vec::new()
}

/// `ValidateResourceQuotaStatusUpdate`.
pub(crate) fn validate_quota_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = require_resource_version(new);
    errs.extend(validate_quota_list(
        field_at(new, &["status", "hard"]),
        &Path::new("status").child("hard"),
    ));
    errs.extend(validate_quota_list(
        field_at(new, &["status", "used"]),
        &Path::new("status").child("used"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx<'static> {
        Ctx { old: None }
    }

    #[test]
    fn limit_range_defaults() {
        let mut lr = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}, "default": {"memory": "256Mi"}}]}});
        default_limit_range(&mut lr);
        assert_eq!(
            lr["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
                "default": {"cpu": "2", "memory": "256Mi"}, "defaultRequest": {"cpu": "2", "memory": "256Mi"}})
        );
        assert!(validate_limit_range(&lr, &ctx()).is_empty());
    }

    #[test]
    fn limit_range_rules() {
        let lr = json!({"spec": {"limits": [
            {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "Pod"},
            {"type": "Weird"}
        ]}});
        let msgs: Vec<String> = validate_limit_range(&lr, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1"#,
                "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
                r#"spec.limits[2].type: Duplicate value: "Pod""#,
                r#"spec.limits[3].type: Invalid value: "Weird": must be a standard limit type or fully qualified"#,
            ]
        );
    }

    #[test]
    fn quotas() {
        let q = json!({"spec": {"hard": {"pods": "10", "count/deployments.apps": "5", "cpu": "1.5", "foo": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}});
        let msgs: Vec<String> = validate_quota(&q, &ctx())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(msgs.contains(&r#"spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified"#.to_string()));
        assert!(msgs.iter().any(|m| m.ends_with("conflicting scopes")));
        assert!(
            msgs.iter()
                .any(|m| m.ends_with("unsupported scope applied to resource"))
        );
        let old = json!({"spec": {"scopes": ["BestEffort"]}});
        assert_eq!(
            validate_quota_update(&json!({"spec": {}}), &old, &ctx()).len(),
            1
        );
    }
}
