//! NodeResourcesBalancedAllocation (PreScore, Score): favours nodes whose resources would be
//! used evenly with the pod placed. For each scored resource the node has, the fraction
//! `(requested on the node + the pod's request) / allocatable` (capped at 1) is taken, with
//! requests as they are (no per-container floor); the score is `(1 - σ) × 100` truncated,
//! σ being the standard deviation of the fractions (for two resources, `|f1 - f2| / 2`).
//! Extended resources the pod does not request are not scored. PreScore keeps the pod's
//! requests, and skips pods requesting none of the scored resources (best-effort pods), which
//! would otherwise all be drawn to the same nodes.
//!
//! Arguments (`NodeResourcesBalancedAllocationArgs`): `resources` (default cpu and memory;
//! each weight must be 1, names may not repeat).

use super::{
    ResourceAllocation, ResourceSpec, aggregate, decode_args, default_resources, field_error,
};
use crate::framework::{
    CycleState, Handle, MAX_NODE_SCORE, NodeInfo, Plugin, PodInfo, PreScorePlugin, ScorePlugin,
    Status,
};
use kyb_apimachinery::field::ErrorKind;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// Where PreScore keeps the pod's requests of the scored resources for Score.
const PRE_SCORE_KEY: &str = "PreScoreNodeResourcesBalancedAllocation";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BalancedArgs {
    #[serde(default)]
    resources: Option<Vec<ResourceSpec>>,
}

/// The plugin, with the resources it balances.
pub struct NodeResourcesBalancedAllocation {
    allocation: ResourceAllocation,
}

/// Builds the plugin from its `NodeResourcesBalancedAllocationArgs`.
pub fn factory(args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeResourcesBalancedAllocation::new(args)?))
}

/// The pod's requests of the scored resources, in the order of the arguments.
#[derive(Clone, Debug)]
struct ScoreRequest(Vec<i64>);

impl NodeResourcesBalancedAllocation {
    pub fn new(args: &Value) -> Result<NodeResourcesBalancedAllocation, String> {
        let args: BalancedArgs = decode_args(NAME, args)?;
        let mut resources = args
            .resources
            .filter(|r| !r.is_empty())
            .unwrap_or_else(default_resources);
        // Each resource's errors in turn: a repeated name, then a weight other than 1 (0,
        // unset, means 1).
        let mut errors = Vec::new();
        for i in 0..resources.len() {
            let (before, rest) = resources.split_at_mut(i);
            let Some(resource) = rest.first_mut() else {
                break;
            };
            if before.iter().any(|r| r.name == resource.name) {
                errors.push(field_error(
                    ErrorKind::Duplicate,
                    format!("resources[{i}].name"),
                    Some(resource.name.as_str().into()),
                    "",
                ));
            }
            if resource.weight == 0 {
                resource.weight = 1;
            }
            if resource.weight != 1 {
                errors.push(field_error(
                    ErrorKind::Invalid,
                    format!("resources[{i}].weight"),
                    Some(resource.weight.into()),
                    "must be 1",
                ));
            }
        }
        aggregate(&errors)?;
        Ok(NodeResourcesBalancedAllocation {
            allocation: ResourceAllocation::new(&resources, true),
        })
    }

    /// The node's score for a pod requesting `requests` of the scored resources.
    fn score_node(&self, requests: &[i64], node: &NodeInfo) -> i64 {
        let fraction = |i: usize| -> Option<f64> {
            let pod_request = requests.get(i).copied().unwrap_or(0);
            let (allocatable, requested) =
                self.allocation
                    .allocatable_and_requested(i, node, pod_request);
            if allocatable == 0 {
                return None;
            }
            Some((requested as f64 / allocatable as f64).min(1.0))
        };
        let count = self.allocation.resources.len();
        // First pass: how many fractions, their sum, and the first two (two resources — the
        // usual cpu and memory — take the short formula).
        let mut n = 0usize;
        let mut total = 0.0;
        let mut first = [0.0; 2];
        for i in 0..count {
            if let Some(f) = fraction(i) {
                if let Some(slot) = first.get_mut(n) {
                    *slot = f;
                }
                total += f;
                n += 1;
            }
        }
        let std = match n {
            0 | 1 => 0.0,
            2 => ((first[0] - first[1]) / 2.0).abs(),
            _ => {
                let mean = total / n as f64;
                let mut sum = 0.0;
                for i in 0..count {
                    if let Some(f) = fraction(i) {
                        sum += (f - mean) * (f - mean);
                    }
                }
                (sum / n as f64).sqrt()
            }
        };
        ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
    }
}

impl Plugin for NodeResourcesBalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for NodeResourcesBalancedAllocation {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        let requests = self.allocation.pod_requests(pod);
        if requests.iter().all(|r| *r == 0) {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, ScoreRequest(requests));
        Status::success()
    }
}

