//! The hard (`DoNotSchedule`) side: what PreFilter leaves for Filter — the constraints and
//! the matching pods per domain over the eligible nodes, with each constraint's global
//! minimum — the Filter check (`matching pods in the node's domain + 1 if the pod matches
//! itself − global minimum ≤ maxSkew`, the minimum taken as 0 while there are fewer eligible
//! domains than `minDomains`), and the incremental updates of preemption's what-ifs.

use super::constraints::Constraint;
use super::counting::{self, Domains};
use super::node_inclusion::NodeInclusion;
use crate::framework::{NodeInfo, PodInfo, Status};
use std::sync::Arc;

/// Why a node breaks a constraint (Unschedulable: removing pods may help).
pub const REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// Why a node lacking a topology key cannot take the pod (UnschedulableAndUnresolvable).
pub const REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// PreFilter's state for Filter (cloned for preemption's what-ifs: the counts are copied,
/// the rest shared).
#[derive(Clone, Debug)]
pub struct FilterState {
    pub constraints: Arc<[Constraint]>,
    /// Per constraint.
    pub domains: Vec<Domains>,
    pub inclusion: Arc<NodeInclusion>,
}

impl FilterState {
    /// The global minimum of constraint `i`.
    fn global_min(&self, i: usize) -> i64 {
        let domains = &self.domains[i];
        if (domains.len() as i64) < i64::from(self.constraints[i].min_domains) {
            0
        } else {
            domains.min()
        }
    }

    /// Filter: whether the pod may go to `node` without breaking any constraint.
    pub fn filter(&self, node: &NodeInfo) -> Status {
        let labels = node.labels();
        for (i, constraint) in self.constraints.iter().enumerate() {
            let Some(value) = labels.and_then(|l| l.get(&constraint.topology_key)) else {
                return Status::unresolvable(REASON_NODE_LABEL_NOT_MATCH);
            };
            let matching = self.domains[i].get(value).unwrap_or(0);
            let skew = matching + i64::from(constraint.matches_self) - self.global_min(i);
            if skew > i64::from(constraint.max_skew) {
                return Status::unschedulable(REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }

    /// `pod` (placed on `node`) added (`delta` 1) or removed (−1) in a what-if for the
    /// incoming pod `preemptor`.
    pub fn update(&mut self, preemptor: &PodInfo, pod: &PodInfo, node: &NodeInfo, delta: i64) {
        if pod.namespace != preemptor.namespace
            || node.node.is_none()
            || !counting::has_all_keys(node, &self.constraints)
        {
            return;
        }
        let labels = node.labels();
        let (mut affinity, mut taints) = (None, None);
        for (constraint, domains) in self.constraints.iter().zip(&mut self.domains) {
            if !counting::counts_pod(&constraint.selector, &preemptor.namespace, pod)
                || !counting::included(
                    constraint,
                    &self.inclusion,
                    node,
                    &mut affinity,
                    &mut taints,
                )
            {
                continue;
            }
            let value = labels
                .and_then(|l| l.get(&constraint.topology_key))
                .map_or("", String::as_str);
            domains.update(value, delta);
        }
    }
}
