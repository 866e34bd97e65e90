//! `Framework`: one profile's plugins, built from the registry, ordered per extension
//! point, and the code that runs each point over them as Kubernetes' framework runtime
//! does (PreFilter results intersected, Filter stopping at the first rejection, scores
//! normalized and weighted, Unreserve in reverse, Permit collecting waits, the first
//! binder that does not skip).

use super::cycle_state::CycleState;
use super::handle::Handle;
use super::node_info::NodeInfo;
use super::plugin::*;
use super::pod_info::PodInfo;
use super::registry::Registry;
use super::snapshot::Snapshot;
use super::status::{Code, Status};
use crate::config::{Point, ProfileConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A pod in the scheduling queue.
#[derive(Clone, Debug)]
pub struct QueuedPod {
    pub info: Arc<PodInfo>,
    /// When it (last) entered the queue.
    pub timestamp: std::time::Instant,
    /// Scheduling attempts so far.
    pub attempts: u32,
    /// When it was first queued.
    pub initial_attempt: std::time::Instant,
}

/// Plugins enabled at a point, with their score weights.
type Weighted = Vec<(Arc<dyn Plugin>, i64)>;

/// The longest a pod may wait at Permit.
const MAX_PERMIT_WAIT: Duration = Duration::from_secs(15 * 60);

/// One profile's plugins.
pub struct Framework {
    pub scheduler_name: String,
    pub percentage_of_nodes_to_score: Option<u32>,
    pub handle: Arc<Handle>,
    plugins: HashMap<String, Arc<dyn Plugin>>,
    pre_enqueue: Vec<Arc<dyn Plugin>>,
    queue_sort: Option<Arc<dyn Plugin>>,
    pre_filter: Vec<Arc<dyn Plugin>>,
    filter: Vec<Arc<dyn Plugin>>,
    post_filter: Vec<Arc<dyn Plugin>>,
    pre_score: Vec<Arc<dyn Plugin>>,
    score: Weighted,
    reserve: Vec<Arc<dyn Plugin>>,
    permit: Vec<Arc<dyn Plugin>>,
    pre_bind: Vec<Arc<dyn Plugin>>,
    bind: Vec<Arc<dyn Plugin>>,
    post_bind: Vec<Arc<dyn Plugin>>,
}

fn implements(plugin: &dyn Plugin, point: Point) -> bool {
    match point {
        Point::PreEnqueue => plugin.as_pre_enqueue().is_some(),
        Point::QueueSort => plugin.as_queue_sort().is_some(),
        Point::PreFilter => plugin.as_pre_filter().is_some(),
        Point::Filter => plugin.as_filter().is_some(),
        Point::PostFilter => plugin.as_post_filter().is_some(),
        Point::PreScore => plugin.as_pre_score().is_some(),
        Point::Score => plugin.as_score().is_some(),
        Point::Reserve => plugin.as_reserve().is_some(),
        Point::Permit => plugin.as_permit().is_some(),
        Point::PreBind => plugin.as_pre_bind().is_some(),
        Point::Bind => plugin.as_bind().is_some(),
        Point::PostBind => plugin.as_post_bind().is_some(),
    }
}

impl Framework {
    /// Builds a profile's plugins (each once, shared by the points it extends).
    pub fn new(
        profile: &ProfileConfig,
        registry: &Registry,
        handle: Arc<Handle>,
    ) -> Result<Framework, String> {
        let mut plugins: HashMap<String, Arc<dyn Plugin>> = HashMap::new();
        for name in profile.plugin_names() {
            let factory = registry.get(&name).ok_or_else(|| {
                format!(
                    "profile {:?}: plugin {name:?} is not registered",
                    profile.scheduler_name
                )
            })?;
            let args = profile.plugin_args.get(&name).cloned().unwrap_or_default();
            let plugin =
                factory(&args, &handle).map_err(|e| format!("building plugin {name:?}: {e}"))?;
            plugins.insert(name, plugin);
        }
        let list = |point: Point| -> Result<Weighted, String> {
            profile
                .enabled_at(point, |name| {
                    plugins
                        .get(name)
                        .is_some_and(|p| implements(p.as_ref(), point))
                })
                .into_iter()
                .map(|r| {
                    let plugin = plugins
                        .get(&r.name)
                        .cloned()
                        .ok_or_else(|| format!("plugin {:?} is not registered", r.name))?;
                    if !implements(plugin.as_ref(), point) {
                        return Err(format!(
                            "plugin {:?} does not extend {}",
                            r.name,
                            point.field()
                        ));
                    }
                    Ok((plugin, if r.weight == 0 { 1 } else { r.weight }))
                })
                .collect()
        };
        let plain = |point: Point| -> Result<Vec<Arc<dyn Plugin>>, String> {
            Ok(list(point)?.into_iter().map(|(p, _)| p).collect())
        };
        let mut queue_sort = plain(Point::QueueSort)?;
        if queue_sort.len() > 1 {
            return Err(format!(
                "profile {:?}: only one queueSort plugin may be enabled",
                profile.scheduler_name
            ));
        }
        let bind = plain(Point::Bind)?;
        if bind.is_empty() {
            return Err(format!(
                "profile {:?}: at least one bind plugin is needed",
                profile.scheduler_name
            ));
        }
        Ok(Framework {
            scheduler_name: profile.scheduler_name.clone(),
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            pre_enqueue: plain(Point::PreEnqueue)?,
            queue_sort: queue_sort.pop(),
            pre_filter: plain(Point::PreFilter)?,
            filter: plain(Point::Filter)?,
            post_filter: plain(Point::PostFilter)?,
            pre_score: plain(Point::PreScore)?,
            score: list(Point::Score)?,
            reserve: plain(Point::Reserve)?,
            permit: plain(Point::Permit)?,
            pre_bind: plain(Point::PreBind)?,
            bind,
            post_bind: plain(Point::PostBind)?,
            plugins,
            handle,
        })
    }

    /// A plugin of this profile by name.
    pub fn plugin(&self, name: &str) -> Option<&Arc<dyn Plugin>> {
        self.plugins.get(name)
    }

    /// The cluster events after which a pod rejected by `plugin` may fit.
    pub fn events_of(&self, plugin: &str) -> &'static [ClusterEvent] {
        self.plugins.get(plugin).map_or(ALL_EVENTS, |p| p.events())
    }

    pub fn has_filter_plugins(&self) -> bool {
        !self.filter.is_empty()
    }

    pub fn has_score_plugins(&self) -> bool {
        !self.score.is_empty()
    }

    /// PreEnqueue: success, or the first plugin's refusal.
    pub fn run_pre_enqueue(&self, pod: &PodInfo) -> Status {
        for plugin in &self.pre_enqueue {
            if let Some(p) = plugin.as_pre_enqueue() {
                let status = p.pre_enqueue(pod);
                if !status.is_success() {
                    return status.with_plugin(plugin.name());
                }
            }
        }
        Status::success()
    }

    /// QueueSort: whether `a` goes before `b` (by priority, then time, without a plugin).
    pub fn less(&self, a: &QueuedPod, b: &QueuedPod) -> bool {
        match self.queue_sort.as_ref().and_then(|p| p.as_queue_sort()) {
            Some(sort) => sort.less(a, b),
            None => {
                a.info.priority > b.info.priority
                    || (a.info.priority == b.info.priority && a.timestamp < b.timestamp)
            }
        }
    }

    /// PreFilter: the intersection of the plugins' node sets, or the first rejection.
    pub fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let mut merged: Option<PreFilterResult> = None;
        for plugin in &self.pre_filter {
            let Some(p) = plugin.as_pre_filter() else {
                continue;
            };
            let (result, status) = p.pre_filter(state, pod, snapshot);
            if status.is_skip() {
                state.skip_filter.insert(plugin.name());
                continue;
            }
            if !status.is_success() {
                // Unschedulable stays so: PostFilter may still make room (capacity
                // scheduling's quota reclaim, preemption for a gang).
                return (None, status.with_plugin(plugin.name()));
            }
            if let Some(result) = result {
                merged = Some(match merged {
                    Some(m) => m.merge(result),
                    None => result,
                });
                if merged
                    .as_ref()
                    .and_then(|m| m.node_names.as_ref())
                    .is_some_and(|n| n.is_empty())
                {
                    return (
                        merged,
                        Status::unresolvable(
                            "node(s) didn't satisfy plugin(s) [".to_string()
                                + plugin.name()
                                + "] simultaneously",
                        )
                        .with_plugin(plugin.name()),
                    );
                }
            }
        }
        (merged, Status::success())
    }

    /// PreFilter extensions: a pod added to a node in a what-if.
    pub fn run_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for plugin in &self.pre_filter {
            if state.skip_filter.contains(plugin.name()) {
                continue;
            }
            if let Some(ext) = plugin.as_pre_filter().and_then(|p| p.extensions()) {
                let status = ext.add_pod(state, pod, added, node);
                if !status.is_success() {
                    return status.with_plugin(plugin.name());
                }
            }
        }
        Status::success()
    }

    /// PreFilter extensions: a pod removed from a node in a what-if.
    pub fn run_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        for plugin in &self.pre_filter {
            if state.skip_filter.contains(plugin.name()) {
                continue;
            }
            if let Some(ext) = plugin.as_pre_filter().and_then(|p| p.extensions()) {
                let status = ext.remove_pod(state, pod, removed, node);
                if !status.is_success() {
                    return status.with_plugin(plugin.name());
                }
            }
        }
        Status::success()
    }

    /// Filter: success, or the first plugin's rejection (with the plugin named).
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for plugin in &self.filter {
            if state.skip_filter.contains(plugin.name()) {
                continue;
            }
            if let Some(p) = plugin.as_filter() {
                let status = p.filter(state, pod, node);
                if !status.is_success() {
                    return status.with_plugin(plugin.name());
                }
            }
        }
        Status::success()
    }

    /// PostFilter: the first plugin that finds room, or the plugins' combined refusal with
    /// the last result a refusing plugin gave (an empty nominated node there clears a
    /// stale nomination); an error or unresolvable refusal ends it.
    pub fn run_post_filter(
        &self,
        context: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        statuses: &NodeStatuses,
    ) -> (Option<PostFilterResult>, Status) {
        let mut reasons = Vec::new();
        let mut last = None;
        let mut rejector = None;
        for plugin in &self.post_filter {
            let Some(p) = plugin.as_post_filter() else {
                continue;
            };
            let (result, status) = p.post_filter(context, state, pod, statuses);
            if status.is_success() {
                return (result, status);
            }
            // As in Kubernetes, an unresolvable refusal ends PostFilter too: the plugin is
            // sure nothing can be done (capacity scheduling's preemption, which the default
            // preemption must not second-guess).
            match status.code() {
                Code::UnschedulableAndUnresolvable => {
                    return (result, status.with_plugin(plugin.name()));
                }
                Code::Error => return (None, status.with_plugin(plugin.name())),
                _ => {}
            }
            if result.is_some() {
                last = result;
            }
            rejector.get_or_insert(plugin.name());
            reasons.extend(status.reasons().iter().cloned());
        }
        let status = Status::new(Code::Unschedulable, reasons);
        match rejector {
            Some(name) => (last, status.with_plugin(name)),
            None => (last, status),
        }
    }

    /// PreScore over the nodes that fit.
    pub fn run_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        for plugin in &self.pre_score {
            let Some(p) = plugin.as_pre_score() else {
                continue;
            };
            let status = p.pre_score(state, pod, nodes);
            if status.is_skip() {
                state.skip_score.insert(plugin.name());
            } else if !status.is_success() {
                return status.with_plugin(plugin.name());
            }
        }
        Status::success()
    }

    /// Score: each plugin's scores for every node, normalized and weighted, summed per
    /// node (in the order of `nodes`).
    pub fn run_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Result<Vec<i64>, Status> {
        let mut totals = vec![0i64; nodes.len()];
        // One buffer for every plugin's scores.
        let mut scores: Vec<NodeScore<'_>> = Vec::with_capacity(nodes.len());
        for (plugin, weight) in &self.score {
            if state.skip_score.contains(plugin.name()) {
                continue;
            }
            let Some(p) = plugin.as_score() else { continue };
            scores.clear();
            for node in nodes {
                let (score, status) = p.score(state, pod, node);
                if !status.is_success() {
                    return Err(status.with_plugin(plugin.name()));
                }
                scores.push(NodeScore {
                    name: &node.name,
                    score,
                });
            }
            let status = p.normalize(state, pod, &mut scores);
            if !status.is_success() {
                return Err(status.with_plugin(plugin.name()));
            }
            for (total, score) in totals.iter_mut().zip(&scores) {
                if !(0..=MAX_NODE_SCORE).contains(&score.score) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {}, it should be in the range of [0, {MAX_NODE_SCORE}] after normalizing",
                        plugin.name(),
                        score.score
                    )));
                }
                *total += score.score * weight;
            }
        }
        Ok(totals)
    }

    /// Reserve; on a failure, the plugins reserved so far are unreserved.
    pub fn run_reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        for plugin in &self.reserve {
            if let Some(p) = plugin.as_reserve() {
                let status = p.reserve(state, pod, node);
                if !status.is_success() {
                    return status.with_plugin(plugin.name());
                }
            }
        }
        Status::success()
    }

    /// Unreserve, in reverse order.
    pub fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for plugin in self.reserve.iter().rev() {
            if let Some(p) = plugin.as_reserve() {
                p.unreserve(state, pod, node);
            }
        }
    }

    /// Permit: a rejection, success, or `Wait` (the pod registered as waiting, on behalf of
    /// the plugins that asked, each with its timeout).
    pub fn run_permit(&self, state: &mut CycleState, pod: &Arc<PodInfo>, node: &str) -> Status {
        let mut waits = HashMap::new();
        for plugin in &self.permit {
            let Some(p) = plugin.as_permit() else {
                continue;
            };
            let (status, timeout) = p.permit(state, pod, node);
            match status.code() {
                Code::Success | Code::Skip => {}
                Code::Wait => {
                    let timeout = timeout.min(MAX_PERMIT_WAIT);
                    waits.insert(plugin.name(), tokio::time::Instant::now() + timeout);
                }
                _ => return status.with_plugin(plugin.name()),
            }
        }
        if waits.is_empty() {
            return Status::success();
        }
        self.handle.waiting_pods.add(pod.clone(), node, waits);
        Status::wait()
    }

    pub async fn run_pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for plugin in &self.pre_bind {
            if let Some(p) = plugin.as_pre_bind() {
                let status = p.pre_bind(state, pod, node).await;
                if !status.is_success() {
                    return status.with_plugin(plugin.name());
                }
            }
        }
        Status::success()
    }

    /// Bind: the first binder that does not skip.
    pub async fn run_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        for plugin in &self.bind {
            if let Some(p) = plugin.as_bind() {
                let status = p.bind(state, pod, node).await;
                if status.is_skip() {
                    continue;
                }
                return status.with_plugin(plugin.name());
            }
        }
        Status::error("no bind plugin bound the pod")
    }

    pub async fn run_post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) {
        for plugin in &self.post_bind {
            if let Some(p) = plugin.as_post_bind() {
                p.post_bind(state, pod, node).await;
            }
        }
    }
}
