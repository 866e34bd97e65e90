//! What the Job controller knows about its pods: building a pod from the Job's template
//! (labels, the tracking finalizer, the completion index and hostname of Indexed Jobs),
//! reading a pod's state, matching `podFailurePolicy` rules, and the pod-failure backoff.

use super::indexes::COMPLETION_INDEX;
use crate::ownership::controller_reference;
use k8s_openapi::api::batch::v1::{Job, PodFailurePolicy};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod};
use std::time::Duration;

/// The finalizer that keeps a finished pod until the Job has counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const LEGACY_JOB_NAME: &str = "job-name";

/// The pod to create for `job` (with `index` for Indexed Jobs).
pub fn from_template(job: &Job, index: Option<i32>) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut meta = template.metadata.unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    let labels = meta.labels.get_or_insert_with(Default::default);
    for (k, v) in [
        (CONTROLLER_UID, &uid),
        (LEGACY_CONTROLLER_UID, &uid),
        (JOB_NAME, &name),
        (LEGACY_JOB_NAME, &name),
    ] {
        labels.entry(k.to_string()).or_insert_with(|| v.clone());
    }
    meta.generate_name = Some(format!("{name}-"));
    if let Some(index) = index {
        labels.insert(COMPLETION_INDEX.to_string(), index.to_string());
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(COMPLETION_INDEX.to_string(), index.to_string());
        meta.generate_name = Some(format!("{name}-{index}-"));
        if spec.hostname.is_none() {
            spec.hostname = Some(format!("{name}-{index}"));
        }
        let env = EnvVar {
            name: "JOB_COMPLETION_INDEX".to_string(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.labels['{COMPLETION_INDEX}']"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        for container in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            let vars = container.env.get_or_insert_with(Vec::new);
            if !vars.iter().any(|e| e.name == env.name) {
                vars.push(env.clone());
            }
        }
    }
    meta.name = None;
    meta.namespace = job.metadata.namespace.clone();
    meta.owner_references = Some(vec![controller_reference(job)]);
    meta.finalizers
        .get_or_insert_with(Vec::new)
        .push(TRACKING_FINALIZER.to_string());
    Pod {
        metadata: meta,
        spec: Some(spec),
        status: None,
    }
}

pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

pub fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == TRACKING_FINALIZER))
}

/// When a pod finished: the latest container finish time, else the latest condition
/// transition, else its deletion or creation time.
pub fn finish_time(pod: &Pod) -> Option<jiff::Timestamp> {
    let status = pod.status.as_ref();
    let containers = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max();
    containers
        .or_else(|| {
            status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|c| c.last_transition_time.as_ref().map(|t| t.0))
                .max()
        })
        .or_else(|| pod.metadata.deletion_timestamp.as_ref().map(|t| t.0))
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The pod-failure backoff before creating a replacement after `failures` failures:
/// 10 s doubling, at most 6 minutes.
pub fn backoff(failures: i32) -> Duration {
    if failures <= 0 {
        return Duration::ZERO;
    }
    let shift = (failures - 1).min(10) as u32;
    Duration::from_secs(10u64 << shift).min(Duration::from_secs(360))
}

/// The action of the first `podFailurePolicy` rule matching a failed pod, with the
/// message Kubernetes gives it.
pub fn match_failure_policy(policy: &PodFailurePolicy, pod: &Pod) -> Option<(String, String)> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref()?;
    for (i, rule) in policy.rules.iter().enumerate() {
        if let Some(codes) = &rule.on_exit_codes {
            let containers = status
                .init_container_statuses
                .iter()
                .flatten()
                .chain(status.container_statuses.iter().flatten());
            for container in containers {
                if codes
                    .container_name
                    .as_ref()
                    .is_some_and(|n| *n != container.name)
                {
                    continue;
                }
                let Some(code) = container
                    .state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| t.exit_code)
                else {
                    continue;
                };
                if code == 0 {
                    continue;
                }
                let listed = codes.values.contains(&code);
                let hit = match codes.operator.as_str() {
                    "In" => listed,
                    "NotIn" => !listed,
                    _ => false,
                };
                if hit {
                    let message = format!(
                        "Container {} for pod {namespace}/{name} failed with exit code {code} matching {} rule at index {i}",
                        container.name, rule.action
                    );
                    return Some((rule.action.clone(), message));
                }
            }
        }
        for pattern in rule.on_pod_conditions.iter().flatten() {
            let wanted = if pattern.status.is_empty() {
                "True"
            } else {
                pattern.status.as_str()
            };
            let hit = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == pattern.type_ && c.status == wanted);
            if hit {
                let message = format!(
                    "Pod {namespace}/{name} has condition {} matching {} rule at index {i}",
                    pattern.type_, rule.action
                );
                return Some((rule.action.clone(), message));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn backoff_doubles_up_to_six_minutes() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_secs(10));
        assert_eq!(backoff(2), Duration::from_secs(20));
        assert_eq!(backoff(6), Duration::from_secs(320));
        assert_eq!(backoff(7), Duration::from_secs(360));
        assert_eq!(backoff(100), Duration::from_secs(360));
    }

    fn job() -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
                "spec": {"containers": [{"name": "main", "image": "x"}], "restartPolicy": "Never"}}},
        }))
        .unwrap()
    }

    #[test]
    fn pods_from_the_template() {
        let pod = from_template(&job(), None);
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels[CONTROLLER_UID], "u1");
        assert_eq!(labels["job-name"], "pi");
        assert_eq!(labels["app"], "pi");
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-"));
        assert!(has_finalizer(&pod));
        let indexed = from_template(&job(), Some(3));
        assert_eq!(indexed.metadata.generate_name.as_deref(), Some("pi-3-"));
        assert_eq!(
            indexed.spec.as_ref().unwrap().hostname.as_deref(),
            Some("pi-3")
        );
        assert_eq!(super::super::indexes::of_pod(&indexed.metadata), Some(3));
        let env = indexed.spec.unwrap().containers[0].env.clone().unwrap();
        assert_eq!(env[0].name, "JOB_COMPLETION_INDEX");
    }

    #[test]
    fn failure_policy_rules() {
        let policy: PodFailurePolicy = serde_json::from_value(json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}},
        ]}))
        .unwrap();
        let pod = |code: i32, disrupted: bool| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "ns"},
                "status": {"phase": "Failed",
                    "conditions": if disrupted { json!([{"type": "DisruptionTarget", "status": "True"}]) } else { json!([]) },
                    "containerStatuses": [{"name": "main", "image": "x", "imageID": "", "ready": false,
                        "restartCount": 0, "state": {"terminated": {"exitCode": code}}}]},
            }))
            .unwrap()
        };
        let (action, message) = match_failure_policy(&policy, &pod(42, false)).unwrap();
        assert_eq!(action, "FailJob");
        assert_eq!(
            message,
            "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
        );
        assert_eq!(
            match_failure_policy(&policy, &pod(42, true)).unwrap().0,
            "Ignore"
        );
        assert_eq!(
            match_failure_policy(&policy, &pod(3, false)).unwrap().0,
            "Count"
        );
        assert!(match_failure_policy(&policy, &pod(1, false)).is_none());
    }
}
