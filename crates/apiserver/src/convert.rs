//! Conversion between the versions of resources stored once and served in several versions
//! (what the built-in strategies' `convert` does):
//! core/v1 and events.k8s.io/v1 Events (stored as core/v1), and autoscaling/v2 and
//! autoscaling/v1 HorizontalPodAutoscalers (stored as v2; what v1 cannot express travels
//! in annotations, as Kubernetes does, so a v1 round trip loses nothing).

use kyb_api::{ResourceDef, Status};
use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Converts an object from one version of a resource to another.
pub fn convert(from: &ResourceDef, to: &ResourceDef, value: Value) -> Result<Value, Status> {
    if from.group == to.group && from.version == to.version {
        return Ok(value);
    }
    let Value::Object(mut object) = value else {
        return Err(Status::bad_request("the object is not a JSON object"));
    };
    let pair = (
        from.group.as_ref(),
        from.version.as_ref(),
        to.group.as_ref(),
        to.version.as_ref(),
        to.kind.as_ref(),
    );
    match pair {
        ("", "v1", "events.k8s.io", "v1", "Event") => rename(&mut object, CORE_TO_EVENTS),
        ("events.k8s.io", "v1", "", "v1", "Event") => rename(&mut object, EVENTS_TO_CORE),
        ("autoscaling", "v2", "autoscaling", "v1", _) => hpa_v2_to_v1(&mut object),
        ("autoscaling", "v1", "autoscaling", "v2", _) => hpa_v1_to_v2(&mut object),
        _ => {
            return Err(Status::internal(format!(
                "no conversion from {} to {}",
                from.api_version(),
                to.api_version()
            )));
        }
    }
    object.insert("apiVersion".into(), to.api_version().into());
    object.insert("kind".into(), to.kind.as_ref().into());
    Ok(Value::Object(object))
}

const CORE_TO_EVENTS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];
const EVENTS_TO_CORE: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn rename(object: &mut Map<String, Value>, pairs: &[(&str, &str)]) {
    let moved: Vec<(&str, Value)> = pairs
        .iter()
        .filter_map(|(from, to)| object.remove(*from).map(|v| (*to, v)))
        .collect();
    for (to, value) in moved {
        object.insert(to.into(), value);
    }
}

fn annotations(object: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    if !metadata.is_object() {
        *metadata = json!({});
    }
    let annotations = metadata
        .as_object_mut()
        .map(|m| m.entry("annotations").or_insert_with(|| json!({})));
    match annotations {
        Some(Value::Object(map)) => map,
        Some(other) => {
            *other = json!({});
            match other {
                Value::Object(map) => map,
                _ => unreachable!("just made an object"),
            }
        }
        None => unreachable!("metadata is an object"),
    }
}

fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type") == Some(&json!("Resource"))
        && metric.pointer("/resource/name") == Some(&json!("cpu"))
        && metric.pointer("/resource/target/type") == Some(&json!("Utilization"))
}

fn hpa_v2_to_v1(object: &mut Map<String, Value>) {
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = object.get("status").cloned();
    let mut v1_spec = json!({});
    for field in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(field) {
            v1_spec[field] = value.clone();
        }
    }
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let (cpu, others): (Vec<Value>, Vec<Value>) = metrics.into_iter().partition(is_cpu_utilization);
    if let Some(target) = cpu
        .first()
        .and_then(|m| m.pointer("/resource/target/averageUtilization"))
    {
        v1_spec["targetCPUUtilizationPercentage"] = target.clone();
    }
    let mut extra = Vec::new();
    if !others.is_empty() {
        extra.push((METRICS, Value::Array(others)));
    }
    if let Some(behavior) = spec.get("behavior") {
        extra.push((BEHAVIOR, behavior.clone()));
    }
    let mut v1_status = None;
    if let Some(status) = status {
        let mut converted = json!({
            "currentReplicas": status.get("currentReplicas").cloned().unwrap_or(json!(0)),
            "desiredReplicas": status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
        });
        for field in ["observedGeneration", "lastScaleTime"] {
            if let Some(value) = status.get(field) {
                converted[field] = value.clone();
            }
        }
        let current = status
            .get("currentMetrics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let (cpu, others): (Vec<Value>, Vec<Value>) = current.into_iter().partition(|m| {
            m.get("type") == Some(&json!("Resource"))
                && m.pointer("/resource/name") == Some(&json!("cpu"))
        });
        if let Some(usage) = cpu
            .first()
            .and_then(|m| m.pointer("/resource/current/averageUtilization"))
        {
            converted["currentCPUUtilizationPercentage"] = usage.clone();
        }
        if !others.is_empty() {
            extra.push((CURRENT_METRICS, Value::Array(others)));
        }
        if let Some(conditions) = status.get("conditions") {
            extra.push((CONDITIONS, conditions.clone()));
        }
        v1_status = Some(converted);
    }
    for (annotation, value) in extra {
        annotations(object).insert(annotation.into(), value.to_string().into());
    }
    object.insert("spec".into(), v1_spec);
    match v1_status {
        Some(status) => object.insert("status".into(), status),
        None => object.remove("status"),
    };
}

