//! ElasticQuotas as the plugin works with them: each namespace's `min` and `max`, what the
//! namespaces use, and the comparisons capacity scheduling makes (scheduler-plugins'
//! rules: a resource missing from `max` is unlimited, missing from `min` is zero).

use crate::framework::{PodInfo, Resources, resources};
use kyb_apimachinery::quantity::Quantity;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What a resource missing from `max` is limited to.
pub const UPPER_BOUND_OF_MAX: i64 = i64::MAX;
/// What a resource missing from `min` is guaranteed.
pub const LOWER_BOUND_OF_MIN: i64 = 0;

/// One namespace's ElasticQuota.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quota {
    pub namespace: String,
    pub name: String,
    /// Guaranteed: what the namespace may always use, and what others may borrow while it
    /// does not.
    pub min: Resources,
    /// The most the namespace may use (CPU, memory and ephemeral storage missing from the
    /// object are [`UPPER_BOUND_OF_MAX`]; other missing resources are unlimited too).
    pub max: Resources,
}

/// Every namespace's ElasticQuota (one per namespace: the first one listed).
#[derive(Debug, Default)]
pub struct Quotas {
    pub list: Vec<Quota>,
    index: HashMap<String, usize>,
    /// The sum of every quota's `min`.
    pub total_min: Resources,
}

/// A resource list (`spec.min`, `spec.max`) in the scheduler's units.
fn resource_list(value: &Value) -> Resources {
    let mut list = Resources::default();
    for (name, quantity) in value.as_object().into_iter().flatten() {
        let Ok(quantity) = Quantity::from_json(quantity) else {
            continue;
        };
        let amount = if name == resources::CPU {
            quantity.milli_value()
        } else {
            quantity.ceil_value()
        };
        let amount = i64::try_from(amount).unwrap_or(i64::MAX);
        match name.as_str() {
            resources::CPU => list.milli_cpu = amount,
            resources::MEMORY => list.memory = amount,
            resources::EPHEMERAL_STORAGE => list.ephemeral_storage = amount,
            resources::PODS => list.allowed_pods = amount,
            other => {
                list.scalar.insert(other.to_string(), amount);
            }
        }
    }
    list
}

impl Quota {
    /// An ElasticQuota object as the plugin reads it.
    pub fn from_object(object: &Value) -> Option<Quota> {
        let metadata = &object["metadata"];
        let namespace = metadata["namespace"].as_str()?.to_string();
        let name = metadata["name"].as_str().unwrap_or_default().to_string();
        let spec = &object["spec"];
        let min = resource_list(&spec["min"]);
        let mut max = resource_list(&spec["max"]);
        let given = |name: &str| spec["max"].get(name).is_some();
        if !given(resources::CPU) {
            max.milli_cpu = UPPER_BOUND_OF_MAX;
        }
        if !given(resources::MEMORY) {
            max.memory = UPPER_BOUND_OF_MAX;
        }
        if !given(resources::EPHEMERAL_STORAGE) {
            max.ephemeral_storage = UPPER_BOUND_OF_MAX;
        }
        Some(Quota {
            namespace,
            name,
            min,
            max,
        })
    }
}

impl Quotas {
    /// The quotas of the listed ElasticQuota objects.
    pub fn from_objects(objects: &[Arc<Value>]) -> Quotas {
        let mut quotas = Quotas::default();
        for quota in objects.iter().filter_map(|o| Quota::from_object(o)) {
            if quotas.index.contains_key(&quota.namespace) {
                continue;
            }
            quotas.total_min.add(&quota.min);
            quotas
                .index
                .insert(quota.namespace.clone(), quotas.list.len());
            quotas.list.push(quota);
        }
        quotas
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The position of a namespace's quota.
    pub fn index_of(&self, namespace: &str) -> Option<usize> {
        self.index.get(namespace).copied()
    }

    /// The namespaces with a quota, in order.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|q| q.namespace.as_str())
    }
}

/// Whether `x1 + x2` exceeds `y` in some resource: CPU, memory, ephemeral storage, and each
/// other resource of `x1` (limited to `bound` where `y` does not name it).
pub fn exceeds(x1: &Resources, x2: &Resources, y: &Resources, bound: i64) -> bool {
    x1.milli_cpu.saturating_add(x2.milli_cpu) > y.milli_cpu
        || x1.memory.saturating_add(x2.memory) > y.memory
        || x1.ephemeral_storage.saturating_add(x2.ephemeral_storage) > y.ephemeral_storage
        || x1.scalar.iter().any(|(name, amount)| {
            let other = x2.scalar.get(name).copied().unwrap_or(0);
            amount.saturating_add(other) > y.scalar.get(name).copied().unwrap_or(bound)
        })
}

