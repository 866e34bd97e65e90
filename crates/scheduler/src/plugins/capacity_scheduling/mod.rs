//! CapacityScheduling: elastic quotas per namespace (`ElasticQuota`,
//! `scheduling.x-k8s.io/v1alpha1`, `spec.min` and `spec.max`), with the semantics of the
//! community scheduler-plugins project's plugin of the same name.
//!
//! A namespace with an ElasticQuota is guaranteed its `min` and may use up to its `max`,
//! borrowing what other namespaces leave unused of their `min`: the sum of what all quota'd
//! namespaces use stays within the sum of their `min`. Namespaces without an ElasticQuota
//! are not constrained (and cost nothing: every point returns at once while no quota
//! exists).
//!
//! What a namespace uses is the requests of its pods bound or assumed on nodes (read from
//! the cycle's snapshot, kept per node and recounted only for nodes that changed), plus the
//! pods this plugin reserved that the snapshot does not show yet.
//!
//! Points:
//! - **PreFilter** (with **PreFilterExtensions**, so preemption's what-ifs count correctly):
//!   refuses a pod whose namespace's use plus its request (and the requests of pods
//!   nominated before it) would exceed the namespace's `max`, or would bring the total use
//!   over the sum of `min`.
//! - **Reserve/Unreserve**: count (uncount) the pod in its namespace's use.
//! - **PostFilter**: preemption that reclaims borrowed capacity (scheduler-plugins' rules):
//!   a pod of a namespace within its `min` preempts pods of namespaces over their `min`; a
//!   pod of a namespace over its `min` preempts only lower-priority pods of its own
//!   namespace; a pod of a namespace without quota preempts only lower-priority pods of
//!   such namespaces. The node is chosen as Kubernetes' default preemption chooses it.
//!   While no ElasticQuota exists it does nothing, leaving preemption to DefaultPreemption;
//!   otherwise its refusals are final.

mod preemption;
mod quota;

pub use quota::{Quota, QuotaState, Quotas};

use crate::framework::{
    ClusterEvent, CycleState, Handle, NodeInfo, NodeStatuses, Plugin, PodInfo, PostFilterContext,
    PostFilterPlugin, PostFilterResult, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
    ReservePlugin, Resources, Snapshot, Status,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The plugin's name (also its CycleState key).
pub const NAME: &str = "CapacityScheduling";
/// The API group of `ElasticQuota`.
pub const GROUP: &str = "scheduling.x-k8s.io";
/// The resource of `ElasticQuota`.
pub const ELASTIC_QUOTAS: &str = "elasticquotas";

/// How long a reservation is counted at most without the snapshot showing the pod (the
/// longest Permit wait, plus time to bind).
const RESERVATION_TTL: Duration = Duration::from_secs(16 * 60);

/// Builds the plugin (it takes no args).
pub fn factory(args: &Value, handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    if let Some(fields) = args.as_object() {
        if let Some(field) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "apiVersion" | "kind"))
        {
            return Err(format!("strict decoding error: unknown field {field:?}"));
        }
    } else if !args.is_null() {
        return Err(format!(
            "want args to be of type CapacitySchedulingArgs, got {args}"
        ));
    }
    Ok(Arc::new(CapacityScheduling::new(handle.clone())))
}

/// The parsed quotas, kept while the lister hands out the same objects.
#[derive(Default)]
struct QuotaCache {
    objects: Vec<Arc<Value>>,
    quotas: Arc<Quotas>,
}

/// What a node's pods use, per quota (by position).
type NodeUsage = Vec<(usize, Resources)>;

/// What each quota'd namespace uses on each node, recounted only for nodes that changed.
#[derive(Default)]
struct UsageCache {
    /// The quota'd namespaces the counts are for (a change recounts everything).
    namespaces: Vec<String>,
    /// Per snapshot position: the node as last counted, and its use per quota.
    nodes: Vec<(Arc<NodeInfo>, NodeUsage)>,
    /// Per quota: the sum over nodes.
    totals: Vec<Resources>,
}

/// What a node's pods use, per quota.
fn node_usage(node: &NodeInfo, quotas: &Quotas) -> NodeUsage {
    let mut usage = NodeUsage::new();
    for pod in &node.pods {
        if quota::terminal(pod) {
            continue;
        }
        let Some(index) = quotas.index_of(&pod.namespace) else {
            continue;
        };
        match usage.iter_mut().find(|(i, _)| *i == index) {
            Some((_, amount)) => amount.add(&pod.requests),
            None => usage.push((index, pod.requests.clone())),
        }
    }
    usage
}

