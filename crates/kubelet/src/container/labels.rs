//! The labels and annotations the agent puts on sandboxes and containers, so that an agent
//! restarted with pods running finds everything it needs in the runtime alone, as
//! Kubernetes' kubelet does (`kuberuntime/labels.go`): which pod and container a runtime
//! object belongs to, the container's spec hash and restart count, its termination
//! message settings, the pod's grace periods and the preStop handler to run when it is
//! killed.

use k8s_openapi::api::core::v1::{Container, ContainerPort, LifecycleHandler, Pod};
use std::collections::HashMap;
use tracing::warn;

/// The pod's name (label).
pub const POD_NAME: &str = "io.kubernetes.pod.name";
/// The pod's namespace (label).
pub const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// The pod's UID (label).
pub const POD_UID: &str = "io.kubernetes.pod.uid";
/// The container's name in the pod spec (label).
pub const CONTAINER_NAME: &str = "io.kubernetes.container.name";
/// The pod's `deletionGracePeriodSeconds` when it was set (annotation).
pub const POD_DELETION_GRACE_PERIOD: &str = "io.kubernetes.pod.deletionGracePeriod";
/// The pod's `terminationGracePeriodSeconds` (annotation).
pub const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
/// [`container_hash`] in hexadecimal (annotation).
pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
/// How many times the container had been restarted when this one was created (annotation).
pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
/// The container's `terminationMessagePath` (annotation).
pub const CONTAINER_TERMINATION_MESSAGE_PATH: &str =
    "io.kubernetes.container.terminationMessagePath";
/// The container's `terminationMessagePolicy` (annotation).
pub const CONTAINER_TERMINATION_MESSAGE_POLICY: &str =
    "io.kubernetes.container.terminationMessagePolicy";
/// The container's preStop handler as JSON (annotation).
pub const CONTAINER_PRE_STOP_HANDLER: &str = "io.kubernetes.container.preStopHandler";
/// The container's ports as JSON (annotation).
pub const CONTAINER_PORTS: &str = "io.kubernetes.container.ports";

fn metadata(pod: &Pod) -> (&str, &str, &str) {
    (
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.uid.as_deref().unwrap_or_default(),
    )
}

/// A sandbox's labels: the pod's own labels plus its name, namespace and UID.
pub fn sandbox_labels(pod: &Pod) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = pod
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (name, namespace, uid) = metadata(pod);
    labels.insert(POD_NAME.into(), name.into());
    labels.insert(POD_NAMESPACE.into(), namespace.into());
    labels.insert(POD_UID.into(), uid.into());
    labels
}

/// A sandbox's annotations: the pod's annotations.
pub fn sandbox_annotations(pod: &Pod) -> HashMap<String, String> {
    pod.metadata
        .annotations
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A container's labels: its pod's name, namespace and UID, and its own name.
pub fn container_labels(pod: &Pod, container: &Container) -> HashMap<String, String> {
    let (name, namespace, uid) = metadata(pod);
    HashMap::from([
        (POD_NAME.into(), name.into()),
        (POD_NAMESPACE.into(), namespace.into()),
        (POD_UID.into(), uid.into()),
        (CONTAINER_NAME.into(), container.name.clone()),
    ])
}

/// A container's annotations (see the constants of this module).
pub fn container_annotations(
    pod: &Pod,
    container: &Container,
    restart_count: u32,
) -> HashMap<String, String> {
    let mut annotations = HashMap::from([
        (
            CONTAINER_HASH.to_string(),
            format!("{:x}", container_hash(container)),
        ),
        (
            CONTAINER_RESTART_COUNT.to_string(),
            restart_count.to_string(),
        ),
        (
            CONTAINER_TERMINATION_MESSAGE_PATH.to_string(),
            container
                .termination_message_path
                .clone()
                .unwrap_or_default(),
        ),
        (
            CONTAINER_TERMINATION_MESSAGE_POLICY.to_string(),
            container
                .termination_message_policy
                .clone()
                .unwrap_or_default(),
        ),
    ]);
    if let Some(seconds) = pod.metadata.deletion_grace_period_seconds {
        annotations.insert(POD_DELETION_GRACE_PERIOD.into(), seconds.to_string());
    }
    if let Some(seconds) = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
    {
        annotations.insert(POD_TERMINATION_GRACE_PERIOD.into(), seconds.to_string());
    }
    if let Some(pre_stop) = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        && let Ok(json) = serde_json::to_string(pre_stop)
    {
        annotations.insert(CONTAINER_PRE_STOP_HANDLER.into(), json);
    }
    if let Some(ports) = container.ports.as_ref().filter(|p| !p.is_empty())
        && let Ok(json) = serde_json::to_string(ports)
    {
        annotations.insert(CONTAINER_PORTS.into(), json);
    }
    annotations
}

/// Which pod a sandbox belongs to, read back from its labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxLabels {
    pub pod_name: String,
    pub pod_namespace: String,
    pub pod_uid: String,
}

