//! The extension points: one trait each, with the meaning they have in Kubernetes'
//! scheduling framework. A plugin is a type implementing [`Plugin`] and the traits of the
//! points it extends, announcing each through the matching `as_…` method; it is registered
//! by name ([`super::Registry`]) and enabled per profile. Nothing in the framework changes
//! to add one.
//!
//! The points, in the order a pod meets them: PreEnqueue (may it enter the active queue?),
//! QueueSort (its place there), PreFilter, Filter (per node: may it run there?), PostFilter
//! (nothing fits: make room — preemption), PreScore, Score (per node, then normalized and
//! weighted), Reserve/Unreserve (claim or release what was chosen), Permit (approve,
//! reject, or wait), PreBind, Bind, PostBind (the binding cycle, off the scheduling loop).

use super::cycle_state::CycleState;
use super::node_info::NodeInfo;
use super::pod_info::PodInfo;
use super::snapshot::Snapshot;
use super::status::Status;
use super::{Framework, QueuedPod};
use async_trait::async_trait;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// The highest score a Score plugin gives (after normalization).
pub const MAX_NODE_SCORE: i64 = 100;

/// A cluster change after which a pod rejected by a plugin may fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterEvent {
    NodeAdd,
    /// A node's labels, taints, allocatable or schedulability changed.
    NodeUpdate,
    NodeDelete,
    /// A scheduled pod was added (pod affinity may now be satisfied).
    PodAdd,
    /// A scheduled pod changed (its labels, its requests).
    PodUpdate,
    /// A pod went away, freeing room.
    PodDelete,
    /// Something else a plugin watches changed (a PodGroup, an ElasticQuota).
    Other,
}

/// Every event: what a plugin that does not say otherwise waits for.
pub const ALL_EVENTS: &[ClusterEvent] = &[
    ClusterEvent::NodeAdd,
    ClusterEvent::NodeUpdate,
    ClusterEvent::NodeDelete,
    ClusterEvent::PodAdd,
    ClusterEvent::PodUpdate,
    ClusterEvent::PodDelete,
    ClusterEvent::Other,
];

/// A plugin. Each `as_…` method returns the plugin as that extension point's trait if it
/// implements it.
pub trait Plugin: Send + Sync + 'static {
    fn name(&self) -> &'static str;

    /// The events after which a pod this plugin rejected is worth trying again.
    fn events(&self) -> &'static [ClusterEvent] {
        ALL_EVENTS
    }

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        None
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        None
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        None
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        None
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        None
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        None
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        None
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        None
    }
    fn as_post_bind(&self) -> Option<&dyn PostBindPlugin> {
        None
    }
}

/// Whether a pod may enter the active queue at all (a gang not yet complete, …).
pub trait PreEnqueuePlugin: Plugin {
    /// Success, or `Pending` with why.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status;
}

/// The order of the active queue (exactly one per profile).
pub trait QueueSortPlugin: Plugin {
    fn less(&self, a: &QueuedPod, b: &QueuedPod) -> bool;
}

/// What PreFilter may narrow the search to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    /// Only these nodes can fit (`None`: all).
    pub node_names: Option<BTreeSet<String>>,
}

impl PreFilterResult {
    /// The intersection of two results.
    pub fn merge(self, other: PreFilterResult) -> PreFilterResult {
        match (self.node_names, other.node_names) {
            (None, other) => PreFilterResult { node_names: other },
            (mine, None) => PreFilterResult { node_names: mine },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(&b).cloned().collect()),
            },
        }
    }
}

/// Work once per cycle before Filter: precompute what every node's Filter needs.
pub trait PreFilterPlugin: Plugin {
    /// `Skip` skips this plugin's Filter for the pod; a rejection ends the cycle (the pod is
    /// unschedulable on every node).
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// Incremental updates of this plugin's cycle state when preemption evaluates a node
    /// with pods added or removed.
    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        None
    }
}

/// How a PreFilter plugin's cycle state changes when a pod is added to or removed from a
/// node (preemption's what-ifs, nominated pods).
pub trait PreFilterExtensions: Send + Sync {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status;
}

/// May the pod run on this node?
pub trait FilterPlugin: Plugin {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
}

/// The Filter outcome of every node that did not fit.
pub type NodeStatuses = HashMap<String, Status>;

/// What PostFilter (preemption) decided: the node the pod is nominated to, and the pods to
/// evict to make room there.
#[derive(Clone, Debug, Default)]
pub struct PostFilterResult {
    pub nominated_node: String,
    pub victims: Vec<Arc<PodInfo>>,
}

/// What a PostFilter plugin may consult.
pub struct PostFilterContext<'a> {
    /// The profile, to run its Filter (and PreFilter extensions) on what-if nodes.
    pub framework: &'a Framework,
    pub snapshot: &'a Snapshot,
}

/// Runs when no node fits: may find room (preemption).
pub trait PostFilterPlugin: Plugin {
    fn post_filter(
        &self,
        context: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        statuses: &NodeStatuses,
    ) -> (Option<PostFilterResult>, Status);
}

/// Work once per cycle before Score, over the nodes that fit.
pub trait PreScorePlugin: Plugin {
    /// `Skip` skips this plugin's Score for the pod.
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Status;
}

/// A node's score from one plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeScore<'a> {
    pub name: &'a str,
    pub score: i64,
}

/// How well the pod suits a node, from 0 to [`MAX_NODE_SCORE`] after normalization.
pub trait ScorePlugin: Plugin {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status);

    /// Rescales the raw scores of every node to 0..=100 (the default: leave them).
    fn normalize(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _scores: &mut [NodeScore<'_>],
    ) -> Status {
        Status::success()
    }
}

/// Claims (and on failure releases) what a plugin tracks for the chosen node.
pub trait ReservePlugin: Plugin {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}

/// Approves, rejects, or holds (`Wait`, up to the returned duration) the pod before it is
/// bound. Held pods are released through [`super::WaitingPods`].
pub trait PermitPlugin: Plugin {
    fn permit(&self, state: &mut CycleState, pod: &Arc<PodInfo>, node: &str) -> (Status, Duration);
}

/// Work before binding (volumes, …), in the binding cycle.
#[async_trait]
pub trait PreBindPlugin: Plugin {
    async fn pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status;
}

/// Binds the pod to the node. The first binder not answering `Skip` does it.
#[async_trait]
pub trait BindPlugin: Plugin {
    async fn bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status;
}

/// Told after a successful bind.
#[async_trait]
pub trait PostBindPlugin: Plugin {
    async fn post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str);
}
