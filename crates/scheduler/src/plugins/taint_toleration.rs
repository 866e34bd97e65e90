//! TaintToleration: a pod runs only on nodes whose `NoSchedule` and `NoExecute` taints it
//! tolerates, and prefers nodes with fewer `PreferNoSchedule` taints it does not tolerate.
//!
//! Points:
//! - Filter: the first `NoSchedule`/`NoExecute` taint of the node (in the node's order) the
//!   pod does not tolerate rejects it: `node(s) had untolerated taint {key: value}`,
//!   UnschedulableAndUnresolvable.
//! - PreScore / Score: the number of the node's `PreferNoSchedule` taints not tolerated by
//!   the pod's tolerations of effect `PreferNoSchedule` or empty; normalized reversed to
//!   0..100 (the node with most such taints gets 0, nodes with none 100).
//!
//! A toleration tolerates a taint as `kyb_component_helpers::tolerations` says (Kubernetes'
//! `ToleratesTaint`). No arguments.

use super::node_affinity::default_normalize_score;
use crate::framework::{
    ClusterEvent, CycleState, FilterPlugin, Handle, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin,
    PodInfo, PreScorePlugin, ScorePlugin, Status,
};
use k8s_openapi::api::core::v1::Toleration;
use kyb_component_helpers::tolerations::{
    PREFER_NO_SCHEDULE, find_untolerated_taint, is_do_not_schedule, tolerations_tolerate,
};
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "TaintToleration";

const PRE_SCORE_KEY: &str = "PreScoreTaintToleration";

fn pod_tolerations(pod: &PodInfo) -> &[Toleration] {
    pod.pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

/// The plugin (no state of its own).
pub struct TaintToleration;

/// Builds TaintToleration (it takes no arguments).
pub fn factory(_args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(TaintToleration))
}

