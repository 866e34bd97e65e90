//! The TaintNodesByCondition admission plugin: a Node is created with the
//! `node.kubernetes.io/not-ready:NoSchedule` taint (unless it already has it), so nothing is
//! scheduled to it before the node lifecycle controller sees it ready and removes the taint.

use serde_json::{Value, json};

use crate::default_toleration_seconds::{TAINT_NODE_NOT_READY, go_type};
use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// Whether the plugin looks at a request: creating a Node (not a subresource).
pub fn applies(operation: Operation, group: &str, resource: &str, subresource: &str) -> bool {
    operation == Operation::Create
        && group.is_empty()
        && resource == "nodes"
        && subresource.is_empty()
}

/// Adds `{key: node.kubernetes.io/not-ready, effect: NoSchedule}` to `spec.taints` unless a
/// taint with that key and effect is there.
///
/// Errors: [`Denial::Forbidden`] `unexpected type <type>` (text after
/// `nodes "<name>" is forbidden: `) when the object is not a JSON object.
pub fn admit(node: &mut Value) -> Result<(), Denial> {
    if !node.is_object() {
        return Err(Denial::Forbidden(format!(
            "unexpected type {}",
            go_type(node)
        )));
    }
    let present = json::items(node, &["spec", "taints"]).iter().any(|t| {
        json::str_at(t, &["key"]) == TAINT_NODE_NOT_READY
            && json::str_at(t, &["effect"]) == "NoSchedule"
    });
    if !present
        && let Some(taints) = json::spec_mut(node).and_then(|s| json::child_array(s, "taints"))
    {
        taints.push(json!({"key": TAINT_NODE_NOT_READY, "effect": "NoSchedule"}));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn taints_new_nodes_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        admit(&mut node).unwrap();
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
        );
        admit(&mut node).unwrap();
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 1);

        // Same key with another effect does not count.
        let mut node = json!({"spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}});
        admit(&mut node).unwrap();
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn applies_to_node_creates() {
        assert!(applies(Operation::Create, "", "nodes", ""));
        assert!(!applies(Operation::Update, "", "nodes", ""));
        assert!(!applies(Operation::Create, "", "nodes", "status"));
    }

    #[test]
    fn hostile_input() {
        assert_eq!(
            admit(&mut json!(null)).unwrap_err(),
            Denial::forbidden("unexpected type <nil>")
        );
        admit(&mut json!({"spec": {"taints": 7}})).unwrap();
        admit(&mut json!({"spec": "x"})).unwrap();
    }
}
