//! NodeAffinity: a pod runs only on nodes matching its `spec.nodeSelector` and its required
//! node affinity (`requiredDuringSchedulingIgnoredDuringExecution`), and prefers nodes
//! matching its preferred node affinity terms.
//!
//! Points:
//! - PreFilter: parses the required selector and terms once into the cycle state; when every
//!   required term pins `metadata.name` through `matchFields` (`In`), narrows the search to
//!   those nodes (terms are ORed, a term's requirements ANDed; terms naming disjoint sets
//!   are a conflict: `pod affinity terms conflict`). Skips pods with nothing to check.
//! - Filter: `node(s) didn't match Pod's node affinity/selector` (and, for the
//!   `addedAffinity` argument, `node(s) didn't match scheduler-enforced node affinity`),
//!   UnschedulableAndUnresolvable.
//! - PreScore / Score: the sum of the weights of the preferred terms the node matches (the
//!   pod's and the `addedAffinity` ones), normalized to 0..100 by the highest score.
//!
//! Terms are matched by `kyb_component_helpers::nodeaffinity` (Kubernetes' `nodeaffinity`
//! helper): as in Kubernetes, an invalid term of the pod's required affinity never matches
//! (the others still do), an invalid preferred term is an error, and invalid
//! `addedAffinity` terms refuse the configuration.
//!
//! Args (`NodeAffinityArgs`): `addedAffinity`, a node affinity every pod of the profile gets
//! on top of its own.

use crate::framework::{
    ClusterEvent, CycleState, FilterPlugin, Handle, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin,
    PodInfo, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Snapshot, Status,
};
use k8s_openapi::api::core::v1::{
    NodeAffinity as NodeAffinitySpec, NodeSelector, Pod, PreferredSchedulingTerm,
};
use kyb_component_helpers::nodeaffinity::{
    self, NODE_NAME_FIELD, NodeSelectorMatcher, PreferredTerms, RequiredNodeAffinity,
};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

pub const NAME: &str = "NodeAffinity";

/// A node not matching the pod's node selector or required node affinity.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// A node not matching the profile's `addedAffinity`.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// Required terms pinning node names that no node can satisfy at once.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

const PRE_FILTER_KEY: &str = "PreFilterNodeAffinity";
const PRE_SCORE_KEY: &str = "PreScoreNodeAffinity";

fn required_terms(pod: &Pod) -> Option<&NodeSelector> {
    nodeaffinity::required_terms(pod.spec.as_ref()?)
}

fn preferred_terms(pod: &Pod) -> Option<&[PreferredSchedulingTerm]> {
    nodeaffinity::preferred_terms(pod.spec.as_ref()?)
}

/// The node names the required terms pin through `matchFields` (`metadata.name In …`):
/// `Ok(None)` when some term pins none (every node may match), `Err` when the terms pin an
/// empty set.
fn pinned_node_names(selector: &NodeSelector) -> Result<Option<BTreeSet<String>>, ()> {
    let mut names: Option<BTreeSet<String>> = None;
    for term in &selector.node_selector_terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for requirement in term.match_fields.iter().flatten() {
            if requirement.key != NODE_NAME_FIELD || requirement.operator != "In" {
                continue;
            }
            let values: BTreeSet<String> = requirement.values.iter().flatten().cloned().collect();
            term_names = Some(match term_names {
                None => values,
                Some(names) => names.intersection(&values).cloned().collect(),
            });
        }
        let Some(term_names) = term_names else {
            return Ok(None);
        };
        names.get_or_insert_with(BTreeSet::new).extend(term_names);
    }
    match names {
        Some(names) if names.is_empty() => Err(()),
        names => Ok(names),
    }
}

/// Kubernetes' default score normalization: scales scores so the highest becomes
/// `max_priority` (integer division), reversed (`max_priority - score`) when `reverse`;
/// all zeros stay zeros (or all become `max_priority` when reversed).
pub fn default_normalize_score(max_priority: i64, reverse: bool, scores: &mut [NodeScore<'_>]) {
    let max = scores.iter().map(|s| s.score).max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            for score in scores.iter_mut() {
                score.score = max_priority;
            }
        }
        return;
    }
    for score in scores.iter_mut() {
        let scaled = max_priority * score.score / max;
        score.score = if reverse {
            max_priority - scaled
        } else {
            scaled
        };
    }
}