fn hpa_v1_to_v2(object: &mut Map<String, Value>) {
    let taken: Vec<(&str, Option<Value>)> = [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR]
        .into_iter()
        .map(|name| {
            let value = annotations(object)
                .remove(name)
                .and_then(|v| v.as_str().and_then(|s| serde_json::from_str(s).ok()));
            (name, value)
        })
        .collect();
    if annotations(object).is_empty()
        && let Some(Value::Object(metadata)) = object.get_mut("metadata")
    {
        metadata.remove("annotations");
    }
    let taken = |name: &str| {
        taken
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.clone())
    };
    let spec = object.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut v2_spec = json!({});
    for field in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(value) = spec.get(field) {
            v2_spec[field] = value.clone();
        }
    }
    let mut metrics = Vec::new();
    if let Some(target) = spec.get("targetCPUUtilizationPercentage") {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}));
    }
    if let Some(Value::Array(others)) = taken(METRICS) {
        metrics.extend(others);
    }
    if !metrics.is_empty() {
        v2_spec["metrics"] = Value::Array(metrics);
    }
    if let Some(behavior) = taken(BEHAVIOR) {
        v2_spec["behavior"] = behavior;
    }
    if let Some(status) = object.get("status").cloned() {
        let mut converted = json!({
            "currentReplicas": status.get("currentReplicas").cloned().unwrap_or(json!(0)),
            "desiredReplicas": status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
        });
        for field in ["observedGeneration", "lastScaleTime"] {
            if let Some(value) = status.get(field) {
                converted[field] = value.clone();
            }
        }
        let mut current = Vec::new();
        if let Some(usage) = status.get("currentCPUUtilizationPercentage") {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": usage}}}));
        }
        if let Some(Value::Array(others)) = taken(CURRENT_METRICS) {
            current.extend(others);
        }
        if !current.is_empty() {
            converted["currentMetrics"] = Value::Array(current);
        }
        if let Some(conditions) = taken(CONDITIONS) {
            converted["conditions"] = conditions;
        }
        object.insert("status".into(), converted);
    }
    object.insert("spec".into(), v2_spec);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(a: (&str, &str, &str), b: (&str, &str, &str)) -> (ResourceDef, ResourceDef) {
        let find = |(group, version, kind): (&str, &str, &str)| {
            kyb_api::registry::BUILTIN
                .iter()
                .find(|d| d.group == group && d.version == version && d.kind == kind)
                .cloned()
        };
        match (find(a), find(b)) {
            (Some(x), Some(y)) => (x, y),
            _ => panic!("registered"),
        }
    }

    #[test]
    fn events_round_trip() {
        let (core, events) = defs(("", "v1", "Event"), ("events.k8s.io", "v1", "Event"));
        let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hi", "reason": "Started", "count": 2});
        let converted = convert(&core, &events, event.clone()).ok();
        assert_eq!(
            converted.as_ref().map(|e| (
                &e["regarding"]["name"],
                &e["note"],
                &e["deprecatedCount"],
                &e["apiVersion"]
            )),
            Some((
                &json!("p"),
                &json!("hi"),
                &json!(2),
                &json!("events.k8s.io/v1")
            ))
        );
        assert_eq!(
            converted.and_then(|c| convert(&events, &core, c).ok()),
            Some(event)
        );
    }

    #[test]
    fn hpa_round_trip_keeps_v2_only_fields() {
        let (v2, v1) = defs(
            ("autoscaling", "v2", "HorizontalPodAutoscaler"),
            ("autoscaling", "v1", "HorizontalPodAutoscaler"),
        );
        let hpa = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}
                ]},
        });
        let old = convert(&v2, &v1, hpa.clone()).ok();
        assert_eq!(
            old.as_ref()
                .map(|h| h["spec"]["targetCPUUtilizationPercentage"].clone()),
            Some(json!(70))
        );
        assert!(
            old.as_ref()
                .is_some_and(|h| h["metadata"]["annotations"][METRICS].is_string())
        );
        assert_eq!(old.and_then(|h| convert(&v1, &v2, h).ok()), Some(hpa));
    }
}
