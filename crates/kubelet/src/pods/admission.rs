//! Admission of a pod onto this node, kubelet's resource check in `canAdmitPod`: a pod the
//! node cannot hold beside the pods it runs already (its pods, CPU or memory requests past
//! the node's allocatable) is rejected, `Failed` with reason `OutOfpods`/`OutOfcpu`/
//! `OutOfmemory`, and never started. The scheduler normally keeps this from happening; a
//! pod bound by hand (`spec.nodeName`), or one that raced the scheduler, is what it catches.

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kyb_apimachinery::quantity::Quantity;
use kyb_component_helpers::resource::{Amounts, pod_amounts};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// A pod's requests as admission counts them: the effective requests of its containers
/// (init containers and sidecars as the scheduler combines them) plus its overhead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    pub milli_cpu: i64,
    pub memory: i64,
}

impl Amounts for Requests {
    fn add(&mut self, other: &Self) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
    }

    fn max_with(&mut self, other: &Self) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
    }
}

fn of_list(list: Option<&BTreeMap<String, ApiQuantity>>) -> Requests {
    let get = |name: &str| {
        list.and_then(|l| l.get(name))
            .and_then(|q| Quantity::parse(&q.0).ok())
    };
    Requests {
        milli_cpu: get("cpu").map_or(0, |q| q.milli_value_i64()),
        memory: get("memory").map_or(0, |q| q.value()),
    }
}

/// The pod's requests.
pub fn requests(pod: &Pod) -> Requests {
    let Some(spec) = pod.spec.as_ref() else {
        return Requests::default();
    };
    pod_amounts(
        spec,
        |c: &Container| of_list(c.resources.as_ref().and_then(|r| r.requests.as_ref())),
        |overhead| of_list(Some(overhead)),
    )
}

/// Why a pod was refused: the status reason and kubelet's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
}

/// The pods admitted and still active on this node, by UID, with their requests.
#[derive(Default)]
pub struct Admitted(Mutex<HashMap<String, Requests>>);

impl Admitted {
    /// Admits the pod `uid` if it fits beside the others within `allocatable`, and
    /// counts it from then on; a pod admitted before is admitted again as it is.
    pub fn admit(
        &self,
        uid: &str,
        pod: &Pod,
        allocatable: &crate::node::resources::ResourceList,
    ) -> Result<(), Rejection> {
        let mut admitted = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = requests(pod);
        if admitted.contains_key(uid) {
            admitted.insert(uid.to_string(), wanted);
            return Ok(());
        }
        let mut used = Requests::default();
        for other in admitted.values() {
            used.add(other);
        }
        let capacity = |name: &str| allocatable.get(name);
        let pods = admitted.len() as i64;
        let checks = [
            ("pods", 1, pods, capacity("pods").map(|q| q.value())),
            (
                "cpu",
                wanted.milli_cpu,
                used.milli_cpu,
                capacity("cpu").map(|q| q.milli_value_i64()),
            ),
            (
                "memory",
                wanted.memory,
                used.memory,
                capacity("memory").map(|q| q.value()),
            ),
        ];
        for (name, requested, used, capacity) in checks {
            let Some(capacity) = capacity else { continue };
            if requested > 0 && requested.saturating_add(used) > capacity {
                return Err(Rejection {
                    reason: format!("OutOf{name}"),
                    message: format!(
                        "Node didn't have enough resource: {name}, requested: {requested}, used: {used}, capacity: {capacity}"
                    ),
                });
            }
        }
        admitted.insert(uid.to_string(), wanted);
        Ok(())
    }

    /// Marks the pod `uid` as admitted without a check (one that ran before this agent).
    pub fn register(&self, uid: &str, pod: &Pod) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uid.to_string(), requests(pod));
    }

    /// Stops counting the pod `uid` (it finished or is gone).
    pub fn forget(&self, uid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(cpu: &str, memory: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
        }))
        .unwrap()
    }

    fn allocatable(cpu: &str, memory: &str, pods: &str) -> crate::node::resources::ResourceList {
        [("cpu", cpu), ("memory", memory), ("pods", pods)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn requests_count_init_containers_as_the_scheduler_does() {
        let mut with_init = pod("500m", "1Gi");
        with_init.spec.as_mut().unwrap().init_containers = Some(vec![
            serde_json::from_value(json!({"name": "i", "resources": {"requests": {"cpu": "3"}}}))
                .unwrap(),
        ]);
        assert_eq!(
            requests(&with_init),
            Requests {
                milli_cpu: 3000,
                memory: 1 << 30
            }
        );
    }

    #[test]
    fn pods_past_the_allocatable_are_rejected_with_kubelets_words() {
        let admitted = Admitted::default();
        let node = allocatable("4", "2Gi", "2");
        admitted.admit("a", &pod("3", "1Gi"), &node).unwrap();
        let rejected = admitted.admit("b", &pod("5", "1Mi"), &node).unwrap_err();
        assert_eq!(rejected.reason, "OutOfcpu");
        assert_eq!(
            rejected.message,
            "Node didn't have enough resource: cpu, requested: 5000, used: 3000, capacity: 4000"
        );
        let rejected = admitted
            .admit("b", &pod("100m", "1536Mi"), &node)
            .unwrap_err();
        assert_eq!(rejected.reason, "OutOfmemory");
        admitted.admit("b", &pod("100m", "512Mi"), &node).unwrap();
        let rejected = admitted.admit("c", &pod("0", "0"), &node).unwrap_err();
        assert_eq!(
            rejected.message,
            "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
        );
        admitted.forget("a");
        admitted.admit("c", &pod("0", "0"), &node).unwrap();
    }
}
