//! Compute resources: resource names (standard, extended, hugepages), quantity values,
//! and `requests`/`limits` of containers (requests ≤ limits, equal for non-overcommittable
//! resources, limits required for those).

use std::cmp::Ordering;

use serde_json::Value;

use crate::meta::IS_NEGATIVE_MSG;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::Obj;
use kyb_apimachinery::names;
use kyb_apimachinery::quantity::Quantity;

const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
    "storage",
    "requests.storage",
];

const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// Whether the name is a hugepages resource (`hugepages-2Mi`).
pub(crate) fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_quota_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// Native resources: unprefixed or in the `kubernetes.io/` domain.
pub(crate) fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Extended resources: fully qualified outside `kubernetes.io/`.
pub(crate) fn is_extended(name: &str) -> bool {
    if is_native(name) || name.starts_with("requests.") {
        return false;
    }
    names::qualified_name_errors(&format!("requests.{name}")).is_empty()
}

pub(crate) fn is_standard_resource_name(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name) || is_quota_hugepages(name)
}

fn is_standard_container_resource_name(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_hugepages(name)
}

/// Resources a pod may ask for beyond its limit (everything native but hugepages).
pub(crate) fn is_overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended(name)
}

/// `validateResourceName`: qualified, and standard when unqualified.
pub(crate) fn validate_resource_name(name: &str, path: &Path) -> Vec<FieldError> {
    let errs: Vec<FieldError> = names::qualified_name_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid(path, name, m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('/') && !is_standard_resource_name(name) {
        return vec![FieldError::invalid(
            path,
            name,
            "must be a standard resource type or fully qualified",
        )];
    }
    errs
}

/// `validateContainerResourceName`.
pub(crate) fn validate_container_resource_name(name: &str, path: &Path) -> Vec<FieldError> {
    let mut errs = validate_resource_name(name, path);
    if !name.contains('/') {
        if !is_standard_container_resource_name(name) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// Parses a quantity field, reporting a parse failure as an invalid value.
pub(crate) fn parse_quantity(v: &Value, path: &Path) -> Result<Quantity, FieldError> {
    Quantity::from_json(v).map_err(|msg| FieldError::invalid(path, v.clone(), msg))
}

/// `ValidateResourceQuantityValue`: not negative, whole for integer resources.
pub(crate) fn validate_quantity_value(
    resource: &str,
    q: &Quantity,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if q.sign() < 0 {
        errs.push(FieldError::invalid(path, q.canonical(), IS_NEGATIVE_MSG));
    }
    if is_integer_resource(resource) && !q.is_integer() {
        errs.push(FieldError::invalid(
            path,
            q.canonical(),
            "must be an integer",
        ));
    }
    errs
}

/// Page size of a hugepages resource, in bytes.
fn hugepage_size(name: &str) -> Option<Quantity> {
    let size = name.strip_prefix("hugepages-")?;
    Quantity::parse(size).ok()
}

/// How resource names are checked (containers, pod overhead, ...).
pub(crate) type ResourceNameFn = fn(&str, &Path) -> Vec<FieldError>;

/// `validateResourceRequirements` for a container's `resources`.
pub(crate) fn validate_resource_requirements(
    req: &Value,
    name_fn: ResourceNameFn,
    pod_claims: &[String],
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let mut lim_cpu_mem = false;
    let mut req_cpu_mem = false;
    let mut lim_huge = false;
    let mut req_huge = false;
    let limits = req.obj("limits");
    let mut parsed_limits: Vec<(&str, Quantity)> = Vec::new();
    if let Some(limits) = limits {
        for (name, v) in limits {
            let p = lim_path.key(name);
            errs.extend(name_fn(name, &p));
            let q = match parse_quantity(v, &p) {
                Ok(q) => q,
                Err(e) => {
                    errs.push(e);
                    continue;
                }
            };
            errs.extend(validate_quantity_value(name, &q, &p));
            if is_hugepages(name) {
                lim_huge = true;
                errs.extend(validate_hugepage_value(name, &q, &p));
            }
            if name == "cpu" || name == "memory" {
                lim_cpu_mem = true;
            }
            parsed_limits.push((name.as_str(), q));
        }
    }
    if let Some(requests) = req.obj("requests") {
        for (name, v) in requests {
            let p = req_path.key(name);
            errs.extend(name_fn(name, &p));
            let q = match parse_quantity(v, &p) {
                Ok(q) => q,
                Err(e) => {
                    errs.push(e);
                    continue;
                }
            };
            errs.extend(validate_quantity_value(name, &q, &p));
            let limit = parsed_limits
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, q)| q);
            let limit_exists = limits.is_some_and(|l| l.contains_key(name));
            if let Some(limit) = limit {
                let ord = q.cmp_q(limit);
                if ord != Ordering::Equal && !is_overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        &req_path,
                        q.canonical(),
                        format!("must be equal to {name} limit of {}", limit.canonical()),
                    ));
                } else if ord == Ordering::Greater {
                    errs.push(FieldError::invalid(
                        &req_path,
                        q.canonical(),
                        format!(
                            "must be less than or equal to {name} limit of {}",
                            limit.canonical()
                        ),
                    ));
                }
            } else if !limit_exists && !is_overcommit_allowed(name) {
                errs.push(FieldError::required(
                    &lim_path,
                    "Limit must be set for non overcommitable resources",
                ));
            }
            if is_hugepages(name) {
                req_huge = true;
                errs.extend(validate_hugepage_value(name, &q, &p));
            }
            if name == "cpu" || name == "memory" {
                req_cpu_mem = true;
            }
        }
    }
    if !lim_cpu_mem && !req_cpu_mem && (req_huge || lim_huge) {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    errs.extend(validate_claim_names(
        req.arr("claims"),
        pod_claims,
        &path.child("claims"),
    ));
    errs
}