/// `NodeAffinityArgs`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    #[serde(rename = "apiVersion")]
    _api_version: Option<String>,
    #[serde(rename = "kind")]
    _kind: Option<String>,
    added_affinity: Option<NodeAffinitySpec>,
}

/// The plugin, with the profile's `addedAffinity` parsed.
pub struct NodeAffinity {
    added_node_selector: Option<NodeSelectorMatcher>,
    added_preferred: Option<PreferredTerms>,
}

/// Builds NodeAffinity from its `NodeAffinityArgs`.
pub fn factory(args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    let args: Args = if args.is_null() {
        Args::default()
    } else {
        serde_json::from_value(args.clone()).map_err(|e| format!("NodeAffinityArgs: {e}"))?
    };
    let mut plugin = NodeAffinity {
        added_node_selector: None,
        added_preferred: None,
    };
    if let Some(added) = &args.added_affinity {
        if let Some(required) = &added.required_during_scheduling_ignored_during_execution {
            plugin.added_node_selector = Some(NodeSelectorMatcher::parse(
                required,
                "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            )?);
        }
        if let Some(preferred) = added
            .preferred_during_scheduling_ignored_during_execution
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            plugin.added_preferred = Some(PreferredTerms::parse(
                preferred,
                "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            )?);
        }
    }
    Ok(Arc::new(plugin))
}

/// The pod's parsed preferred terms (`None`: it has none).
type PreScoreState = Arc<Option<PreferredTerms>>;

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events(&self) -> &'static [ClusterEvent] {
        &[ClusterEvent::NodeAdd, ClusterEvent::NodeUpdate]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
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

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let required = required_terms(&pod.pod);
        let has_node_selector = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.node_selector.as_ref())
            .is_some_and(|s| !s.is_empty());
        if required.is_none() && self.added_node_selector.is_none() && !has_node_selector {
            return (None, Status::skip());
        }
        state.write(
            PRE_FILTER_KEY,
            Arc::new(RequiredNodeAffinity::new(&pod.pod)),
        );
        let Some(required) = required.filter(|r| !r.node_selector_terms.is_empty()) else {
            return (None, Status::success());
        };
        match pinned_node_names(required) {
            Ok(None) => (None, Status::success()),
            Ok(Some(names)) => (
                Some(PreFilterResult {
                    node_names: Some(names),
                }),
                Status::success(),
            ),
            Err(()) => (None, Status::unresolvable(ERR_REASON_CONFLICT)),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.node.is_none() {
            return Status::error("node not found");
        }
        if let Some(added) = &self.added_node_selector
            && !added.matches(node)
        {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        let matches = match state.read::<Arc<RequiredNodeAffinity>>(PRE_FILTER_KEY) {
            Some(required) => required.matches(node),
            // PreFilter disabled in the profile: parse here.
            None => RequiredNodeAffinity::new(&pod.pod).matches(node),
        };
        if matches {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
    }
}

fn pod_preferred_terms(pod: &PodInfo) -> Result<Option<PreferredTerms>, Status> {
    preferred_terms(&pod.pod)
        .map(|terms| {
            PreferredTerms::parse(
                terms,
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            )
        })
        .transpose()
        .map_err(Status::error)
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        let preferred = match pod_preferred_terms(pod) {
            Ok(preferred) => preferred,
            Err(status) => return status,
        };
        if preferred.is_none() && self.added_preferred.is_none() {
            return Status::skip();
        }
        let data: PreScoreState = Arc::new(preferred);
        state.write(PRE_SCORE_KEY, data);
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        if node.node.is_none() {
            return (0, Status::error("node not found"));
        }
        let mut score = self.added_preferred.as_ref().map_or(0, |t| t.score(node));
        match state.read::<PreScoreState>(PRE_SCORE_KEY) {
            Some(preferred) => score += preferred.as_ref().as_ref().map_or(0, |t| t.score(node)),
            // PreScore disabled in the profile: parse here.
            None => match pod_preferred_terms(pod) {
                Ok(preferred) => score += preferred.map_or(0, |t| t.score(node)),
                Err(status) => return (0, status),
            },
        }
        (score, Status::success())
    }

    fn normalize(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        scores: &mut [NodeScore<'_>],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::{Code, testing};
    use serde_json::json;

    fn plugin(args: Value) -> Arc<dyn Plugin> {
        factory(&args, &testing::handle()).unwrap()
    }

    fn node(name: &str, labels: Value) -> Arc<NodeInfo> {
        Arc::new(testing::node(
            json!({"metadata": {"name": name, "labels": labels}}),
            &[],
        ))
    }

    fn pod_with(spec: Value) -> Arc<PodInfo> {
        testing::pod(json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    /// A pod with required node affinity made of these terms.
    fn pod_required(terms: Value) -> Arc<PodInfo> {
        pod_with(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}))
    }

    /// PreFilter (on a snapshot of `nodes`), then Filter on `node`, as the framework runs
    /// them (a skipped PreFilter skips Filter).
    fn run_filter(plugin: &Arc<dyn Plugin>, pod: &PodInfo, node: &NodeInfo) -> Status {
        let mut state = CycleState::new();
        let snapshot = Snapshot::new(vec![Arc::new(node.clone())]);
        let (_, status) = plugin
            .as_pre_filter()
            .unwrap()
            .pre_filter(&mut state, pod, &snapshot);
        if status.is_skip() {
            return Status::success();
        }
        assert!(status.is_success(), "{status}");
        plugin.as_filter().unwrap().filter(&state, pod, node)
    }

    fn pre_filter(plugin: &Arc<dyn Plugin>, pod: &PodInfo) -> (Option<PreFilterResult>, Status) {
        let mut state = CycleState::new();
        plugin
            .as_pre_filter()
            .unwrap()
            .pre_filter(&mut state, pod, &Snapshot::default())
    }

    /// PreScore, Score and normalization over `nodes`: the final scores (`None`: skipped).
    fn run_score(
        plugin: &Arc<dyn Plugin>,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Option<Vec<i64>> {
        let mut state = CycleState::new();
        let status = plugin
            .as_pre_score()
            .unwrap()
            .pre_score(&mut state, pod, nodes);
        if status.is_skip() {
            return None;
        }
        assert!(status.is_success(), "{status}");
        let score = plugin.as_score().unwrap();
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .map(|n| {
                let (score, status) = score.score(&state, pod, n);
                assert!(status.is_success(), "{status}");
                NodeScore {
                    name: &n.name,
                    score,
                }
            })
            .collect();
        assert!(score.normalize(&state, pod, &mut scores).is_success());
        Some(scores.into_iter().map(|s| s.score).collect())
    }

    fn rejected() -> Status {
        Status::unresolvable(ERR_REASON_POD)
    }

    #[test]
    fn node_selector_must_match_every_label() {
        let plugin = plugin(Value::Null);
        let pod = pod_with(json!({"nodeSelector": {"foo": "bar", "baz": "blah"}}));
        let fits = node("n", json!({"foo": "bar", "baz": "blah", "other": "x"}));
        assert_eq!(run_filter(&plugin, &pod, &fits), Status::success());
        for labels in [
            json!({"foo": "bar"}),
            json!({"foo": "bar", "baz": "no"}),
            json!({}),
        ] {
            let status = run_filter(&plugin, &pod, &node("n", labels));
            assert_eq!(status, rejected());
            assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
            assert_eq!(
                status.reasons(),
                ["node(s) didn't match Pod's node affinity/selector"]
            );
        }
    }

    #[test]
    fn requirement_operators() {
        let plugin = plugin(Value::Null);
        let cases = [
            (
                json!({"key": "foo", "operator": "In", "values": ["bar", "value2"]}),
                json!({"foo": "bar"}),
                true,
            ),
            (
                json!({"key": "foo", "operator": "In", "values": ["value1", "value2"]}),
                json!({"foo": "bar"}),
                false,
            ),
            (
                json!({"key": "foo", "operator": "In", "values": ["bar"]}),
                json!({}),
                false,
            ),
            (
                json!({"key": "foo", "operator": "NotIn", "values": ["bar"]}),
                json!({"foo": "bar"}),
                false,
            ),
            (
                json!({"key": "foo", "operator": "NotIn", "values": ["bar"]}),
                json!({"foo": "baz"}),
                true,
            ),
            (
                json!({"key": "foo", "operator": "NotIn", "values": ["bar"]}),
                json!({}),
                true,
            ),
            (
                json!({"key": "foo", "operator": "Exists"}),
                json!({"foo": ""}),
                true,
            ),
            (
                json!({"key": "foo", "operator": "Exists"}),
                json!({"bar": "foo"}),
                false,
            ),
            (
                json!({"key": "foo", "operator": "DoesNotExist"}),
                json!({"bar": "foo"}),
                true,
            ),
            (
                json!({"key": "foo", "operator": "DoesNotExist"}),
                json!({"foo": "bar"}),
                false,
            ),
            (
                json!({"key": "kernel-version", "operator": "Gt", "values": ["0204"]}),
                json!({"kernel-version": "0206"}),
                true,
            ),
            (
                json!({"key": "kernel-version", "operator": "Gt", "values": ["0204"]}),
                json!({"kernel-version": "0204"}),
                false,
            ),
            // Numbers, not strings, are compared.
            (
                json!({"key": "kernel-version", "operator": "Gt", "values": ["9"]}),
                json!({"kernel-version": "10"}),
                true,
            ),
            // "-1" is no valid label value: the term is invalid and matches nothing.
            (
                json!({"key": "kernel-version", "operator": "Gt", "values": ["-1"]}),
                json!({"kernel-version": "0"}),
                false,
            ),
            (
                json!({"key": "kernel-version", "operator": "Gt", "values": ["1"]}),
                json!({"kernel-version": "abc"}),
                false,
            ),
            (
                json!({"key": "kernel-version", "operator": "Gt", "values": ["1"]}),
                json!({}),
                false,
            ),
            (
                json!({"key": "mem", "operator": "Lt", "values": ["5"]}),
                json!({"mem": "4"}),
                true,
            ),
            (
                json!({"key": "mem", "operator": "Lt", "values": ["5"]}),
                json!({"mem": "5"}),
                false,
            ),
        ];
        for (expression, labels, fits) in cases {
            let pod = pod_required(json!([{"matchExpressions": [expression.clone()]}]));
            let status = run_filter(&plugin, &pod, &node("n", labels.clone()));
            let expected = if fits { Status::success() } else { rejected() };
            assert_eq!(status, expected, "{expression} on {labels}");
        }
    }

    #[test]
    fn terms_are_ored_and_expressions_anded() {
        let plugin = plugin(Value::Null);
        let pod = pod_required(json!([
            {"matchExpressions": [
                {"key": "foo", "operator": "In", "values": ["bar"]},
                {"key": "zone", "operator": "In", "values": ["z1"]}]},
            {"matchExpressions": [{"key": "diskType", "operator": "In", "values": ["ssd"]}]},
        ]));
        assert!(
            run_filter(
                &plugin,
                &pod,
                &node("n", json!({"foo": "bar", "zone": "z1"}))
            )
            .is_success()
        );
        assert!(run_filter(&plugin, &pod, &node("n", json!({"diskType": "ssd"}))).is_success());
        assert_eq!(
            run_filter(
                &plugin,
                &pod,
                &node("n", json!({"foo": "bar", "zone": "z2"}))
            ),
            rejected()
        );
    }

    #[test]
    fn empty_terms_match_no_node() {
        let plugin = plugin(Value::Null);
        let any = node("n", json!({"foo": "bar"}));
        for terms in [json!([]), json!([{}]), json!([{"matchExpressions": []}])] {
            let pod = pod_required(terms.clone());
            assert_eq!(run_filter(&plugin, &pod, &any), rejected(), "{terms}");
        }
        // An empty term next to a matching one does not hurt.
        let pod =
            pod_required(json!([{}, {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]));
        assert!(run_filter(&plugin, &pod, &any).is_success());
    }

    #[test]
    fn invalid_required_terms_never_match_but_the_others_still_do() {
        let plugin = plugin(Value::Null);
        let invalid =
            json!({"matchExpressions": [{"key": "foo", "operator": "Gt", "values": ["abc"]}]});
        let valid = json!({"matchExpressions": [{"key": "foo", "operator": "Exists"}]});
        let n = node("n", json!({"foo": "5"}));
        assert_eq!(
            run_filter(&plugin, &pod_required(json!([invalid.clone()])), &n),
            rejected()
        );
        assert!(run_filter(&plugin, &pod_required(json!([invalid, valid])), &n).is_success());
        let bad_operator =
            json!({"matchExpressions": [{"key": "foo", "operator": "Equals", "values": ["5"]}]});
        assert_eq!(
            run_filter(&plugin, &pod_required(json!([bad_operator])), &n),
            rejected()
        );
    }

    #[test]
    fn node_selector_and_affinity_must_both_match() {
        let plugin = plugin(Value::Null);
        let pod = pod_with(json!({
            "nodeSelector": {"foo": "bar"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}}));
        assert!(
            run_filter(
                &plugin,
                &pod,
                &node("n", json!({"foo": "bar", "zone": "z"}))
            )
            .is_success()
        );
        assert_eq!(
            run_filter(&plugin, &pod, &node("n", json!({"foo": "bar"}))),
            rejected()
        );
        assert_eq!(
            run_filter(&plugin, &pod, &node("n", json!({"zone": "z"}))),
            rejected()
        );
    }

    #[test]
    fn match_fields_on_the_node_name() {
        let plugin = plugin(Value::Null);
        let pod = pod_required(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]));
        assert!(run_filter(&plugin, &pod, &node("node1", json!({}))).is_success());
        assert_eq!(
            run_filter(&plugin, &pod, &node("node2", json!({}))),
            rejected()
        );
        let not_in = pod_required(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "NotIn", "values": ["node1"]}]}]));
        assert_eq!(
            run_filter(&plugin, &not_in, &node("node1", json!({}))),
            rejected()
        );
        assert!(run_filter(&plugin, &not_in, &node("node2", json!({}))).is_success());
        // Fields and labels of one term are ANDed.
        let both = pod_required(json!([{
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}],
            "matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]));
        assert!(run_filter(&plugin, &both, &node("node1", json!({"foo": "bar"}))).is_success());
        assert_eq!(
            run_filter(&plugin, &both, &node("node1", json!({}))),
            rejected()
        );
        assert_eq!(
            run_filter(&plugin, &both, &node("node2", json!({"foo": "bar"}))),
            rejected()
        );
        // A field requirement needs exactly one value: otherwise the term is invalid.
        let two = pod_required(json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node1", "node2"]}]}]));
        assert_eq!(
            run_filter(&plugin, &two, &node("node1", json!({}))),
            rejected()
        );
    }

    fn names(list: &[&str]) -> Option<PreFilterResult> {
        Some(PreFilterResult {
            node_names: Some(list.iter().map(|n| n.to_string()).collect()),
        })
    }

    #[test]
    fn pre_filter_narrows_to_pinned_node_names() {
        let plugin = plugin(Value::Null);
        let field =
            |values: Value| json!({"key": "metadata.name", "operator": "In", "values": values});
        let cases = [
            (
                json!([{"matchFields": [field(json!(["node1"]))]}]),
                names(&["node1"]),
            ),
            (
                json!([{"matchFields": [field(json!(["node1"]))]}, {"matchFields": [field(json!(["node2"]))]}]),
                names(&["node1", "node2"]),
            ),
            (
                json!([{"matchFields": [field(json!(["node1", "node2"])), field(json!(["node2", "node3"]))]}]),
                names(&["node2"]),
            ),
            // A term without a name pin lets every node through.
            (
                json!([{"matchFields": [field(json!(["node1"]))]},
                       {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]),
                None,
            ),
            (
                json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node1"]}]}]),
                None,
            ),
            (
                json!([{"matchExpressions": [{"key": "foo", "operator": "Exists"}]}]),
                None,
            ),
        ];
        for (terms, expected) in cases {
            let (result, status) = pre_filter(&plugin, &pod_required(terms.clone()));
            assert!(status.is_success(), "{terms}: {status}");
            assert_eq!(result, expected, "{terms}");
        }
        let conflict = pod_required(
            json!([{"matchFields": [field(json!(["node1"])), field(json!(["node2"]))]}]),
        );
        let (result, status) = pre_filter(&plugin, &conflict);
        assert_eq!(result, None);
        assert_eq!(status, Status::unresolvable("pod affinity terms conflict"));
    }

    #[test]
    fn pre_filter_skips_pods_without_constraints() {
        let plain = plugin(Value::Null);
        let pod = pod_with(json!({}));
        assert!(pre_filter(&plain, &pod).1.is_skip());
        assert!(
            pre_filter(&plain, &pod_with(json!({"nodeSelector": {}})))
                .1
                .is_skip()
        );
        // Preferred terms alone are not PreFilter's business.
        let preferred = pod_with(json!({"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}}));
        assert!(pre_filter(&plain, &preferred).1.is_skip());
        // With an added affinity every pod is checked.
        let enforced = plugin(
            json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}),
        );
        assert!(pre_filter(&enforced, &pod).1.is_success());
    }

    #[test]
    fn added_affinity_is_enforced_on_every_pod() {
        let plugin = plugin(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs",
            "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]}}}));
        let pod = pod_with(json!({}));
        assert!(run_filter(&plugin, &pod, &node("n", json!({"zone": "foo"}))).is_success());
        let status = run_filter(&plugin, &pod, &node("n", json!({"zone": "bar"})));
        assert_eq!(
            status,
            Status::unresolvable("node(s) didn't match scheduler-enforced node affinity")
        );
        // The enforced affinity is checked first, then the pod's own.
        let own = pod_with(json!({"nodeSelector": {"disk": "ssd"}}));
        assert_eq!(
            run_filter(&plugin, &own, &node("n", json!({"disk": "ssd"}))),
            Status::unresolvable(ERR_REASON_ENFORCED)
        );
        assert_eq!(
            run_filter(&plugin, &own, &node("n", json!({"zone": "foo"}))),
            rejected()
        );
        assert!(
            run_filter(
                &plugin,
                &own,
                &node("n", json!({"zone": "foo", "disk": "ssd"}))
            )
            .is_success()
        );
    }

    #[test]
    fn filter_without_pre_filter_parses_on_its_own() {
        let plugin = plugin(Value::Null);
        let pod = pod_with(json!({"nodeSelector": {"foo": "bar"}}));
        let state = CycleState::new();
        let filter = plugin.as_filter().unwrap();
        assert!(
            filter
                .filter(&state, &pod, &node("n", json!({"foo": "bar"})))
                .is_success()
        );
        assert_eq!(
            filter.filter(&state, &pod, &node("n", json!({}))),
            rejected()
        );
    }

    fn preferred(terms: Value) -> Arc<PodInfo> {
        pod_with(
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}),
        )
    }

    #[test]
    fn score_without_preferences_is_skipped() {
        let plugin = plugin(Value::Null);
        let nodes = [node("n1", json!({"foo": "bar"}))];
        assert_eq!(run_score(&plugin, &pod_with(json!({})), &nodes), None);
        assert_eq!(run_score(&plugin, &preferred(json!([])), &nodes), None);
    }

    #[test]
    fn score_sums_matching_weights_normalized_by_the_highest() {
        let plugin = plugin(Value::Null);
        let pod = preferred(json!([
            {"weight": 2, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}},
            {"weight": 4, "preference": {"matchExpressions": [{"key": "key", "operator": "In", "values": ["value"]}]}},
            {"weight": 5, "preference": {"matchExpressions": [
                {"key": "foo", "operator": "In", "values": ["bar"]},
                {"key": "key", "operator": "In", "values": ["value"]},
                {"key": "az", "operator": "In", "values": ["az1"]}]}},
        ]));
        let nodes = [
            node("node1", json!({"foo": "bar"})),
            node("node5", json!({"foo": "bar", "key": "value", "az": "az1"})),
            node("node2", json!({"key": "value"})),
        ];
        // Raw: 2, 11, 4 → 100 * raw / 11.
        assert_eq!(run_score(&plugin, &pod, &nodes), Some(vec![18, 100, 36]));
        // Nothing matches: all 0.
        let none = [node("a", json!({})), node("b", json!({"foo": "baz"}))];
        assert_eq!(run_score(&plugin, &pod, &none), Some(vec![0, 0]));
        // One node matches: it gets 100.
        let one = [node("a", json!({"foo": "bar"})), node("b", json!({}))];
        assert_eq!(run_score(&plugin, &pod, &one), Some(vec![100, 0]));
    }

    #[test]
    fn score_ignores_weightless_and_empty_preferences() {
        let plugin = plugin(Value::Null);
        let pod = preferred(json!([
            {"weight": 0, "preference": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}},
            {"weight": 3, "preference": {}},
            {"weight": 1, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}},
        ]));
        let nodes = [node("a", json!({"foo": "x"})), node("b", json!({}))];
        assert_eq!(run_score(&plugin, &pod, &nodes), Some(vec![0, 100]));
    }

    #[test]
    fn invalid_preferred_terms_are_an_error() {
        let plugin = plugin(Value::Null);
        let pod = preferred(json!([
            {"weight": 1, "preference": {"matchExpressions": [{"key": "foo", "operator": "Lt", "values": ["x"]}]}}]));
        let mut state = CycleState::new();
        let status =
            plugin
                .as_pre_score()
                .unwrap()
                .pre_score(&mut state, &pod, &[node("a", json!({}))]);
        assert_eq!(status.code(), Code::Error);
        assert!(
            status.message().contains("the value must be an integer"),
            "{status}"
        );
    }

    #[test]
    fn added_preferred_terms_score_every_pod() {
        let plugin = plugin(
            json!({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}}]}}),
        );
        let nodes = [
            node("n1", json!({"zone": "foo"})),
            node("n2", json!({"disk": "ssd"})),
            node("n3", json!({})),
        ];
        assert_eq!(
            run_score(&plugin, &pod_with(json!({})), &nodes),
            Some(vec![100, 0, 0])
        );
        let pod = preferred(json!([
            {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}]));
        // Raw: 3, 1, 0.
        assert_eq!(run_score(&plugin, &pod, &nodes), Some(vec![100, 33, 0]));
    }

    #[test]
    fn arguments_are_checked() {
        let handle = testing::handle();
        assert!(factory(&Value::Null, &handle).is_ok());
        assert!(factory(&json!({}), &handle).is_ok());
        let unknown = factory(&json!({"addedAffinities": {}}), &handle)
            .err()
            .unwrap();
        assert!(unknown.contains("unknown field"), "{unknown}");
        let invalid = factory(
            &json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "Gt", "values": ["1", "2"]}]}]}}}),
            &handle,
        )
        .err()
        .unwrap();
        assert!(
            invalid.starts_with("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"),
            "{invalid}"
        );
        assert!(
            invalid.contains("exactly one value is required"),
            "{invalid}"
        );
        let operator = factory(
            &json!({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "foo", "operator": "Foo"}]}}]}}),
            &handle,
        )
        .err()
        .unwrap();
        assert!(
            operator.contains("Unsupported value: \"Foo\""),
            "{operator}"
        );
        let key = factory(
            &json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "-bad-", "operator": "Exists"}]}]}}}),
            &handle,
        )
        .err()
        .unwrap();
        assert!(key.contains("matchExpressions[0].key"), "{key}");
    }

    #[test]
    fn default_normalization() {
        let mut scores: Vec<NodeScore> = [0, 1, 3]
            .iter()
            .map(|s| NodeScore {
                name: "",
                score: *s,
            })
            .collect();
        default_normalize_score(MAX_NODE_SCORE, false, &mut scores);
        assert_eq!(
            scores.iter().map(|s| s.score).collect::<Vec<_>>(),
            [0, 33, 100]
        );
        for s in scores.iter_mut() {
            s.score = 0;
        }
        default_normalize_score(MAX_NODE_SCORE, true, &mut scores);
        assert_eq!(
            scores.iter().map(|s| s.score).collect::<Vec<_>>(),
            [100, 100, 100]
        );
    }

    #[test]
    fn registered_by_name() {
        let registry = crate::plugins::registry();
        let plugin = registry.get(NAME).unwrap()(&Value::Null, &testing::handle()).unwrap();
        assert_eq!(plugin.name(), "NodeAffinity");
        assert!(plugin.as_pre_filter().is_some() && plugin.as_filter().is_some());
        assert!(plugin.as_pre_score().is_some() && plugin.as_score().is_some());
    }
}
