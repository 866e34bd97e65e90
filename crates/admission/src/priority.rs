//! The Priority admission plugin: a pod created gets `spec.priority` (and
//! `spec.preemptionPolicy`) from its `spec.priorityClassName`, or from the global default
//! PriorityClass (whose name it then records), else priority 0 and `PreemptLowerPriority`;
//! updates keep what creation set. On PriorityClass writes it allows only one
//! `globalDefault`. Also the two system PriorityClasses Kubernetes creates at start.
//!
//! Since Kubernetes 1.17 pods of any namespace may use `system-cluster-critical` and
//! `system-node-critical`: the old kube-system-only rule is gone, and limiting them is left
//! to ResourceQuota (`limitedResources` in its admission configuration plus a quota with a
//! `PriorityClass` scope selector). Names with the `system-` prefix and values above one
//! billion are refused by PriorityClass validation (kyb-validation), not by this plugin.

use serde_json::{Value, json};

use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The system class for pods that must run in the cluster but may move between nodes.
pub const SYSTEM_CLUSTER_CRITICAL: &str = "system-cluster-critical";
/// The system class for pods that must not move from their node.
pub const SYSTEM_NODE_CRITICAL: &str = "system-node-critical";
/// The priority of `system-cluster-critical` (`system-node-critical` is 1000 more).
pub const SYSTEM_CRITICAL_PRIORITY: i64 = 2_000_000_000;
/// The highest value a user-defined PriorityClass may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The priority of pods when no class names one and no class is the global default.
pub const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: i64 = 0;
/// The preemption policy of pods when no PriorityClass gives one.
pub const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

/// Whether the plugin looks at a request: creating or updating a pod or a PriorityClass
/// (`scheduling.k8s.io`), never a subresource.
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    matches!(operation, Operation::Create | Operation::Update)
        && subresource.is_empty()
        && ((group.is_empty() && resource == "pods")
            || (group == "scheduling.k8s.io" && resource == "priorityclasses"))
}

/// The PriorityClasses Kubernetes creates at start, as stored (`scheduling.k8s.io/v1`, with
/// the defaulted `preemptionPolicy`): `system-node-critical` (2000001000) and
/// `system-cluster-critical` (2000000000).
pub fn system_priority_classes() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": SYSTEM_NODE_CRITICAL},
            "value": SYSTEM_CRITICAL_PRIORITY + 1000,
            "description": "Used for system critical pods that must not be moved from their current node.",
            "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
        }),
        json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": SYSTEM_CLUSTER_CRITICAL},
            "value": SYSTEM_CRITICAL_PRIORITY,
            "description": "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
            "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
        }),
    ]
}

/// The global default PriorityClass among `classes`: the one with `globalDefault: true`, the
/// lowest value winning if a race left several.
pub fn default_priority_class<'a>(
    classes: impl IntoIterator<Item = &'a Value>,
) -> Option<&'a Value> {
    let mut best: Option<&Value> = None;
    for class in classes {
        if json::opt_bool(class, &["globalDefault"]) == Some(true)
            && best.is_none_or(|b| class_value(b) > class_value(class))
        {
            best = Some(class);
        }
    }
    best
}

