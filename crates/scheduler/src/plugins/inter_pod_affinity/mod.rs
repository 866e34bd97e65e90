//! InterPodAffinity: pod affinity and anti-affinity. A pod with required affinity terms
//! runs only in topology domains (the nodes sharing a value of the term's `topologyKey`)
//! already holding pods its terms select; a pod with required anti-affinity terms never
//! shares a domain with pods they select; and no pod goes where it would break the required
//! anti-affinity of pods already there. Preferred terms, of the incoming pod and of the
//! existing ones, weigh on the score.
//!
//! Points:
//! - PreFilter ([`filtering`]): counts, per topology domain, the existing pods matching all
//!   the incoming pod's required affinity terms, those matching each of its required
//!   anti-affinity terms, and the existing pods whose required anti-affinity terms match
//!   the incoming pod. Namespace selectors are resolved through the lister's namespace
//!   labels. Skips pods that have no required terms when no existing pod's anti-affinity
//!   selects them.
//! - PreFilterExtensions: AddPod/RemovePod update those counts (preemption's what-ifs).
//! - Filter: `node(s) didn't match pod affinity rules` (UnschedulableAndUnresolvable),
//!   `node(s) didn't match pod anti-affinity rules` and `node(s) didn't satisfy existing
//!   pods anti-affinity rules` (Unschedulable: evicting pods may help). A node without a
//!   term's topology key is in no domain: it never satisfies affinity and never conflicts
//!   through that term. The first pod of a group whose affinity selects itself may go
//!   anywhere having the topology keys when no pod in the cluster matches its terms yet.
//! - PreScore / Score ([`scoring`]): per domain, the incoming pod's preferred affinity
//!   weights (minus its preferred anti-affinity weights) for the existing pods they select,
//!   plus the existing pods' preferred affinity (minus anti-affinity) weights and
//!   `hardPodAffinityWeight` per required affinity term that select the incoming pod; a
//!   node scores the sum over its domains, min-max normalized to 0..100.
//!
//! The scoring map is built during PreFilter, which sees the cycle's whole snapshot
//! (PreScore only sees the nodes that passed Filter, while every pod in the cluster counts);
//! the result is the one Kubernetes computes in PreScore from the same snapshot.
//!
//! Args (`InterPodAffinityArgs`): `hardPodAffinityWeight` (0..=100, default 1),
//! `ignorePreferredTermsOfExistingPods` (default false: when set, a pod without preferred
//! terms of its own is not scored at all).

mod filtering;
mod scoring;

use crate::framework::{
    AffinityTerm, ClusterEvent, CycleState, FilterPlugin, Handle, Lister, NodeInfo, Plugin,
    PodInfo, PreFilterExtensions, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin,
    Snapshot, Status,
};
use kyb_apimachinery::labels::Selector;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

pub const NAME: &str = "InterPodAffinity";

/// The incoming pod's required affinity is not satisfied on the node.
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
/// The incoming pod's required anti-affinity is violated on the node.
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";
/// An existing pod's required anti-affinity would be violated on the node.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

const MAX_HARD_POD_AFFINITY_WEIGHT: i32 = 100;

/// `InterPodAffinityArgs`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    #[serde(rename = "apiVersion")]
    _api_version: Option<String>,
    #[serde(rename = "kind")]
    _kind: Option<String>,
    #[serde(default = "default_hard_pod_affinity_weight")]
    hard_pod_affinity_weight: i32,
    #[serde(default)]
    ignore_preferred_terms_of_existing_pods: bool,
}

fn default_hard_pod_affinity_weight() -> i32 {
    1
}

