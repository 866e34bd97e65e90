//! Nodes: allocatable defaulted from capacity, taints, pod CIDRs, resource quantities, and
//! the spec fields that may only be set once.

use std::collections::HashSet;

use serde_json::Value;

use crate::Ctx;
use crate::core::resources::{parse_quantity, validate_quantity_value};
use crate::core::scheduling::validate_taints;
use crate::net::{is_dual_stack, parse_cidr, validate_cidr};
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field, field_at};
use kyb_apimachinery::quantity::canonicalize_list;

/// `SetDefaults_NodeStatus`: allocatable defaults to capacity.
pub(crate) fn default_node(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let cap = status.get("capacity").cloned().filter(Value::is_object);
    if status.get("allocatable").is_none_or(Value::is_null)
        && let Some(cap) = cap
    {
        status.insert("allocatable".to_string(), cap);
    }
    canonicalize_list(status.get_mut("capacity"));
    canonicalize_list(status.get_mut("allocatable"));
}

fn validate_resources(node: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["capacity", "allocatable"] {
        if let Value::Object(m) = field_at(node, &["status", key]) {
            for (k, v) in m {
                let p = Path::new("status").child(key).child(k);
                match parse_quantity(v, &p) {
                    Ok(q) => errs.extend(validate_quantity_value(k, &q, &p)),
                    Err(e) => errs.push(e),
                }
            }
        }
    }
    errs
}

/// `ValidateNode`.
pub(crate) fn validate(node: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = field(node, "spec");
    errs.extend(validate_taints(
        spec.arr("taints"),
        &Path::new("metadata").child("taints"),
    ));
    errs.extend(validate_resources(node));
    let cidrs = spec.str_list("podCIDRs");
    let p = Path::new("spec").child("podCIDRs");
    for (i, c) in cidrs.iter().enumerate() {
        errs.extend(validate_cidr(&p.index(i), c));
    }
    if cidrs.len() > 1 {
        let ips: Vec<String> = cidrs
            .iter()
            .filter_map(|c| parse_cidr(c).map(|(ip, _)| ip.to_string()))
            .collect();
        let ip_refs: Vec<&str> = ips.iter().map(String::as_str).collect();
        if ips.len() != cidrs.len() || !is_dual_stack(&ip_refs) || cidrs.len() > 2 {
            errs.push(FieldError::invalid(
                &p,
                Value::from(spec.arr("podCIDRs").to_vec()),
                "may specify no more than one CIDR for each IP family",
            ));
        }
        let mut seen: HashSet<&str> = HashSet::new();
        for (i, c) in cidrs.iter().enumerate() {
            if !seen.insert(c) {
                errs.push(FieldError::duplicate(&p.index(i), *c));
            }
        }
    }
    errs
}

/// `ValidateNodeUpdate` beyond the checks of a new node.
pub(crate) fn validate_update(new: &Value, old: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let addrs = field_at(new, &["status", "addresses"])
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut seen: HashSet<String> = HashSet::new();
    for (i, a) in addrs.iter().enumerate() {
        if !seen.insert(a.to_string()) {
            errs.push(FieldError::duplicate(
                &Path::new("status").child("addresses").index(i),
                a.clone(),
            ));
        }
    }
    let old_cidrs = field(old, "spec").str_list("podCIDRs");
    let new_cidrs = field(new, "spec").str_list("podCIDRs");
    const CIDR_MSG: &str = "node updates may not change podCIDR except from \"\" to valid";
    if !old_cidrs.is_empty() {
        if old_cidrs.len() != new_cidrs.len() {
            errs.push(FieldError::forbidden(
                &Path::new("spec").child("podCIDRs"),
                CIDR_MSG,
            ));
        } else {
            for (o, n) in old_cidrs.iter().zip(&new_cidrs) {
                if o != n {
                    errs.push(FieldError::forbidden(
                        &Path::new("spec").child("podCIDRs"),
                        CIDR_MSG,
                    ));
                }
            }
        }
    }
    let old_pid = field_at(old, &["spec", "providerID"])
        .as_str()
        .unwrap_or_default();
    if !old_pid.is_empty()
        && old_pid
            != field_at(new, &["spec", "providerID"])
                .as_str()
                .unwrap_or_default()
    {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if field_at(new, &["spec", "externalID"]) != field_at(old, &["spec", "externalID"]) {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("externalID"),
            "may not be updated",
        ));
    }
    errs
}

/// Node status updates are validated like updates.
pub(crate) fn validate_status(new: &Value, old: &Value, ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = validate_resources(new);
    errs.extend(validate_update(new, old, ctx));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_rules() {
        let ctx = Ctx { old: None };
        let mut n = json!({"status": {"capacity": {"cpu": "4", "memory": "8192Mi"}}});
        default_node(&mut n);
        assert_eq!(
            n["status"]["allocatable"],
            json!({"cpu": "4", "memory": "8Gi"})
        );
        assert!(validate(&n, &ctx).is_empty());
        let bad = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"], "taints": [{"key": "k", "effect": "Bad"}]}});
        let errs = validate(&bad, &ctx);
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].field, "metadata.taints[0].effect");
        let old = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "a"}});
        let new = json!({"spec": {"podCIDRs": ["10.0.1.0/24"], "providerID": "b"}});
        assert_eq!(validate_update(&new, &old, &ctx).len(), 2);
    }
}
