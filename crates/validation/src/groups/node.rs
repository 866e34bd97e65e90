//! `node.k8s.io/v1`: RuntimeClasses — handler (a DNS label, immutable), pod overhead and
//! scheduling constraints.

use serde_json::{Value, json};

use crate::Ctx;
use crate::core::resources::{validate_container_resource_name, validate_resource_requirements};
use crate::core::scheduling::validate_tolerations;
use crate::kinds::Kind;
use crate::meta::{immutable, validate_labels};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_apimachinery::names;
use kyb_apimachinery::quantity::canonicalize_list;

/// The rules of a `node.k8s.io/v1` kind.
pub(crate) fn lookup(kind: &str) -> Option<Kind> {
    match kind {
        "RuntimeClass" => Some(
            Kind::new(names::name_is_dns_subdomain)
                .defaults(|o| {
                    if let Some(pf) = o.pointer_mut("/overhead/podFixed") {
                        canonicalize_list(Some(pf));
                    }
                })
                .validate(validate_runtime_class)
                .update(|n, o, _| {
                    immutable(
                        field(n, "handler"),
                        field(o, "handler"),
                        &Path::new("handler"),
                    )
                }),
        ),
        _ => None,
    }
}

fn validate_runtime_class(rc: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let handler = rc.str("handler");
    for m in names::name_is_dns_label(handler, false) {
        errs.push(FieldError::invalid(&Path::new("handler"), handler, m));
    }
    let pf = field_at(rc, &["overhead", "podFixed"]);
    if !pf.is_null() {
        errs.extend(validate_resource_requirements(
            &json!({"limits": pf}),
            validate_container_resource_name,
            &[],
            &Path::new("overhead").child("podFixed"),
        ));
    }
    let s = field(rc, "scheduling");
    if !s.is_null() {
        let sp = Path::new("scheduling");
        errs.extend(validate_labels(
            field(s, "nodeSelector"),
            &sp.child("nodeSelector"),
        ));
        errs.extend(validate_tolerations(
            s.arr("tolerations"),
            &sp.child("tolerations"),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_classes() {
        let ctx = Ctx { old: None };
        assert!(
            validate_runtime_class(
                &json!({"handler": "runc", "overhead": {"podFixed": {"cpu": "100m"}}}),
                &ctx
            )
            .is_empty()
        );
        let errs = validate_runtime_class(&json!({"handler": "Run_C"}), &ctx);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "handler");
    }
}
