//! `storage.k8s.io/v1` CSIStorageCapacity: the capacity a CSI driver reports for one
//! storage class in one topology segment, which the scheduler reads for volumes bound at
//! first consumer.

use serde_json::Value;

use crate::Ctx;
use crate::core::resources::parse_quantity;
use crate::kinds::Kind;
use crate::meta::{IS_NEGATIVE_MSG, immutable};
use crate::selector::validate_label_selector;
use kyb_apimachinery::field::{FieldError, Path};
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;

/// CSIStorageCapacity's rules.
pub(crate) fn csi_storage_capacity() -> Kind {
    Kind::new(names::name_is_dns_subdomain)
        .validate(validate)
        .update(|n, o, ctx| {
            let mut errs = validate(n, ctx);
            for key in ["nodeTopology", "storageClassName"] {
                errs.extend(immutable(field(n, key), field(o, key), &Path::new(key)));
            }
            errs
        })
}

fn validate(capacity: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_label_selector(
        field(capacity, "nodeTopology"),
        false,
        &Path::new("nodeTopology"),
    );
    let class = capacity.str("storageClassName");
    for m in names::name_is_dns_subdomain(class, false) {
        errs.push(FieldError::invalid(
            &Path::new("storageClassName"),
            class,
            m,
        ));
    }
    for key in ["capacity", "maximumVolumeSize"] {
        let value = field(capacity, key);
        if value.is_null() {
            continue;
        }
        let path = Path::new(key);
        match parse_quantity(value, &path) {
            Ok(q) if q.sign() < 0 => {
                errs.push(FieldError::invalid(&path, q.canonical(), IS_NEGATIVE_MSG));
            }
            Ok(_) => {}
            Err(e) => errs.push(e),
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn capacities_need_a_class_and_nonnegative_sizes() {
        let ctx = Ctx { old: None };
        let ok = json!({"storageClassName": "fast", "capacity": "10Gi",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}});
        assert!(validate(&ok, &ctx).is_empty());
        let bad = json!({"storageClassName": "", "capacity": "-1Gi", "maximumVolumeSize": "1Gi"});
        let fields: Vec<String> = validate(&bad, &ctx).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, vec!["storageClassName", "capacity"]);
        let selector = json!({"storageClassName": "a",
            "nodeTopology": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}});
        assert_eq!(validate(&selector, &ctx).len(), 1);
    }
}