impl ScorePlugin for NodeResourcesBalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let score = match state.read::<ScoreRequest>(PRE_SCORE_KEY) {
            Some(ScoreRequest(requests)) => self.score_node(requests, node),
            None => self.score_node(&self.allocation.pod_requests(pod), node),
        };
        (score, Status::success())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::test_support::{node, pod, running};
    use super::*;
    use serde_json::json;

    fn plugin(args: Value) -> NodeResourcesBalancedAllocation {
        NodeResourcesBalancedAllocation::new(&args).unwrap()
    }

    /// Runs PreScore, and Score on each node unless PreScore skips (`None`).
    fn scores(
        plugin: &NodeResourcesBalancedAllocation,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Option<Vec<i64>> {
        let mut state = CycleState::new();
        let status = plugin.pre_score(&mut state, pod, nodes);
        if status.is_skip() {
            return None;
        }
        assert!(status.is_success());
        Some(
            nodes
                .iter()
                .map(|n| {
                    let (score, status) = plugin.score(&state, pod, n);
                    assert!(status.is_success());
                    score
                })
                .collect(),
        )
    }

    #[test]
    fn two_resources() {
        let p = plugin(Value::Null);
        let incoming = pod(&[
            json!({"cpu": "1000m", "memory": "2000"}),
            json!({"cpu": "2000m", "memory": "3000"}),
        ]);
        let nodes = [
            node("node1", json!({"cpu": "4000m", "memory": "10000"}), &[]),
            node("node2", json!({"cpu": "6000m", "memory": "10000"}), &[]),
        ];
        // node1: cpu 0.75, memory 0.5: σ = 0.125 → 87.5 → 87. node2: 0.5 and 0.5 → 100.
        assert_eq!(scores(&p, &incoming, &nodes), Some(vec![87, 100]));
    }

    #[test]
    fn requests_count_as_they_are_and_fractions_cap_at_one() {
        let p = plugin(Value::Null);
        // The pod already there requests no memory: it counts none (no 200 MiB floor).
        let nodes = [node(
            "n",
            json!({"cpu": "4", "memory": "4Gi"}),
            &[running(0, &[json!({"cpu": "1"})])],
        )];
        // cpu (1 + 1) / 4 = 0.5, memory 1/4 = 0.25: σ = 0.125 → 87.
        assert_eq!(
            scores(&p, &pod(&[json!({"cpu": "1", "memory": "1Gi"})]), &nodes),
            Some(vec![87])
        );
        // cpu 6/4 → 1, memory 0.5: σ = 0.25 → 75.
        assert_eq!(
            scores(&p, &pod(&[json!({"cpu": "5", "memory": "2Gi"})]), &nodes),
            Some(vec![75])
        );
    }

    #[test]
    fn three_resources_use_the_standard_deviation() {
        let p = plugin(json!({"resources": [{"name": "cpu"}, {"name": "memory"},
            {"name": "example.com/gpu", "weight": 1}]}));
        let incoming = pod(&[json!({"cpu": "3", "memory": "2Gi", "example.com/gpu": "1"})]);
        let nodes = [
            node(
                "gpu",
                json!({"cpu": "4", "memory": "4Gi", "example.com/gpu": "4"}),
                &[],
            ),
            node("plain", json!({"cpu": "4", "memory": "4Gi"}), &[]),
        ];
        // gpu: 0.75, 0.5, 0.25: mean 0.5, σ = √(0.125/3) = 0.2041 → 79.59 → 79.
        // plain: the GPU is not scored: 0.75 and 0.5 → 87.
        assert_eq!(scores(&p, &incoming, &nodes), Some(vec![79, 87]));
        // Not requesting the GPU: it is not scored anywhere.
        let no_gpu = pod(&[json!({"cpu": "3", "memory": "2Gi"})]);
        assert_eq!(scores(&p, &no_gpu, &nodes), Some(vec![87, 87]));
    }

    #[test]
    fn best_effort_pods_are_skipped() {
        let p = plugin(Value::Null);
        let nodes = [node("n", json!({"cpu": "4", "memory": "4Gi"}), &[])];
        assert_eq!(scores(&p, &pod(&[json!({})]), &nodes), None);
        // A request of something not scored does not count.
        assert_eq!(
            scores(&p, &pod(&[json!({"example.com/gpu": "1"})]), &nodes),
            None
        );
        // Without PreScore's state, Score computes the requests itself.
        let (score, status) = p.score(&CycleState::new(), &pod(&[json!({"cpu": "2"})]), &nodes[0]);
        assert!(status.is_success());
        // cpu 0.5, memory 0 → σ = 0.25 → 75.
        assert_eq!(score, 75);
    }

    #[test]
    fn args_validation() {
        let error = |args: Value| NodeResourcesBalancedAllocation::new(&args).err().unwrap();
        assert_eq!(
            error(json!({"resources": [{"name": "cpu", "weight": 2}]})),
            "resources[0].weight: Invalid value: 2: must be 1"
        );
        assert_eq!(
            error(
                json!({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "cpu", "weight": 3}]})
            ),
            "[resources[2].name: Duplicate value: \"cpu\", resources[2].weight: Invalid value: 3: must be 1]"
        );
        assert!(
            error(json!({"resource": []}))
                .starts_with("decoding NodeResourcesBalancedAllocation args:")
        );
        assert!(
            NodeResourcesBalancedAllocation::new(
                &json!({"kind": "NodeResourcesBalancedAllocationArgs",
            "resources": [{"name": "cpu", "weight": 1}]})
            )
            .is_ok()
        );
    }
}