/// Reads a sandbox's labels (missing ones read as empty).
pub fn parse_sandbox_labels(labels: &HashMap<String, String>) -> SandboxLabels {
    let get = |key: &str| labels.get(key).cloned().unwrap_or_default();
    SandboxLabels {
        pod_name: get(POD_NAME),
        pod_namespace: get(POD_NAMESPACE),
        pod_uid: get(POD_UID),
    }
}

/// Which pod and container a container belongs to, read back from its labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerLabels {
    pub pod_name: String,
    pub pod_namespace: String,
    pub pod_uid: String,
    pub container_name: String,
}

/// Reads a container's labels (missing ones read as empty).
pub fn parse_container_labels(labels: &HashMap<String, String>) -> ContainerLabels {
    let get = |key: &str| labels.get(key).cloned().unwrap_or_default();
    ContainerLabels {
        pod_name: get(POD_NAME),
        pod_namespace: get(POD_NAMESPACE),
        pod_uid: get(POD_UID),
        container_name: get(CONTAINER_NAME),
    }
}

/// What the agent recorded on a container when it created it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerAnnotations {
    /// [`container_hash`] of the spec the container was created from.
    pub hash: u64,
    pub restart_count: u32,
    pub termination_message_path: String,
    pub termination_message_policy: String,
    pub pod_deletion_grace_period: Option<i64>,
    pub pod_termination_grace_period: Option<i64>,
    pub pre_stop: Option<LifecycleHandler>,
    pub ports: Vec<ContainerPort>,
}

/// Reads a container's annotations. A value that does not parse is logged and read as
/// absent (zero), as kubelet does.
pub fn parse_container_annotations(annotations: &HashMap<String, String>) -> ContainerAnnotations {
    let get = |key: &str| annotations.get(key).cloned().unwrap_or_default();
    fn parsed<T: std::str::FromStr>(
        annotations: &HashMap<String, String>,
        key: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        let value = annotations.get(key)?;
        parse(value)
            .inspect_err(|error| {
                warn!(annotation = key, value = %value, %error, "unreadable container annotation")
            })
            .ok()
    }
    let int = |v: &str| v.parse::<i64>().map_err(|e| e.to_string());
    ContainerAnnotations {
        hash: parsed(annotations, CONTAINER_HASH, |v| {
            u64::from_str_radix(v, 16).map_err(|e| e.to_string())
        })
        .unwrap_or_default(),
        restart_count: parsed(annotations, CONTAINER_RESTART_COUNT, |v| {
            v.parse::<u32>().map_err(|e| e.to_string())
        })
        .unwrap_or_default(),
        termination_message_path: get(CONTAINER_TERMINATION_MESSAGE_PATH),
        termination_message_policy: get(CONTAINER_TERMINATION_MESSAGE_POLICY),
        pod_deletion_grace_period: parsed(annotations, POD_DELETION_GRACE_PERIOD, int),
        pod_termination_grace_period: parsed(annotations, POD_TERMINATION_GRACE_PERIOD, int),
        pre_stop: annotations.get(CONTAINER_PRE_STOP_HANDLER).and_then(|v| {
            serde_json::from_str(v)
                .inspect_err(|error| warn!(%error, "unreadable preStop handler annotation"))
                .ok()
        }),
        ports: annotations
            .get(CONTAINER_PORTS)
            .and_then(|v| {
                serde_json::from_str(v)
                    .inspect_err(|error| warn!(%error, "unreadable container ports annotation"))
                    .ok()
            })
            .unwrap_or_default(),
    }
}