impl Default for Args {
    fn default() -> Self {
        Args {
            _api_version: None,
            _kind: None,
            hard_pod_affinity_weight: default_hard_pod_affinity_weight(),
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

/// The plugin.
pub struct InterPodAffinity {
    hard_pod_affinity_weight: i64,
    ignore_preferred_terms_of_existing_pods: bool,
    lister: Arc<dyn Lister>,
}

/// Builds InterPodAffinity from its `InterPodAffinityArgs`.
pub fn factory(args: &Value, handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    let args: Args = if args.is_null() {
        Args::default()
    } else {
        serde_json::from_value(args.clone()).map_err(|e| format!("InterPodAffinityArgs: {e}"))?
    };
    if !(0..=MAX_HARD_POD_AFFINITY_WEIGHT).contains(&args.hard_pod_affinity_weight) {
        return Err(format!(
            "hardPodAffinityWeight: Invalid value: {}: not in valid range [0, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
            args.hard_pod_affinity_weight
        ));
    }
    Ok(Arc::new(InterPodAffinity {
        hard_pod_affinity_weight: i64::from(args.hard_pod_affinity_weight),
        ignore_preferred_terms_of_existing_pods: args.ignore_preferred_terms_of_existing_pods,
        lister: handle.lister.clone(),
    }))
}

/// Counts (or scores) per topology domain: topology key → value → count. Looked up by
/// `&str` on both levels, so per-node reads allocate nothing.
#[derive(Clone, Debug, Default)]
struct TopologyCounts {
    by_key: HashMap<String, HashMap<String, i64>>,
}

impl TopologyCounts {
    /// Adds `delta` to the domain of `node` for `key` (nodes without the key are in no
    /// domain); a count back to zero is dropped when `drop_zero`.
    fn add(&mut self, node: &NodeInfo, key: &str, delta: i64, drop_zero: bool) {
        let Some(value) = node.label(key) else {
            return;
        };
        match self.by_key.get_mut(key) {
            Some(values) => match values.get_mut(value) {
                Some(count) => {
                    *count += delta;
                    if drop_zero && *count == 0 {
                        values.remove(value);
                        if values.is_empty() {
                            self.by_key.remove(key);
                        }
                    }
                }
                None => {
                    if !(drop_zero && delta == 0) {
                        values.insert(value.to_string(), delta);
                    }
                }
            },
            None => {
                if !(drop_zero && delta == 0) {
                    self.by_key
                        .insert(key.to_string(), HashMap::from([(value.to_string(), delta)]));
                }
            }
        }
    }

    /// The count of one domain.
    fn get(&self, key: &str, value: &str) -> i64 {
        self.by_key
            .get(key)
            .and_then(|values| values.get(value))
            .copied()
            .unwrap_or(0)
    }

    fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Whether any domain the node is in has a positive count.
    fn positive_on(&self, node: &NodeInfo) -> bool {
        self.by_key.iter().any(|(key, values)| {
            node.label(key)
                .and_then(|value| values.get(value))
                .is_some_and(|count| *count > 0)
        })
    }

    /// The sum of the counts of the domains the node is in.
    fn sum_on(&self, node: &NodeInfo) -> i64 {
        self.by_key
            .iter()
            .filter_map(|(key, values)| node.label(key).and_then(|value| values.get(value)))
            .sum()
    }
}

/// Namespace labels, each namespace looked up at most once.
struct NamespaceLabels<'a> {
    lister: &'a dyn Lister,
    cache: HashMap<String, Option<Map<String, Value>>>,
}

impl<'a> NamespaceLabels<'a> {
    fn new(lister: &'a dyn Lister) -> Self {
        NamespaceLabels {
            lister,
            cache: HashMap::new(),
        }
    }

    fn get(&mut self, namespace: &str) -> Option<&Map<String, Value>> {
        if !self.cache.contains_key(namespace) {
            let labels = self.lister.namespace_labels(namespace);
            self.cache.insert(namespace.to_string(), labels);
        }
        self.cache.get(namespace).and_then(Option::as_ref)
    }
}

/// Whether the incoming pod's namespace selector selects a namespace with `labels`: the
/// namespaces that exist with matching labels (an empty selector: every namespace), as
/// Kubernetes resolves the incoming pod's selectors into namespace names.
fn selects_namespace(selector: Option<&Selector>, labels: Option<&Map<String, Value>>) -> bool {
    match selector {
        None => false,
        Some(selector) if selector.is_empty() => true,
        Some(selector) => labels.is_some_and(|labels| selector.matches(Some(labels))),
    }
}

/// Whether a term of the incoming pod selects `pod`.
fn incoming_term_matches(
    term: &AffinityTerm,
    pod: &PodInfo,
    namespaces: &mut NamespaceLabels<'_>,
) -> bool {
    // The namespace first: in a shared cluster most pods fail there, cheaply.
    let selects_pod = || term.selector.matches_pairs(|key| pod.label(key));
    if term.namespaces.contains(&pod.namespace) {
        return selects_pod();
    }
    match &term.namespace_selector {
        None => false,
        Some(selector) => {
            selects_pod()
                && (selector.is_empty()
                    || selects_namespace(Some(selector), namespaces.get(&pod.namespace)))
        }
    }
}

/// Whether `pod` matches all `terms` of the incoming pod (no terms: false).
fn incoming_terms_all_match(
    terms: &[AffinityTerm],
    pod: &PodInfo,
    namespaces: &mut NamespaceLabels<'_>,
) -> bool {
    !terms.is_empty()
        && terms
            .iter()
            .all(|t| incoming_term_matches(t, pod, namespaces))
}

/// Whether the incoming pod (in a namespace with `labels`) matches all its own `terms` (no
/// terms: false).
fn own_terms_all_match(
    terms: &[AffinityTerm],
    pod: &PodInfo,
    labels: Option<&Map<String, Value>>,
) -> bool {
    !terms.is_empty()
        && terms.iter().all(|t| {
            t.selector.matches_pairs(|key| pod.label(key))
                && (t.namespaces.contains(&pod.namespace)
                    || selects_namespace(t.namespace_selector.as_ref(), labels))
        })
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn events(&self) -> &'static [ClusterEvent] {
        &[
            ClusterEvent::NodeAdd,
            ClusterEvent::NodeUpdate,
            ClusterEvent::PodAdd,
            ClusterEvent::PodUpdate,
            ClusterEvent::PodDelete,
        ]
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

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        // Existing pods' terms are matched against the incoming pod's namespace labels;
        // only nodes with affinity pods hold such terms.
        let scanned_labels = !snapshot.with_affinity.is_empty();
        let mut own_namespace_labels = if scanned_labels {
            self.lister.namespace_labels(&pod.namespace)
        } else {
            None
        };
        let mut namespaces = NamespaceLabels::new(self.lister.as_ref());
        let has_required =
            !pod.required_affinity.is_empty() || !pod.required_anti_affinity.is_empty();
        let has_preferred =
            !pod.preferred_affinity.is_empty() || !pod.preferred_anti_affinity.is_empty();
        let scoring = has_preferred || !self.ignore_preferred_terms_of_existing_pods;

        let mut filter = filtering::Counts::default();
        let mut scores = TopologyCounts::default();
        let context = scoring::Context {
            pod,
            own_namespace_labels: own_namespace_labels.as_ref(),
            hard_pod_affinity_weight: self.hard_pod_affinity_weight,
        };
        let mut visit =
            |node: &NodeInfo, pods: &[Arc<PodInfo>], namespaces: &mut NamespaceLabels<'_>| {
                // Every count and score belongs to a domain of the node: without labels, none.
                if node.labels().is_none_or(|l| l.is_empty()) {
                    return;
                }
                for existing in pods {
                    filter.add_existing_pod(
                        pod,
                        own_namespace_labels.as_ref(),
                        existing,
                        node,
                        1,
                        namespaces,
                    );
                    if scoring {
                        context.add_existing_pod(&mut scores, existing, node, namespaces);
                    }
                }
            };
        if has_required || has_preferred {
            // The incoming pod's terms may select any pod.
            for node in &snapshot.nodes {
                visit(node, &node.pods, &mut namespaces);
            }
        } else {
            // Only pods with terms of their own count.
            for node in snapshot.nodes_with_affinity() {
                visit(node, &node.pods_with_affinity, &mut namespaces);
            }
        }

        if scoring {
            state.write(PRE_SCORE_KEY, scoring::ScoreState(Arc::new(scores)));
        }
        if filter.existing_anti_affinity.is_empty() && !has_required {
            return (None, Status::skip());
        }
        if !scanned_labels {
            own_namespace_labels = self.lister.namespace_labels(&pod.namespace);
        }
        let matches_own_affinity_terms =
            own_terms_all_match(&pod.required_affinity, pod, own_namespace_labels.as_ref());
        state.write(
            PRE_FILTER_KEY,
            filtering::PreFilterState {
                counts: filter,
                own_namespace_labels,
                matches_own_affinity_terms,
            },
        );
        (None, Status::success())
    }

    fn extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for InterPodAffinity {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        self.update_with_pod(state, pod, added, node, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &Arc<PodInfo>,
        node: &NodeInfo,
    ) -> Status {
        self.update_with_pod(state, pod, removed, node, -1)
    }
}

impl InterPodAffinity {
    fn update_with_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        other: &PodInfo,
        node: &NodeInfo,
        delta: i64,
    ) -> Status {
        let Some(s) = state.read_mut::<filtering::PreFilterState>(PRE_FILTER_KEY) else {
            return Status::error(format!(
                "reading {PRE_FILTER_KEY:?} from cycleState: not found"
            ));
        };
        let mut namespaces = NamespaceLabels::new(self.lister.as_ref());
        s.counts.add_existing_pod(
            pod,
            s.own_namespace_labels.as_ref(),
            other,
            node,
            delta,
            &mut namespaces,
        );
        Status::success()
    }
}

#[cfg(test)]
mod tests;
