//! The resource metrics API's kinds (`metrics.k8s.io`), as metrics-server prints them:
//! the name, each resource's usage (`cpu`, `memory`; a pod's summed over its containers)
//! and the window it was measured over.

use super::{NAME, Printer, name, string};
use crate::Column;
use jiff::Timestamp;
use kyb_apimachinery::quantity::Quantity;
use serde_json::Value;

const COLUMNS: &[Column] = &[
    NAME,
    quantity("cpu"),
    quantity("memory"),
    Column {
        name: "Window",
        type_: "string",
        format: "duration",
        description: "",
        priority: 0,
    },
];

const fn quantity(name: &'static str) -> Column {
    Column {
        format: "quantity",
        ..string(name, "")
    }
}

pub(crate) static NODE_METRICS: Printer = Printer {
    columns: COLUMNS,
    cells: node_metrics_cells,
};

pub(crate) static POD_METRICS: Printer = Printer {
    columns: COLUMNS,
    cells: pod_metrics_cells,
};

fn node_metrics_cells(metrics: &Value, _now: Timestamp) -> Vec<Value> {
    row(metrics, std::iter::once(&metrics["usage"]))
}

fn pod_metrics_cells(metrics: &Value, _now: Timestamp) -> Vec<Value> {
    let containers = metrics["containers"].as_array().into_iter().flatten();
    row(metrics, containers.map(|c| &c["usage"]))
}

/// Name, the usages summed per resource, the window.
fn row<'a>(metrics: &Value, usages: impl Iterator<Item = &'a Value>) -> Vec<Value> {
    let mut cpu = Quantity::from_int(0);
    let mut memory = Quantity::from_int(0);
    for usage in usages {
        for (total, resource) in [(&mut cpu, "cpu"), (&mut memory, "memory")] {
            if let Some(Ok(q)) = usage[resource].as_str().map(Quantity::parse) {
                *total = total.add(&q);
            }
        }
    }
    vec![
        name(metrics),
        Value::String(cpu.canonical()),
        Value::String(memory.canonical()),
        metrics["window"].clone(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_is_summed_over_containers() {
        let pod = json!({
            "metadata": {"name": "web"}, "window": "15.02s",
            "containers": [{"name": "a", "usage": {"cpu": "250m", "memory": "4Mi"}},
                           {"name": "b", "usage": {"cpu": "500m", "memory": "4Mi"}}],
        });
        assert_eq!(
            pod_metrics_cells(&pod, Timestamp::UNIX_EPOCH),
            vec![json!("web"), json!("750m"), json!("8Mi"), json!("15.02s")]
        );
        let node = json!({"metadata": {"name": "n1"}, "window": "15s",
                          "usage": {"cpu": "1500000n", "memory": "1Gi"}});
        assert_eq!(
            node_metrics_cells(&node, Timestamp::UNIX_EPOCH),
            vec![json!("n1"), json!("1500u"), json!("1Gi"), json!("15s")]
        );
    }
}
