//! HorizontalPodAutoscalers (`autoscaling/v1` and `/v2`) and the Scale subresource.
//!
//! TARGETS lists each metric as `current/target` in the order of `spec.metrics`, pairing
//! each with the status entry at the same index; after two, the rest are summarized as
//! "+ N more...". An `autoscaling/v1` object is read the way Kubernetes converts it: its CPU
//! utilization target (80% when unset) and current CPU utilization become one Resource
//! metric.

use super::{AGE, Column, NAME, Printer, int, integer, name, owned, string};
use crate::quantity::quantity;
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{at, int_at, items, opt_int, str_at};
use serde_json::{Value, json};

pub(crate) static HORIZONTAL_POD_AUTOSCALER: Printer = Printer {
    columns: &[
        NAME,
        string("Reference", "The scaled workload, as kind/name."),
        string("Targets", "Each metric's current value against its target."),
        string(
            "MinPods",
            "The fewest replicas the autoscaler may scale down to.",
        ),
        string(
            "MaxPods",
            "The most replicas the autoscaler may scale up to.",
        ),
        string("Replicas", "Replicas the workload has now."),
        AGE,
    ],
    cells: hpa_cells,
};

/// The autoscaler default when a v1 object names no CPU target.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// How many metrics TARGETS lists before summarizing the rest.
const METRICS_SHOWN: usize = 2;

fn is_v1(hpa: &Value) -> bool {
    match str_at(hpa, &["apiVersion"]) {
        "autoscaling/v1" => true,
        "" => {
            at(hpa, &["spec", "metrics"]).is_none()
                && (at(hpa, &["spec", "targetCPUUtilizationPercentage"]).is_some()
                    || at(hpa, &["status", "currentCPUUtilizationPercentage"]).is_some())
        }
        _ => false,
    }
}

/// The metrics of a v1 object in their v2 shape: specs, then statuses.
fn v1_metrics(hpa: &Value) -> (Vec<Value>, Vec<Value>) {
    let target = opt_int(hpa, &["spec", "targetCPUUtilizationPercentage"])
        .unwrap_or(DEFAULT_CPU_UTILIZATION);
    let specs = vec![json!({"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}})];
    let statuses = opt_int(hpa, &["status", "currentCPUUtilizationPercentage"])
        .map(|current| {
            json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}})
        })
        .into_iter()
        .collect();
    (specs, statuses)
}

/// A quantity that may be absent: Kubernetes prints a missing one as `<nil>`.
fn quantity_or_nil(value: Option<&Value>) -> String {
    match value {
        Some(q) => quantity(Some(q)),
        None => "<nil>".to_owned(),
    }
}

/// Object and External metrics: an average-value target, else a plain value target.
fn value_metric(spec: &Value, status: Option<&Value>, field: &str) -> String {
    let source = at(spec, &[field]);
    let reported = status.and_then(|s| at(s, &[field]));
    if let Some(average) = source.and_then(|s| at(s, &["target", "averageValue"])) {
        let current = reported
            .and_then(|r| at(r, &["current", "averageValue"]))
            .map_or_else(|| "<unknown>".to_owned(), |q| quantity(Some(q)));
        format!("{current}/{} (avg)", quantity(Some(average)))
    } else {
        let current = reported.map_or_else(
            || "<unknown>".to_owned(),
            |r| quantity_or_nil(at(r, &["current", "value"])),
        );
        format!(
            "{current}/{}",
            quantity_or_nil(source.and_then(|s| at(s, &["target", "value"])))
        )
    }
}

/// Resource and ContainerResource metrics: an average-value target, else utilization.
fn resource_metric(spec: &Value, status: Option<&Value>, field: &str) -> String {
    let source = at(spec, &[field]);
    let resource = source.map_or("", |s| str_at(s, &["name"]));
    let reported = status.and_then(|s| at(s, &[field]));
    if let Some(average) = source.and_then(|s| at(s, &["target", "averageValue"])) {
        let current = reported.map_or_else(
            || "<unknown>".to_owned(),
            |r| quantity_or_nil(at(r, &["current", "averageValue"])),
        );
        format!("{resource}: {current}/{}", quantity(Some(average)))
    } else {
        let current = reported
            .and_then(|r| opt_int(r, &["current", "averageUtilization"]))
            .map_or_else(|| "<unknown>".to_owned(), |u| format!("{u}%"));
        let target = source
            .and_then(|s| opt_int(s, &["target", "averageUtilization"]))
            .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
        format!("{resource}: {current}/{target}")
    }
}

fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let mut list: Vec<String> = Vec::with_capacity(specs.len().min(METRICS_SHOWN + 1));
    for (i, spec) in specs.iter().enumerate().take(METRICS_SHOWN) {
        let status = statuses.get(i);
        list.push(match str_at(spec, &["type"]) {
            "External" => value_metric(spec, status, "external"),
            "Object" => value_metric(spec, status, "object"),
            "Pods" => {
                let current = status.and_then(|s| at(s, &["pods"])).map_or_else(
                    || "<unknown>".to_owned(),
                    |p| quantity_or_nil(at(p, &["current", "averageValue"])),
                );
                format!(
                    "{current}/{}",
                    quantity_or_nil(at(spec, &["pods", "target", "averageValue"]))
                )
            }
            "Resource" => resource_metric(spec, status, "resource"),
            "ContainerResource" => resource_metric(spec, status, "containerResource"),
            _ => "<unknown type>".to_owned(),
        });
    }
    let joined = list.join(", ");
    if specs.len() > METRICS_SHOWN {
        format!("{joined} + {} more...", specs.len() - METRICS_SHOWN)
    } else {
        joined
    }
}

