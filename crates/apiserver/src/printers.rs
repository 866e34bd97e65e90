//! Table columns and cells of built-in kinds (the columns `kubectl get` prints), from
//! `kyb-printers`.

use serde_json::{Value, json};

/// Column definitions for the kind, as `metav1.TableColumnDefinition` objects.
pub fn columns(group: &str, kind: &str) -> Vec<Value> {
    kyb_printers::columns(group, kind)
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.type_,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            })
        })
        .collect()
}

pub fn cells(group: &str, kind: &str, object: &Value, now: jiff::Timestamp) -> Vec<Value> {
    kyb_printers::cells(group, kind, object, now)
}
