//! Quota scopes: the selectors a quota applies (`spec.scopes` as `Exists` requirements,
//! then `spec.scopeSelector.matchExpressions`), whether a pod matches each one
//! (`Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass` with
//! `In`/`NotIn`/`Exists`/`DoesNotExist`, `CrossNamespacePodAffinity`), and which quota
//! resources each scope may constrain.

use std::fmt;

use serde_json::Value;

use crate::pod_resources;
use kyb_apimachinery::json::{at, items, opt_str};

/// One scope requirement of a quota.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScopeSelector {
    pub scope: String,
    pub operator: String,
    pub values: Vec<String>,
}

impl fmt::Display for ScopeSelector {
    /// Go's `%v` of a `ScopedResourceSelectorRequirement`: `{PriorityClass In [high low]}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{{} {} [{}]}}",
            self.scope,
            self.operator,
            self.values.join(" ")
        )
    }
}

/// The quota's scope requirements, in Kubernetes' order.
pub(crate) fn selectors(quota: &Value) -> Vec<ScopeSelector> {
    let mut out: Vec<ScopeSelector> = items(quota, &["spec", "scopes"])
        .iter()
        .filter_map(Value::as_str)
        .map(|s| ScopeSelector {
            scope: s.to_string(),
            operator: "Exists".to_string(),
            values: Vec::new(),
        })
        .collect();
    for e in items(quota, &["spec", "scopeSelector", "matchExpressions"]) {
        out.push(ScopeSelector {
            scope: opt_str(e, &["scopeName"]).unwrap_or_default().to_string(),
            operator: opt_str(e, &["operator"]).unwrap_or_default().to_string(),
            values: items(e, &["values"])
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        });
    }
    out
}

/// Whether the pod's `spec.activeDeadlineSeconds` is set and not negative.
fn is_terminating(pod: &Value) -> bool {
    at(pod, &["spec", "activeDeadlineSeconds"])
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0)
}

/// Whether any pod (anti-)affinity term names other namespaces (`namespaces` or a
/// `namespaceSelector`).
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        !items(term, &["namespaces"]).is_empty() || at(term, &["namespaceSelector"]).is_some()
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        items(
            pod,
            &[
                "spec",
                "affinity",
                kind,
                "requiredDuringSchedulingIgnoredDuringExecution",
            ],
        )
        .iter()
        .any(cross)
            || items(
                pod,
                &[
                    "spec",
                    "affinity",
                    kind,
                    "preferredDuringSchedulingIgnoredDuringExecution",
                ],
            )
            .iter()
            .filter_map(|w| at(w, &["podAffinityTerm"]))
            .any(cross)
    })
}

