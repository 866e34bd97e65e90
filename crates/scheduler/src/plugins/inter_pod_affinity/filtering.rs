//! InterPodAffinity's required terms: the per-domain counts PreFilter builds (and
//! AddPod/RemovePod keep up to date), and Filter reading them.

use super::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity, NamespaceLabels,
    PRE_FILTER_KEY, TopologyCounts, incoming_term_matches, incoming_terms_all_match,
};
use crate::framework::{CycleState, FilterPlugin, NodeInfo, PodInfo, Status};
use serde_json::{Map, Value};

/// The per-domain counts of existing pods the incoming pod's required terms depend on.
#[derive(Clone, Debug, Default)]
pub(super) struct Counts {
    /// Existing pods whose required anti-affinity terms select the incoming pod (per term).
    pub existing_anti_affinity: TopologyCounts,
    /// Existing pods matching all the incoming pod's required affinity terms (per term).
    pub affinity: TopologyCounts,
    /// Existing pods matching each of the incoming pod's required anti-affinity terms.
    pub anti_affinity: TopologyCounts,
}

impl Counts {
    /// Counts `existing`, a pod on `node`, `delta` times (1: added, -1: removed) for the
    /// incoming `pod` (whose namespace has `own_namespace_labels`).
    pub(super) fn add_existing_pod(
        &mut self,
        pod: &PodInfo,
        own_namespace_labels: Option<&Map<String, Value>>,
        existing: &PodInfo,
        node: &NodeInfo,
        delta: i64,
        namespaces: &mut NamespaceLabels<'_>,
    ) {
        for term in &existing.required_anti_affinity {
            if node.label(&term.topology_key).is_some() && term.matches(pod, own_namespace_labels) {
                self.existing_anti_affinity
                    .add(node, &term.topology_key, delta, true);
            }
        }
        if pod
            .required_affinity
            .iter()
            .any(|t| node.label(&t.topology_key).is_some())
            && incoming_terms_all_match(&pod.required_affinity, existing, namespaces)
        {
            for term in &pod.required_affinity {
                self.affinity.add(node, &term.topology_key, delta, true);
            }
        }
        for term in &pod.required_anti_affinity {
            if node.label(&term.topology_key).is_some()
                && incoming_term_matches(term, existing, namespaces)
            {
                self.anti_affinity
                    .add(node, &term.topology_key, delta, true);
            }
        }
    }
}

/// What PreFilter leaves for Filter.
#[derive(Clone, Debug)]
pub(super) struct PreFilterState {
    pub counts: Counts,
    /// The labels of the incoming pod's namespace (existing pods' namespace selectors).
    pub own_namespace_labels: Option<Map<String, Value>>,
    /// The incoming pod matches all its own required affinity terms.
    pub matches_own_affinity_terms: bool,
}

/// The node is in a domain of every required affinity term holding pods that match them —
/// or no pod anywhere matches them and the pod matches its own terms (the first of a
/// group), on a node that has every topology key.
fn satisfies_pod_affinity(state: &PreFilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for term in &pod.required_affinity {
        let Some(value) = node.label(&term.topology_key) else {
            return false;
        };
        if state.counts.affinity.get(&term.topology_key, value) <= 0 {
            pods_exist = false;
        }
    }
    pods_exist || (state.counts.affinity.is_empty() && state.matches_own_affinity_terms)
}

/// No domain of the node holds a pod one of the required anti-affinity terms selects.
fn satisfies_pod_anti_affinity(state: &PreFilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    if state.counts.anti_affinity.is_empty() {
        return true;
    }
    !pod.required_anti_affinity.iter().any(|term| {
        node.label(&term.topology_key)
            .is_some_and(|value| state.counts.anti_affinity.get(&term.topology_key, value) > 0)
    })
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(state) = state.read::<PreFilterState>(PRE_FILTER_KEY) else {
            return Status::error(format!(
                "reading {PRE_FILTER_KEY:?} from cycleState: not found"
            ));
        };
        if node.node.is_none() {
            return Status::error("node not found");
        }
        if !satisfies_pod_affinity(state, pod, node) {
            return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfies_pod_anti_affinity(state, pod, node) {
            return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if state.counts.existing_anti_affinity.positive_on(node) {
            return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        Status::success()
    }
}
