//! `admissionregistration.k8s.io/v1`: webhook configurations (defaults and the basic rules
//! of names, review versions, rules, policies, timeouts and client configs) and
//! ValidatingAdmissionPolicies and their bindings (structure only; CEL expressions are not
//! compiled here).

use serde_json::{Map, Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::kinds::Kind;
use crate::selector::validate_label_selector;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_str, default_value, each_obj, field, obj_mut};
use kyb_apimachinery::names;

/// The rules of an `admissionregistration.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    Some(match kind {
        "ValidatingWebhookConfiguration" => Kind::new(subdomain)
            .defaults(|o| default_webhooks(o, false))
            .validate(|o, _| validate_webhooks(o, false)),
        "MutatingWebhookConfiguration" => Kind::new(subdomain)
            .defaults(|o| default_webhooks(o, true))
            .validate(|o, _| validate_webhooks(o, true)),
        "ValidatingAdmissionPolicy" => Kind::new(subdomain)
            .with_status()
            .defaults(default_policy)
            .prepare(|o| reset_status(o, json!({})))
            .validate(validate_policy),
        "ValidatingAdmissionPolicyBinding" => Kind::new(subdomain)
            .defaults(default_binding)
            .validate(validate_binding),
        _ => return None,
    })
}

fn default_rules(m: &mut Map<String, Value>, key: &str) {
    each_obj(m, key, |r| default_value(r, "scope", json!("*")));
}

fn default_webhooks(obj: &mut Value, mutating: bool) {
    let Some(o) = obj.as_object_mut() else { return };
    each_obj(o, "webhooks", |w| {
        default_str(w, "failurePolicy", "Fail");
        default_str(w, "matchPolicy", "Equivalent");
        default_value(w, "namespaceSelector", json!({}));
        default_value(w, "objectSelector", json!({}));
        default_value(w, "timeoutSeconds", json!(10));
        if mutating {
            default_str(w, "reinvocationPolicy", "Never");
        }
        default_rules(w, "rules");
        if let Some(cc) = obj_mut(w, "clientConfig")
            && let Some(svc) = obj_mut(cc, "service")
        {
            default_value(svc, "port", json!(443));
        }
    });
}

