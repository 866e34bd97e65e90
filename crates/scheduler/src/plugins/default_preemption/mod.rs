//! DefaultPreemption (PostFilter): when no node fits a pod, finds a node where evicting
//! pods of lower priority makes room, as Kubernetes' default preemption does.
//!
//! - Eligibility: a pod with `preemptionPolicy: Never` does not preempt; nor does a pod
//!   nominated to a node where a lower-priority pod is already terminating because the
//!   scheduler preempted it (it waits for that room), unless Filter found the nominated
//!   node `UnschedulableAndUnresolvable`.
//! - Candidates: the nodes Filter found `Unschedulable` (not `UnschedulableAndUnresolvable`),
//!   searched from a random offset until enough are found (`minCandidateNodesPercentage`
//!   of them, at least `minCandidateNodesAbsolute`, and one not violating a
//!   PodDisruptionBudget). On each, on copies of the node and of the cycle state (kept in
//!   step through the PreFilter extensions): every lower-priority pod is removed, the pod
//!   must then pass Filter, and victims are put back, the most important first (those a
//!   budget protects before the others), as long as the pod still fits ([`victims`]).
//! - The node: the fewest budget violations, the lowest highest-victim priority, the
//!   smallest priority sum, the fewest victims, the latest start of the highest-priority
//!   victims, then the first ([`pick`]).
//!
//! The result names the node and the victims; the caller evicts them, nominates the pod
//! and clears the nominations of lower-priority pods on that node ([`prepare_candidate`]
//! does all three but the pod's own nomination, as Kubernetes does). When nothing helps,
//! the status says why, worded as Kubernetes words it
//! (`preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod,
//! 2 Preemption is not helpful for scheduling.`), with an empty nominated node: the pod's
//! nomination, if any, is to be cleared.

mod args;
mod pdb;
mod pick;
mod prepare;
#[cfg(test)]
mod tests;
mod victims;

pub use args::{ArgsError, DefaultPreemptionArgs};
pub use prepare::{
    DISRUPTION_TARGET, PREEMPTED_MESSAGE, PREEMPTION_BY_SCHEDULER, disruption_message,
    prepare_candidate,
};
pub use victims::NO_VICTIMS;

use crate::framework::{
    ClusterEvent, Code, CycleState, Handle, NodeInfo, NodeStatuses, Plugin, PodInfo,
    PostFilterContext, PostFilterPlugin, PostFilterResult, Status,
};
use pdb::Budgets;
use pick::Candidate;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use victims::Victims;

pub const NAME: &str = "DefaultPreemption";

/// The reason given for the nodes preemption was not tried on (Filter found them
/// unresolvable) or did not get to.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// Below this many nodes to check, the dry run stays on the calling thread.
const PARALLEL_THRESHOLD: usize = 16;

/// At most this many threads check nodes (Kubernetes' default parallelism).
const MAX_WORKERS: usize = 16;

/// The plugin.
pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
    handle: Arc<Handle>,
    /// Where the search starts among the potential nodes (tests fix it; otherwise random).
    fixed_offset: Option<usize>,
    /// How many threads may check nodes (tests vary it).
    workers: usize,
}

/// Builds the plugin from its `pluginConfig` args.
pub fn factory(args: &Value, handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(DefaultPreemption::new(
        DefaultPreemptionArgs::from_value(args).map_err(|e| e.to_string())?,
        handle.clone(),
    )))
}

/// A node checked in the dry run, by its place in the search.
type Checked = (usize, Result<Victims, Status>);

/// What the dry run found.
#[derive(Default)]
struct DryRun {
    /// Candidates not violating a disruption budget, in search order.
    non_violating: Vec<Candidate>,
    violating: Vec<Candidate>,
    /// The nodes checked that are no candidates, with why.
    statuses: Vec<(String, Status)>,
    errors: Vec<String>,
}