fn validate_hugepage_value(name: &str, q: &Quantity, path: &Path) -> Vec<FieldError> {
    let Some(size) = hugepage_size(name) else {
        return Vec::new();
    };
    let size = size.ceil_value();
    let value = q.ceil_value();
    if size <= 0 || value % size != 0 || !q.is_integer() {
        return vec![FieldError::invalid(
            path,
            q.canonical(),
            format!(
                "{} is not positive integer multiple of {name}",
                q.canonical()
            ),
        )];
    }
    Vec::new()
}

fn validate_claim_names(claims: &[Value], pod_claims: &[String], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in claims.iter().enumerate() {
        let name = c.str("name");
        let p = path.index(i);
        if name.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        if seen.iter().any(|s| s == name) {
            errs.push(FieldError::duplicate(&p, name));
        } else {
            let request = c.str("request");
            let mut key = name.to_string();
            if !request.is_empty() {
                for m in names::dns1123_label_errors(request) {
                    errs.push(FieldError::invalid(&p.child("request"), request, m));
                }
                key = format!("{name}/{request}");
            }
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(&p, key.as_str()));
            } else if request.is_empty() {
                for s in &seen {
                    if s.split_once('/').is_some_and(|(n, _)| n == name) {
                        errs.push(FieldError::duplicate(&p, name));
                    }
                }
            }
            seen.push(key);
        }
        if !pod_claims.iter().any(|c| c == name) {
            let mut e = FieldError::not_found(&p, name);
            e.detail = if pod_claims.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_string()
            } else {
                let mut sorted = pod_claims.to_vec();
                sorted.sort();
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    sorted.join(", ")
                )
            };
            errs.push(e);
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: &Value) -> Vec<String> {
        validate_resource_requirements(v, validate_container_resource_name, &[], &Path::new("r"))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn requests_within_limits() {
        assert!(
            msgs(&json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}))
                .is_empty()
        );
        assert_eq!(
            msgs(&json!({"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})),
            vec![r#"r.requests: Invalid value: "2": must be less than or equal to cpu limit of 1"#]
        );
    }

    #[test]
    fn names_and_values() {
        assert_eq!(
            msgs(&json!({"limits": {"foo": "1"}})),
            vec![
                r#"r.limits[foo]: Invalid value: "foo": must be a standard resource type or fully qualified"#,
                r#"r.limits[foo]: Invalid value: "foo": must be a standard resource for containers"#
            ]
        );
        assert_eq!(
            msgs(&json!({"requests": {"cpu": "-1"}})),
            vec![r#"r.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0"#]
        );
        assert_eq!(
            msgs(&json!({"requests": {"cpu": "lots"}})),
            vec![
                r#"r.requests[cpu]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#
            ]
        );
    }

    #[test]
    fn extended_resources() {
        assert_eq!(
            msgs(&json!({"requests": {"example.com/gpu": "1"}})),
            vec!["r.limits: Required value: Limit must be set for non overcommitable resources"]
        );
        assert_eq!(
            msgs(
                &json!({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}})
            ),
            vec![r#"r.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2"#]
        );
        assert_eq!(
            msgs(&json!({"requests": {"example.com/gpu": "500m"}, "limits": {"example.com/gpu": "500m"}})).len(),
            2
        );
    }

    #[test]
    fn hugepages() {
        assert_eq!(
            msgs(
                &json!({"limits": {"hugepages-2Mi": "2Mi"}, "requests": {"hugepages-2Mi": "2Mi"}})
            ),
            vec!["r: Forbidden: HugePages require cpu or memory"]
        );
        assert_eq!(
            msgs(&json!({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "3Mi"}})).len(),
            2
        );
    }
}