fn class_value(class: &Value) -> i64 {
    json::at(class, &["value"])
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The mutating step for pods. On `CREATE`: resolves the pod's class among `classes` (all
/// PriorityClasses), sets `spec.priority` and `spec.preemptionPolicy`, and records the
/// default class's name when the pod named none. On `UPDATE`: copies `spec.priority` and
/// `spec.preemptionPolicy` from `old_pod` when the new pod lacks them.
///
/// Errors, all [`Denial::Forbidden`] (text after `pods "<name>" is forbidden: `):
/// `no PriorityClass with name <name> was found`, `the integer value of priority (<n>) must
/// not be provided in pod spec; priority admission controller computed <m> from the given
/// PriorityClass name`, and the same for `the string value of PreemptionPolicy (<p>)`.
/// [`Denial::BadRequest`] `resource was marked with kind Pod but was unable to be
/// converted` for a pod that is not a JSON object.
pub fn admit_pod<'a>(
    operation: Operation,
    pod: &mut Value,
    old_pod: Option<&Value>,
    classes: impl IntoIterator<Item = &'a Value>,
) -> Result<(), Denial> {
    let unconvertible = || {
        Denial::BadRequest(
            "resource was marked with kind Pod but was unable to be converted".into(),
        )
    };
    if !pod.is_object() {
        return Err(unconvertible());
    }
    match operation {
        Operation::Update => {
            let Some(old_pod) = old_pod.filter(|o| o.is_object()) else {
                return Err(unconvertible());
            };
            let Some(spec) = json::spec_mut(pod) else {
                return Ok(());
            };
            for key in ["priority", "preemptionPolicy"] {
                let unset = spec.get(key).is_none_or(Value::is_null);
                if unset
                    && let Some(old) = json::at(old_pod, &["spec", key]).filter(|v| !v.is_null())
                {
                    spec.insert(key.into(), old.clone());
                }
            }
            Ok(())
        }
        Operation::Create => admit_pod_create(pod, classes),
        Operation::Delete | Operation::Connect => Ok(()),
    }
}

fn admit_pod_create<'a>(
    pod: &mut Value,
    classes: impl IntoIterator<Item = &'a Value>,
) -> Result<(), Denial> {
    let wanted = json::str_at(pod, &["spec", "priorityClassName"]).to_string();
    // One pass over the classes finds both the named one and the global default.
    let mut named = None;
    let mut default: Option<&Value> = None;
    for class in classes {
        if !wanted.is_empty()
            && json::opt_str(class, &["metadata", "name"]) == Some(wanted.as_str())
        {
            named = Some(class);
        }
        if json::opt_bool(class, &["globalDefault"]) == Some(true)
            && default.is_none_or(|d| class_value(d) > class_value(class))
        {
            default = Some(class);
        }
    }
    let (class_name, priority, policy) = if wanted.is_empty() {
        match default {
            Some(class) => (
                Some(json::str_at(class, &["metadata", "name"]).to_string()),
                class_value(class),
                json::opt_str(class, &["preemptionPolicy"]),
            ),
            None => (
                None,
                DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
                Some(PREEMPT_LOWER_PRIORITY),
            ),
        }
    } else {
        let Some(class) = named else {
            return Err(Denial::Forbidden(format!(
                "no PriorityClass with name {wanted} was found"
            )));
        };
        (
            None,
            class_value(class),
            json::opt_str(class, &["preemptionPolicy"]),
        )
    };
    let policy = policy.map(str::to_string);
    let Some(spec) = json::spec_mut(pod) else {
        return Ok(());
    };
    if let Some(given) = spec.get("priority").filter(|v| !v.is_null())
        && given.as_i64() != Some(priority)
    {
        return Err(Denial::Forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        )));
    }
    if let Some(policy) = &policy
        && let Some(given) = spec.get("preemptionPolicy").filter(|v| !v.is_null())
        && given.as_str() != Some(policy.as_str())
    {
        let given = given
            .as_str()
            .map_or_else(|| given.to_string(), str::to_string);
        return Err(Denial::Forbidden(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        )));
    }
    if let Some(name) = class_name {
        spec.insert("priorityClassName".into(), name.into());
    }
    spec.insert("priority".into(), priority.into());
    if let Some(policy) = policy {
        spec.insert("preemptionPolicy".into(), policy.into());
    }
    Ok(())
}

