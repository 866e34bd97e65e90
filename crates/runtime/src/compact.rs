//! The compact form informers keep pods in, the kind a cluster has most of: trimmed of what
//! no controller reads ([`trim_pod`]), serialized to JSON and compressed with LZ4 against a
//! dictionary of a typical pod ([`Compact`]), parsed again on every read. An informer keeps
//! its objects so when asked to: `Informer<Pod, Compacted>` (see [`Compacted`]).
//!
//! A typed Pod costs about 13 KB in memory (k8s-openapi's structs are large: a `Container`
//! is 2 KB and a `Volume` 3 KB before any string), its trimmed JSON about 1.5 KB. Most of
//! that JSON is the same in every pod (field names, default values, the two default
//! tolerations, condition types), so against a dictionary holding a typical pod it
//! compresses to a few hundred bytes: with 10,000 pods, about 3 MB instead of 130 MB
//! parsed or 15 MB of JSON. Compressing costs about 1 µs, decompressing well under one;
//! parsing the JSON (about 7 µs) is the cost of a read.

use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use std::sync::{Arc, LazyLock};

use crate::informer::Storage;

/// A kind that can be kept compact: the dictionary its objects are compressed against,
/// and what of an object is not worth keeping.
pub trait Compactable: serde::Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Bytes most objects of the kind share (the JSON of a typical object).
    fn dictionary() -> &'static [u8];

    /// Drops what no reader of the informer needs, as the object arrives.
    fn trim(&mut self) {}
}

/// An object kept as LZ4-compressed JSON (see the module documentation).
#[derive(Clone)]
pub struct Compact(Arc<[u8]>);

impl Compact {
    /// The bytes kept (for measurements).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The compact form of `object`.
    pub fn of<K: Compactable>(object: &K) -> Compact {
        match serde_json::to_vec(object) {
            Ok(json) => Compact(
                lz4_flex::block::compress_prepend_size_with_dict(&json, K::dictionary()).into(),
            ),
            Err(error) => {
                // Not expected for API types; the object is then unreadable, not wrong.
                tracing::error!(%error, "an object could not be stored compactly");
                Compact(Arc::from(Vec::new()))
            }
        }
    }

    /// The object again (`None` if it could not be read back).
    pub fn read<K: Compactable>(&self) -> Option<K> {
        let json =
            match lz4_flex::block::decompress_size_prepended_with_dict(&self.0, K::dictionary()) {
                Ok(json) => json,
                Err(error) => {
                    tracing::error!(%error, "a compactly stored object could not be decompressed");
                    return None;
                }
            };
        match serde_json::from_slice(&json) {
            Ok(object) => Some(object),
            Err(error) => {
                tracing::error!(%error, "a compactly stored object could not be read back");
                None
            }
        }
    }
}

/// The informer storage that keeps objects trimmed ([`Compactable::trim`]) and
/// [`Compact`], parsed again on each read: `Informer<Pod, Compacted>`. Visit such an
/// informer's objects one at a time (`visit_namespace`, `visit_index`) rather than listing
/// them, so that only one is parsed at once.
#[derive(Debug)]
pub enum Compacted {}

impl<K: Compactable> Storage<K> for Compacted {
    type Stowed = Compact;

    fn prepare(object: &mut K) {
        object.trim();
    }

    fn stow(object: &Arc<K>) -> Compact {
        Compact::of(&**object)
    }

    fn unstow(stowed: &Compact) -> Option<Arc<K>> {
        stowed.read().map(Arc::new)
    }
}

/// What no controller reads of a cached pod, dropped as it arrives:
/// - volumes other than claims (`persistentVolumeClaim`, `ephemeral`), and every
///   container's volume mounts: the admission-injected service-account token volume alone
///   is a third of a pod's JSON;
/// - `kubectl.kubernetes.io/last-applied-configuration`, a copy of the whole manifest on
///   pods made with `kubectl apply`;
/// - per container: command, arguments, environment, probes, lifecycle hooks, security
///   context and the termination-message and pull-policy defaults; and per container status,
///   the image ID and container ID. Controllers read containers' names, images, ports and
///   resources, and their statuses' states, readiness and restart counts.
pub fn trim_pod(pod: &mut Pod) {
    if let Some(annotations) = pod.metadata.annotations.as_mut() {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        if annotations.is_empty() {
            pod.metadata.annotations = None;
        }
    }
    if let Some(spec) = pod.spec.as_mut() {
        if let Some(volumes) = spec.volumes.as_mut() {
            volumes.retain(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some());
            if volumes.is_empty() {
                spec.volumes = None;
            }
        }
        let containers = spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten());
        for c in containers {
            c.volume_mounts = None;
            c.command = None;
            c.args = None;
            c.env = None;
            c.env_from = None;
            c.liveness_probe = None;
            c.readiness_probe = None;
            c.startup_probe = None;
            c.lifecycle = None;
            c.security_context = None;
            c.termination_message_path = None;
            c.termination_message_policy = None;
            c.image_pull_policy = None;
        }
        for c in spec.ephemeral_containers.iter_mut().flatten() {
            c.volume_mounts = None;
            c.command = None;
            c.args = None;
            c.env = None;
            c.env_from = None;
        }
    }
    if let Some(status) = pod.status.as_mut() {
        let statuses = status
            .container_statuses
            .iter_mut()
            .flatten()
            .chain(status.init_container_statuses.iter_mut().flatten())
            .chain(status.ephemeral_container_statuses.iter_mut().flatten());
        for s in statuses {
            s.image_id = String::new();
            s.container_id = None;
        }
    }
}