/// The requirement a `PriorityClass` selector makes of the pod's priority class, checked
/// as `labels.NewRequirement` checks it.
fn priority_class_matches(sel: &ScopeSelector, class: Option<&str>) -> Result<bool, String> {
    let wrap = |e: String| format!("failed to parse and convert selector: {e}");
    let values_json = || {
        format!(
            "[{}]",
            sel.values
                .iter()
                .map(|v| kyb_apimachinery::gofmt::quote(v))
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let mut errs = Vec::new();
    match sel.operator.as_str() {
        "In" | "NotIn" if sel.values.is_empty() => errs.push(format!(
            "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
            values_json()
        )),
        "Exists" | "DoesNotExist" if !sel.values.is_empty() => errs.push(format!(
            "values: Invalid value: {}: values set must be empty for exists and does not exist",
            values_json()
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other => {
            return Err(wrap(format!(
                "{} is not a valid scope selector operator",
                kyb_apimachinery::gofmt::quote(other)
            )));
        }
    }
    for (i, v) in sel.values.iter().enumerate() {
        if kyb_apimachinery::labels::check_value(v).is_err() {
            errs.push(format!(
                "values[{i}]: Invalid value: {}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                kyb_apimachinery::gofmt::quote(v)
            ));
        }
    }
    match errs.len() {
        0 => {}
        1 => return Err(wrap(errs.remove(0))),
        _ => return Err(wrap(format!("[{}]", errs.join(", ")))),
    }
    let in_values = class.is_some_and(|c| sel.values.iter().any(|v| v == c));
    Ok(match sel.operator.as_str() {
        "In" => in_values,
        "NotIn" => !in_values,
        "Exists" => class.is_some(),
        _ => class.is_none(),
    })
}

/// Whether a pod matches one scope requirement (`podMatchesScopeFunc`). Unknown scopes
/// match nothing.
pub(crate) fn pod_matches(sel: &ScopeSelector, pod: &Value) -> Result<bool, String> {
    Ok(match sel.scope.as_str() {
        "Terminating" => is_terminating(pod),
        "NotTerminating" => !is_terminating(pod),
        "BestEffort" => pod_resources::is_best_effort(pod),
        "NotBestEffort" => !pod_resources::is_best_effort(pod),
        "PriorityClass" => {
            let class = opt_str(pod, &["spec", "priorityClassName"]).filter(|c| !c.is_empty());
            if sel.operator == "Exists" {
                class.is_some()
            } else {
                priority_class_matches(sel, class)?
            }
        }
        "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(pod),
        _ => false,
    })
}

/// Whether `scope` can constrain `resource` (`IsResourceQuotaScopeValidForResource`):
/// `BestEffort` only `pods`; the other pod scopes `pods` and the cpu/memory compute
/// resources; unknown scopes anything. Quota validation applies it to the standard quota
/// resource names only.
pub fn scope_allows_resource(scope: &str, resource: &str) -> bool {
    const COMPUTE: &[&str] = &[
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn sel(scope: &str, op: &str, values: &[&str]) -> ScopeSelector {
        ScopeSelector {
            scope: scope.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn reads_scopes_then_selector_expressions() {
        let q = json!({"spec": {"scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high", "low"]}]}}});
        let s = selectors(&q);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].to_string(), "{BestEffort Exists []}");
        assert_eq!(s[1].to_string(), "{PriorityClass In [high low]}");
    }

    #[test]
    fn terminating_and_best_effort() {
        let term = json!({"spec": {"activeDeadlineSeconds": 30, "containers": [{"name": "a"}]}});
        let plain = json!({"spec": {"containers": [{"name": "a",
            "resources": {"requests": {"cpu": "1"}}}]}});
        assert!(pod_matches(&sel("Terminating", "Exists", &[]), &term).unwrap());
        assert!(!pod_matches(&sel("NotTerminating", "Exists", &[]), &term).unwrap());
        assert!(pod_matches(&sel("NotTerminating", "Exists", &[]), &plain).unwrap());
        assert!(pod_matches(&sel("BestEffort", "Exists", &[]), &term).unwrap());
        assert!(pod_matches(&sel("NotBestEffort", "Exists", &[]), &plain).unwrap());
        assert!(!pod_matches(&sel("Nonsense", "Exists", &[]), &plain).unwrap());
    }

    #[test]
    fn priority_class_operators() {
        let high = json!({"spec": {"priorityClassName": "high"}});
        let none = json!({"spec": {}});
        let m = |s: ScopeSelector, p: &Value| pod_matches(&s, p).unwrap();
        assert!(m(sel("PriorityClass", "In", &["high", "mid"]), &high));
        assert!(!m(sel("PriorityClass", "In", &["low"]), &high));
        assert!(!m(sel("PriorityClass", "In", &["low"]), &none));
        assert!(m(sel("PriorityClass", "NotIn", &["low"]), &high));
        assert!(m(sel("PriorityClass", "NotIn", &["low"]), &none));
        assert!(m(sel("PriorityClass", "Exists", &[]), &high));
        assert!(!m(sel("PriorityClass", "Exists", &[]), &none));
        assert!(m(sel("PriorityClass", "DoesNotExist", &[]), &none));
        assert_eq!(
            pod_matches(&sel("PriorityClass", "Gt", &["1"]), &high).unwrap_err(),
            "failed to parse and convert selector: \"Gt\" is not a valid scope selector operator"
        );
        assert_eq!(
            pod_matches(&sel("PriorityClass", "In", &[]), &high).unwrap_err(),
            "failed to parse and convert selector: values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        );
    }

    #[test]
    fn cross_namespace_affinity() {
        let p = json!({"spec": {"affinity": {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"namespaceSelector": {}, "topologyKey": "k"}}]}}}});
        let local = json!({"spec": {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"namespaces": [], "topologyKey": "k"}]}}}});
        let s = sel("CrossNamespacePodAffinity", "Exists", &[]);
        assert!(pod_matches(&s, &p).unwrap());
        assert!(!pod_matches(&s, &local).unwrap());
    }

    #[test]
    fn scope_resource_rules() {
        assert!(scope_allows_resource("BestEffort", "pods"));
        assert!(!scope_allows_resource("BestEffort", "requests.cpu"));
        assert!(scope_allows_resource("NotBestEffort", "limits.memory"));
        assert!(!scope_allows_resource("Terminating", "services"));
        assert!(scope_allows_resource("PriorityClass", "pods"));
    }
}
