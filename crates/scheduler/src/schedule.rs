//! One scheduling decision (kube-scheduler's `schedulePod`): PreFilter, then Filter over the
//! nodes — starting where the last cycle stopped, and only until enough feasible nodes are
//! found (`percentageOfNodesToScore`); the first thousand on this thread, the rest, if
//! needed, in parallel — then PreScore and Score over the
//! feasible nodes and the best one (ties broken at random). Pods nominated to a node by
//! preemption keep their room there: a node is filtered with the higher-priority nominated
//! pods added. When nothing fits, the [`FitError`] says why, node by node, as
//! `kubectl describe pod` shows it.

use crate::framework::{
    Code, CycleState, Framework, NodeInfo, NodeStatuses, PodInfo, Snapshot, Status,
};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Fewer nodes than this are all evaluated.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage's floor.
const MIN_FEASIBLE_NODES_PERCENTAGE: usize = 5;
/// The first candidates are filtered on the calling thread: in most clusters most nodes
/// fit, enough are found among them, and handing work to other threads would cost more
/// (thread wake-ups, on cores the API server also needs) than it saves. When they are not
/// enough, the rest are filtered in parallel.
const SEQUENTIAL_CANDIDATES: usize = 1024;
/// The least work handed to another thread at once.
const PARALLEL_CHUNK: usize = 64;

/// How many feasible nodes to look for among `all` (Kubernetes' rule: everything for small
/// clusters; else `percentage`%, or adaptively 50% minus 1% per 125 nodes, at least 5%;
/// never fewer than 100).
pub fn feasible_nodes_to_find(percentage: u32, all: usize) -> usize {
    if all < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return all;
    }
    let percentage = if percentage == 0 {
        50usize
            .saturating_sub(all / 125)
            .max(MIN_FEASIBLE_NODES_PERCENTAGE)
    } else {
        percentage as usize
    };
    (all * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Why a pod fits no node.
#[derive(Clone, Debug, Default)]
pub struct FitError {
    pub nodes: usize,
    /// Each rejected node's status.
    pub statuses: NodeStatuses,
    /// A PreFilter rejection, which applies to every node.
    pub pre_filter: Option<Status>,
}

impl FitError {
    /// Kubernetes' message: `0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had
    /// untolerated taint {key: value}.`, then what preemption found.
    pub fn message(&self, post_filter: Option<&str>) -> String {
        let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
        match &self.pre_filter {
            Some(status) => {
                for reason in status.reasons() {
                    *histogram.entry(reason).or_default() += self.nodes;
                }
            }
            None => {
                for status in self.statuses.values() {
                    for reason in status.reasons() {
                        *histogram.entry(reason).or_default() += 1;
                    }
                }
            }
        }
        let mut reasons: Vec<String> = histogram
            .into_iter()
            .map(|(reason, count)| format!("{count} {reason}"))
            .collect();
        reasons.sort();
        let mut message = format!("0/{} nodes are available", self.nodes);
        if reasons.is_empty() {
            message.push('.');
        } else {
            message.push_str(": ");
            message.push_str(&reasons.join(", "));
            message.push('.');
        }
        if let Some(post) = post_filter.filter(|p| !p.is_empty()) {
            message.push(' ');
            message.push_str(post);
        }
        message
    }

    /// The plugins that rejected the pod somewhere (their events may make it fit).
    pub fn plugins(&self) -> std::collections::HashSet<&'static str> {
        self.pre_filter
            .iter()
            .chain(self.statuses.values())
            .filter_map(Status::plugin)
            .collect()
    }
}

/// A decision.
#[derive(Clone, Debug)]
pub struct Decision {
    pub node: String,
    pub evaluated: usize,
    pub feasible: usize,
}

/// What a decision may fail with.
pub enum Failure {
    /// The pod fits nowhere.
    Unfit(FitError),
    /// A plugin erred.
    Error(Status),
}

/// Filters one node, with the pods nominated there (of at least the pod's priority) taken
/// into account first.
fn filter_node(
    framework: &Framework,
    state: &CycleState,
    pod: &PodInfo,
    node: &Arc<NodeInfo>,
    nominated: &(dyn Fn(&str) -> Vec<Arc<PodInfo>> + Sync),
) -> Status {
    let others: Vec<Arc<PodInfo>> = nominated(&node.name)
        .into_iter()
        .filter(|p| p.uid != pod.uid && p.priority >= pod.priority)
        .collect();
    if !others.is_empty() {
        let mut with = NodeInfo::clone(node);
        let mut state = state.clone();
        for other in &others {
            with.add_pod(other.clone());
            let status = framework.run_add_pod(&mut state, pod, other, &with);
            if !status.is_success() {
                return status;
            }
        }
        let status = framework.run_filter(&state, pod, &with);
        if !status.is_success() {
            return status;
        }
    }
    framework.run_filter(state, pod, node)
}

