//! The DefaultTolerationSeconds admission plugin: pods that do not tolerate the
//! `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable` NoExecute taints get
//! tolerations for them limited to `tolerationSeconds` (300 by default), so they are
//! evicted five minutes after their node fails.

use serde_json::{Value, json};

use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The taint the node lifecycle controller puts on nodes that are not ready.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint the node lifecycle controller puts on nodes it cannot reach.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// The plugin's settings (kube-apiserver's `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds`, both 300 by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub not_ready_toleration_seconds: i64,
    pub unreachable_toleration_seconds: i64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            not_ready_toleration_seconds: 300,
            unreachable_toleration_seconds: 300,
        }
    }
}

/// Whether the plugin looks at a request: creating or updating a pod (not a subresource).
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    matches!(operation, Operation::Create | Operation::Update)
        && group.is_empty()
        && resource == "pods"
        && subresource.is_empty()
}

/// Adds the missing tolerations to `pod`. A pod already tolerates a taint when one of its
/// tolerations has that key or no key, and effect `NoExecute` or no effect (whatever its
/// operator, value or seconds). The added tolerations are `{key, operator: Exists, effect:
/// NoExecute, tolerationSeconds}`, not-ready first.
///
/// Errors: [`Denial::BadRequest`] `expected *api.Pod but got <type>` when the object is not
/// a JSON object.
pub fn admit(pod: &mut Value, config: &Config) -> Result<(), Denial> {
    if !pod.is_object() {
        return Err(Denial::BadRequest(format!(
            "expected *api.Pod but got {}",
            go_type(pod)
        )));
    }
    let tolerations = json::items(pod, &["spec", "tolerations"]);
    let tolerates = |taint: &str| {
        tolerations.iter().any(|t| {
            let key = json::str_at(t, &["key"]);
            let effect = json::str_at(t, &["effect"]);
            (key == taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<(&str, i64)> = [
        (TAINT_NODE_NOT_READY, config.not_ready_toleration_seconds),
        (
            TAINT_NODE_UNREACHABLE,
            config.unreachable_toleration_seconds,
        ),
    ]
    .into_iter()
    .filter(|(taint, _)| !tolerates(taint))
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let Some(tolerations) = json::spec_mut(pod).and_then(|s| json::child_array(s, "tolerations"))
    else {
        return Ok(());
    };
    for (key, seconds) in missing {
        tolerations.push(json!({
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": seconds,
        }));
    }
    Ok(())
}

/// How Go's `%T` prints what a JSON value would have decoded to, for messages about
/// unexpected objects.
pub(crate) fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn toleration(key: &str, seconds: i64) -> Value {
        json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
    }

    #[test]
    fn adds_both_tolerations() {
        let mut pod = json!({"spec": {"containers": []}});
        admit(&mut pod, &Config::default()).unwrap();
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                toleration(TAINT_NODE_NOT_READY, 300),
                toleration(TAINT_NODE_UNREACHABLE, 300)
            ])
        );
        let mut bare = json!({});
        admit(
            &mut bare,
            &Config {
                not_ready_toleration_seconds: 10,
                unreachable_toleration_seconds: 20,
            },
        )
        .unwrap();
        assert_eq!(
            bare["spec"]["tolerations"],
            json!([
                toleration(TAINT_NODE_NOT_READY, 10),
                toleration(TAINT_NODE_UNREACHABLE, 20)
            ])
        );
    }

    #[test]
    fn existing_tolerations_count() {
        // An explicit one for not-ready with any seconds: only unreachable is added.
        let mut pod = json!({"spec": {"tolerations": [
            {"key": TAINT_NODE_NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
        ]}});
        admit(&mut pod, &Config::default()).unwrap();
        let tolerations = pod["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tolerations.len(), 2);
        assert_eq!(tolerations[1], toleration(TAINT_NODE_UNREACHABLE, 300));

        // No key tolerates everything with a matching effect; no effect matches all effects.
        for t in [
            json!({"operator": "Exists"}),
            json!({"operator": "Exists", "effect": "NoExecute"}),
        ] {
            let mut pod = json!({"spec": {"tolerations": [t]}});
            admit(&mut pod, &Config::default()).unwrap();
            assert_eq!(pod["spec"]["tolerations"].as_array().unwrap().len(), 1);
        }
        // A NoSchedule toleration does not count.
        let mut pod = json!({"spec": {"tolerations": [{"key": TAINT_NODE_UNREACHABLE, "effect": "NoSchedule"}]}});
        admit(&mut pod, &Config::default()).unwrap();
        assert_eq!(pod["spec"]["tolerations"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn applies_only_to_pods() {
        assert!(applies(Operation::Update, "", "pods", ""));
        assert!(!applies(Operation::Create, "", "pods", "status"));
        assert!(!applies(Operation::Delete, "", "pods", ""));
        assert!(!applies(Operation::Create, "", "nodes", ""));
    }

    #[test]
    fn hostile_input() {
        assert_eq!(
            admit(&mut json!("x"), &Config::default()).unwrap_err(),
            Denial::BadRequest("expected *api.Pod but got string".into())
        );
        for mut pod in [
            json!({"spec": 1}),
            json!({"spec": {"tolerations": "x"}}),
            json!({"spec": {"tolerations": [1, null]}}),
        ] {
            admit(&mut pod, &Config::default()).unwrap();
        }
    }
}