impl DryRun {
    /// Records a checked node; whether enough candidates are found.
    fn record(&mut self, node: &str, outcome: Result<Victims, Status>, wanted: usize) -> bool {
        match outcome {
            Ok(victims) if !victims.pods.is_empty() => {
                let list = if victims.pdb_violations == 0 {
                    &mut self.non_violating
                } else {
                    &mut self.violating
                };
                if list.len() < wanted {
                    list.push(Candidate {
                        node: node.to_string(),
                        victims,
                    });
                }
            }
            Ok(_) => {
                let message = format!("expected at least one victim pod on node {node:?}");
                self.errors.push(message.clone());
                self.statuses
                    .push((node.to_string(), Status::error(message)));
            }
            Err(status) => {
                if status.code() == Code::Error {
                    self.errors.push(status.message());
                }
                self.statuses.push((node.to_string(), status));
            }
        }
        enough(self.non_violating.len(), self.violating.len(), wanted)
    }
}

/// Kubernetes' stopping rule: at least one candidate without budget violations, and the
/// number wanted in all.
fn enough(non_violating: usize, violating: usize, wanted: usize) -> bool {
    non_violating > 0 && non_violating + violating >= wanted
}

/// Now, in nanoseconds since the epoch (the start time of pods not started yet).
fn now() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// A random number below `n` (`n` > 0), from the standard library's random hash keys.
fn random_below(n: usize) -> usize {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_usize(n);
    usize::try_from(hasher.finish() % u64::try_from(n).unwrap_or(u64::MAX)).unwrap_or(0)
}

/// Whether the scheduler's preemption is terminating this pod (deleted, with the
/// `DisruptionTarget` condition the scheduler sets on its victims).
fn terminating_by_preemption(pod: &PodInfo) -> bool {
    if !pod.terminating() {
        return false;
    }
    pod.pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == DISRUPTION_TARGET))
        .is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some(PREEMPTION_BY_SCHEDULER))
}

/// Kubernetes' unschedulable message: `0/N nodes are available: ` and how many nodes gave
/// each reason, sorted; nodes without a status count as "not helpful".
fn fit_error(num_nodes: usize, statuses: &[(String, Status)]) -> String {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (_, status) in statuses {
        for reason in status.reasons() {
            *counts.entry(reason.as_str()).or_default() += 1;
        }
    }
    if statuses.len() < num_nodes {
        *counts.entry(NOT_HELPFUL).or_default() += num_nodes - statuses.len();
    }
    let mut reasons: Vec<String> = counts
        .into_iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    reasons.sort();
    let mut message = format!("0/{num_nodes} nodes are available:");
    if !reasons.is_empty() {
        message.push(' ');
        message.push_str(&reasons.join(", "));
        message.push('.');
    }
    message
}

/// The plugin's status: its message prefixed with `preemption: `.
fn status(code: Code, message: &str) -> Status {
    Status::new(code, vec![format!("preemption: {message}")]).with_plugin(NAME)
}

