//! Counting matching pods per topology domain: one pass per cycle over the snapshot's
//! nodes for every constraint of the pod (hard and soft together), reading the per-node
//! columns of the [`NodeTable`](super::node_table::NodeTable) (the node's value of each
//! topology key, its pods matching each distinct selector, whether it matches the pod's
//! node affinity or tolerates its taints), into [`Domains`]: a count per value of the
//! topology key, with the global minimum kept exact as pods are added and removed.

use super::constraints::Constraint;
use super::node_inclusion::NodeInclusion;
use super::node_table::{ColumnView, EMPTY_VALUE, MISSING, Request, View};
use crate::framework::{NodeInfo, PodInfo};
use kyb_apimachinery::labels::Selector;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A small, fast hasher for node names and topology values (short strings from node
/// objects; the FxHash mix). Not resistant to adversarial keys, which these are not.
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
    fn write_u32(&mut self, i: u32) {
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

/// The global minimum of a constraint with no domain at all (as Kubernetes).
const NO_DOMAIN: i64 = i32::MAX as i64;
/// The count of a value no eligible node has.
const ABSENT: i64 = i64::MIN;

/// Matching pods per domain (value of the topology key) of one constraint, over the
/// eligible nodes. Values are ids of the key's column; cloning copies the counts and
/// shares the ids.
#[derive(Clone, Debug)]
pub struct Domains {
    ids: Arc<FastMap<String, u32>>,
    /// Per value id ([`ABSENT`] for values no eligible node has).
    counts: Vec<i64>,
    domains: usize,
    min: i64,
}

impl Default for Domains {
    fn default() -> Self {
        Domains {
            ids: Arc::default(),
            counts: Vec::new(),
            domains: 0,
            min: NO_DOMAIN,
        }
    }
}

impl Domains {
    fn new(ids: &Arc<FastMap<String, u32>>) -> Domains {
        Domains {
            ids: ids.clone(),
            counts: vec![ABSENT; ids.len()],
            ..Domains::default()
        }
    }

    /// Adds while building (the minimum is computed by [`Domains::finish`]).
    #[inline]
    fn accumulate(&mut self, id: u32, count: i64) {
        let Some(slot) = self.counts.get_mut(id as usize) else {
            return;
        };
        if *slot == ABSENT {
            *slot = 0;
            self.domains += 1;
        }
        *slot += count;
    }

    fn finish(&mut self) {
        self.min = self.scan_min();
    }

    fn scan_min(&self) -> i64 {
        self.counts
            .iter()
            .copied()
            .filter(|&c| c != ABSENT)
            .min()
            .unwrap_or(NO_DOMAIN)
    }

    /// Adds `delta` to the domain `value` (making it a domain), keeping the minimum exact.
    pub fn update(&mut self, value: &str, delta: i64) {
        let id = match self.ids.get(value) {
            Some(&id) => id as usize,
            None => {
                let id = self.counts.len();
                Arc::make_mut(&mut self.ids)
                    .insert(value.to_string(), u32::try_from(id).unwrap_or(MISSING - 1));
                self.counts.push(ABSENT);
                id
            }
        };
        let Some(slot) = self.counts.get_mut(id) else {
            return;
        };
        let old = if *slot == ABSENT {
            self.domains += 1;
            None
        } else {
            Some(*slot)
        };
        let new = old.unwrap_or(0) + delta;
        *slot = new;
        if new < self.min {
            self.min = new;
        } else if old == Some(self.min) && new > self.min {
            self.min = self.scan_min();
        }
    }

    /// The count of a value id (0 for a value no eligible node has).
    #[inline]
    pub fn count(&self, id: u32) -> i64 {
        match self.counts.get(id as usize) {
            Some(&c) if c != ABSENT => c,
            _ => 0,
        }
    }

    /// The count of a node's value.
    #[inline]
    pub fn count_of(&self, value: NodeValue<'_>) -> i64 {
        match value {
            NodeValue::Id(id) => self.count(id),
            NodeValue::Missing | NodeValue::Unknown(_) => 0,
        }
    }

    /// How many domains there are.
    pub fn len(&self) -> usize {
        self.domains
    }

    /// The smallest count of any domain (`i32::MAX` when there is none, as Kubernetes).
    pub fn min(&self) -> i64 {
        self.min
    }
}

/// A node's value of a topology key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeValue<'n> {
    /// The node does not have the label.
    Missing,
    /// The value, by its id in the key's column.
    Id(u32),
    /// A value the column has never seen (a node outside the snapshot).
    Unknown(&'n str),
}

/// The value of `key` on a node: from the column when the node has a slot, else from its
/// labels.
#[inline]
pub fn node_value<'n>(
    slot: Option<usize>,
    node: &'n NodeInfo,
    key: &str,
    column: &ColumnView,
) -> NodeValue<'n> {
    if let Some(&id) = slot.and_then(|s| column.data.get(s)) {
        return if id == MISSING {
            NodeValue::Missing
        } else {
            NodeValue::Id(id)
        };
    }
    match node.label(key) {
        None => NodeValue::Missing,
        Some(value) => match column.ids.get(value) {
            Some(&id) => NodeValue::Id(id),
            None => NodeValue::Unknown(value),
        },
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

/// Whether the node has every constraint's topology key (from its labels).
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

/// The columns a constraint reads.
#[derive(Clone, Debug, Default)]
pub struct ConstraintColumns {
    /// The value of its topology key per node.
    pub key: ColumnView,
    /// Its matching pods per node.
    pub count: ColumnView,
}

/// The columns to ask the node table for, and which each constraint reads.
pub struct Plan<'a> {
    pub requests: Vec<Request<'a>>,
    /// Per group, per constraint: (key column, count column).
    columns: Vec<Vec<(usize, usize)>>,
    affinity: Option<usize>,
    tolerations: Option<usize>,
}

impl<'a> Plan<'a> {
    pub fn new(groups: &[Group<'a>], namespace: &'a str, inclusion: &'a NodeInclusion) -> Plan<'a> {
        let mut requests: Vec<Request<'a>> = Vec::new();
        let mut index = |request: Request<'a>| -> usize {
            let same = |r: &Request<'a>| match (r, &request) {
                (Request::Key(a), Request::Key(b)) => a == b,
                (Request::Count(n, a), Request::Count(m, b)) => n == m && a == b,
                _ => false,
            };
            match requests.iter().position(same) {
                Some(i) => i,
                None => {
                    requests.push(request);
                    requests.len() - 1
                }
            }
        };
        let columns = groups
            .iter()
            .map(|g| {
                g.constraints
                    .iter()
                    .map(|c| {
                        (
                            index(Request::Key(&c.topology_key)),
                            index(Request::Count(namespace, &c.selector)),
                        )
                    })
                    .collect()
            })
            .collect();
        let all = || groups.iter().flat_map(|g| g.constraints.iter());
        let affinity =
            (inclusion.affinity.is_set() && all().any(|c| c.honor_node_affinity)).then(|| {
                requests.push(Request::Affinity(&inclusion.affinity));
                requests.len() - 1
            });
        let tolerations = all().any(|c| c.honor_node_taints).then(|| {
            requests.push(Request::Tolerations(&inclusion.tolerations));
            requests.len() - 1
        });
        Plan {
            requests,
            columns,
            affinity,
            tolerations,
        }
    }

    /// The columns each constraint of group `g` reads.
    pub fn columns_of(&self, view: &View, g: usize) -> Vec<ConstraintColumns> {
        self.columns
            .get(g)
            .into_iter()
            .flatten()
            .map(|&(key, count)| ConstraintColumns {
                key: view.columns[key].clone(),
                count: view.columns[count].clone(),
            })
            .collect()
    }

    /// Counts, in one pass over the snapshot's nodes, the matching pods of each constraint
    /// of each group per domain (an empty [`Domains`] for skipped hostname constraints).
    pub fn count(&self, view: &View, groups: &[Group<'_>]) -> Vec<Vec<Domains>> {
        let data = |i: usize| view.columns[i].data.as_slice();
        let mut out: Vec<Vec<Domains>> = groups
            .iter()
            .zip(&self.columns)
            .map(|(g, columns)| {
                g.constraints
                    .iter()
                    .zip(columns)
                    .map(|(c, &(key, _))| {
                        if g.skip_hostname && c.is_hostname() {
                            Domains::default()
                        } else {
                            Domains::new(&view.columns[key].ids)
                        }
                    })
                    .collect()
            })
            .collect();
        let affinity = self.affinity.map(data);
        let tolerations = self.tolerations.map(data);
        for &slot in &view.slots {
            let slot = slot as usize;
            for ((group, columns), domains) in groups.iter().zip(&self.columns).zip(&mut out) {
                if group.require_all_keys
                    && columns
                        .iter()
                        .any(|&(key, _)| data(key).get(slot).is_none_or(|&v| v == MISSING))
                {
                    continue;
                }
                for ((constraint, &(key, count)), domains) in
                    group.constraints.iter().zip(columns).zip(domains)
                {
                    if group.skip_hostname && constraint.is_hostname() {
                        continue;
                    }
                    let excluded = |column: Option<&[u32]>| {
                        column.is_some_and(|c| c.get(slot).copied().unwrap_or(0) == 0)
                    };
                    if (constraint.honor_node_affinity && excluded(affinity))
                        || (constraint.honor_node_taints && excluded(tolerations))
                    {
                        continue;
                    }
                    let id = match data(key).get(slot) {
                        Some(&MISSING) | None => EMPTY_VALUE,
                        Some(&id) => id,
                    };
                    let matching = data(count).get(slot).copied().unwrap_or(0);
                    domains.accumulate(id, i64::from(matching));
                }
            }
        }
        for domains in out.iter_mut().flatten() {
            domains.finish();
        }
        out
    }
}
