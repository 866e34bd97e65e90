//! A pod's effective requests and limits, as Kubernetes computes them
//! (`k8s.io/component-helpers/resource.PodRequests` / `PodLimits`): the sum of the regular
//! containers and restartable init containers (sidecars), raised to the largest
//! "init container plus the sidecars started before it", plus the pod overhead; and the
//! pod's QoS class as far as the `BestEffort` quota scope needs it.
//!
//! Two callers, two variants: LimitRanger reads the spec only and ignores overhead (its
//! own `podRequests` helper), the quota evaluator also takes in-place resizes in progress
//! into account (`status.containerStatuses[].resources` and `allocatedResources`,
//! InPlacePodVerticalScaling being on by default in 1.33) and adds the overhead.
//! Pod-level `spec.resources` (the PodLevelResources gate, alpha and off in 1.33) is ignored.

use std::collections::HashMap;

use serde_json::Value;

use crate::resource_list::ResourceList;
use kyb_apimachinery::json::{at, items, opt_str};
use kyb_component_helpers::resource::{self, Amounts, ContainerKind};

/// Which half of `resources` to aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Requests,
    Limits,
}

impl Which {
    fn key(self) -> &'static str {
        match self {
            Which::Requests => "requests",
            Which::Limits => "limits",
        }
    }
}

/// What the aggregation includes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Take resize state from the container statuses into account.
    pub use_status: bool,
    /// Add `spec.overhead`.
    pub overhead: bool,
}

/// LimitRanger's view: the spec only, no overhead.
pub(crate) const SPEC_ONLY: Options = Options {
    use_status: false,
    overhead: false,
};

/// The quota evaluator's view.
pub(crate) const FOR_QUOTA: Options = Options {
    use_status: true,
    overhead: true,
};

/// A container's own requests or limits.
pub(crate) fn container_list(container: &Value, which: Which) -> ResourceList {
    ResourceList::from_opt(at(container, &["resources", which.key()]))
}

/// Whether the `PodResizePending` condition says the resize is infeasible.
fn resize_infeasible(pod: &Value) -> bool {
    items(pod, &["status", "conditions"])
        .iter()
        .find(|c| opt_str(c, &["type"]) == Some("PodResizePending"))
        .is_some_and(|c| opt_str(c, &["reason"]) == Some("Infeasible"))
}

impl Amounts for ResourceList {
    fn add(&mut self, other: &Self) {
        self.add_assign(other);
    }

    fn max_with(&mut self, other: &Self) {
        self.max_assign(other);
    }
}

/// `max(a, b...)`: `a` raised entry by entry to each of `rest`.
fn max_of(a: ResourceList, rest: &[ResourceList]) -> ResourceList {
    let mut out = a;
    for r in rest {
        out.max_assign(r);
    }
    out
}

/// The list of one container, with resize state from its status when asked for.
fn effective(
    container: &Value,
    which: Which,
    statuses: &HashMap<&str, &Value>,
    infeasible: bool,
) -> ResourceList {
    let own = container_list(container, which);
    let name = opt_str(container, &["name"]).unwrap_or_default();
    let Some(status) = statuses.get(name) else {
        return own;
    };
    let Some(actual) = at(status, &["resources"]) else {
        return own;
    };
    let actual = ResourceList::from_opt(at(actual, &[which.key()]));
    match which {
        Which::Requests => {
            let allocated = ResourceList::from_opt(at(status, &["allocatedResources"]));
            if infeasible {
                max_of(actual, &[allocated])
            } else {
                max_of(own, &[actual, allocated])
            }
        }
        Which::Limits => {
            if infeasible {
                actual
            } else {
                max_of(own, &[actual])
            }
        }
    }
}