/// The validating step for PriorityClass writes: a class marked `globalDefault` may not be
/// created, nor an existing class be marked default, while another class (among `classes`,
/// the stored PriorityClasses) is the default.
///
/// Errors: [`Denial::Forbidden`] `PriorityClass <name> is already marked as default. Only one
/// default can exist` (text after `priorityclasses.scheduling.k8s.io "<name>" is
/// forbidden: `); [`Denial::BadRequest`] `resource was marked with kind PriorityClass but was
/// unable to be converted` for an object that is not a JSON object.
pub fn validate_priority_class<'a>(
    operation: Operation,
    class: &Value,
    classes: impl IntoIterator<Item = &'a Value>,
) -> Result<(), Denial> {
    if !class.is_object() {
        return Err(Denial::BadRequest(
            "resource was marked with kind PriorityClass but was unable to be converted".into(),
        ));
    }
    if !matches!(operation, Operation::Create | Operation::Update)
        || json::opt_bool(class, &["globalDefault"]) != Some(true)
    {
        return Ok(());
    }
    let Some(existing) = default_priority_class(classes) else {
        return Ok(());
    };
    let existing_name = json::str_at(existing, &["metadata", "name"]);
    if operation == Operation::Create || existing_name != json::str_at(class, &["metadata", "name"])
    {
        return Err(Denial::Forbidden(format!(
            "PriorityClass {existing_name} is already marked as default. Only one default can exist"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn class(name: &str, value: i64, default: bool, policy: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name}, "value": value, "globalDefault": default});
        if let Some(p) = policy {
            c["preemptionPolicy"] = json!(p);
        }
        c
    }

    #[test]
    fn system_classes() {
        let classes = system_priority_classes();
        assert_eq!(classes[0]["metadata"]["name"], "system-node-critical");
        assert_eq!(classes[0]["value"], 2000001000);
        assert_eq!(classes[1]["value"], 2000000000);
        assert_eq!(
            classes[1]["description"],
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."
        );
        // They resolve like any class, in any namespace.
        let mut pod = json!({"metadata": {"namespace": "default"}, "spec": {"priorityClassName": "system-node-critical"}});
        admit_pod(Operation::Create, &mut pod, None, &classes).unwrap();
        assert_eq!(pod["spec"]["priority"], 2000001000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    }

    #[test]
    fn no_class_and_no_default_gives_zero() {
        let mut pod = json!({"spec": {"containers": []}});
        admit_pod(
            Operation::Create,
            &mut pod,
            None,
            &[class("low", 5, false, None)],
        )
        .unwrap();
        assert_eq!(pod["spec"]["priority"], 0);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        assert!(pod["spec"].get("priorityClassName").is_none());
    }

    #[test]
    fn global_default_is_recorded() {
        let classes = [
            class("a", 100, true, Some("Never")),
            class("b", 50, true, Some("PreemptLowerPriority")),
            class("c", 1, false, None),
        ];
        assert_eq!(
            default_priority_class(&classes).unwrap()["metadata"]["name"],
            "b"
        );
        let mut pod = json!({"spec": {}});
        admit_pod(Operation::Create, &mut pod, None, &classes).unwrap();
        assert_eq!(pod["spec"]["priorityClassName"], "b");
        assert_eq!(pod["spec"]["priority"], 50);
    }

    #[test]
    fn named_class_sets_priority_and_policy() {
        let classes = [class("high", 1000, false, Some("Never"))];
        let mut pod = json!({"spec": {"priorityClassName": "high", "priority": 1000}});
        admit_pod(Operation::Create, &mut pod, None, &classes).unwrap();
        assert_eq!(pod["spec"]["priority"], 1000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
        // A class without a policy leaves the pod's policy alone.
        let mut pod = json!({"spec": {"priorityClassName": "bare", "preemptionPolicy": "Never"}});
        admit_pod(
            Operation::Create,
            &mut pod,
            None,
            &[class("bare", 7, false, None)],
        )
        .unwrap();
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
    }

    #[test]
    fn errors_have_kubernetes_texts() {
        let classes = [class("high", 1000, false, Some("PreemptLowerPriority"))];
        let mut pod = json!({"spec": {"priorityClassName": "nope"}});
        assert_eq!(
            admit_pod(Operation::Create, &mut pod, None, &classes)
                .unwrap_err()
                .message("", "pods", "web"),
            r#"pods "web" is forbidden: no PriorityClass with name nope was found"#
        );
        let mut pod = json!({"spec": {"priorityClassName": "high", "priority": 5}});
        assert_eq!(
            admit_pod(Operation::Create, &mut pod, None, &classes).unwrap_err(),
            Denial::forbidden(
                "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
            )
        );
        let mut pod = json!({"spec": {"priority": 3}});
        assert_eq!(
            admit_pod(Operation::Create, &mut pod, None, &[]).unwrap_err(),
            Denial::forbidden(
                "the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
            )
        );
        let mut pod = json!({"spec": {"priorityClassName": "high", "preemptionPolicy": "Never"}});
        assert_eq!(
            admit_pod(Operation::Create, &mut pod, None, &classes).unwrap_err(),
            Denial::forbidden(
                "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
            )
        );
    }

    #[test]
    fn updates_keep_the_old_priority() {
        let old = json!({"spec": {"priority": 7, "preemptionPolicy": "Never"}});
        let mut pod = json!({"spec": {"containers": []}});
        admit_pod(Operation::Update, &mut pod, Some(&old), &[]).unwrap();
        assert_eq!(pod["spec"]["priority"], 7);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
        let mut pod = json!({"spec": {"priority": 9}});
        admit_pod(Operation::Update, &mut pod, Some(&old), &[]).unwrap();
        assert_eq!(pod["spec"]["priority"], 9);
    }

    #[test]
    fn only_one_global_default() {
        let existing = [class("a", 1, true, None), class("b", 2, false, None)];
        let new_default = class("c", 3, true, None);
        assert_eq!(
            validate_priority_class(Operation::Create, &new_default, &existing)
                .unwrap_err()
                .message("scheduling.k8s.io", "priorityclasses", "c"),
            r#"priorityclasses.scheduling.k8s.io "c" is forbidden: PriorityClass a is already marked as default. Only one default can exist"#
        );
        assert!(
            validate_priority_class(Operation::Update, &class("a", 5, true, None), &existing)
                .is_ok()
        );
        assert!(
            validate_priority_class(Operation::Update, &class("b", 2, true, None), &existing)
                .is_err()
        );
        assert!(
            validate_priority_class(Operation::Create, &class("d", 2, false, None), &existing)
                .is_ok()
        );
        assert!(validate_priority_class(Operation::Create, &new_default, &[]).is_ok());
    }

    #[test]
    fn applies_to_pods_and_classes() {
        assert!(applies(Operation::Create, "", "pods", ""));
        assert!(applies(
            Operation::Update,
            "scheduling.k8s.io",
            "priorityclasses",
            ""
        ));
        assert!(!applies(Operation::Update, "", "pods", "status"));
        assert!(!applies(Operation::Delete, "", "pods", ""));
    }

    #[test]
    fn hostile_input() {
        let weird = [
            json!(null),
            json!({"metadata": "x", "value": "big", "globalDefault": "yes"}),
            json!(3),
        ];
        for mut pod in [
            json!(null),
            json!({"spec": 4}),
            json!({"spec": {"priorityClassName": 3, "priority": "high"}}),
        ] {
            let _ = admit_pod(Operation::Create, &mut pod, None, &weird);
            let _ = admit_pod(
                Operation::Update,
                &mut pod,
                Some(&json!({"spec": []})),
                &weird,
            );
            let _ = admit_pod(Operation::Update, &mut pod, None, &weird);
        }
        let mut pod = json!({"spec": {"priority": "high"}});
        assert_eq!(
            admit_pod(Operation::Create, &mut pod, None, &weird)
                .unwrap_err()
                .to_string(),
            "the integer value of priority (\"high\") must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
        );
        assert!(validate_priority_class(Operation::Create, &json!([]), &weird).is_err());
    }
}