/// The container's spec hash: FNV-1a (32 bits) of its name and image, the fields of a
/// pod's container that can change (Kubernetes hashes the same fields since in-place
/// resizing, so a change of resources does not restart a container). Stable across
/// restarts and versions of the agent: a running container whose recorded hash differs
/// from its spec's is restarted.
pub fn container_hash(container: &Container) -> u64 {
    // The JSON text is written here, not by a map whose key order could change.
    let string = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let text = format!(
        "{{\"image\":{},\"name\":{}}}",
        string(container.image.as_deref().unwrap_or_default()),
        string(&container.name)
    );
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    u64::from(hash)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "prod", "uid": "1234-abcd",
                "labels": {"app": "web"}, "annotations": {"note": "x"},
                "deletionGracePeriodSeconds": 5},
            "spec": {"terminationGracePeriodSeconds": 30, "containers": [{
                "name": "c", "image": "busybox",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn sandbox_labels_round_trip() {
        let pod = pod();
        let labels = sandbox_labels(&pod);
        assert_eq!(labels["app"], "web");
        assert_eq!(
            parse_sandbox_labels(&labels),
            SandboxLabels {
                pod_name: "web".into(),
                pod_namespace: "prod".into(),
                pod_uid: "1234-abcd".into()
            }
        );
        assert_eq!(sandbox_annotations(&pod)["note"], "x");
    }

    #[test]
    fn container_labels_and_annotations_round_trip() {
        let pod = pod();
        let container = &pod.spec.as_ref().unwrap().containers[0];
        let labels = container_labels(&pod, container);
        assert_eq!(
            parse_container_labels(&labels),
            ContainerLabels {
                pod_name: "web".into(),
                pod_namespace: "prod".into(),
                pod_uid: "1234-abcd".into(),
                container_name: "c".into()
            }
        );
        let annotations = container_annotations(&pod, container, 3);
        assert_eq!(annotations[CONTAINER_RESTART_COUNT], "3");
        let parsed = parse_container_annotations(&annotations);
        assert_eq!(parsed.hash, container_hash(container));
        assert_eq!(parsed.restart_count, 3);
        assert_eq!(parsed.termination_message_path, "/dev/termination-log");
        assert_eq!(parsed.termination_message_policy, "FallbackToLogsOnError");
        assert_eq!(parsed.pod_deletion_grace_period, Some(5));
        assert_eq!(parsed.pod_termination_grace_period, Some(30));
        assert_eq!(
            parsed.pre_stop.unwrap().exec.unwrap().command.unwrap(),
            ["sh", "-c", "sleep 1"]
        );
        assert_eq!(parsed.ports.len(), 1);
        assert_eq!(parsed.ports[0].container_port, 80);
    }

    #[test]
    fn unreadable_annotations_read_as_absent() {
        let annotations = HashMap::from([
            (CONTAINER_HASH.to_string(), "not-hex".to_string()),
            (CONTAINER_RESTART_COUNT.to_string(), "-1".to_string()),
            (CONTAINER_PRE_STOP_HANDLER.to_string(), "{".to_string()),
        ]);
        let parsed = parse_container_annotations(&annotations);
        assert_eq!(parsed, ContainerAnnotations::default());
    }

    #[test]
    fn the_hash_is_stable_and_follows_the_image() {
        let pod = pod();
        let container = pod.spec.as_ref().unwrap().containers[0].clone();
        // A fixed value: the hash must not change between versions of the agent.
        assert_eq!(container_hash(&container), 0x70ec_41b6);
        let mut changed = container.clone();
        changed.image = Some("busybox:2".into());
        assert_ne!(container_hash(&changed), container_hash(&container));
        // Fields that cannot change in a pod's spec do not count.
        let mut same = container.clone();
        same.args = Some(vec!["x".into()]);
        assert_eq!(container_hash(&same), container_hash(&container));
    }
}