/// The pod's aggregate requests or limits.
pub(crate) fn pod_total(pod: &Value, which: Which, opts: Options) -> ResourceList {
    let mut statuses: HashMap<&str, &Value> = HashMap::new();
    let mut infeasible = false;
    if opts.use_status {
        for key in ["containerStatuses", "initContainerStatuses"] {
            for s in items(pod, &["status", key]) {
                statuses.insert(opt_str(s, &["name"]).unwrap_or_default(), s);
            }
        }
        infeasible = resize_infeasible(pod);
    }
    let no_statuses = HashMap::new();
    let mut total = resource::pod_amounts_json(pod, |c, kind| {
        // Resize state applies to containers and sidecars, not to ordinary init containers.
        let statuses = if kind == ContainerKind::Init {
            &no_statuses
        } else {
            &statuses
        };
        effective(c, which, statuses, infeasible)
    });
    if opts.overhead {
        let overhead = ResourceList::from_opt(at(pod, &["spec", "overhead"]));
        match which {
            Which::Requests => total.add_assign(&overhead),
            Which::Limits => {
                for (name, q) in overhead.iter() {
                    if total.get(name).is_some_and(|v| !v.is_zero()) {
                        total.add_one(name, q);
                    }
                }
            }
        }
    }
    total
}

/// Whether the pod's QoS class is `BestEffort` (`qos.GetPodQOS`).
pub(crate) fn is_best_effort(pod: &Value) -> bool {
    kyb_component_helpers::qos::pod_qos_json(pod) == "BestEffort"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(name: &str, req: Value, lim: Value) -> Value {
        json!({"name": name, "resources": {"requests": req, "limits": lim}})
    }

    #[test]
    fn init_containers_raise_the_sum_and_overhead_is_added() {
        let pod = json!({"spec": {
            "containers": [c("a", json!({"cpu": "100m", "memory": "64Mi"}), json!({"cpu": "200m"})),
                           c("b", json!({"cpu": "200m"}), json!({}))],
            "initContainers": [c("i", json!({"cpu": "500m", "memory": "32Mi"}), json!({"cpu": "1"}))],
            "overhead": {"cpu": "10m", "memory": "1Mi"}
        }});
        let req = pod_total(&pod, Which::Requests, FOR_QUOTA);
        assert_eq!(req.pretty(), "cpu=510m,memory=65Mi");
        let lim = pod_total(&pod, Which::Limits, FOR_QUOTA);
        assert_eq!(lim.pretty(), "cpu=1010m");
        let spec_only = pod_total(&pod, Which::Requests, SPEC_ONLY);
        assert_eq!(spec_only.pretty(), "cpu=500m,memory=64Mi");
    }

    #[test]
    fn sidecars_add_to_the_sum_and_to_later_init_containers() {
        let mut side = c("s", json!({"cpu": "100m"}), json!({}));
        side["restartPolicy"] = json!("Always");
        let pod = json!({"spec": {
            "containers": [c("a", json!({"cpu": "300m"}), json!({}))],
            "initContainers": [side, c("i", json!({"cpu": "450m"}), json!({}))]
        }});
        // max(300m + 100m, 450m + 100m)
        assert_eq!(
            pod_total(&pod, Which::Requests, SPEC_ONLY).pretty(),
            "cpu=550m"
        );
    }

    #[test]
    fn resize_in_progress_counts_the_larger_side() {
        let pod = json!({
            "spec": {"containers": [c("a", json!({"cpu": "1"}), json!({"cpu": "1"}))]},
            "status": {"containerStatuses": [{"name": "a",
                "allocatedResources": {"cpu": "2"},
                "resources": {"requests": {"cpu": "1500m"}, "limits": {"cpu": "3"}}}]}
        });
        assert_eq!(
            pod_total(&pod, Which::Requests, FOR_QUOTA).pretty(),
            "cpu=2"
        );
        assert_eq!(pod_total(&pod, Which::Limits, FOR_QUOTA).pretty(), "cpu=3");
        let mut infeasible = pod.clone();
        infeasible["status"]["conditions"] =
            json!([{"type": "PodResizePending", "reason": "Infeasible"}]);
        infeasible["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("8");
        assert_eq!(
            pod_total(&infeasible, Which::Requests, FOR_QUOTA).pretty(),
            "cpu=2"
        );
    }

    #[test]
    fn best_effort() {
        assert!(is_best_effort(
            &json!({"spec": {"containers": [{"name": "a"}]}})
        ));
        assert!(is_best_effort(&json!({"spec": {"containers": [
            c("a", json!({"cpu": "0", "nvidia.com/gpu": "1"}), json!({}))]}})));
        assert!(!is_best_effort(&json!({"spec": {"initContainers": [
            c("a", json!({}), json!({"memory": "1Mi"}))]}})));
        assert!(!is_best_effort(
            &json!({"spec": {}, "status": {"qosClass": "Burstable"}})
        ));
    }
}
