//! A quota's usage recalculated from objects handed over a few at a time, so counting a
//! namespace of thousands of pods never holds thousands of them as JSON at once.
//!
//! `kyb_quota::recalculate_at` sums, per evaluator, the usage of the matching objects on
//! top of a zero for every name the quota tracks. That sum is linear in the objects: the
//! usage over all of them is the zeros plus the usage over each part, whatever the parts.
//! So [`Usage`] starts from the zeros (a recalculation over no objects) and adds the
//! recalculation over each chunk of one resource's objects as it comes.

use jiff::Timestamp;
use kyb_quota::{GroupResource, ResourceList};
use serde_json::Value;

/// A recalculation in progress.
pub struct Usage<'q> {
    quota: &'q Value,
    now: Timestamp,
    used: ResourceList,
}

impl<'q> Usage<'q> {
    /// Nothing counted yet: zero for every name `quota` tracks.
    pub fn new(quota: &'q Value, now: Timestamp) -> Usage<'q> {
        let used = kyb_quota::recalculate_at(quota, |_, _| std::iter::empty::<&Value>(), now);
        Usage { quota, now, used }
    }

    /// Counts `objects`, some of the namespace's objects of `resource`.
    pub fn add(&mut self, resource: &GroupResource, objects: &[Value]) {
        if objects.is_empty() {
            return;
        }
        let part = kyb_quota::recalculate_at(
            self.quota,
            |group, name| {
                if group == resource.group && name == resource.resource {
                    objects
                } else {
                    &[]
                }
            },
            self.now,
        );
        self.used.add_assign(&part);
    }

    /// The usage counted.
    pub fn used(self) -> ResourceList {
        self.used
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(name: &str, cpu: &str, memory: &str, extra: Value) -> Value {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": "n"},
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": cpu, "memory": memory},
                "limits": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Running"},
        });
        if let (Some(pod), Some(extra)) = (pod.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                pod.insert(k.clone(), v.clone());
            }
        }
        pod
    }

    /// Counting in chunks of any size gives what one recalculation over everything
    /// gives, down to the quantities' formats.
    #[test]
    fn chunks_add_up_to_the_whole() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let pods = vec![
            pod("a", "0", "0", json!({})),
            pod("b", "250m", "64Mi", json!({})),
            pod("c", "1", "1G", json!({})),
            pod("d", "2", "128Mi", json!({"status": {"phase": "Succeeded"}})),
            pod("e", "100m", "1Gi", json!({})),
            pod("f", "0", "0", json!({})),
        ];
        let services = vec![
            json!({"metadata": {"name": "s1"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
            json!({"metadata": {"name": "s2"}, "spec": {"type": "ClusterIP"}}),
        ];
        let quotas = [
            json!({"metadata": {"name": "q", "namespace": "n"}, "spec": {"hard": {
                "pods": "10", "count/pods": "10", "requests.cpu": "10", "limits.memory": "10Gi",
                "memory": "10Gi", "services": "5", "services.nodeports": "5",
                "configmaps": "3"}}}),
            json!({"metadata": {"name": "q", "namespace": "n"}, "spec": {
                "hard": {"pods": "10", "requests.cpu": "10", "services": "5"},
                "scopes": ["NotTerminating"]}}),
        ];
        let pods_gr = GroupResource::new("", "pods");
        let services_gr = GroupResource::new("", "services");
        for quota in &quotas {
            let whole = kyb_quota::recalculate_at(
                quota,
                |_, resource| match resource {
                    "pods" => pods.as_slice(),
                    "services" => services.as_slice(),
                    _ => &[],
                },
                now,
            );
            for size in 1..=pods.len() {
                let mut usage = Usage::new(quota, now);
                for chunk in pods.chunks(size) {
                    usage.add(&pods_gr, chunk);
                }
                usage.add(&services_gr, &services);
                usage.add(&services_gr, &[]);
                let used = usage.used();
                assert!(
                    used.equals(&whole),
                    "chunks of {size}: {used:?} != {whole:?}"
                );
                assert_eq!(used.to_json(), whole.to_json(), "chunks of {size}");
                assert_eq!(
                    kyb_quota::status(quota, &used),
                    kyb_quota::status(quota, &whole)
                );
            }
        }
        // Nothing counted: zeros for the tracked names.
        let empty = Usage::new(&quotas[0], now).used();
        assert_eq!(
            empty.to_json(),
            kyb_quota::recalculate_at(&quotas[0], |_, _| Vec::<Value>::new(), now).to_json()
        );
        assert!(empty.contains("configmaps"));
    }
}
