//! The downward API's values for volume files: a pod's fields (`fieldRef`) and a
//! container's resources (`resourceFieldRef`, limits defaulting to the node's allocatable),
//! formatted as kubelet formats them.

use k8s_openapi::api::core::v1::{Container, ObjectFieldSelector, Pod, ResourceFieldSelector};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kyb_apimachinery::quantity::Quantity;
use std::collections::BTreeMap;

/// The node's allocatable resources (`cpu`, `memory`, `ephemeral-storage`, ...).
pub type Allocatable = BTreeMap<String, ApiQuantity>;

/// A pod field's value (`metadata.name`, `metadata.labels['k']`, `spec.nodeName`, ...),
/// with kubelet's errors for unsupported paths.
pub fn field_value(pod: &Pod, selector: &ObjectFieldSelector) -> Result<String, String> {
    let path = selector.field_path.as_str();
    let meta = &pod.metadata;
    if let Some((field, key)) = split_subscript(path) {
        let map = match field {
            "metadata.annotations" => meta.annotations.as_ref(),
            "metadata.labels" => meta.labels.as_ref(),
            _ => return Err(format!("fieldPath {path:?} does not support subscript")),
        };
        return Ok(map.and_then(|m| m.get(key)).cloned().unwrap_or_default());
    }
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    let value = match path {
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.hostIP" => status.and_then(|s| s.host_ip.clone()).unwrap_or_default(),
        "status.podIP" => status.and_then(|s| s.pod_ip.clone()).unwrap_or_default(),
        _ => return Err(format!("unsupported fieldPath: {path}")),
    };
    Ok(value)
}

/// `metadata.labels['key']` → (`metadata.labels`, `key`), as Kubernetes'
/// `SplitMaybeSubscriptedPath`.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (field, key) = inner.split_once("['")?;
    (!field.is_empty()).then_some((field, key))
}

/// A map as `key="value"` lines in key order (Go's `%q` quoting), no trailing newline.
pub fn format_map(map: Option<&BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", kyb_apimachinery::gofmt::quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A container resource's value (`limits.cpu`, `requests.memory`, ...) divided by the
/// selector's `divisor` and rounded up; unset limits are the node's allocatable.
pub fn resource_value(
    pod: &Pod,
    selector: &ResourceFieldSelector,
    allocatable: &Allocatable,
) -> Result<String, String> {
    let container_name = selector.container_name.as_deref().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let container: Option<&Container> = spec.and_then(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .find(|c| c.name == container_name)
    });
    let Some(container) = container else {
        return Err(format!("container {container_name} not found"));
    };
    let divisor = match &selector.divisor {
        Some(d) => parse(d)?,
        None => Quantity::from_int(1),
    };
    let divisor = if divisor.is_zero() {
        Quantity::from_int(1)
    } else {
        divisor
    };
    let resources = container.resources.as_ref();
    let (kind, name) = selector
        .resource
        .split_once('.')
        .ok_or_else(|| format!("unsupported container resource : {}", selector.resource))?;
    let supported =
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-");
    if !supported || !matches!(kind, "limits" | "requests") {
        return Err(format!(
            "unsupported container resource : {}",
            selector.resource
        ));
    }
    let set = match kind {
        "limits" => resources.and_then(|r| r.limits.as_ref()),
        _ => resources.and_then(|r| r.requests.as_ref()),
    };
    let quantity = match set.and_then(|m| m.get(name)) {
        Some(q) => parse(q)?,
        None if kind == "limits" && !name.starts_with("hugepages-") => {
            match allocatable.get(name) {
                Some(q) => parse(q)?,
                None => Quantity::from_int(0),
            }
        }
        None => Quantity::from_int(0),
    };
    let value = if name == "cpu" {
        div_ceil(quantity.milli_value_i64(), divisor.milli_value_i64())
    } else {
        div_ceil(quantity.value(), divisor.value())
    };
    Ok(value.to_string())
}