/// The pod's tolerations that can tolerate `PreferNoSchedule` taints.
type PreScoreState = Arc<Vec<Toleration>>;

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events(&self) -> &'static [ClusterEvent] {
        &[ClusterEvent::NodeAdd, ClusterEvent::NodeUpdate]
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }

    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl FilterPlugin for TaintToleration {
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.node.is_none() {
            return Status::error("node not found");
        }
        match find_untolerated_taint(&node.taints, pod_tolerations(pod), is_do_not_schedule) {
            None => Status::success(),
            Some(taint) => Status::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                taint.key,
                taint.value.as_deref().unwrap_or_default()
            )),
        }
    }
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        let tolerations: PreScoreState = Arc::new(
            pod_tolerations(pod)
                .iter()
                .filter(|t| {
                    let effect = t.effect.as_deref().unwrap_or_default();
                    effect.is_empty() || effect == PREFER_NO_SCHEDULE
                })
                .cloned()
                .collect(),
        );
        state.write(PRE_SCORE_KEY, tolerations);
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let Some(tolerations) = state.read::<PreScoreState>(PRE_SCORE_KEY) else {
            return (
                0,
                Status::error(format!(
                    "reading {PRE_SCORE_KEY:?} from cycleState: not found"
                )),
            );
        };
        let untolerated = node
            .taints
            .iter()
            .filter(|t| t.effect == PREFER_NO_SCHEDULE && !tolerations_tolerate(tolerations, t))
            .count();
        (
            i64::try_from(untolerated).unwrap_or(i64::MAX),
            Status::success(),
        )
    }

    fn normalize(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore<'_>],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::{Code, testing};
    use serde_json::json;

    fn plugin() -> Arc<dyn Plugin> {
        factory(&Value::Null, &testing::handle()).unwrap()
    }

    fn node(name: &str, taints: Value) -> Arc<NodeInfo> {
        Arc::new(testing::node(
            json!({"metadata": {"name": name}, "spec": {"taints": taints}}),
            &[],
        ))
    }

    fn pod(tolerations: Value) -> Arc<PodInfo> {
        testing::pod(json!({"metadata": {"name": "p"}, "spec": {"tolerations": tolerations}}))
    }

    fn filter(pod: &PodInfo, node: &NodeInfo) -> Status {
        plugin()
            .as_filter()
            .unwrap()
            .filter(&CycleState::new(), pod, node)
    }

    fn untolerated(taint: &str) -> Status {
        Status::unresolvable(format!("node(s) had untolerated taint {taint}"))
    }

    #[test]
    fn filter_follows_toleration_rules() {
        let user1 = json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]);
        let cases = [
            // No tolerations, a NoSchedule taint.
            (json!([]), user1.clone(), Some("{dedicated: user1}")),
            (json!(null), user1.clone(), Some("{dedicated: user1}")),
            // Equal with the same key, value and effect.
            (
                json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]),
                user1.clone(),
                None,
            ),
            // The operator defaults to Equal.
            (
                json!([{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]),
                user1.clone(),
                Some("{dedicated: user1}"),
            ),
            // Exists tolerates any value of the key.
            (
                json!([{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}]),
                json!([{"key": "foo", "value": "bar", "effect": "NoSchedule"}]),
                None,
            ),
            // Every taint must be tolerated.
            (
                json!([
                    {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
                    {"key": "foo", "operator": "Exists", "effect": "NoSchedule"}]),
                json!([
                    {"key": "dedicated", "value": "user2", "effect": "NoSchedule"},
                    {"key": "foo", "value": "bar", "effect": "NoSchedule"}]),
                None,
            ),
            // A different non-empty effect does not tolerate.
            (
                json!([{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]),
                json!([{"key": "foo", "value": "bar", "effect": "NoSchedule"}]),
                Some("{foo: bar}"),
            ),
            // An empty effect tolerates every effect.
            (
                json!([{"key": "foo", "operator": "Equal", "value": "bar"}]),
                json!([{"key": "foo", "value": "bar", "effect": "NoSchedule"}]),
                None,
            ),
            // PreferNoSchedule taints never keep a pod off.
            (
                json!([{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]),
                json!([{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}]),
                None,
            ),
            (
                json!([]),
                json!([{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}]),
                None,
            ),
            // NoExecute taints are checked too.
            (
                json!([]),
                json!([{"key": "evict", "value": "now", "effect": "NoExecute"}]),
                Some("{evict: now}"),
            ),
            // An empty key with Exists tolerates every taint.
            (
                json!([{"operator": "Exists"}]),
                json!([{"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]),
                None,
            ),
            // An empty key with Exists and an effect tolerates only that effect.
            (
                json!([{"operator": "Exists", "effect": "NoExecute"}]),
                json!([{"key": "b", "effect": "NoExecute"}, {"key": "a", "value": "1", "effect": "NoSchedule"}]),
                Some("{a: 1}"),
            ),
            // A taint without value is named with an empty one.
            (
                json!([]),
                json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
                Some("{node.kubernetes.io/not-ready: }"),
            ),
            // An unknown operator tolerates nothing.
            (
                json!([{"key": "foo", "operator": "Gt", "value": "1"}]),
                json!([{"key": "foo", "value": "2", "effect": "NoSchedule"}]),
                Some("{foo: 2}"),
            ),
        ];
        for (tolerations, taints, expected) in cases {
            let status = filter(&pod(tolerations.clone()), &node("n", taints.clone()));
            let want = expected.map_or_else(Status::success, untolerated);
            assert_eq!(status, want, "tolerations {tolerations} taints {taints}");
        }
    }

    #[test]
    fn filter_names_the_first_untolerated_taint() {
        let taints = json!([
            {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
            {"key": "tolerated", "value": "x", "effect": "NoSchedule"},
            {"key": "first", "value": "1", "effect": "NoExecute"},
            {"key": "second", "value": "2", "effect": "NoSchedule"}]);
        let status = filter(
            &pod(json!([{"key": "tolerated", "operator": "Exists"}])),
            &node("n", taints),
        );
        assert_eq!(status, untolerated("{first: 1}"));
        assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
    }

    fn scores(pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Vec<i64> {
        let plugin = plugin();
        let mut state = CycleState::new();
        assert!(
            plugin
                .as_pre_score()
                .unwrap()
                .pre_score(&mut state, pod, nodes)
                .is_success()
        );
        let score = plugin.as_score().unwrap();
        let mut list: Vec<NodeScore> = nodes
            .iter()
            .map(|n| NodeScore {
                name: &n.name,
                score: score.score(&state, pod, n).0,
            })
            .collect();
        assert!(score.normalize(&state, pod, &mut list).is_success());
        list.into_iter().map(|s| s.score).collect()
    }

    #[test]
    fn tolerated_taints_score_higher() {
        let pod = pod(
            json!([{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]),
        );
        let nodes = [
            node(
                "a",
                json!([{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}]),
            ),
            node(
                "b",
                json!([{"key": "foo", "value": "blah", "effect": "PreferNoSchedule"}]),
            ),
        ];
        assert_eq!(scores(&pod, &nodes), [100, 0]);
    }

    #[test]
    fn nodes_whose_taints_are_all_tolerated_score_the_same() {
        let pod = pod(json!([
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"}]));
        let nodes = [
            node("a", json!([])),
            node(
                "b",
                json!([{"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}]),
            ),
            node(
                "c",
                json!([
                {"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"},
                {"key": "disk-type", "value": "ssd", "effect": "PreferNoSchedule"}]),
            ),
        ];
        assert_eq!(scores(&pod, &nodes), [100, 100, 100]);
    }

    #[test]
    fn more_intolerable_taints_score_lower() {
        let pod = pod(
            json!([{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]),
        );
        let nodes = [
            node("a", json!([])),
            node(
                "b",
                json!([{"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}]),
            ),
            node(
                "c",
                json!([
                {"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"},
                {"key": "disk-type", "value": "ssd", "effect": "PreferNoSchedule"}]),
            ),
        ];
        assert_eq!(scores(&pod, &nodes), [100, 50, 0]);
    }

    #[test]
    fn only_prefer_no_schedule_counts_in_scores() {
        let pod = pod(json!([
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"}]));
        let nodes = [
            node("a", json!([])),
            node(
                "b",
                json!([{"key": "cpu-type", "value": "arm64", "effect": "NoSchedule"}]),
            ),
            // The NoSchedule toleration does not tolerate a PreferNoSchedule taint.
            node(
                "c",
                json!([{"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}]),
            ),
        ];
        assert_eq!(scores(&pod, &nodes), [100, 100, 0]);
    }

    #[test]
    fn without_tolerations_untainted_nodes_win() {
        let nodes = [
            node("a", json!([])),
            node(
                "b",
                json!([{"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}]),
            ),
        ];
        assert_eq!(scores(&pod(json!(null)), &nodes), [100, 0]);
        // An empty-effect toleration tolerates PreferNoSchedule taints too.
        let any_effect = pod(json!([{"key": "cpu-type", "operator": "Exists"}]));
        assert_eq!(scores(&any_effect, &nodes), [100, 100]);
    }

    #[test]
    fn score_needs_pre_score() {
        let plugin = plugin();
        let (_, status) = plugin.as_score().unwrap().score(
            &CycleState::new(),
            &pod(json!([])),
            &node("a", json!([])),
        );
        assert_eq!(status.code(), Code::Error);
    }

    #[test]
    fn registered_by_name() {
        let registry = crate::plugins::registry();
        let plugin = registry.get(NAME).unwrap()(&Value::Null, &testing::handle()).unwrap();
        assert_eq!(plugin.name(), "TaintToleration");
        assert!(plugin.as_pre_filter().is_none() && plugin.as_filter().is_some());
        assert!(plugin.as_pre_score().is_some() && plugin.as_score().is_some());
    }
}
