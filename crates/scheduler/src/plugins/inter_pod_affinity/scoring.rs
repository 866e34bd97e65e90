//! InterPodAffinity's preferred terms: the per-domain scores (built while PreFilter walks
//! the snapshot), PreScore deciding whether there is anything to score, Score summing a
//! node's domains, and the min-max normalization.

use super::{
    InterPodAffinity, NamespaceLabels, PRE_SCORE_KEY, TopologyCounts, incoming_term_matches,
};
use crate::framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScorePlugin, Status,
};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The scores per topology domain (shared: what-if copies of the cycle state do not copy
/// it).
#[derive(Clone, Debug)]
pub(super) struct ScoreState(pub Arc<TopologyCounts>);

/// What scoring an existing pod needs to know of the incoming one.
pub(super) struct Context<'a> {
    pub pod: &'a PodInfo,
    pub own_namespace_labels: Option<&'a Map<String, Value>>,
    pub hard_pod_affinity_weight: i64,
}

impl Context<'_> {
    /// Adds what `existing`, a pod on `node`, contributes to the domains of `node`.
    pub(super) fn add_existing_pod(
        &self,
        scores: &mut TopologyCounts,
        existing: &PodInfo,
        node: &NodeInfo,
        namespaces: &mut NamespaceLabels<'_>,
    ) {
        let pod = self.pod;
        // The incoming pod's preferred terms selecting the existing pod.
        for term in &pod.preferred_affinity {
            if incoming_term_matches(term, existing, namespaces) {
                scores.add(node, &term.topology_key, i64::from(term.weight), false);
            }
        }
        for term in &pod.preferred_anti_affinity {
            if incoming_term_matches(term, existing, namespaces) {
                scores.add(node, &term.topology_key, -i64::from(term.weight), false);
            }
        }
        // The existing pod's terms selecting the incoming pod: required affinity counts
        // `hardPodAffinityWeight`, preferred terms their weight.
        if self.hard_pod_affinity_weight > 0 {
            for term in &existing.required_affinity {
                if term.matches(pod, self.own_namespace_labels) {
                    scores.add(
                        node,
                        &term.topology_key,
                        self.hard_pod_affinity_weight,
                        false,
                    );
                }
            }
        }
        for term in &existing.preferred_affinity {
            if term.matches(pod, self.own_namespace_labels) {
                scores.add(node, &term.topology_key, i64::from(term.weight), false);
            }
        }
        for term in &existing.preferred_anti_affinity {
            if term.matches(pod, self.own_namespace_labels) {
                scores.add(node, &term.topology_key, -i64::from(term.weight), false);
            }
        }
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Status {
        if nodes.is_empty() {
            return Status::skip();
        }
        let has_preferred =
            !pod.preferred_affinity.is_empty() || !pod.preferred_anti_affinity.is_empty();
        if self.ignore_preferred_terms_of_existing_pods && !has_preferred {
            return Status::skip();
        }
        // Built by PreFilter; absent only when the profile disables this plugin's PreFilter
        // (then there is nothing to score with).
        match state.read::<ScoreState>(PRE_SCORE_KEY) {
            Some(scores) if !scores.0.is_empty() => Status::success(),
            _ => Status::skip(),
        }
    }
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        match state.read::<ScoreState>(PRE_SCORE_KEY) {
            Some(scores) => (scores.0.sum_on(node), Status::success()),
            None => (
                0,
                Status::error(format!(
                    "reading {PRE_SCORE_KEY:?} from cycleState: not found"
                )),
            ),
        }
    }

    /// Min-max: the lowest score becomes 0, the highest 100 (all equal: all 0).
    fn normalize(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore<'_>],
    ) -> Status {
        if state
            .read::<ScoreState>(PRE_SCORE_KEY)
            .is_none_or(|s| s.0.is_empty())
        {
            return Status::success();
        }
        let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
        let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
        let spread = max - min;
        for score in scores.iter_mut() {
            score.score = if spread > 0 {
                // As Kubernetes computes it: in floating point, truncated.
                (MAX_NODE_SCORE as f64 * ((score.score - min) as f64 / spread as f64)) as i64
            } else {
                0
            };
        }
        Status::success()
    }
}