impl UsageCache {
    fn update(&mut self, snapshot: &Snapshot, quotas: &Quotas) {
        if !self
            .namespaces
            .iter()
            .map(String::as_str)
            .eq(quotas.namespaces())
        {
            self.namespaces = quotas.namespaces().map(str::to_string).collect();
            self.nodes.clear();
            self.totals = vec![Resources::default(); quotas.list.len()];
        }
        for (position, node) in snapshot.nodes.iter().enumerate() {
            if self
                .nodes
                .get(position)
                .is_some_and(|(counted, _)| Arc::ptr_eq(counted, node))
            {
                continue;
            }
            let usage = node_usage(node, quotas);
            for (index, amount) in &usage {
                if let Some(total) = self.totals.get_mut(*index) {
                    total.add(amount);
                }
            }
            let old = match self.nodes.get_mut(position) {
                Some(entry) => std::mem::replace(entry, (node.clone(), usage)).1,
                None => {
                    self.nodes.push((node.clone(), usage));
                    Vec::new()
                }
            };
            for (index, amount) in &old {
                if let Some(total) = self.totals.get_mut(*index) {
                    total.sub(amount);
                }
            }
        }
        if self.nodes.len() > snapshot.nodes.len() {
            for (_, old) in self.nodes.drain(snapshot.nodes.len()..) {
                for (index, amount) in &old {
                    if let Some(total) = self.totals.get_mut(*index) {
                        total.sub(amount);
                    }
                }
            }
        }
    }
}

/// A pod this plugin reserved room for.
#[derive(Clone, Debug)]
struct Reservation {
    namespace: String,
    node: String,
    requests: Resources,
    at: Instant,
}