fn parse(q: &ApiQuantity) -> Result<Quantity, String> {
    Quantity::parse(&q.0).map_err(|e| format!("quantity {:?}: {e}", q.0))
}

/// ⌈a / b⌉ as Go's `math.Ceil(float64(a) / float64(b))`.
fn div_ceil(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    (a as f64 / b as f64).ceil() as i64
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn pod() -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u-1",
                "labels": {"b": "two \"q\"", "a": "one"}, "annotations": {"x": "y"}},
            "spec": {"nodeName": "n1", "serviceAccountName": "sa", "containers": [
                {"name": "c", "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}}}
            ]},
            "status": {"hostIP": "10.0.0.1", "podIP": "10.1.0.5"}
        }))
        .unwrap()
    }

    fn field(pod: &Pod, path: &str) -> Result<String, String> {
        field_value(
            pod,
            &ObjectFieldSelector {
                field_path: path.into(),
                api_version: None,
            },
        )
    }

    fn resource(pod: &Pod, r: &str, divisor: Option<&str>) -> Result<String, String> {
        let allocatable = Allocatable::from([
            ("cpu".to_string(), ApiQuantity("2".into())),
            ("memory".to_string(), ApiQuantity("1Gi".into())),
        ]);
        resource_value(
            pod,
            &ResourceFieldSelector {
                container_name: Some("c".into()),
                resource: r.into(),
                divisor: divisor.map(|d| ApiQuantity(d.into())),
            },
            &allocatable,
        )
    }

    #[test]
    fn pod_fields() {
        let pod = pod();
        assert_eq!(field(&pod, "metadata.name").unwrap(), "web");
        assert_eq!(field(&pod, "metadata.namespace").unwrap(), "ns");
        assert_eq!(field(&pod, "metadata.uid").unwrap(), "u-1");
        assert_eq!(
            field(&pod, "metadata.labels").unwrap(),
            "a=\"one\"\nb=\"two \\\"q\\\"\""
        );
        assert_eq!(field(&pod, "metadata.annotations").unwrap(), "x=\"y\"");
        assert_eq!(field(&pod, "metadata.labels['a']").unwrap(), "one");
        assert_eq!(field(&pod, "metadata.labels['none']").unwrap(), "");
        assert_eq!(field(&pod, "spec.nodeName").unwrap(), "n1");
        assert_eq!(field(&pod, "spec.serviceAccountName").unwrap(), "sa");
        assert_eq!(field(&pod, "status.hostIP").unwrap(), "10.0.0.1");
        assert_eq!(field(&pod, "status.podIP").unwrap(), "10.1.0.5");
        assert_eq!(
            field(&pod, "spec.hostname").unwrap_err(),
            "unsupported fieldPath: spec.hostname"
        );
        assert_eq!(
            field(&pod, "metadata.name['x']").unwrap_err(),
            "fieldPath \"metadata.name['x']\" does not support subscript"
        );
    }

    #[test]
    fn container_resources_with_divisors_and_allocatable_defaults() {
        let pod = pod();
        assert_eq!(resource(&pod, "limits.memory", None).unwrap(), "67108864");
        assert_eq!(resource(&pod, "limits.memory", Some("1Mi")).unwrap(), "64");
        assert_eq!(resource(&pod, "requests.cpu", None).unwrap(), "1");
        assert_eq!(resource(&pod, "requests.cpu", Some("1m")).unwrap(), "250");
        // No CPU limit: the node's allocatable.
        assert_eq!(resource(&pod, "limits.cpu", None).unwrap(), "2");
        assert_eq!(resource(&pod, "requests.memory", None).unwrap(), "0");
        assert_eq!(
            resource(&pod, "limits.gpu", None).unwrap_err(),
            "unsupported container resource : limits.gpu"
        );
        let mut other = pod.clone();
        other.spec = Some(PodSpec::default());
        assert_eq!(
            resource(&other, "limits.cpu", None).unwrap_err(),
            "container c not found"
        );
    }
}