fn hpa_cells(hpa: &Value, now: Timestamp) -> Vec<Value> {
    let targets = if is_v1(hpa) {
        let (specs, statuses) = v1_metrics(hpa);
        format_metrics(&specs, &statuses)
    } else {
        format_metrics(
            items(hpa, &["spec", "metrics"]),
            items(hpa, &["status", "currentMetrics"]),
        )
    };
    let reference = format!(
        "{}/{}",
        str_at(hpa, &["spec", "scaleTargetRef", "kind"]),
        str_at(hpa, &["spec", "scaleTargetRef", "name"])
    );
    let min_pods = opt_int(hpa, &["spec", "minReplicas"])
        .map_or_else(|| "<unset>".to_owned(), |n| n.to_string());
    vec![
        name(hpa),
        owned(reference),
        owned(targets),
        owned(min_pods),
        int(int_at(hpa, &["spec", "maxReplicas"])),
        int(int_at(hpa, &["status", "currentReplicas"])),
        age(hpa, now),
    ]
}

pub(crate) static SCALE: Printer = Printer {
    columns: &[
        // The Scale table's name column carries no "name" format.
        Column { format: "", ..NAME },
        integer("Desired", "Replicas asked for."),
        integer("Available", "Replicas that exist now."),
        AGE,
    ],
    cells: scale_cells,
};

fn scale_cells(scale: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(scale),
        int(int_at(scale, &["spec", "replicas"])),
        int(int_at(scale, &["status", "replicas"])),
        age(scale, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};

    #[test]
    fn v2_autoscaler_row() {
        let h = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "creationTimestamp": ago(600)},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 10,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                  "target": {"type": "Utilization", "averageUtilization": 50}}}]},
            "status": {"currentReplicas": 3, "desiredReplicas": 3,
                       "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                                           "current": {"averageUtilization": 23, "averageValue": "115m"}}}]}
        });
        assert_eq!(
            row(hpa_cells(&h, now())),
            json!(["web", "Deployment/web", "cpu: 23%/50%", "1", 10, 3, "10m"])
        );
    }

    #[test]
    fn v2_metric_kinds() {
        let specs = json!([
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1024Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
        ]);
        let statuses = json!([
            {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "512Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "250"}}},
        ]);
        assert_eq!(
            format_metrics(as_list(&specs), as_list(&statuses)),
            "memory: 512Mi/1Gi, 250/1k"
        );
        assert_eq!(
            format_metrics(as_list(&specs), &[]),
            "memory: <unknown>/1Gi, <unknown>/1k"
        );
    }

    #[test]
    fn object_external_and_container_metrics() {
        let specs = json!([
            {"type": "Object", "object": {"target": {"type": "Value", "value": "10"}}},
            {"type": "External", "external": {"target": {"type": "AverageValue", "averageValue": "30"}}},
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                                                                "target": {"type": "Utilization"}}},
            {"type": "Bogus"}
        ]);
        let statuses = json!([
            {"type": "Object", "object": {"current": {"value": "7"}}},
            {"type": "External", "external": {"current": {"averageValue": "12"}}}
        ]);
        assert_eq!(
            format_metrics(as_list(&specs), as_list(&statuses)),
            "7/10, 12/30 (avg) + 2 more..."
        );
        let specs = json!([
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "target": {"type": "Utilization"}}},
            {"type": "Bogus"}
        ]);
        assert_eq!(
            format_metrics(as_list(&specs), &[]),
            "cpu: <unknown>/<auto>, <unknown type>"
        );
        let specs = json!([{"type": "External", "external": {"target": {"type": "Value"}}}]);
        let statuses = json!([{"type": "External", "external": {"current": {}}}]);
        assert_eq!(
            format_metrics(as_list(&specs), as_list(&statuses)),
            "<nil>/<nil>"
        );
        assert_eq!(format_metrics(&[], &[]), "<none>");
    }

    fn as_list(v: &Value) -> &[Value] {
        v.as_array().map(Vec::as_slice).unwrap_or_default()
    }

    #[test]
    fn v1_autoscaler_rows() {
        let h = json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "creationTimestamp": ago(60)},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2,
                     "maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
            "status": {"currentReplicas": 2, "currentCPUUtilizationPercentage": 71}
        });
        assert_eq!(
            row(hpa_cells(&h, now())),
            json!(["web", "Deployment/web", "cpu: 71%/60%", "2", 5, 2, "60s"])
        );
        let defaulted = json!({"apiVersion": "autoscaling/v1", "spec": {"maxReplicas": 3}});
        assert_eq!(
            row(hpa_cells(&defaulted, now())),
            json!(["", "/", "cpu: <unknown>/80%", "<unset>", 3, 0, "<unknown>"])
        );
        let no_version = json!({"spec": {"targetCPUUtilizationPercentage": 40}});
        assert_eq!(
            hpa_cells(&no_version, now())[2],
            json!("cpu: <unknown>/40%")
        );
        assert_eq!(hpa_cells(&json!({}), now())[2], json!("<none>"));
    }

    #[test]
    fn scale_row() {
        let s = json!({"metadata": {"name": "web", "creationTimestamp": ago(60)},
                       "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}});
        assert_eq!(row(scale_cells(&s, now())), json!(["web", 3, 2, "60s"]));
        assert_eq!(SCALE.columns.first().map(|c| c.format), Some(""));
    }
}