/// The CapacityScheduling plugin.
pub struct CapacityScheduling {
    handle: Arc<Handle>,
    quotas: Mutex<QuotaCache>,
    usage: Mutex<UsageCache>,
    /// Reserved pods by key, until the snapshot shows them (assumed or bound).
    reserved: Mutex<HashMap<String, Reservation>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl CapacityScheduling {
    pub fn new(handle: Arc<Handle>) -> CapacityScheduling {
        CapacityScheduling {
            handle,
            quotas: Mutex::new(QuotaCache::default()),
            usage: Mutex::new(UsageCache::default()),
            reserved: Mutex::new(HashMap::new()),
        }
    }

    /// The ElasticQuotas the informer holds (parsed again only when they change).
    pub fn quotas(&self) -> Arc<Quotas> {
        let objects = self.handle.lister.objects(GROUP, ELASTIC_QUOTAS);
        let mut cache = lock(&self.quotas);
        let same = cache.objects.len() == objects.len()
            && cache
                .objects
                .iter()
                .zip(&objects)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if !same {
            cache.quotas = Arc::new(Quotas::from_objects(&objects));
            cache.objects = objects;
        }
        cache.quotas.clone()
    }

    /// What each quota'd namespace uses: its pods on the snapshot's nodes, and those
    /// reserved that the snapshot does not show yet (`scheduling`: the pod being scheduled,
    /// whose stale reservation is dropped).
    fn current_usage(
        &self,
        snapshot: &Snapshot,
        quotas: &Quotas,
        scheduling: Option<&str>,
    ) -> Vec<Resources> {
        let mut used = {
            let mut cache = lock(&self.usage);
            cache.update(snapshot, quotas);
            cache.totals.clone()
        };
        let mut reserved = lock(&self.reserved);
        reserved.retain(|key, reservation| {
            if Some(key.as_str()) == scheduling || reservation.at.elapsed() > RESERVATION_TTL {
                return false;
            }
            let shown = snapshot
                .get(&reservation.node)
                .is_some_and(|n| n.pods.iter().any(|p| &p.key == key));
            if shown {
                return false;
            }
            if let Some(amount) = quotas
                .index_of(&reservation.namespace)
                .and_then(|i| used.get_mut(i))
            {
                amount.add(&reservation.requests);
            }
            true
        });
        used
    }

    /// Adds the pods nominated to nodes (not yet bound) that go before `pod`.
    fn count_nominated(&self, state: &mut QuotaState, pod: &PodInfo, snapshot: &Snapshot) {
        for other in self.handle.lister.pods().iter() {
            if other.uid == pod.uid || other.node_name().is_some() {
                continue;
            }
            let nominated = other
                .pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                .filter(|n| !n.is_empty());
            let Some(nominated) = nominated else {
                continue;
            };
            if snapshot.get(nominated).is_none() {
                continue;
            }
            let Some(index) = state.quotas.index_of(&other.namespace) else {
                continue;
            };
            if other.namespace == pod.namespace {
                if other.priority >= pod.priority {
                    state.nominated_in_quota_with_pod.add(&other.requests);
                    state.nominated_with_pod.add(&other.requests);
                }
            } else if !state.used_over_min(index) {
                state.nominated_with_pod.add(&other.requests);
            }
        }
    }
}

impl Plugin for CapacityScheduling {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A pod deleted (its quota freed), or an ElasticQuota changed.
    fn events(&self) -> &'static [ClusterEvent] {
        &[ClusterEvent::PodDelete, ClusterEvent::Other]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }

    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for CapacityScheduling {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let quotas = self.quotas();
        let Some(index) = quotas.index_of(&pod.namespace) else {
            return (None, Status::skip());
        };
        let used = self.current_usage(snapshot, &quotas, Some(&pod.key));
        let mut quota_state = QuotaState::new(quotas.clone(), used, pod.requests.clone());
        self.count_nominated(&mut quota_state, pod, snapshot);
        let over_max =
            quota_state.used_over_max_with(index, &quota_state.nominated_in_quota_with_pod);
        let over_min =
            !over_max && quota_state.aggregated_used_over_min_with(&quota_state.nominated_with_pod);
        quota_state.rejected = over_max || over_min;
        state.write(NAME, quota_state);
        if over_max {
            let quota = quotas.list.get(index).map_or("", |q| q.namespace.as_str());
            return (
                None,
                Status::unschedulable(format!(
                    "Pod {}/{} is rejected in PreFilter because ElasticQuota {quota} is more than Max",
                    pod.namespace, pod.name
                )),
            );
        }
        if over_min {
            return (
                None,
                Status::unschedulable(format!(
                    "Pod {}/{} is rejected in PreFilter because total ElasticQuota used is more than min",
                    pod.namespace, pod.name
                )),
            );
        }
        (None, Status::success())
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for CapacityScheduling {
    fn add_pod(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        added: &Arc<PodInfo>,
        _node: &NodeInfo,
    ) -> Status {
        if let Some(quota_state) = state.read_mut::<QuotaState>(NAME) {
            quota_state.add_pod(added);
        }
        Status::success()
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        removed: &Arc<PodInfo>,
        _node: &NodeInfo,
    ) -> Status {
        if let Some(quota_state) = state.read_mut::<QuotaState>(NAME) {
            quota_state.remove_pod(removed);
        }
        Status::success()
    }
}

impl ReservePlugin for CapacityScheduling {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let quota_named = state.read::<QuotaState>(NAME).is_some()
            || self.quotas().index_of(&pod.namespace).is_some();
        if quota_named {
            lock(&self.reserved).insert(
                pod.key.clone(),
                Reservation {
                    namespace: pod.namespace.clone(),
                    node: node.to_string(),
                    requests: pod.requests.clone(),
                    at: Instant::now(),
                },
            );
        }
        Status::success()
    }

    fn unreserve(&self, _state: &mut CycleState, pod: &PodInfo, _node: &str) {
        lock(&self.reserved).remove(&pod.key);
    }
}

impl PostFilterPlugin for CapacityScheduling {
    fn post_filter(
        &self,
        context: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        statuses: &NodeStatuses,
    ) -> (Option<PostFilterResult>, Status) {
        let quotas = self.quotas();
        if quotas.is_empty() {
            // No quotas: preemption as usual, by DefaultPreemption.
            return (None, Status::skip());
        }
        let mut state = state.clone();
        if state.read::<QuotaState>(NAME).is_none() {
            let used = self.current_usage(context.snapshot, &quotas, Some(&pod.key));
            state.write(NAME, QuotaState::new(quotas, used, pod.requests.clone()));
        }
        let pdbs = preemption::Pdb::list(self.handle.lister.as_ref());
        preemption::preempt(context, &state, pod, statuses, &pdbs)
    }
}

#[cfg(test)]
mod tests;
