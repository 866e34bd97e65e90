//! Counting matching pods per topology domain: one pass over the snapshot's nodes per
//! cycle for every constraint of the pod (hard and soft together), counting each node's
//! pods once per distinct selector, into [`Domains`] (a count per value of the topology
//! key, with the global minimum kept up to date as pods are added and removed).

use super::constraints::Constraint;
use super::node_inclusion::NodeInclusion;
use crate::framework::{NodeInfo, PodInfo};
use kyb_api::labels::Selector;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A small, fast hasher for topology values (short strings from node labels; the FxHash
/// mix). Not resistant to adversarial keys, which node labels are not.
#[derive(Clone, Copy, Default)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// The labels of a node without any.
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// The global minimum of a constraint with no domain at all.
const NO_DOMAIN: i64 = i32::MAX as i64;

/// Matching pods per domain (value of the topology key) of one constraint. Cloning copies
/// the counts and shares the domain index.
#[derive(Clone, Debug)]
pub struct Domains {
    slots: Arc<FastMap<String, usize>>,
    counts: Vec<i64>,
    min: i64,
}

impl Default for Domains {
    fn default() -> Self {
        Domains {
            slots: Arc::default(),
            counts: Vec::new(),
            min: NO_DOMAIN,
        }
    }
}

impl Domains {
    fn slot(&mut self, value: &str) -> (usize, bool) {
        if let Some(&slot) = self.slots.get(value) {
            return (slot, false);
        }
        let slot = self.counts.len();
        Arc::make_mut(&mut self.slots).insert(value.to_string(), slot);
        self.counts.push(0);
        (slot, true)
    }

    /// Adds while building (the minimum is computed by [`Domains::finish`]).
    fn accumulate(&mut self, value: &str, count: i64) {
        let (slot, _) = self.slot(value);
        self.counts[slot] += count;
    }

    fn finish(&mut self) {
        self.min = self.counts.iter().copied().min().unwrap_or(NO_DOMAIN);
    }

    /// Adds `delta` to a domain (creating it), keeping the minimum exact.
    pub fn update(&mut self, value: &str, delta: i64) {
        let (slot, _) = self.slot(value);
        let old = self.counts[slot];
        let new = old + delta;
        self.counts[slot] = new;
        if new < self.min {
            self.min = new;
        } else if old == self.min && new > old {
            self.min = self.counts.iter().copied().min().unwrap_or(NO_DOMAIN);
        }
    }

    /// The count of a domain (`None`: no eligible node has this value).
    pub fn get(&self, value: &str) -> Option<i64> {
        self.slots.get(value).map(|&slot| self.counts[slot])
    }

    /// How many domains there are.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// The smallest count of any domain (`i32::MAX` when there is none, as Kubernetes).
    pub fn min(&self) -> i64 {
        self.min
    }
}

/// Whether a pod counts for a selector: in the namespace, not terminating, matching (an
/// empty selector counts nothing).
#[inline]
pub fn counts_pod(selector: &Selector, namespace: &str, pod: &PodInfo) -> bool {
    !selector.is_empty()
        && pod.namespace == namespace
        && !pod.terminating()
        && selector.matches_pairs(|key| pod.label(key))
}

/// The node's pods counting for a selector.
pub fn matching_pods(node: &NodeInfo, selector: &Selector, namespace: &str) -> i64 {
    if selector.is_empty() {
        return 0;
    }
    node.pods
        .iter()
        .filter(|p| counts_pod(selector, namespace, p))
        .count() as i64
}

/// Whether the node has every constraint's topology key.
pub fn has_all_keys(node: &NodeInfo, constraints: &[Constraint]) -> bool {
    let labels = node.labels().unwrap_or(&NO_LABELS);
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

/// Constraints counted together, with their eligibility rules.
pub struct Group<'c> {
    pub constraints: &'c [Constraint],
    /// A node counts only if it has every constraint's key (otherwise a node missing a key
    /// counts in the domain `""`).
    pub require_all_keys: bool,
    /// Hostname constraints are not counted (Score counts per node).
    pub skip_hostname: bool,
}

/// Whether the node counts for a constraint under its inclusion policies (`affinity` and
/// `taints` cache the node's answers).
#[inline]
pub fn included(
    constraint: &Constraint,
    inclusion: &NodeInclusion,
    node: &NodeInfo,
    affinity: &mut Option<bool>,
    taints: &mut Option<bool>,
) -> bool {
    if constraint.honor_node_affinity
        && inclusion.has_node_affinity()
        && !*affinity.get_or_insert_with(|| inclusion.matches_node_affinity(node))
    {
        return false;
    }
    !constraint.honor_node_taints
        || *taints.get_or_insert_with(|| inclusion.tolerates_node_taints(node))
}

/// Counts, in one pass over `nodes`, the pods of `namespace` matching each constraint of
/// each group, per domain. The result has a [`Domains`] per constraint per group (empty for
/// skipped hostname constraints).
pub fn count(
    nodes: &[Arc<NodeInfo>],
    namespace: &str,
    inclusion: &NodeInclusion,
    groups: &[Group<'_>],
) -> Vec<Vec<Domains>> {
    let mut selectors: Vec<&Selector> = Vec::new();
    let ids: Vec<Vec<usize>> = groups
        .iter()
        .map(|g| {
            g.constraints
                .iter()
                .map(|c| match selectors.iter().position(|s| **s == c.selector) {
                    Some(id) => id,
                    None => {
                        selectors.push(&c.selector);
                        selectors.len() - 1
                    }
                })
                .collect()
        })
        .collect();
    let mut out: Vec<Vec<Domains>> = groups
        .iter()
        .map(|g| vec![Domains::default(); g.constraints.len()])
        .collect();
    let mut counted: Vec<Option<i64>> = vec![None; selectors.len()];
    for node in nodes {
        let labels = node.labels().unwrap_or(&NO_LABELS);
        counted.fill(None);
        let (mut affinity, mut taints) = (None, None);
        for ((group, ids), domains) in groups.iter().zip(&ids).zip(&mut out) {
            if group.require_all_keys && !has_all_keys(node, group.constraints) {
                continue;
            }
            for ((constraint, &id), domains) in group.constraints.iter().zip(ids).zip(domains) {
                if group.skip_hostname && constraint.is_hostname() {
                    continue;
                }
                if !included(constraint, inclusion, node, &mut affinity, &mut taints) {
                    continue;
                }
                let value = labels
                    .get(&constraint.topology_key)
                    .map_or("", String::as_str);
                let count = *counted[id]
                    .get_or_insert_with(|| matching_pods(node, selectors[id], namespace));
                domains.accumulate(value, count);
            }
        }
    }
    for domains in out.iter_mut().flatten() {
        domains.finish();
    }
    out
}
