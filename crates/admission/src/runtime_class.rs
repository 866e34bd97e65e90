//! The RuntimeClass admission plugin: a pod created with `spec.runtimeClassName` must name
//! a RuntimeClass that exists; it gets the class's `overhead` (refused if it set a
//! different one), and the class's `scheduling` node selector and tolerations merged into
//! its own (refused on a conflicting node selector). A pod with an overhead but no class
//! defining one is refused.

use crate::denial::Denial;
use kyb_api::Operation;
use serde_json::{Map, Value};

/// Whether the plugin looks at a request: creating a pod (never a subresource).
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    operation == Operation::Create
        && group.is_empty()
        && resource == "pods"
        && subresource.is_empty()
}

/// The RuntimeClass a pod names, if any.
pub fn class_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/runtimeClassName")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
}

fn forbidden(text: String) -> Denial {
    Denial::forbidden(format!("pod rejected: {text}"))
}

/// Admits a pod being created: `class` is the RuntimeClass its `runtimeClassName` names,
/// `None` if no such class exists (or it names none).
pub fn admit(pod: &mut Value, class: Option<&Value>) -> Result<(), Denial> {
    let Some(name) = class_name(pod).map(str::to_string) else {
        return validate_overhead(pod, None);
    };
    let Some(class) = class else {
        return Err(forbidden(format!("RuntimeClass \"{name}\" not found")));
    };
    let overhead = class.pointer("/overhead/podFixed").filter(|o| !o.is_null());
    if let Some(overhead) = overhead {
        let current = pod.pointer("/spec/overhead").filter(|o| !o.is_null());
        if current.is_some_and(|c| c.as_object().is_some_and(|m| !m.is_empty()) && c != overhead) {
            return Err(forbidden(
                "Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            ));
        }
        set(pod, "overhead", overhead.clone());
    }
    if let Some(scheduling) = class.get("scheduling").filter(|s| !s.is_null()) {
        if let Some(selector) = scheduling.get("nodeSelector").and_then(Value::as_object) {
            let mut merged: Map<String, Value> = pod
                .pointer("/spec/nodeSelector")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (key, value) in selector {
                if let Some(existing) = merged.get(key)
                    && existing != value
                {
                    return Err(Denial::forbidden(format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                        value.as_str().unwrap_or_default(),
                        existing.as_str().unwrap_or_default()
                    )));
                }
                merged.insert(key.clone(), value.clone());
            }
            set(pod, "nodeSelector", Value::Object(merged));
        }
        if let Some(tolerations) = scheduling.get("tolerations").and_then(Value::as_array) {
            let mut merged: Vec<Value> = pod
                .pointer("/spec/tolerations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for toleration in tolerations {
                if !merged.contains(toleration) {
                    merged.push(toleration.clone());
                }
            }
            set(pod, "tolerations", Value::Array(merged));
        }
    }
    validate_overhead(pod, Some(class))
}

fn set(pod: &mut Value, field: &str, value: Value) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert(field.to_string(), value);
    }
}

/// A pod's overhead must be its RuntimeClass's.
fn validate_overhead(pod: &Value, class: Option<&Value>) -> Result<(), Denial> {
    let pod_overhead = pod.pointer("/spec/overhead").filter(|o| !o.is_null());
    match class
        .and_then(|c| c.pointer("/overhead/podFixed"))
        .filter(|o| !o.is_null())
    {
        Some(defined) if pod_overhead != Some(defined) => Err(forbidden(
            "Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
        )),
        None if pod_overhead.is_some() => Err(forbidden(
            "Pod Overhead set without corresponding RuntimeClass defined Overhead".into(),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unknown_class_is_refused_with_kubernetes_message() {
        let mut pod = json!({"spec": {"runtimeClassName": "gvisor", "containers": []}});
        let denial = admit(&mut pod, None).unwrap_err();
        assert_eq!(
            denial.message("", "pods", "web"),
            "pods \"web\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found"
        );
    }

    #[test]
    fn the_class_overhead_and_scheduling_are_merged() {
        let class = json!({
            "handler": "runc",
            "overhead": {"podFixed": {"cpu": "100m"}},
            "scheduling": {
                "nodeSelector": {"sandbox": "yes"},
                "tolerations": [{"key": "sandbox", "operator": "Exists"}],
            },
        });
        let mut pod = json!({"spec": {"runtimeClassName": "fast", "nodeSelector": {"zone": "a"}}});
        admit(&mut pod, Some(&class)).unwrap();
        assert_eq!(pod["spec"]["overhead"], json!({"cpu": "100m"}));
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"zone": "a", "sandbox": "yes"})
        );
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([{"key": "sandbox", "operator": "Exists"}])
        );
        let mut conflicting =
            json!({"spec": {"runtimeClassName": "fast", "nodeSelector": {"sandbox": "no"}}});
        assert!(admit(&mut conflicting, Some(&class)).is_err());
    }

    #[test]
    fn an_overhead_without_a_class_is_refused() {
        let mut pod = json!({"spec": {"overhead": {"cpu": "1"}}});
        let denial = admit(&mut pod, None).unwrap_err();
        assert!(
            denial
                .to_string()
                .contains("without corresponding RuntimeClass")
        );
        let mut plain = json!({"spec": {}});
        admit(&mut plain, None).unwrap();
    }
}
