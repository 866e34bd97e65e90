//! Local storage limits, enforced as the kubelet's eviction manager enforces them on every
//! pass, whatever the node's pressure: a pod whose disk-backed emptyDir outgrows its
//! `sizeLimit`, whose containers together outgrow their `ephemeral-storage` limits, or
//! one of whose containers outgrows its own, is evicted with the kubelet's message.

use super::eviction::PodUsage;
use k8s_openapi::api::core::v1::{Container, Pod};
use kyb_apimachinery::quantity::Quantity;

/// A container's `ephemeral-storage` limit.
fn ephemeral_limit(container: &Container) -> Option<Quantity> {
    let limits = container.resources.as_ref()?.limits.as_ref()?;
    Quantity::parse(&limits.get("ephemeral-storage")?.0).ok()
}

/// Whether the pod has a limit this check enforces (so its usage is worth measuring).
pub fn has_limits(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    let sized_empty_dir = spec.volumes.iter().flatten().any(|v| {
        v.empty_dir
            .as_ref()
            .is_some_and(|e| e.medium.as_deref() != Some("Memory") && e.size_limit.is_some())
    });
    sized_empty_dir || spec.containers.iter().any(|c| ephemeral_limit(c).is_some())
}

/// Why the pod must be evicted for its local storage, in the kubelet's words (each ends
/// with `". "`, as the kubelet's do); None when it keeps within its limits. `empty_dirs`
/// holds the bytes each emptyDir volume uses, by volume name.
pub fn violation(usage: &PodUsage, empty_dirs: &[(String, u64)]) -> Option<String> {
    let spec = usage.pod.spec.as_ref()?;
    let used = |name: &str| {
        empty_dirs
            .iter()
            .find(|(volume, _)| volume == name)
            .map_or(0, |(_, bytes)| *bytes)
    };
    for volume in spec.volumes.iter().flatten() {
        let Some(empty_dir) = &volume.empty_dir else {
            continue;
        };
        if empty_dir.medium.as_deref() == Some("Memory") {
            continue;
        }
        let Some(limit) = empty_dir
            .size_limit
            .as_ref()
            .and_then(|q| Quantity::parse(&q.0).ok())
        else {
            continue;
        };
        if limit.value() > 0 && used(&volume.name) as i64 > limit.value() {
            return Some(format!(
                "Usage of EmptyDir volume {:?} exceeds the limit {:?}. ",
                volume.name,
                limit.canonical()
            ));
        }
    }
    let limits: Vec<Quantity> = spec.containers.iter().filter_map(ephemeral_limit).collect();
    if let Some(first) = limits.first() {
        let total = limits[1..].iter().fold(first.clone(), |sum, q| sum.add(q));
        let pod_usage: u64 = usage
            .containers
            .iter()
            .map(|c| c.ephemeral_storage)
            .chain(empty_dirs.iter().map(|(_, bytes)| *bytes))
            .sum();
        if pod_usage as i64 > total.value() {
            return Some(format!(
                "Pod ephemeral local storage usage exceeds the total limit of containers {}. ",
                total.canonical()
            ));
        }
    }
    for container in &spec.containers {
        let Some(limit) = ephemeral_limit(container) else {
            continue;
        };
        let used = usage
            .containers
            .iter()
            .find(|c| c.name == container.name)
            .map_or(0, |c| c.ephemeral_storage);
        if used as i64 > limit.value() {
            return Some(format!(
                "Container {} exceeded its local ephemeral storage limit {:?}. ",
                container.name,
                limit.canonical()
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::node::eviction::ContainerUsage;
    use serde_json::json;
    use std::sync::Arc;

    fn usage(spec: serde_json::Value, containers: &[(&str, u64)]) -> PodUsage {
        PodUsage {
            pod: Arc::new(
                serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap(),
            ),
            containers: containers
                .iter()
                .map(|(name, bytes)| ContainerUsage {
                    name: name.to_string(),
                    ephemeral_storage: *bytes,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn an_empty_dir_past_its_size_limit_is_a_violation() {
        let pod = usage(
            json!({"containers": [{"name": "c"}], "volumes": [
                {"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"}},
                {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}]}),
            &[("c", 10)],
        );
        assert!(has_limits(&pod.pod));
        assert_eq!(violation(&pod, &[("scratch".into(), 1 << 20)]), None);
        assert_eq!(violation(&pod, &[("ram".into(), 8 << 20)]), None);
        assert_eq!(
            violation(&pod, &[("scratch".into(), (1 << 20) + 1)]).unwrap(),
            "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\". "
        );
    }

    #[test]
    fn containers_past_their_ephemeral_storage_limits_are_violations() {
        let spec = json!({"containers": [
            {"name": "a", "resources": {"limits": {"ephemeral-storage": "2Ki"}}},
            {"name": "b", "resources": {"limits": {"ephemeral-storage": "2Ki"}}}]});
        assert_eq!(
            violation(&usage(spec.clone(), &[("a", 2048), ("b", 2048)]), &[]),
            None
        );
        assert_eq!(
            violation(&usage(spec.clone(), &[("a", 3000), ("b", 100)]), &[]).unwrap(),
            "Container a exceeded its local ephemeral storage limit \"2Ki\". "
        );
        assert_eq!(
            violation(
                &usage(spec, &[("a", 2000), ("b", 2000)]),
                &[("tmp".into(), 500)]
            )
            .unwrap(),
            "Pod ephemeral local storage usage exceeds the total limit of containers 4Ki. "
        );
        let plain = usage(json!({"containers": [{"name": "c"}]}), &[("c", 1 << 40)]);
        assert!(!has_limits(&plain.pod));
        assert_eq!(violation(&plain, &[]), None);
    }
}
