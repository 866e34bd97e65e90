//! The hard (`DoNotSchedule`) side: what PreFilter leaves for Filter — the constraints and
//! the matching pods per domain over the eligible nodes, with each constraint's global
//! minimum — the Filter check (`matching pods in the node's domain + 1 if the pod matches
//! itself − global minimum ≤ maxSkew`, the minimum taken as 0 while there are fewer eligible
//! domains than `minDomains`), and the incremental updates of preemption's what-ifs.

use super::constraints::Constraint;
use super::counting::{self, ConstraintColumns, Domains, FastMap, NodeValue};
use super::node_inclusion::{NodeInclusion, tolerates_taints};
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
    /// Per constraint: the node table's columns it reads.
    pub columns: Arc<[ConstraintColumns]>,
    /// Node name → slot in the columns.
    pub names: Arc<FastMap<String, u32>>,
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
        let slot = self.names.get(node.name.as_str()).map(|&s| s as usize);
        for (i, (constraint, columns)) in
            self.constraints.iter().zip(self.columns.iter()).enumerate()
        {
            let value = counting::node_value(slot, node, &constraint.topology_key, &columns.key);
            if value == NodeValue::Missing {
                return Status::unresolvable(REASON_NODE_LABEL_NOT_MATCH);
            }
            let matching = self.domains[i].count_of(value);
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
        let (mut affinity, mut taints) = (None, None);
        for (constraint, domains) in self.constraints.iter().zip(&mut self.domains) {
            if !counting::counts_pod(&constraint.selector, &preemptor.namespace, pod) {
                continue;
            }
            let inclusion = &self.inclusion;
            if constraint.honor_node_affinity
                && inclusion.affinity.is_set()
                && !*affinity.get_or_insert_with(|| inclusion.affinity.matches(node))
            {
                continue;
            }
            if constraint.honor_node_taints
                && !*taints.get_or_insert_with(|| tolerates_taints(&inclusion.tolerations, node))
            {
                continue;
            }
            domains.update(
                node.label(&constraint.topology_key).unwrap_or_default(),
                delta,
            );
        }
    }
}
