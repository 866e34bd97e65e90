//! `coordination.k8s.io/v1`: Leases (positive duration, non-negative transitions).

use serde_json::Value;

use crate::Ctx;
use crate::kinds::Kind;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;

/// The rules of a `coordination.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "Lease" => Some(Kind::new(names::name_is_dns_subdomain).validate(validate_lease)),
        _ => None,
    }
}

fn validate_lease(lease: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(lease, "spec");
    let path = Path::new("spec");
    if let Some(d) = spec.int("leaseDurationSeconds")
        && d <= 0
    {
        errs.push(FieldError::invalid(
            &path.child("leaseDurationSeconds"),
            d,
            "must be greater than 0",
        ));
    }
    if let Some(t) = spec.int("leaseTransitions")
        && t < 0
    {
        errs.push(FieldError::invalid(
            &path.child("leaseTransitions"),
            t,
            "must be greater than or equal to 0",
        ));
    }
    if let Some(s) = spec.opt_str("strategy") {
        for m in names::qualified_name_errors(s) {
            errs.push(FieldError::invalid(&path.child("strategy"), s, m));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leases() {
        let ctx = Ctx { old: None };
        assert!(
            validate_lease(
                &json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
                &ctx
            )
            .is_empty()
        );
        let msgs: Vec<String> = validate_lease(
            &json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}),
            &ctx,
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            msgs,
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }
}