impl DefaultPreemption {
    pub fn new(args: DefaultPreemptionArgs, handle: Arc<Handle>) -> DefaultPreemption {
        DefaultPreemption {
            args,
            handle,
            fixed_offset: None,
            workers: std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MAX_WORKERS),
        }
    }

    pub fn args(&self) -> &DefaultPreemptionArgs {
        &self.args
    }

    /// Why `pod` may not preempt (`None`: it may).
    fn ineligible(
        &self,
        pod: &PodInfo,
        statuses: &NodeStatuses,
        context: &PostFilterContext<'_>,
    ) -> Option<&'static str> {
        if pod.never_preempts() {
            return Some("not eligible due to preemptionPolicy=Never.");
        }
        let nominated = pod
            .pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .filter(|n| !n.is_empty())?;
        // A node Filter did not report on counts as unresolvable, as in Kubernetes.
        let unresolvable = statuses
            .get(nominated)
            .is_none_or(|s| s.code() == Code::UnschedulableAndUnresolvable);
        if unresolvable {
            return None;
        }
        let node = context.snapshot.get(nominated)?;
        node.pods
            .iter()
            .any(|p| p.priority < pod.priority && terminating_by_preemption(p))
            .then_some("not eligible due to a terminating pod on the nominated node.")
    }

    fn offset(&self, potential: usize) -> usize {
        self.fixed_offset
            .map_or_else(|| random_below(potential), |o| o % potential)
    }

    /// Checks the potential nodes from `offset` on, in parallel when there are many,
    /// until enough candidates are found. The outcome is the one checking them one by one
    /// would give.
    #[allow(clippy::too_many_arguments)]
    fn dry_run(
        &self,
        context: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        potential: &[&Arc<NodeInfo>],
        budgets: &Budgets,
        offset: usize,
        wanted: usize,
        now: i128,
    ) -> DryRun {
        let n = potential.len();
        let node_at = |i: usize| potential[(offset + i) % n];
        let check = |i: usize| {
            victims::select_victims(context.framework, state, pod, node_at(i), budgets, now)
        };
        let mut run = DryRun::default();
        let workers = self.workers.min(n);
        if n < PARALLEL_THRESHOLD || workers < 2 {
            for i in 0..n {
                if run.record(&node_at(i).name, check(i), wanted) {
                    break;
                }
            }
            return run;
        }
        // Workers take the nodes in search order, so the nodes checked when they stop are
        // a prefix of the order, holding every node the one-by-one search would check.
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let non_violating = AtomicUsize::new(0);
        let violating = AtomicUsize::new(0);
        let checked: Mutex<Vec<Checked>> = Mutex::new(Vec::with_capacity(n));
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    let mut mine: Vec<Checked> = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let outcome = check(i);
                        if let Ok(victims) = &outcome
                            && !victims.pods.is_empty()
                        {
                            let counter = if victims.pdb_violations == 0 {
                                &non_violating
                            } else {
                                &violating
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                            if enough(
                                non_violating.load(Ordering::Relaxed),
                                violating.load(Ordering::Relaxed),
                                wanted,
                            ) {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        mine.push((i, outcome));
                    }
                    if let Ok(mut checked) = checked.lock() {
                        checked.append(&mut mine);
                    }
                });
            }
        });
        let mut checked = checked.into_inner().unwrap_or_default();
        checked.sort_unstable_by_key(|(i, _)| *i);
        for (i, outcome) in checked {
            if run.record(&node_at(i).name, outcome, wanted) {
                break;
            }
        }
        run
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Preemption rejects no pod at Filter: the plugins that did say when to retry.
    fn events(&self) -> &'static [ClusterEvent] {
        &[]
    }

    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        context: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        statuses: &NodeStatuses,
    ) -> (Option<PostFilterResult>, Status) {
        // Not eligible: no result, so that a nomination stays as it is.
        if let Some(why) = self.ineligible(pod, statuses, context) {
            return (None, status(Code::Unschedulable, why));
        }
        let num_nodes = context.snapshot.len();
        if num_nodes == 0 {
            return (None, status(Code::Error, "no nodes available"));
        }
        let potential: Vec<&Arc<NodeInfo>> = context
            .snapshot
            .nodes
            .iter()
            .filter(|n| {
                statuses
                    .get(&n.name)
                    .is_some_and(|s| s.code() == Code::Unschedulable)
            })
            .collect();
        let now = now();
        let run = if potential.is_empty() {
            DryRun::default()
        } else {
            let budgets = Budgets::from_objects(
                &self.handle.lister.objects("policy", "poddisruptionbudgets"),
            );
            let offset = self.offset(potential.len());
            let wanted = self.args.num_candidates(potential.len());
            self.dry_run(
                context, state, pod, &potential, &budgets, offset, wanted, now,
            )
        };
        let DryRun {
            non_violating,
            violating,
            statuses: checked,
            errors,
        } = run;
        let mut candidates = non_violating;
        candidates.extend(violating);
        if candidates.is_empty() {
            if !errors.is_empty() {
                let message = if errors.len() == 1 {
                    errors.concat()
                } else {
                    format!("[{}]", errors.join(", "))
                };
                return (None, status(Code::Error, &message));
            }
            tracing::debug!(pod = %pod.key, "preemption is not helpful for scheduling");
            // An empty nominated node: the pod's nomination, if any, is cleared.
            return (
                Some(PostFilterResult::default()),
                status(Code::Unschedulable, &fit_error(num_nodes, &checked)),
            );
        }
        let Some(best) = pick::pick(&candidates, now) else {
            return (
                None,
                status(Code::Unschedulable, "no candidate node for preemption"),
            );
        };
        let chosen = candidates.swap_remove(best);
        tracing::debug!(
            pod = %pod.key,
            node = %chosen.node,
            victims = chosen.victims.pods.len(),
            "preemption candidate chosen"
        );
        (
            Some(PostFilterResult {
                nominated_node: chosen.node,
                victims: chosen.victims.pods,
            }),
            Status::success(),
        )
    }
}
