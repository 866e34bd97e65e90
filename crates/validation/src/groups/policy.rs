//! `policy/v1`: PodDisruptionBudgets (min available or max unavailable, selector, unhealthy
//! pod eviction policy) and Evictions.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::reset_status;
use crate::groups::apps::{int_or_percent_value, validate_int_or_percent};
use crate::kinds::{Kind, MetaMode};
use crate::meta::{nonnegative_field, validate_label_name};
use crate::selector::validate_label_selector;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_apimachinery::names;

/// The rules of a `policy/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    let subdomain = names::name_is_dns_subdomain;
    Some(match kind {
        "PodDisruptionBudget" => Kind::new(subdomain)
            .with_status()
            .prepare(|o| {
                reset_status(o, json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}))
            })
            .validate(validate_pdb)
            .status(validate_pdb_status),
        "Eviction" => Kind::new(subdomain).meta(MetaMode::Skip),
        _ => return None,
    })
}

fn percent_or_count(v: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_int_or_percent(v, path);
    if let Value::String(s) = v
        && s.ends_with('%')
        && int_or_percent_value(v) > 100
    {
        errs.push(FieldError::invalid(
            path,
            s.as_str(),
            "must not be greater than 100%",
        ));
    }
    errs
}

fn validate_pdb(pdb: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(pdb, "spec");
    let path = Path::new("spec");
    if spec.has("minAvailable") && spec.has("maxUnavailable") {
        errs.push(FieldError::invalid(
            &path,
            spec.clone(),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for key in ["minAvailable", "maxUnavailable"] {
        if let Some(v) = spec.get_field(key) {
            errs.extend(percent_or_count(v, &path.child(key)));
        }
    }
    errs.extend(validate_label_selector(
        field(spec, "selector"),
        false,
        &path.child("selector"),
    ));
    if let Some(p) = spec.opt_str("unhealthyPodEvictionPolicy")
        && p != "AlwaysAllow"
        && p != "IfHealthyBudget"
    {
        errs.push(FieldError::not_supported(
            &path.child("unhealthyPodEvictionPolicy"),
            p,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
    errs
}

/// metav1 `Condition` lists (`ValidateConditions`).
pub(crate) fn validate_conditions(conditions: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        let t = c.str("type");
        if seen.contains(t) {
            errs.push(FieldError::duplicate(&p.child("type"), t));
        }
        seen.insert(t);
        errs.extend(validate_label_name(t, &p.child("type")));
        let status = c.str("status");
        if !["False", "True", "Unknown"].contains(&status) {
            errs.push(FieldError::not_supported(
                &p.child("status"),
                status,
                &["False", "True", "Unknown"],
            ));
        }
        if let Some(g) = c.int("observedGeneration")
            && g < 0
        {
            errs.push(FieldError::invalid(
                &p.child("observedGeneration"),
                g,
                "must be greater than or equal to zero",
            ));
        }
        if c.str("lastTransitionTime").is_empty() {
            errs.push(FieldError::required(
                &p.child("lastTransitionTime"),
                "must be set",
            ));
        }
        let reason = c.str("reason");
        if reason.is_empty() {
            errs.push(FieldError::required(&p.child("reason"), "must be set"));
        } else {
            let ok = reason.starts_with(|ch: char| ch.is_ascii_alphabetic())
                && reason
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_,:".contains(ch))
                && reason.ends_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_');
            if !ok {
                errs.push(FieldError::invalid(
                    &p.child("reason"),
                    reason,
                    names::regex_error(
                        "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                        "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?",
                        &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
                    ),
                ));
            }
            if reason.len() > 1024 {
                errs.push(FieldError::too_long(&p.child("reason"), 1024));
            }
        }
        if c.str("message").len() > 32 * 1024 {
            errs.push(FieldError::too_long(&p.child("message"), 32 * 1024));
        }
    }
    errs
}

fn validate_pdb_status(new: &Value, _old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let status = field(new, "status");
    let path = Path::new("status");
    let mut errs = Vec::new();
    for key in [
        "disruptionsAllowed",
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
    ] {
        errs.extend(nonnegative_field(status, key, &path));
    }
    errs.extend(validate_conditions(
        field_at(new, &["status", "conditions"])
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default(),
        &path.child("conditions"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdbs() {
        let ctx = Ctx { old: None };
        assert!(
            validate_pdb(
                &json!({"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"a": "b"}}}}),
                &ctx
            )
            .is_empty()
        );
        let errs: Vec<String> = validate_pdb(
            &json!({"spec": {"minAvailable": 1, "maxUnavailable": "120%"}}),
            &ctx,
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(errs.len(), 2);
        assert!(errs[0].ends_with("minAvailable and maxUnavailable cannot be both set"));
        assert_eq!(
            errs[1],
            r#"spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%"#
        );
        let st = json!({"status": {"disruptionsAllowed": -1, "conditions": [{"type": "DisruptionAllowed", "status": "Maybe"}]}});
        assert_eq!(validate_pdb_status(&st, &Value::Null, &ctx).len(), 4);
    }
}