/// Whether a pod has finished (it no longer uses its quota).
pub fn terminal(pod: &PodInfo) -> bool {
    matches!(
        pod.pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The quotas and their use as one scheduling cycle sees them (the plugin's CycleState),
/// with what PreFilter computed for the pod; preemption's what-ifs add and remove pods.
#[derive(Clone, Debug)]
pub struct QuotaState {
    pub quotas: Arc<Quotas>,
    /// What each quota's namespace uses (pods bound or assumed), by quota position.
    pub used: Vec<Resources>,
    /// The sum of `used`.
    pub total_used: Resources,
    /// Pods removed from, and added to, nodes by what-ifs (by key), so that each is
    /// counted once.
    removed: HashSet<String>,
    added: HashSet<String>,
    /// The pod's requests.
    pub pod_request: Resources,
    /// The pod's requests plus those of the pods nominated in its namespace that are at
    /// least as important.
    pub nominated_in_quota_with_pod: Resources,
    /// The above plus the requests of pods nominated in other namespaces whose use is
    /// within their `min`.
    pub nominated_with_pod: Resources,
    /// Whether PreFilter refused the pod on quota grounds.
    pub rejected: bool,
}

impl QuotaState {
    pub fn new(quotas: Arc<Quotas>, used: Vec<Resources>, pod_request: Resources) -> QuotaState {
        let mut total_used = Resources::default();
        for amount in &used {
            total_used.add(amount);
        }
        QuotaState {
            quotas,
            used,
            total_used,
            removed: HashSet::new(),
            added: HashSet::new(),
            nominated_in_quota_with_pod: pod_request.clone(),
            nominated_with_pod: pod_request.clone(),
            pod_request,
            rejected: false,
        }
    }

    /// Whether quota `index`'s use plus `request` is over its `max`.
    pub fn used_over_max_with(&self, index: usize, request: &Resources) -> bool {
        match (self.used.get(index), self.quotas.list.get(index)) {
            (Some(used), Some(quota)) => exceeds(request, used, &quota.max, UPPER_BOUND_OF_MAX),
            _ => false,
        }
    }

    /// Whether quota `index`'s use plus `request` is over its `min`.
    pub fn used_over_min_with(&self, index: usize, request: &Resources) -> bool {
        match (self.used.get(index), self.quotas.list.get(index)) {
            (Some(used), Some(quota)) => exceeds(request, used, &quota.min, LOWER_BOUND_OF_MIN),
            _ => true,
        }
    }

    /// Whether quota `index` uses more than its `min` (it borrows).
    pub fn used_over_min(&self, index: usize) -> bool {
        match (self.used.get(index), self.quotas.list.get(index)) {
            (Some(used), Some(quota)) => {
                exceeds(used, &Resources::default(), &quota.min, LOWER_BOUND_OF_MIN)
            }
            _ => true,
        }
    }

    /// Whether all quotas' use plus `request` is over the sum of their `min`.
    pub fn aggregated_used_over_min_with(&self, request: &Resources) -> bool {
        let mut used = self.total_used.clone();
        used.add(request);
        exceeds(
            &used,
            &Resources::default(),
            &self.quotas.total_min,
            LOWER_BOUND_OF_MIN,
        )
    }

    fn change(&mut self, pod: &PodInfo, add: bool) {
        let Some(index) = self.quotas.index_of(&pod.namespace) else {
            return;
        };
        let Some(used) = self.used.get_mut(index) else {
            return;
        };
        if add {
            used.add(&pod.requests);
            self.total_used.add(&pod.requests);
        } else {
            used.sub(&pod.requests);
            self.total_used.sub(&pod.requests);
        }
    }

    /// A pod placed on a node in a what-if: counted, unless it already is.
    pub fn add_pod(&mut self, pod: &PodInfo) {
        if self.quotas.index_of(&pod.namespace).is_none() || terminal(pod) {
            return;
        }
        if self.removed.remove(&pod.key) || self.added.insert(pod.key.clone()) {
            self.change(pod, true);
        }
    }

    /// A pod taken off its node in a what-if: no longer counted, unless it already is not.
    pub fn remove_pod(&mut self, pod: &PodInfo) {
        if self.quotas.index_of(&pod.namespace).is_none() || terminal(pod) {
            return;
        }
        if self.added.remove(&pod.key) || self.removed.insert(pod.key.clone()) {
            self.change(pod, false);
        }
    }
}
