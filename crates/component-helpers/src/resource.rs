//! A pod's effective requests (or limits), as Kubernetes' `PodRequests` / `PodLimits`
//! (`component-helpers/resource`): the regular containers and the restartable init
//! containers (sidecars) all run at once and add up; each ordinary init container runs
//! alone beside the sidecars started before it; the pod needs the larger of the two, plus
//! its overhead (`spec.overhead`; for limits only where a limit is set).
//!
//! The combination is written once, over any [`Amounts`]: the scheduler adds integer
//! amounts per resource, quota exact quantities. Callers say what one container amounts to
//! (its requests, the scheduler's non-zero defaults, the quota's resize state), through
//! the typed ([`pod_amounts`]) or the JSON ([`pod_amounts_json`]) entry point.

use k8s_openapi::api::core::v1::{Container, PodSpec};
use kyb_apimachinery::json;
use serde_json::Value;

/// Resource amounts that add up and compare resource by resource.
pub trait Amounts: Default + Clone {
    /// `self += other`, resource by resource.
    fn add(&mut self, other: &Self);
    /// Each resource of `self` raised to `other`'s where that is larger.
    fn max_with(&mut self, other: &Self);
}

/// The pod's amounts from its containers' (`containers`) and its init containers' in
/// order, each with whether it is a sidecar (`restartPolicy: Always`); overhead not added.
pub fn aggregate<T: Amounts>(
    containers: impl IntoIterator<Item = T>,
    init_containers: impl IntoIterator<Item = (T, bool)>,
) -> T {
    let mut total = T::default();
    for amounts in containers {
        total.add(&amounts);
    }
    let mut sidecars = T::default();
    let mut init_peak = T::default();
    for (amounts, sidecar) in init_containers {
        if sidecar {
            total.add(&amounts);
            sidecars.add(&amounts);
            init_peak.max_with(&sidecars);
        } else {
            let mut running = sidecars.clone();
            running.add(&amounts);
            init_peak.max_with(&running);
        }
    }
    total.max_with(&init_peak);
    total
}

/// Whether a container is a sidecar: an init container with `restartPolicy: Always`.
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// The amounts of a pod spec: `per_container` of each container and init container,
/// combined by [`aggregate`], plus `overhead` of `spec.overhead` when it has one.
pub fn pod_amounts<T: Amounts>(
    spec: &PodSpec,
    per_container: impl Fn(&Container) -> T,
    overhead: impl Fn(
        &std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    ) -> T,
) -> T {
    let mut total = aggregate(
        spec.containers.iter().map(&per_container),
        spec.init_containers
            .iter()
            .flatten()
            .map(|c| (per_container(c), is_sidecar(c))),
    );
    if let Some(list) = &spec.overhead {
        total.add(&overhead(list));
    }
    total
}

/// How a container of a pod runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerKind {
    /// One of `spec.containers`.
    Regular,
    /// An init container with `restartPolicy: Always`: it runs beside the others.
    Sidecar,
    /// An ordinary init container: it runs to completion before the next starts.
    Init,
}

/// The amounts of a pod in JSON form: `per_container(container, kind)` of each container
/// and init container, combined by [`aggregate`]. Overhead is the caller's (requests and
/// limits add it differently).
pub fn pod_amounts_json<T: Amounts>(
    pod: &Value,
    per_container: impl Fn(&Value, ContainerKind) -> T,
) -> T {
    aggregate(
        json::items(pod, &["spec", "containers"])
            .iter()
            .map(|c| per_container(c, ContainerKind::Regular)),
        json::items(pod, &["spec", "initContainers"])
            .iter()
            .map(|c| {
                if json::str_at(c, &["restartPolicy"]) == "Always" {
                    (per_container(c, ContainerKind::Sidecar), true)
                } else {
                    (per_container(c, ContainerKind::Init), false)
                }
            }),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// One resource, in milli-units.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct Milli(i64);

    impl Amounts for Milli {
        fn add(&mut self, other: &Self) {
            self.0 += other.0;
        }
        fn max_with(&mut self, other: &Self) {
            self.0 = self.0.max(other.0);
        }
    }

    fn cpu(requests: Option<&serde_json::Map<String, Value>>) -> Milli {
        Milli(
            requests
                .and_then(|r| r.get("cpu"))
                .and_then(|q| kyb_apimachinery::quantity::Quantity::from_json(q).ok())
                .map_or(0, |q| q.milli_value_i64()),
        )
    }

    fn both(pod: Value) -> (Milli, Milli) {
        let spec: PodSpec = serde_json::from_value(pod["spec"].clone()).unwrap();
        let typed = pod_amounts(
            &spec,
            |c| {
                let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
                let value = serde_json::to_value(requests).unwrap();
                cpu(value.as_object())
            },
            |list| cpu(serde_json::to_value(list).unwrap().as_object()),
        );
        let mut from_json = pod_amounts_json(&pod, |c, _| {
            cpu(json::map_at(c, &["resources", "requests"]))
        });
        from_json.add(&cpu(json::map_at(&pod, &["spec", "overhead"])));
        (typed, from_json)
    }

    #[test]
    fn containers_add_up_init_containers_peak_overhead_adds() {
        let (typed, from_json) = both(json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
            "overhead": {"cpu": "10m"},
        }}));
        assert_eq!(typed, Milli(1010));
        assert_eq!(from_json, typed);
    }

    #[test]
    fn sidecars_run_with_the_containers() {
        let (typed, from_json) = both(json!({"spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}],
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}},
                {"name": "setup", "resources": {"requests": {"cpu": "700m"}}},
            ],
        }}));
        // Regular + sidecar = 800m; setup runs beside the sidecar: 1000m.
        assert_eq!(typed, Milli(1000));
        assert_eq!(from_json, typed);
    }
}
