//! Choosing the node to preempt on among the candidates, by Kubernetes' criteria in
//! order: the fewest PodDisruptionBudget violations, the lowest highest-victim priority,
//! the smallest sum of victim priorities, the fewest victims, the latest start of the
//! highest-priority victims; then the first candidate.

use super::victims::{Victims, start_time};
use std::cmp::Reverse;

/// A node where preemption makes room, with what it costs.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub node: String,
    pub victims: Victims,
}

/// What the candidates are compared by, smallest best.
type Cost = (usize, i64, i64, usize, Reverse<i128>);

fn cost(candidate: &Candidate, now: i128) -> Cost {
    let pods = &candidate.victims.pods;
    // Victims are sorted most important first.
    let highest = pods.first().map_or(i32::MIN, |p| p.priority);
    // Each priority is shifted to be non-negative, so that a few negative-priority victims
    // do not beat fewer victims of the same priority.
    let sum: i64 = pods
        .iter()
        .map(|p| i64::from(p.priority) + i64::from(i32::MAX) + 1)
        .sum();
    // The earliest start among the victims of the highest priority: the later, the better.
    let earliest = pods
        .iter()
        .filter(|p| p.priority == highest)
        .map(|p| start_time(p, now))
        .min()
        .unwrap_or(i128::MIN);
    (
        candidate.victims.pdb_violations,
        i64::from(highest),
        sum,
        pods.len(),
        Reverse(earliest),
    )
}

/// The index of the best candidate (`None` when there are none); ties go to the first.
pub fn pick(candidates: &[Candidate], now: i128) -> Option<usize> {
    let mut best: Option<(usize, Cost)> = None;
    for (i, candidate) in candidates.iter().enumerate() {
        let cost = cost(candidate, now);
        if best.as_ref().is_none_or(|(_, b)| cost < *b) {
            best = Some((i, cost));
        }
    }
    best.map(|(i, _)| i)
}
