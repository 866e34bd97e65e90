//! The soft (`ScheduleAnyway`) side, scored as Kubernetes does: a node's raw score is, over
//! the constraints whose key it has, `matching pods in its domain × ln(domains + 2) +
//! (maxSkew − 1)` (the hostname key counts the node's own pods and its domains are the
//! nodes scored), rounded; scores are then reversed and normalized to 0..100
//! (`100 × (max + min − score) / max`, 100 for all when the maximum is 0). With constraints
//! from the pod, or non-system defaults, nodes missing any key are not scored and get 0.
//!
//! The matching pods per domain are counted over all nodes in PreFilter (the same pass as
//! the hard constraints), so PreScore only sizes the domains among the nodes that fit.

use super::constraints::Constraint;
use super::counting::{self, ConstraintColumns, Domains, FastMap, FastSet, NodeValue};
use super::node_table::EMPTY_VALUE;
use crate::framework::{MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo};
use std::sync::Arc;

/// A raw score marking a node that is not scored (normalized to 0).
pub const IGNORED: i64 = -1;

/// The soft constraints and their matching pods per domain over every node.
#[derive(Debug, Default)]
pub struct SoftCounts {
    pub constraints: Vec<Constraint>,
    /// Nodes without every key are not scored (constraints from the pod, or `List`
    /// defaults); with system defaults a node without a zone is still spread by hostname.
    pub require_all_keys: bool,
    /// Per constraint (empty for hostname constraints, counted per node).
    pub domains: Vec<Domains>,
    /// Per constraint: the node table's columns it reads.
    pub columns: Vec<ConstraintColumns>,
    /// Node name → slot in the columns.
    pub names: Arc<FastMap<String, u32>>,
}

impl SoftCounts {
    /// The node's value of each constraint's key.
    fn values<'s, 'n: 's>(
        &'s self,
        node: &'n NodeInfo,
    ) -> impl Iterator<Item = NodeValue<'n>> + 's {
        let slot = self.names.get(node.name.as_str()).map(|&s| s as usize);
        self.constraints
            .iter()
            .zip(&self.columns)
            .map(move |(c, columns)| {
                counting::node_value(slot, node, &c.topology_key, &columns.key)
            })
    }
}

/// PreScore's state for Score.
#[derive(Clone, Debug)]
pub struct ScoreState {
    pub counts: Arc<SoftCounts>,
    /// `ln(domains among the nodes scored + 2)` per constraint.
    pub weights: Arc<[f64]>,
}

impl ScoreState {
    /// Sizes each constraint's domains among the nodes being scored.
    pub fn new(counts: Arc<SoftCounts>, nodes: &[Arc<NodeInfo>]) -> ScoreState {
        let constraints = &counts.constraints;
        let mut distinct: Vec<FastSet<NodeValue<'_>>> = vec![FastSet::default(); constraints.len()];
        let mut ignored = 0usize;
        for node in nodes {
            if counts.require_all_keys && counts.values(node).any(|v| v == NodeValue::Missing) {
                ignored += 1;
                continue;
            }
            for ((constraint, value), distinct) in constraints
                .iter()
                .zip(counts.values(node))
                .zip(&mut distinct)
            {
                if !constraint.is_hostname() {
                    // A node without the key is in the domain "".
                    distinct.insert(match value {
                        NodeValue::Missing => NodeValue::Id(EMPTY_VALUE),
                        value => value,
                    });
                }
            }
        }
        let weights = constraints
            .iter()
            .zip(&distinct)
            .map(|(constraint, distinct)| {
                let size = if constraint.is_hostname() {
                    nodes.len() - ignored
                } else {
                    distinct.len()
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        ScoreState { counts, weights }
    }

    /// The raw score of a node (lower is better; [`IGNORED`] for nodes not scored).
    pub fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let counts = &self.counts;
        if counts.require_all_keys && counts.values(node).any(|v| v == NodeValue::Missing) {
            return IGNORED;
        }
        let slot = counts.names.get(node.name.as_str()).map(|&s| s as usize);
        let mut score = 0.0;
        for ((((constraint, value), domains), columns), weight) in counts
            .constraints
            .iter()
            .zip(counts.values(node))
            .zip(&counts.domains)
            .zip(&counts.columns)
            .zip(self.weights.iter())
        {
            if value == NodeValue::Missing {
                continue;
            }
            let matching = if constraint.is_hostname() {
                match slot.and_then(|s| columns.count.data.get(s)) {
                    Some(&count) => i64::from(count),
                    None => counting::matching_pods(node, &constraint.selector, &pod.namespace),
                }
            } else {
                domains.count_of(value)
            };
            score += matching as f64 * weight + f64::from(constraint.max_skew - 1);
        }
        score.round() as i64
    }
}

/// Reverses and scales the raw scores to 0..100 (nodes not scored get 0).
pub fn normalize(scores: &mut [NodeScore<'_>]) {
    let mut min = i64::MAX;
    let mut max = 0;
    for score in scores.iter().filter(|s| s.score != IGNORED) {
        min = min.min(score.score);
        max = max.max(score.score);
    }
    for score in scores.iter_mut() {
        score.score = if score.score == IGNORED {
            0
        } else if max == 0 {
            MAX_NODE_SCORE
        } else {
            MAX_NODE_SCORE * (max + min - score.score) / max
        };
    }
}