fn validate_fully_qualified_name(name: &str, path: &Path) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let errs = names::dns1123_subdomain_errors(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

fn validate_rule(rule: &Value, path: &Path, with_operations: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if with_operations {
        let ops = rule.str_list("operations");
        if ops.is_empty() {
            errs.push(FieldError::required(&path.child("operations"), ""));
        }
        if ops.len() > 1 && ops.contains(&"*") {
            errs.push(FieldError::invalid(
                &path.child("operations"),
                Value::from(rule.arr("operations").to_vec()),
                "if '*' is present, must not specify other operations",
            ));
        }
        for (i, op) in ops.iter().enumerate() {
            if !["*", "CONNECT", "CREATE", "DELETE", "UPDATE"].contains(op) {
                errs.push(FieldError::not_supported(
                    &path.child("operations").index(i),
                    *op,
                    &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
                ));
            }
        }
    }
    for key in ["apiGroups", "apiVersions", "resources"] {
        if rule.arr(key).is_empty() {
            errs.push(FieldError::required(&path.child(key), ""));
        }
    }
    if let Some(scope) = rule.opt_str("scope")
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        errs.push(FieldError::not_supported(
            &path.child("scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
    errs
}

fn validate_client_config(cc: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let url = cc.opt_str("url");
    let svc = field(cc, "service");
    match (url, svc.is_null()) {
        (Some(_), false) | (None, true) => errs.push(FieldError::required(
            path,
            "exactly one of url or service is required",
        )),
        (Some(u), true) => {
            let up = path.child("url");
            if !u.starts_with("https://") {
                errs.push(FieldError::invalid(
                    &up,
                    u,
                    "'https' is the only allowed URL scheme",
                ));
            }
            if u.contains('?') {
                errs.push(FieldError::invalid(
                    &up,
                    u,
                    "query parameters are not allowed",
                ));
            }
            if u.contains('#') {
                errs.push(FieldError::invalid(&up, u, "fragments are not allowed"));
            }
        }
        (None, false) => {
            let sp = path.child("service");
            let ns = svc.str("namespace");
            if ns.is_empty() {
                errs.push(FieldError::required(
                    &sp.child("namespace"),
                    "service namespace is required",
                ));
            } else {
                for m in names::dns1123_label_errors(ns) {
                    errs.push(FieldError::invalid(&sp.child("namespace"), ns, m));
                }
            }
            let name = svc.str("name");
            if name.is_empty() {
                errs.push(FieldError::required(
                    &sp.child("name"),
                    "service name is required",
                ));
            } else {
                for m in names::dns1123_subdomain_errors(name) {
                    errs.push(FieldError::invalid(&sp.child("name"), name, m));
                }
            }
            if let Some(p) = svc.opt_str("path")
                && !p.is_empty()
                && !p.starts_with('/')
            {
                errs.push(FieldError::invalid(
                    &sp.child("path"),
                    p,
                    "must start with a '/'",
                ));
            }
            if let Some(port) = svc.int("port") {
                for m in names::port_number_errors(port) {
                    errs.push(FieldError::invalid(
                        &sp.child("port"),
                        port,
                        format!("port is not valid: {m}"),
                    ));
                }
            }
        }
    }
    errs
}

fn validate_webhooks(cfg: &Value, mutating: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let wp = Path::new("webhooks");
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, w) in cfg.arr("webhooks").iter().enumerate() {
        let p = wp.index(i);
        let name = w.str("name");
        errs.extend(validate_fully_qualified_name(name, &p.child("name")));
        if seen.contains(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        seen.insert(name);
        let vp = p.child("admissionReviewVersions");
        let versions = w.str_list("admissionReviewVersions");
        if versions.is_empty() {
            errs.push(FieldError::required(&vp, "must specify one of v1, v1beta1"));
        } else {
            let mut seen_v: std::collections::HashSet<&str> = std::collections::HashSet::new();
            for (j, v) in versions.iter().enumerate() {
                if seen_v.contains(*v) {
                    errs.push(FieldError::invalid(&vp.index(j), *v, "duplicate version"));
                    continue;
                }
                seen_v.insert(v);
                for m in names::dns1035_label_errors(v) {
                    errs.push(FieldError::invalid(&vp.index(j), *v, m));
                }
            }
            if !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
                errs.push(FieldError::invalid(
                    &vp,
                    Value::from(w.arr("admissionReviewVersions").to_vec()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
        for (j, r) in w.arr("rules").iter().enumerate() {
            errs.extend(validate_rule(r, &p.child("rules").index(j), true));
        }
        if let Some(fp) = w.opt_str("failurePolicy")
            && fp != "Fail"
            && fp != "Ignore"
        {
            errs.push(FieldError::not_supported(
                &p.child("failurePolicy"),
                fp,
                &["Fail", "Ignore"],
            ));
        }
        if let Some(mp) = w.opt_str("matchPolicy")
            && mp != "Equivalent"
            && mp != "Exact"
        {
            errs.push(FieldError::not_supported(
                &p.child("matchPolicy"),
                mp,
                &["Equivalent", "Exact"],
            ));
        }
        match w.opt_str("sideEffects") {
            None => errs.push(FieldError::required(
                &p.child("sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some("None" | "NoneOnDryRun") => {}
            Some(other) => errs.push(FieldError::not_supported(
                &p.child("sideEffects"),
                other,
                &["None", "NoneOnDryRun"],
            )),
        }
        if let Some(t) = w.int("timeoutSeconds")
            && !(1..=30).contains(&t)
        {
            errs.push(FieldError::invalid(
                &p.child("timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        errs.extend(validate_label_selector(
            field(w, "namespaceSelector"),
            false,
            &p.child("namespaceSelector"),
        ));
        errs.extend(validate_label_selector(
            field(w, "objectSelector"),
            false,
            &p.child("objectSelector"),
        ));
        if mutating
            && let Some(rp) = w.opt_str("reinvocationPolicy")
            && rp != "IfNeeded"
            && rp != "Never"
        {
            errs.push(FieldError::not_supported(
                &p.child("reinvocationPolicy"),
                rp,
                &["IfNeeded", "Never"],
            ));
        }
        errs.extend(validate_client_config(
            field(w, "clientConfig"),
            &p.child("clientConfig"),
        ));
    }
    errs
}

fn default_match_resources(m: &mut Map<String, Value>) {
    default_str(m, "matchPolicy", "Equivalent");
    default_value(m, "namespaceSelector", json!({}));
    default_value(m, "objectSelector", json!({}));
    default_rules(m, "resourceRules");
    default_rules(m, "excludeResourceRules");
}

fn default_policy(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        default_str(spec, "failurePolicy", "Fail");
        if let Some(mc) = obj_mut(spec, "matchConstraints") {
            default_match_resources(mc);
        }
    }
}

fn default_binding(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(mr) = obj_mut(spec, "matchResources")
    {
        default_match_resources(mr);
    }
}

fn validate_policy(p: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(p, "spec");
    let sp = Path::new("spec");
    let mc = field(spec, "matchConstraints");
    if mc.is_null() {
        errs.push(FieldError::required(&sp.child("matchConstraints"), ""));
    } else {
        let mp = sp.child("matchConstraints");
        let rules = mc.arr("resourceRules");
        if rules.is_empty() {
            errs.push(FieldError::required(&mp.child("resourceRules"), ""));
        }
        for (i, r) in rules.iter().enumerate() {
            errs.extend(validate_rule(r, &mp.child("resourceRules").index(i), true));
        }
        errs.extend(validate_label_selector(
            field(mc, "namespaceSelector"),
            false,
            &mp.child("namespaceSelector"),
        ));
        errs.extend(validate_label_selector(
            field(mc, "objectSelector"),
            false,
            &mp.child("objectSelector"),
        ));
    }
    let validations = spec.arr("validations");
    if validations.is_empty() && spec.arr("auditAnnotations").is_empty() {
        errs.push(FieldError::required(
            &sp.child("validations"),
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    for (i, v) in validations.iter().enumerate() {
        let vp = sp.child("validations").index(i);
        if v.str("expression").trim().is_empty() {
            errs.push(FieldError::required(&vp.child("expression"), ""));
        }
        if let Some(r) = v.opt_str("reason")
            && ![
                "Unauthorized",
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
            ]
            .contains(&r)
        {
            errs.push(FieldError::not_supported(
                &vp.child("reason"),
                r,
                &[
                    "Unauthorized",
                    "Forbidden",
                    "Invalid",
                    "RequestEntityTooLarge",
                ],
            ));
        }
    }
    if let Some(fp) = spec.opt_str("failurePolicy")
        && fp != "Fail"
        && fp != "Ignore"
    {
        errs.push(FieldError::not_supported(
            &sp.child("failurePolicy"),
            fp,
            &["Fail", "Ignore"],
        ));
    }
    let pk = field(spec, "paramKind");
    if !pk.is_null() {
        for key in ["apiVersion", "kind"] {
            if pk.str(key).is_empty() {
                errs.push(FieldError::required(&sp.child("paramKind").child(key), ""));
            }
        }
    }
    errs
}

fn validate_binding(b: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(b, "spec");
    let sp = Path::new("spec");
    let policy = spec.str("policyName");
    if policy.is_empty() {
        errs.push(FieldError::required(&sp.child("policyName"), ""));
    } else {
        for m in names::name_is_dns_subdomain(policy, false) {
            errs.push(FieldError::invalid(&sp.child("policyName"), policy, m));
        }
    }
    let ap = sp.child("validationActions");
    let actions = spec.str_list("validationActions");
    if actions.is_empty() {
        errs.push(FieldError::required(
            &ap,
            "at least one validation action is required",
        ));
    }
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !["Audit", "Deny", "Warn"].contains(a) {
            errs.push(FieldError::not_supported(
                &ap.index(i),
                *a,
                &["Audit", "Deny", "Warn"],
            ));
        }
        if seen.contains(*a) {
            errs.push(FieldError::duplicate(&ap.index(i), *a));
        }
        seen.insert(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errs.push(FieldError::invalid(&ap, Value::from(spec.arr("validationActions").to_vec()), "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"));
    }
    let pr = field(spec, "paramRef");
    if !pr.is_null() {
        let pp = sp.child("paramRef");
        if pr.has("name") && pr.has("selector") {
            errs.push(FieldError::forbidden(
                &pp.child("name"),
                "name and selector are mutually exclusive",
            ));
        }
        if !pr.has("name") && !pr.has("selector") {
            errs.push(FieldError::required(
                &pp,
                "one of name or selector must be specified",
            ));
        }
        match pr.opt_str("parameterNotFoundAction") {
            None => errs.push(FieldError::required(
                &pp.child("parameterNotFoundAction"),
                "",
            )),
            Some("Allow" | "Deny") => {}
            Some(other) => errs.push(FieldError::not_supported(
                &pp.child("parameterNotFoundAction"),
                other,
                &["Allow", "Deny"],
            )),
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

    #[test]
    fn webhooks() {
        let mut cfg = json!({"webhooks": [{"name": "check.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]});
        default_webhooks(&mut cfg, true);
        let w = &cfg["webhooks"][0];
        assert_eq!(w["failurePolicy"], json!("Fail"));
        assert_eq!(w["timeoutSeconds"], json!(10));
        assert_eq!(w["reinvocationPolicy"], json!("Never"));
        assert_eq!(w["rules"][0]["scope"], json!("*"));
        assert_eq!(w["clientConfig"]["service"]["port"], json!(443));
        assert!(validate_webhooks(&cfg, true).is_empty());
        let bad =
            json!({"webhooks": [{"name": "check", "clientConfig": {}, "timeoutSeconds": 60}]});
        let msgs: Vec<String> = validate_webhooks(&bad, false)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                r#"webhooks[0].name: Invalid value: "check": should be a domain with at least three segments separated by dots"#,
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ]
        );
    }

    #[test]
    fn policies() {
        let mut p = json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]}});
        default_policy(&mut p);
        assert_eq!(p["spec"]["failurePolicy"], json!("Fail"));
        assert!(validate_policy(&p, &ctx()).is_empty());
        assert_eq!(validate_policy(&json!({"spec": {}}), &ctx()).len(), 2);
        let b = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]}});
        assert_eq!(validate_binding(&b, &ctx()).len(), 1);
    }
}
