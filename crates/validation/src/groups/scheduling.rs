//! `scheduling.k8s.io/v1`: PriorityClasses — the reserved `system-` names, the value
//! ceiling of user classes, the preemption policy and its default, and immutable value.

use serde_json::{Value, json};

use crate::Ctx;
use crate::kinds::Kind;
use crate::meta::immutable;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, default_value, field, field_at};
use kyb_apimachinery::names;

/// Highest priority a user-defined class may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// The rules of a `scheduling.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "PriorityClass" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .defaults(|o| {
                    if let Some(m) = o.as_object_mut() {
                        default_value(m, "preemptionPolicy", json!("PreemptLowerPriority"));
                    }
                })
                .validate(validate_priority_class)
                .update(validate_priority_class_update),
        ),
        _ => None,
    }
}

fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    let expected = match name {
        "system-node-critical" => 2_000_001_000,
        "system-cluster-critical" => 2_000_000_000,
        _ => return Err(format!("{name} is not a known system priority class")),
    };
    if value != expected {
        return Err(format!("value of {name} PriorityClass must be {expected}"));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    Ok(())
}

fn validate_priority_class(pc: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = field_at(pc, &["metadata", "name"])
        .as_str()
        .unwrap_or_default();
    let value = pc.int("value").unwrap_or(0);
    if name.starts_with("system-") {
        if let Err(e) = known_system_class(name, value, pc.flag("globalDefault")) {
            errs.push(FieldError::forbidden(
                &Path::new("metadata").child("name"),
                format!("priority class names with 'system-' prefix are reserved for system use only. error: {e}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        errs.push(FieldError::forbidden(
            &Path::new("value"),
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    if let Some(p) = pc.opt_str("preemptionPolicy") {
        match p {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(FieldError::required(&Path::new("preemptionPolicy"), "")),
            other => errs.push(FieldError::not_supported(
                &Path::new("preemptionPolicy"),
                other,
                &["PreemptLowerPriority", "Never"],
            )),
        }
    }
    errs
}

fn validate_priority_class_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new.int("value") != old.int("value") {
        errs.push(FieldError::forbidden(
            &Path::new("value"),
            "may not be changed in an update.",
        ));
    }
    errs.extend(immutable(
        field(new, "preemptionPolicy"),
        field(old, "preemptionPolicy"),
        &Path::new("preemptionPolicy"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_classes() {
        let ctx = Ctx { old: None };
        assert!(
            validate_priority_class(&json!({"metadata": {"name": "high"}, "value": 1000}), &ctx)
                .is_empty()
        );
        assert!(
            validate_priority_class(
                &json!({"metadata": {"name": "system-node-critical"}, "value": 2000001000}),
                &ctx
            )
            .is_empty()
        );
        let msgs: Vec<String> = validate_priority_class(
            &json!({"metadata": {"name": "system-mine"}, "value": 1}),
            &ctx,
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            msgs,
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
            ]
        );
        assert_eq!(
            validate_priority_class(
                &json!({"metadata": {"name": "x"}, "value": 2000000000}),
                &ctx
            )
            .len(),
            1
        );
        let errs = validate_priority_class_update(&json!({"value": 2}), &json!({"value": 1}), &ctx);
        assert_eq!(
            errs[0].to_string(),
            "value: Forbidden: may not be changed in an update."
        );
    }
}
