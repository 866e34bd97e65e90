//! Scheduling constraints of pods: node selectors and node affinity, pod (anti-)affinity,
//! tolerations and taints, topology spread constraints, readiness and scheduling gates.

use std::collections::HashSet;

use serde_json::Value;

use crate::meta::validate_label_name;
use crate::selector::validate_label_selector;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;

/// `ValidateNodeSelectorRequirement`.
fn validate_node_selector_requirement(
    rq: &Value,
    allow_invalid_values: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = rq.arr("values");
    match rq.str("operator") {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(rq.str("key"), &path.child("key")));
    if !allow_invalid_values {
        for (i, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or_default();
            for m in names::label_value_errors(v) {
                errs.push(FieldError::invalid(&path.child("values").index(i), v, m));
            }
        }
    }
    errs
}

fn validate_node_field_requirement(rq: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match rq.str("operator") {
        "In" | "NotIn" => {
            if rq.arr("values").len() != 1 {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    let key = rq.str("key");
    if key != "metadata.name" {
        errs.push(FieldError::invalid(
            &path.child("key"),
            key,
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in rq.str_list("values").iter().enumerate() {
            for m in names::name_is_dns_subdomain(v, false) {
                errs.push(FieldError::invalid(&path.child("values").index(i), *v, m));
            }
        }
    }
    errs
}

/// `ValidateNodeSelectorTerm`.
pub(crate) fn validate_node_selector_term(
    term: &Value,
    allow_invalid_values: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, rq) in term.arr("matchExpressions").iter().enumerate() {
        errs.extend(validate_node_selector_requirement(
            rq,
            allow_invalid_values,
            &path.child("matchExpressions").index(j),
        ));
    }
    for (j, rq) in term.arr("matchFields").iter().enumerate() {
        errs.extend(validate_node_field_requirement(
            rq,
            &path.child("matchFields").index(j),
        ));
    }
    errs
}

/// `ValidateNodeSelector`.
pub(crate) fn validate_node_selector(
    sel: &Value,
    allow_invalid_values: bool,
    path: &Path,
) -> Vec<FieldError> {
    let terms_path = path.child("nodeSelectorTerms");
    let terms = sel.arr("nodeSelectorTerms");
    if terms.is_empty() {
        return vec![FieldError::required(
            &terms_path,
            "must have at least one node selector term",
        )];
    }
    terms
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            validate_node_selector_term(t, allow_invalid_values, &terms_path.index(i))
        })
        .collect()
}

fn validate_weight(term: &Value, path: &Path) -> Vec<FieldError> {
    let w = term.int("weight").unwrap_or(0);
    if !(1..=100).contains(&w) {
        vec![FieldError::invalid(
            &path.child("weight"),
            w,
            "must be in the range 1-100",
        )]
    } else {
        Vec::new()
    }
}

fn validate_label_keys(keys: &[Value], has_selector: bool, path: &Path) -> Vec<FieldError> {
    if keys.is_empty() {
        return Vec::new();
    }
    if !has_selector {
        return vec![FieldError::forbidden(
            path,
            "must not be specified when labelSelector is not set",
        )];
    }
    keys.iter()
        .enumerate()
        .flat_map(|(i, k)| validate_label_name(k.as_str().unwrap_or_default(), &path.index(i)))
        .collect()
}

fn validate_pod_affinity_term(term: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let sel = field(term, "labelSelector");
    errs.extend(validate_label_selector(
        sel,
        false,
        &path.child("labelSelector"),
    ));
    errs.extend(validate_label_selector(
        field(term, "namespaceSelector"),
        false,
        &path.child("namespaceSelector"),
    ));
    for ns in term.str_list("namespaces") {
        for m in names::name_is_dns_label(ns, false) {
            errs.push(FieldError::invalid(&path.child("namespace"), ns, m));
        }
    }
    let match_keys = term.arr("matchLabelKeys");
    let mismatch_keys = term.arr("mismatchLabelKeys");
    errs.extend(validate_label_keys(
        match_keys,
        !sel.is_null(),
        &path.child("matchLabelKeys"),
    ));
    errs.extend(validate_label_keys(
        mismatch_keys,
        !sel.is_null(),
        &path.child("mismatchLabelKeys"),
    ));
    if !sel.is_null() {
        let mut selector_keys: Vec<&str> = sel
            .str_map("matchLabels")
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for expr in sel.arr("matchExpressions") {
            let key = expr.str("key");
            if let Some(i) = match_keys.iter().position(|k| k.as_str() == Some(key))
                && selector_keys.contains(&key)
            {
                errs.push(FieldError::invalid(
                    &path.index(i),
                    key,
                    "exists in both matchLabelKeys and labelSelector",
                ));
            }
            selector_keys.push(key);
        }
    }
    for (i, k) in match_keys.iter().enumerate() {
        if mismatch_keys.contains(k) {
            errs.push(FieldError::invalid(
                &path.child("matchLabelKeys").index(i),
                k.clone(),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    let tk = term.str("topologyKey");
    if tk.is_empty() {
        errs.push(FieldError::required(
            &path.child("topologyKey"),
            "can not be empty",
        ));
    }
    errs.extend(validate_label_name(tk, &path.child("topologyKey")));
    errs
}

fn validate_pod_affinity(pa: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let req_path = path.child("requiredDuringSchedulingIgnoredDuringExecution");
    for (i, t) in pa
        .arr("requiredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .enumerate()
    {
        errs.extend(validate_pod_affinity_term(t, &req_path.index(i)));
    }
    let pref_path = path.child("preferredDuringSchedulingIgnoredDuringExecution");
    for (i, t) in pa
        .arr("preferredDuringSchedulingIgnoredDuringExecution")
        .iter()
        .enumerate()
    {
        let p = pref_path.index(i);
        errs.extend(validate_weight(t, &p));
        errs.extend(validate_pod_affinity_term(
            field(t, "podAffinityTerm"),
            &p.child("podAffinityTerm"),
        ));
    }
    errs
}

/// `validateAffinity`.
pub(crate) fn validate_affinity(aff: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let na = field(aff, "nodeAffinity");
    if !na.is_null() {
        let p = path.child("nodeAffinity");
        let req = field(na, "requiredDuringSchedulingIgnoredDuringExecution");
        if !req.is_null() {
            errs.extend(validate_node_selector(
                req,
                false,
                &p.child("requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let pref_path = p.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in na
            .arr("preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            let tp = pref_path.index(i);
            errs.extend(validate_weight(t, &tp));
            errs.extend(validate_node_selector_term(
                field(t, "preference"),
                true,
                &tp.child("preference"),
            ));
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        let pa = field(aff, key);
        if !pa.is_null() {
            errs.extend(validate_pod_affinity(pa, &path.child(key)));
        }
    }
    errs
}

/// `validateTaintEffect`.
pub(crate) fn validate_taint_effect(
    effect: &str,
    allow_empty: bool,
    path: &Path,
) -> Vec<FieldError> {
    if !allow_empty && effect.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    match effect {
        "NoSchedule" | "PreferNoSchedule" | "NoExecute" => Vec::new(),
        other => vec![FieldError::not_supported(
            path,
            other,
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        )],
    }
}

/// `ValidateTolerations`.
pub(crate) fn validate_tolerations(tolerations: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let p = path.index(i);
        let key = t.str("key");
        let op = t.str("operator");
        let effect = t.str("effect");
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &p.child("key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                &p.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.has("tolerationSeconds") && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &p.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = t.str("value");
        match op {
            "Equal" | "" => {
                let msgs = names::label_value_errors(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        &p.child("operator"),
                        value,
                        msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        &p.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                &p.child("operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() {
            errs.extend(validate_taint_effect(effect, true, &p.child("effect")));
        }
    }
    errs
}

/// `validateNodeTaints`.
pub(crate) fn validate_taints(taints: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (i, t) in taints.iter().enumerate() {
        let p = path.index(i);
        let key = t.str("key");
        let effect = t.str("effect");
        errs.extend(validate_label_name(key, &p.child("key")));
        let msgs = names::label_value_errors(t.str("value"));
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &p.child("value"),
                t.str("value"),
                msgs.join(";"),
            ));
        }
        errs.extend(validate_taint_effect(effect, false, &p.child("effect")));
        if !seen.insert((effect, key)) {
            let mut e = FieldError::duplicate(&p, t.clone());
            e.detail = "taints must be unique by key and effect pair".to_string();
            errs.push(e);
        }
    }
    errs
}

/// `validateTopologySpreadConstraints`.
pub(crate) fn validate_topology_spread(constraints: &[Value], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // A constraint is a duplicate when a later one has the same key and action.
    let mut later: HashSet<(&str, &str)> = HashSet::new();
    let mut repeated = vec![false; constraints.len()];
    for (i, c) in constraints.iter().enumerate().rev() {
        let key = (c.str("topologyKey"), c.str("whenUnsatisfiable"));
        if let Some(slot) = repeated.get_mut(i) {
            *slot = later.contains(&key);
        }
        later.insert(key);
    }
    for (i, c) in constraints.iter().enumerate() {
        let p = path.index(i);
        let skew = c.int("maxSkew").unwrap_or(0);
        if skew <= 0 {
            errs.push(FieldError::invalid(
                &p.child("maxSkew"),
                skew,
                "must be greater than zero",
            ));
        }
        let tk = c.str("topologyKey");
        if tk.is_empty() {
            errs.push(FieldError::required(
                &p.child("topologyKey"),
                "can not be empty",
            ));
        }
        let action = c.str("whenUnsatisfiable");
        if action != "DoNotSchedule" && action != "ScheduleAnyway" {
            errs.push(FieldError::not_supported(
                &p.child("whenUnsatisfiable"),
                action,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if repeated.get(i).copied().unwrap_or(false) {
            errs.push(FieldError::duplicate(
                &p.child("{topologyKey, whenUnsatisfiable}"),
                format!("{{{tk}, {action}}}"),
            ));
        }
        if let Some(md) = c.int("minDomains") {
            if md <= 0 {
                errs.push(FieldError::invalid(
                    &p.child("minDomains"),
                    md,
                    "must be greater than zero",
                ));
            }
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    &p.child("minDomains"),
                    md,
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for key in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(v) = c.opt_str(key)
                && v != "Honor"
                && v != "Ignore"
            {
                errs.push(FieldError::not_supported(
                    &p.child(key),
                    v,
                    &["Honor", "Ignore"],
                ));
            }
        }
        let sel = field(c, "labelSelector");
        let keys = c.arr("matchLabelKeys");
        if !keys.is_empty() {
            let kp = p.child("matchLabelKeys");
            let selector_keys: Vec<&str> = sel
                .str_map("matchLabels")
                .into_iter()
                .map(|(k, _)| k)
                .chain(sel.arr("matchExpressions").iter().map(|e| e.str("key")))
                .collect();
            if sel.is_null() {
                errs.push(FieldError::forbidden(
                    &kp,
                    "must not be specified when labelSelector is not set",
                ));
            }
            for (j, k) in keys.iter().enumerate() {
                let k = k.as_str().unwrap_or_default();
                errs.extend(validate_label_name(k, &kp.index(j)));
                if selector_keys.contains(&k) {
                    errs.push(FieldError::invalid(
                        &kp.index(j),
                        k,
                        "exists in both matchLabelKeys and labelSelector",
                    ));
                }
            }
        }
        errs.extend(validate_label_selector(
            sel,
            false,
            &p.child("labelSelector"),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn tolerations() {
        let t = json!([
            {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
            {"operator": "Equal", "value": "x"},
            {"key": "b", "operator": "Near"},
            {"key": "c", "effect": "NoSchedule", "tolerationSeconds": 5},
            {"key": "d", "operator": "Exists", "effect": "Sometimes"}
        ]);
        let errs = msgs(validate_tolerations(
            t.as_array().map(Vec::as_slice).unwrap_or_default(),
            &Path::new("spec.tolerations"),
        ));
        assert_eq!(
            errs,
            vec![
                r#"spec.tolerations[1].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys""#,
                r#"spec.tolerations[2].operator: Unsupported value: "Near": supported values: "Equal", "Exists""#,
                r#"spec.tolerations[3].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when `tolerationSeconds` is set"#,
                r#"spec.tolerations[4].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#,
            ]
        );
    }

    #[test]
    fn node_affinity() {
        let a = json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1", "2"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]
        }});
        let errs = msgs(validate_affinity(&a, &Path::new("spec.affinity")));
        assert_eq!(
            errs,
            vec![
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            ]
        );
        let errs = validate_affinity(
            &json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}),
            &Path::new("a"),
        );
        assert_eq!(
            errs[0].to_string(),
            "a.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"
        );
    }

    #[test]
    fn taints_and_spread() {
        let t = json!([{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": ""}]);
        let errs = validate_taints(
            t.as_array().map(Vec::as_slice).unwrap_or_default(),
            &Path::new("spec.taints"),
        );
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[0].detail,
            "taints must be unique by key and effect pair"
        );
        let c = json!([{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]);
        let errs = msgs(validate_topology_spread(
            c.as_array().map(Vec::as_slice).unwrap_or_default(),
            &Path::new("s"),
        ));
        assert_eq!(
            errs,
            vec![
                "s[0].maxSkew: Invalid value: 0: must be greater than zero",
                r#"s[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}""#,
            ]
        );
    }
}