/// Decides where `pod` goes. `start` is where the last search stopped (updated);
/// `nominated` gives the pods nominated to a node.
pub fn schedule(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    percentage: u32,
    start: &AtomicUsize,
    nominated: &(dyn Fn(&str) -> Vec<Arc<PodInfo>> + Sync),
) -> Result<Decision, Failure> {
    let all = snapshot.len();
    if all == 0 {
        return Err(Failure::Unfit(FitError {
            nodes: 0,
            ..FitError::default()
        }));
    }
    let (narrowed, status) = framework.run_pre_filter(state, pod, snapshot);
    if !status.is_success() {
        return match status.code() {
            Code::Error => Err(Failure::Error(status)),
            _ => Err(Failure::Unfit(FitError {
                nodes: all,
                statuses: NodeStatuses::new(),
                pre_filter: Some(status),
            })),
        };
    }
    // The candidates, in search order: the PreFilter's narrowing, or every node starting
    // where the last search stopped (by position, without a list).
    let narrowed: Option<Vec<&Arc<NodeInfo>>> = narrowed
        .and_then(|r| r.node_names)
        .map(|names| names.iter().filter_map(|n| snapshot.get(n)).collect());
    let offset = start.load(Ordering::Relaxed) % all;
    let count = narrowed.as_ref().map_or(all, Vec::len);
    let candidate = |i: usize| -> Option<&Arc<NodeInfo>> {
        match &narrowed {
            Some(list) => list.get(i).copied(),
            None => {
                let j = offset + i;
                snapshot.nodes.get(if j >= all { j - all } else { j })
            }
        }
    };
    let wanted = feasible_nodes_to_find(percentage, count);
    let found = AtomicUsize::new(0);
    let evaluated = AtomicUsize::new(0);
    let state_ref: &CycleState = state;
    let check = |i: usize| -> Option<(usize, Status)> {
        if found.load(Ordering::Relaxed) >= wanted {
            return None;
        }
        let node = candidate(i)?;
        evaluated.fetch_add(1, Ordering::Relaxed);
        let status = if framework.has_filter_plugins() {
            filter_node(framework, state_ref, pod, node, nominated)
        } else {
            Status::success()
        };
        if status.is_success() {
            found.fetch_add(1, Ordering::Relaxed);
        }
        Some((i, status))
    };
    let first = count.min(SEQUENTIAL_CANDIDATES);
    let mut results: Vec<(usize, Status)> = (0..first).filter_map(check).collect();
    if first < count && found.load(Ordering::Relaxed) < wanted {
        let rest: Vec<(usize, Status)> = (first..count)
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .filter_map(check)
            .collect();
        results.extend(rest);
    }
    results.sort_by_key(|(i, _)| *i);
    let evaluated = evaluated.load(Ordering::Relaxed);
    start.store(
        (start.load(Ordering::Relaxed) + evaluated) % all,
        Ordering::Relaxed,
    );
    let mut feasible: Vec<Arc<NodeInfo>> = Vec::new();
    let mut statuses = NodeStatuses::new();
    for (i, status) in results {
        let Some(node) = candidate(i) else {
            continue;
        };
        if status.is_success() {
            if feasible.len() < wanted {
                feasible.push(Arc::clone(node));
            }
        } else if status.code() == Code::Error {
            return Err(Failure::Error(status));
        } else {
            statuses.insert(node.name.clone(), status);
        }
    }
    if feasible.is_empty() {
        // Nodes outside a PreFilter's narrowing count as rejected by it.
        return Err(Failure::Unfit(FitError {
            nodes: all,
            statuses,
            pre_filter: None,
        }));
    }
    let count = feasible.len();
    if count == 1 || !framework.has_score_plugins() {
        let node = feasible.swap_remove(0);
        return Ok(Decision {
            node: node.name.clone(),
            evaluated,
            feasible: count,
        });
    }
    let status = framework.run_pre_score(state, pod, &feasible);
    if !status.is_success() {
        return Err(Failure::Error(status));
    }
    let totals = framework
        .run_score(state, pod, &feasible)
        .map_err(Failure::Error)?;
    // The best score; among equals, each is as likely (reservoir sampling).
    let mut best = 0usize;
    let mut best_score = i64::MIN;
    let mut ties = 0u64;
    for (i, score) in totals.iter().enumerate() {
        if *score > best_score {
            best = i;
            best_score = *score;
            ties = 1;
        } else if *score == best_score {
            ties += 1;
            if fastrand::u64(..ties) == 0 {
                best = i;
            }
        }
    }
    Ok(Decision {
        node: feasible
            .get(best)
            .map(|n| n.name.clone())
            .unwrap_or_default(),
        evaluated,
        feasible: count,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing;
    use serde_json::json;

    /// A cluster of `count` nodes, of which those in `fit` have room for a 2-CPU pod.
    fn cluster(count: usize, fit: impl Fn(usize) -> bool) -> Snapshot {
        Snapshot::new(
            (0..count)
                .map(|i| {
                    let cpu = if fit(i) { "4" } else { "1" };
                    Arc::new(testing::node(
                        json!({"metadata": {"name": format!("n{i}"),
                            "labels": {"kubernetes.io/hostname": format!("n{i}")}},
                            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}),
                        &[],
                    ))
                })
                .collect(),
        )
    }

    fn decide(snapshot: &Snapshot, start: &AtomicUsize) -> Result<Decision, Failure> {
        let profile = crate::config::ProfileConfig::default_named("default-scheduler");
        let registry = crate::plugins::registry();
        let framework = Framework::new(&profile, &registry, testing::handle()).unwrap();
        let pod = testing::pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}));
        let mut state = CycleState::new();
        schedule(&framework, &mut state, &pod, snapshot, 0, start, &|_| {
            Vec::new()
        })
    }

    #[test]
    fn large_clusters_stop_at_enough_feasible_nodes() {
        // Everything fits: 5,000 nodes, 500 looked at, from where the last search stopped.
        let snapshot = cluster(5000, |_| true);
        let start = AtomicUsize::new(4900);
        let Ok(decision) = decide(&snapshot, &start) else {
            panic!("no decision")
        };
        assert_eq!((decision.evaluated, decision.feasible), (500, 500));
        assert_eq!(start.load(Ordering::Relaxed), 400);
        let chosen: usize = decision.node[1..].parse().unwrap();
        assert!(!(400..4900).contains(&chosen), "{}", decision.node);
    }

    #[test]
    fn scarce_room_is_searched_for_in_parallel_past_the_first_nodes() {
        // Only the last 20 of 3,000 nodes fit: the search goes past the first thousand
        // (in parallel) and finds them all, and every other node says why it was left.
        let snapshot = cluster(3000, |i| i >= 2980);
        let start = AtomicUsize::new(0);
        let Ok(decision) = decide(&snapshot, &start) else {
            panic!("no decision")
        };
        assert_eq!((decision.evaluated, decision.feasible), (3000, 20));
        let chosen: usize = decision.node[1..].parse().unwrap();
        assert!(chosen >= 2980, "{}", decision.node);
        // Nothing fits: the reasons are counted over every node.
        let snapshot = cluster(3000, |_| false);
        match decide(&snapshot, &start) {
            Err(Failure::Unfit(fit)) => assert_eq!(
                fit.message(None),
                "0/3000 nodes are available: 3000 Insufficient cpu."
            ),
            _ => panic!("a pod that fits nowhere was placed"),
        }
    }

    #[test]
    fn how_many_nodes_to_look_at() {
        assert_eq!(feasible_nodes_to_find(0, 50), 50);
        assert_eq!(feasible_nodes_to_find(0, 1000), 420);
        assert_eq!(feasible_nodes_to_find(0, 5000), 500);
        assert_eq!(feasible_nodes_to_find(0, 100_000), 5000);
        assert_eq!(feasible_nodes_to_find(30, 1000), 300);
        assert_eq!(feasible_nodes_to_find(1, 1000), 100);
        assert_eq!(feasible_nodes_to_find(100, 1000), 1000);
    }

    #[test]
    fn messages_count_reasons_per_node() {
        let mut statuses = NodeStatuses::new();
        statuses.insert("a".into(), Status::unschedulable("Insufficient cpu"));
        statuses.insert("b".into(), Status::unschedulable("Insufficient cpu"));
        statuses.insert(
            "c".into(),
            Status::new(
                Code::UnschedulableAndUnresolvable,
                vec!["node(s) had untolerated taint {role: db}".into()],
            ),
        );
        let error = FitError {
            nodes: 3,
            statuses,
            pre_filter: None,
        };
        assert_eq!(
            error.message(Some("preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")),
            "0/3 nodes are available: 1 node(s) had untolerated taint {role: db}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        );
    }
}
