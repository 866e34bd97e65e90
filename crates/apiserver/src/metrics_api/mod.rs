//! The resource metrics API (`metrics.k8s.io/v1beta1`), built in: what metrics-server
//! serves, inside the API server process. [`scrape`] reads every Ready node's kubelet
//! `/metrics/resource` every 15 s through the kubelet client; [`parse`] reads the
//! Prometheus text; [`store`] keeps the two latest points per node and container and
//! computes usage from them; the objects ([`node_metrics`], [`pod_metrics`]) are made on
//! each request, with the nodes' and pods' labels from the watch cache, by the REST
//! engine's `rest::metrics` (get and list of `nodes` and `pods`, never stored).
//! [`register`] makes the `v1beta1.metrics.k8s.io` APIService and metrics-server's
//! aggregated reader role at start-up.

pub mod parse;
pub mod register;
pub mod scrape;
pub mod store;

pub use store::{MetricsStore, PodUsage, Usage};

use kyb_apimachinery::quantity::Quantity;
use serde_json::{Value, json};

/// The API group and version.
pub const GROUP: &str = "metrics.k8s.io";
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";

/// CPU in nanocores as metrics-server writes it (`resource.NewScaledQuantity(n, -9)`):
/// `1500000n`, `250m`, `2`.
pub fn cpu_quantity(nano_cores: u64) -> String {
    Quantity::parse(&format!("{nano_cores}n")).map_or_else(|_| "0".into(), |q| q.canonical())
}

/// Memory in bytes as a binary-SI quantity (`resource.NewQuantity(b, BinarySI)`):
/// `12288Ki`, `1Mi`, `1000`.
pub fn memory_quantity(bytes: u64) -> String {
    if bytes < 1024 || !bytes.is_multiple_of(1024) {
        // Go writes a binary-SI whole number that no power of 1024 divides as it is.
        return bytes.to_string();
    }
    Quantity::parse(&format!("{}Ki", bytes / 1024))
        .map_or_else(|_| bytes.to_string(), |q| q.canonical())
}

fn usage(usage: &Usage) -> Value {
    json!({
        "cpu": cpu_quantity(usage.cpu_nano_cores),
        "memory": memory_quantity(usage.memory_bytes),
    })
}

fn time(nanos: i64) -> String {
    kyb_apimachinery::time::format_rfc3339(nanos.div_euclid(1_000_000_000), 0, 0)
        .unwrap_or_default()
}

/// The metadata metrics-server gives a metrics object: the object's name (namespace) and
/// labels, created now.
fn metadata(object: &Value, now: i64) -> Value {
    let mut metadata = json!({
        "name": object.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "creationTimestamp": time(now),
    });
    if let Some(namespace) = object.pointer("/metadata/namespace") {
        metadata["namespace"] = namespace.clone();
    }
    if let Some(labels) = object.pointer("/metadata/labels") {
        metadata["labels"] = labels.clone();
    }
    metadata
}

/// A `NodeMetrics` of `node` (the Node object).
pub fn node_metrics(node: &Value, node_usage: &Usage, now: i64) -> Value {
    json!({
        "kind": "NodeMetrics",
        "apiVersion": API_VERSION,
        "metadata": metadata(node, now),
        "timestamp": time(node_usage.timestamp),
        "window": kyb_apimachinery::duration::format_nanos(node_usage.window),
        "usage": usage(node_usage),
    })
}

/// A `PodMetrics` of `pod` (the Pod object).
pub fn pod_metrics(pod: &Value, pod_usage: &PodUsage, now: i64) -> Value {
    let containers: Vec<Value> = pod_usage
        .containers
        .iter()
        .map(|(name, container)| json!({"name": name, "usage": usage(container)}))
        .collect();
    json!({
        "kind": "PodMetrics",
        "apiVersion": API_VERSION,
        "metadata": metadata(pod, now),
        "timestamp": time(pod_usage.timestamp),
        "window": kyb_apimachinery::duration::format_nanos(pod_usage.window),
        "containers": containers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_written_as_metrics_server_writes_them() {
        assert_eq!(cpu_quantity(0), "0");
        assert_eq!(cpu_quantity(1_234_567), "1234567n");
        assert_eq!(cpu_quantity(250_000_000), "250m");
        assert_eq!(cpu_quantity(2_000_000_000), "2");
        assert_eq!(cpu_quantity(1_500), "1500n");
        assert_eq!(memory_quantity(12_288), "12Ki");
        assert_eq!(memory_quantity(1 << 20), "1Mi");
        assert_eq!(memory_quantity(1000), "1000");
        assert_eq!(memory_quantity(4096 * 3 + 1), "12289");
    }

    #[test]
    fn objects_carry_the_usage_window_and_labels() {
        let s = 1_000_000_000;
        let node = json!({"metadata": {"name": "n1", "labels": {"a": "b"}, "uid": "x"}});
        let value = node_metrics(
            &node,
            &Usage {
                timestamp: 1_700_000_000 * s,
                window: 15 * s + 21_000_000,
                cpu_nano_cores: 5_000_000,
                memory_bytes: 1 << 30,
            },
            1_700_000_001 * s,
        );
        assert_eq!(
            value,
            json!({
                "kind": "NodeMetrics",
                "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {"name": "n1", "labels": {"a": "b"}, "creationTimestamp": "2023-11-14T22:13:21Z"},
                "timestamp": "2023-11-14T22:13:20Z",
                "window": "15.021s",
                "usage": {"cpu": "5m", "memory": "1Gi"},
            })
        );
        let pod = json!({"metadata": {"name": "web", "namespace": "default"}});
        let usage = Usage {
            timestamp: s,
            window: 15 * s,
            cpu_nano_cores: 1,
            memory_bytes: 4096,
        };
        let value = pod_metrics(
            &pod,
            &PodUsage {
                timestamp: s,
                window: 15 * s,
                containers: vec![("app".into(), usage)],
            },
            s,
        );
        assert_eq!(value["metadata"]["namespace"], "default");
        assert_eq!(
            value["containers"],
            json!([{"name": "app", "usage": {"cpu": "1n", "memory": "4Ki"}}])
        );
        assert_eq!(value["window"], "15s");
    }
}
