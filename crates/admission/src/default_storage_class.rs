//! The DefaultStorageClass admission plugin: a PersistentVolumeClaim created without a
//! storage class (no `spec.storageClassName`, not even "", and no
//! `volume.beta.kubernetes.io/storage-class` annotation) gets the default StorageClass. When
//! several classes are marked default, the newest wins (ties: the smallest name), as
//! Kubernetes picks since 1.26.

use serde_json::Value;

use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The annotation that marks the default StorageClass (value `"true"`).
pub const IS_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
/// Its beta spelling, still honoured.
pub const BETA_IS_DEFAULT_CLASS_ANNOTATION: &str =
    "storageclass.beta.kubernetes.io/is-default-class";
/// The beta PVC annotation naming a storage class; a claim carrying it has a class.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// Whether the plugin looks at a request: creating a PVC (not a subresource).
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    operation == Operation::Create
        && group.is_empty()
        && resource == "persistentvolumeclaims"
        && subresource.is_empty()
}

/// Whether a StorageClass is marked default (either annotation set to exactly `"true"`).
pub fn is_default_class(class: &Value) -> bool {
    kyb_apimachinery::meta::annotation(class, IS_DEFAULT_CLASS_ANNOTATION) == Some("true")
        || kyb_apimachinery::meta::annotation(class, BETA_IS_DEFAULT_CLASS_ANNOTATION)
            == Some("true")
}

/// The default StorageClass among `classes`: of those marked default, the one created last,
/// ties (and unreadable timestamps, which count as the oldest) broken by the smallest name.
pub fn default_storage_class<'a>(
    classes: impl IntoIterator<Item = &'a Value>,
) -> Option<&'a Value> {
    let mut best: Option<(Option<jiff::Timestamp>, &str, &Value)> = None;
    for class in classes.into_iter().filter(|c| is_default_class(c)) {
        let created = json::opt_str(class, &["metadata", "creationTimestamp"])
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let name = json::str_at(class, &["metadata", "name"]);
        let better = match &best {
            None => true,
            Some((best_created, best_name, _)) => {
                created > *best_created || (created == *best_created && name < *best_name)
            }
        };
        if better {
            best = Some((created, name, class));
        }
    }
    best.map(|(_, _, class)| class)
}

/// Sets `spec.storageClassName` of a claim that has no class to the default StorageClass's
/// name (leaving the claim alone when there is no default). `classes` are all StorageClasses.
/// Never refuses a claim.
pub fn admit<'a>(
    pvc: &mut Value,
    classes: impl IntoIterator<Item = &'a Value>,
) -> Result<(), Denial> {
    let has_class = kyb_apimachinery::meta::has_annotation(pvc, BETA_STORAGE_CLASS_ANNOTATION)
        || json::at(pvc, &["spec", "storageClassName"]).is_some_and(|v| !v.is_null());
    if has_class || !pvc.is_object() {
        return Ok(());
    }
    let Some(default) = default_storage_class(classes) else {
        return Ok(());
    };
    let name = json::str_at(default, &["metadata", "name"]).to_string();
    if let Some(spec) = json::spec_mut(pvc) {
        spec.insert("storageClassName".into(), name.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c =
            json!({"metadata": {"name": name, "creationTimestamp": created}, "provisioner": "p"});
        if let Some(v) = default {
            c["metadata"]["annotations"] = json!({IS_DEFAULT_CLASS_ANNOTATION: v});
        }
        c
    }

    #[test]
    fn claims_without_class_get_the_default() {
        let classes = [
            class("slow", "2024-01-01T00:00:00Z", None),
            class("fast", "2024-01-02T00:00:00Z", Some("true")),
        ];
        let mut pvc = json!({"metadata": {"name": "c"}, "spec": {"resources": {}}});
        admit(&mut pvc, &classes).unwrap();
        assert_eq!(pvc["spec"]["storageClassName"], "fast");
    }

    #[test]
    fn claims_with_a_class_are_left_alone() {
        let classes = [class("fast", "2024-01-02T00:00:00Z", Some("true"))];
        for mut pvc in [
            json!({"spec": {"storageClassName": ""}}),
            json!({"spec": {"storageClassName": "slow"}}),
            json!({"metadata": {"annotations": {BETA_STORAGE_CLASS_ANNOTATION: "x"}}, "spec": {}}),
        ] {
            let before = pvc.clone();
            admit(&mut pvc, &classes).unwrap();
            assert_eq!(pvc, before);
        }
    }

    #[test]
    fn newest_default_wins_then_smallest_name() {
        let classes = [
            class("b", "2024-01-01T00:00:00Z", Some("true")),
            class("c", "2024-03-01T00:00:00Z", Some("true")),
            class("a", "2024-03-01T00:00:00Z", Some("true")),
            class("z", "2025-01-01T00:00:00Z", Some("True")),
        ];
        assert_eq!(
            default_storage_class(&classes).unwrap()["metadata"]["name"],
            "a"
        );
        let beta = json!({"metadata": {"name": "beta", "creationTimestamp": "2030-01-01T00:00:00Z",
            "annotations": {BETA_IS_DEFAULT_CLASS_ANNOTATION: "true"}}});
        let with_beta = [classes[0].clone(), beta];
        assert_eq!(
            default_storage_class(&with_beta).unwrap()["metadata"]["name"],
            "beta"
        );
        assert!(default_storage_class(&[class("x", "2024-01-01T00:00:00Z", None)]).is_none());
        let mut pvc = json!({"spec": {}});
        admit(&mut pvc, &[class("x", "2024-01-01T00:00:00Z", None)]).unwrap();
        assert!(pvc["spec"].get("storageClassName").is_none());
    }

    #[test]
    fn applies_to_claim_creates() {
        assert!(applies(Operation::Create, "", "persistentvolumeclaims", ""));
        assert!(!applies(
            Operation::Update,
            "",
            "persistentvolumeclaims",
            ""
        ));
        assert!(!applies(
            Operation::Create,
            "",
            "persistentvolumeclaims",
            "status"
        ));
    }

    #[test]
    fn hostile_input() {
        let weird = [
            json!(null),
            json!({"metadata": {"annotations": {IS_DEFAULT_CLASS_ANNOTATION: "true"}, "creationTimestamp": 5, "name": 3}}),
            class("ok", "not a time", Some("true")),
        ];
        assert_eq!(
            default_storage_class(&weird).unwrap()["metadata"]["name"],
            3
        );
        for mut pvc in [json!(null), json!({"spec": 1}), json!({"metadata": 1})] {
            admit(&mut pvc, &weird).unwrap();
        }
    }
}
