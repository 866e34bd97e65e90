//! A pod's quality-of-service class, as Kubernetes' `qos` helper computes it: `BestEffort`
//! when no container or init container requests or limits any CPU or memory;
//! `Guaranteed` when every one limits both and every request equals its limit; otherwise
//! `Burstable`. Only CPU and memory count, and only amounts above zero. The API server
//! writes it into `status.qosClass` when a pod is created; quota's `BestEffort` scope and
//! the kubelet read it. (Validation and quota each had a copy.)

use kyb_apimachinery::json::{Obj, field, field_at, str_at};
use kyb_apimachinery::quantity::Quantity;
use serde_json::Value;

/// The QoS class of a pod spec in JSON form (`ComputePodQOS`).
pub fn compute_pod_qos_json(spec: &Value) -> &'static str {
    let mut requests: Vec<(&str, Quantity)> = Vec::new();
    let mut limits: Vec<(&str, Quantity)> = Vec::new();
    let mut guaranteed = true;
    let add = |acc: &mut Vec<(&'static str, Quantity)>, name: &'static str, q: Quantity| match acc
        .iter_mut()
        .find(|(n, _)| *n == name)
    {
        Some((_, sum)) => *sum = sum.add(&q),
        None => acc.push((name, q)),
    };
    let containers = spec
        .arr("containers")
        .iter()
        .chain(spec.arr("initContainers"));
    for c in containers {
        let res = field(c, "resources");
        for name in ["cpu", "memory"] {
            if let Ok(q) = Quantity::from_json(field_at(res, &["requests", name]))
                && q.sign() > 0
            {
                add(&mut requests, name, q);
            }
        }
        let mut found = 0;
        for name in ["cpu", "memory"] {
            if let Ok(q) = Quantity::from_json(field_at(res, &["limits", name]))
                && q.sign() > 0
            {
                found += 1;
                add(&mut limits, name, q);
            }
        }
        if found < 2 {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed {
        for (name, req) in &requests {
            match limits.iter().find(|(n, _)| n == name) {
                Some((_, lim)) if lim.cmp_q(req).is_eq() => {}
                _ => {
                    guaranteed = false;
                    break;
                }
            }
        }
    }
    if guaranteed && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The QoS class of a pod in JSON form (`GetPodQOS`): `status.qosClass` when set, else
/// computed from its spec.
pub fn pod_qos_json(pod: &Value) -> &str {
    match str_at(pod, &["status", "qosClass"]) {
        "" => compute_pod_qos_json(field(pod, "spec")),
        class => class,
    }
}

/// The QoS class of a typed pod (`GetPodQOS`): `status.qosClass` when it is one of the
/// three classes, else computed from its spec.
pub fn pod_qos(pod: &k8s_openapi::api::core::v1::Pod) -> &'static str {
    let status = pod.status.as_ref().and_then(|s| s.qos_class.as_deref());
    if let Some(class @ ("BestEffort" | "Burstable" | "Guaranteed")) = status {
        return match class {
            "BestEffort" => "BestEffort",
            "Burstable" => "Burstable",
            _ => "Guaranteed",
        };
    }
    match &pod.spec {
        Some(spec) => compute_pod_qos_json(&serde_json::to_value(spec).unwrap_or_default()),
        None => "BestEffort",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_status_wins_over_the_spec() {
        let spec = json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]});
        assert_eq!(compute_pod_qos_json(&spec), "Burstable");
        assert_eq!(pod_qos_json(&json!({"spec": spec})), "Burstable");
        assert_eq!(
            pod_qos_json(&json!({"spec": spec, "status": {"qosClass": "BestEffort"}})),
            "BestEffort"
        );
        // Init containers count, and only amounts above zero.
        assert_eq!(
            compute_pod_qos_json(&json!({"containers": [{"name": "c"}],
                "initContainers": [{"name": "i", "resources": {"limits": {"memory": "1Gi"}}}]})),
            "Burstable"
        );
        assert_eq!(
            compute_pod_qos_json(&json!({"containers": [{"name": "c",
                "resources": {"requests": {"cpu": "0"}}}]})),
            "BestEffort"
        );
    }

    #[test]
    fn a_typed_pod_is_classed_as_its_json() {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({"spec": {
            "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"},
                "limits": {"cpu": "1", "memory": "1Gi"}}}]}}))
        .unwrap_or_default();
        assert_eq!(pod_qos(&pod), "Guaranteed");
        let mut pod = pod;
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            qos_class: Some("Burstable".into()),
            ..Default::default()
        });
        assert_eq!(pod_qos(&pod), "Burstable");
        assert_eq!(pod_qos(&Default::default()), "BestEffort");
    }
}