/// The JSON of a typical running pod of a ReplicaSet, as k8s-openapi writes it (same field
/// order) and trimmed as stored pods are.
static POD_DICTIONARY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let typical = serde_json::json!({
        "metadata": {
            "name": "web-7d4b9c8f6d-x2x9k", "generateName": "web-7d4b9c8f6d-",
            "namespace": "default", "uid": "00000000-0000-0000-0000-000000000000",
            "resourceVersion": "1000", "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6d",
                "controller-revision-hash": "web-7d4b9c8f6d",
                "statefulset.kubernetes.io/pod-name": "web-0"},
            "annotations": {"controller.kubernetes.io/pod-deletion-cost": "0"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7d4b9c8f6d", "uid": "00000000-0000-0000-0000-000000000000",
                "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["batch.kubernetes.io/job-tracking"],
        },
        "spec": {
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}],
            "containers": [{"name": "web", "image": "registry.k8s.io/nginx:1.27",
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                    "requests": {"cpu": "100m", "memory": "64Mi"}}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "serviceAccount": "default", "nodeName": "node-a", "securityContext": {},
            "hostname": "web-0", "subdomain": "web",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True",
                    "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Initialized", "status": "True",
                    "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Ready", "status": "True",
                    "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "ContainersReady", "status": "True",
                    "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "PodScheduled", "status": "True",
                    "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.42.0.1", "podIPs": [{"ip": "10.42.0.1"}],
            "startTime": "2026-01-01T00:00:00Z",
            "containerStatuses": [{"name": "web", "state": {"running":
                {"startedAt": "2026-01-01T00:00:00Z"}}, "lastState": {}, "ready": true,
                "restartCount": 0, "image": "registry.k8s.io/nginx:1.27", "imageID": "",
                "started": true}],
            "qosClass": "Burstable",
        },
    });
    let mut pod: Pod = serde_json::from_value(typical).unwrap_or_default();
    trim_pod(&mut pod);
    serde_json::to_vec(&pod).unwrap_or_default()
});

/// Pods: trimmed ([`trim_pod`]) and compressed against a typical pod.
impl Compactable for Pod {
    fn dictionary() -> &'static [u8] {
        &POD_DICTIONARY
    }

    fn trim(&mut self) {
        trim_pod(self);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn bench_pod(name: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "generateName": "bulk-5c9f8d7b6-",
                "namespace": "bench", "uid": "7c1e0c7e-8f5a-4b8e-9a57-3f1d2c4b5a69",
                "resourceVersion": "123456", "creationTimestamp": "2026-11-24T06:10:00Z",
                "labels": {"app": "bulk", "pod-template-hash": "5c9f8d7b6"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "bulk-5c9f8d7b6", "uid": "1c1e0c7e-8f5a-4b8e-9a57-3f1d2c4b5a69",
                    "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
                "serviceAccount": "default", "nodeName": "node-42", "securityContext": {},
                "schedulerName": "default-scheduler",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                        "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                        "effect": "NoExecute", "tolerationSeconds": 300}],
                "priority": 0, "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority"},
            "status": {"phase": "Running", "conditions": [
                    {"type": "Initialized", "status": "True"},
                    {"type": "ContainersReady", "status": "True"},
                    {"type": "Ready", "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "PodScheduled", "status": "True"}],
                "hostIP": "10.0.0.42", "hostIPs": [{"ip": "10.0.0.42"}],
                "podIP": "10.42.3.17", "podIPs": [{"ip": "10.42.3.17"}],
                "startTime": "2026-11-24T06:10:01Z", "qosClass": "Burstable"},
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_is_read_back_as_it_was_stowed() {
        let mut pod = bench_pod("bulk-5c9f8d7b6-x7k2p");
        trim_pod(&mut pod);
        let pod = Arc::new(pod);
        let stowed = <Compacted as Storage<Pod>>::stow(&pod);
        let back: Arc<Pod> = <Compacted as Storage<Pod>>::unstow(&stowed).unwrap();
        assert_eq!(back, pod);
        let json = serde_json::to_vec(&*pod).unwrap();
        assert!(
            stowed.len() * 3 < json.len(),
            "{} bytes kept for {} of JSON",
            stowed.len(),
            json.len()
        );
    }

    #[test]
    fn trimming_keeps_what_controllers_read() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"a\":1}",
                "controller.kubernetes.io/pod-deletion-cost": "5"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                "command": ["sh"], "env": [{"name": "A", "value": "1"}],
                "ports": [{"name": "http", "containerPort": 80}],
                "resources": {"requests": {"cpu": "10m"}},
                "readinessProbe": {"exec": {"command": ["true"]}}}]},
            "status": {"containerStatuses": [{"name": "c", "ready": true, "restartCount": 2,
                "image": "busybox", "imageID": "sha256:abc", "containerID": "containerd://x",
                "state": {"terminated": {"exitCode": 3}}}]},
        }))
        .unwrap();
        trim_pod(&mut pod);
        let annotations = pod.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations.len(), 1);
        assert_eq!(
            annotations["controller.kubernetes.io/pod-deletion-cost"],
            "5"
        );
        let c = &pod.spec.as_ref().unwrap().containers[0];
        assert!(c.command.is_none() && c.env.is_none() && c.readiness_probe.is_none());
        assert_eq!(c.ports.as_ref().unwrap()[0].container_port, 80);
        assert!(c.resources.is_some());
        let s = &pod
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert_eq!((s.ready, s.restart_count), (true, 2));
        assert_eq!(
            s.state
                .as_ref()
                .unwrap()
                .terminated
                .as_ref()
                .unwrap()
                .exit_code,
            3
        );
        assert!(s.container_id.is_none() && s.image_id.is_empty());
    }
}
