//! `NodeTable`: what the plugin reads from every node on every cycle — the value of a
//! topology key, the number of pods matching a selector, whether the node matches the
//! pod's node affinity or tolerates its taints — kept across cycles in columns indexed by a
//! slot per node name, and recomputed only for the nodes that changed.
//!
//! A node has not changed while the snapshot holds the same `NodeInfo` allocation: node
//! infos are shared immutably (the scheduler's cache replaces one that changes, it never
//! mutates a shared one). The table keeps a `Weak` to the node info it saw at each snapshot
//! position, so the allocation (and its address) cannot be reused while it is remembered,
//! and comparing addresses is exact. A cycle then costs a pointer comparison per node plus
//! the real work for the few nodes that changed since the last one.
//!
//! Filter and Score find a node's slot by its name ([`View::names`]): within a cycle the
//! node infos they get are the snapshot's (or preemption's copies of them, with the same
//! labels and taints).

use super::counting::{FastMap, matching_pods};
use super::node_inclusion::{NodeAffinity, tolerates_taints};
use crate::framework::NodeInfo;
use k8s_openapi::api::core::v1::Toleration;
use kyb_apimachinery::labels::Selector;
use std::sync::{Arc, Mutex, Weak};

/// A key column's value for a node without the label.
pub const MISSING: u32 = u32::MAX;
/// The id of the value `""` in every key column.
pub const EMPTY_VALUE: u32 = 0;

/// The most columns kept; the least recently used goes first.
const MAX_COLUMNS: usize = 64;

/// A column asked for.
#[derive(Clone, Copy, Debug)]
pub enum Request<'a> {
    /// The value of a label, as an id ([`ColumnView::ids`]), or [`MISSING`].
    Key(&'a str),
    /// How many of the node's pods count for a selector in a namespace.
    Count(&'a str, &'a Selector),
    /// 1 if the node matches the node affinity, else 0.
    Affinity(&'a NodeAffinity),
    /// 1 if the tolerations tolerate the node's `NoSchedule`/`NoExecute` taints, else 0.
    Tolerations(&'a [Toleration]),
}

#[derive(Debug)]
enum Kind {
    Key(String),
    Count(String, Selector),
    Affinity(NodeAffinity),
    Tolerations(Vec<Toleration>),
}

impl Kind {
    fn new(request: Request<'_>) -> Kind {
        match request {
            Request::Key(key) => Kind::Key(key.to_string()),
            Request::Count(namespace, selector) => {
                Kind::Count(namespace.to_string(), selector.clone())
            }
            Request::Affinity(affinity) => Kind::Affinity(affinity.clone()),
            Request::Tolerations(tolerations) => Kind::Tolerations(tolerations.to_vec()),
        }
    }

    fn is(&self, request: Request<'_>) -> bool {
        match (self, request) {
            (Kind::Key(a), Request::Key(b)) => a == b,
            (Kind::Count(ns, a), Request::Count(namespace, b)) => ns == namespace && a == b,
            (Kind::Affinity(a), Request::Affinity(b)) => a == b,
            (Kind::Tolerations(a), Request::Tolerations(b)) => a.as_slice() == b,
            _ => false,
        }
    }

    fn compute(&self, node: &NodeInfo, ids: &mut FastMap<String, u32>) -> u32 {
        match self {
            Kind::Key(key) => match node.label(key) {
                Some(value) => match ids.get(value) {
                    Some(&id) => id,
                    None => {
                        let id = u32::try_from(ids.len()).unwrap_or(MISSING - 1);
                        ids.insert(value.to_string(), id);
                        id
                    }
                },
                None => MISSING,
            },
            Kind::Count(namespace, selector) => {
                u32::try_from(matching_pods(node, selector, namespace)).unwrap_or(u32::MAX)
            }
            Kind::Affinity(affinity) => u32::from(affinity.matches(node)),
            Kind::Tolerations(tolerations) => u32::from(tolerates_taints(tolerations, node)),
        }
    }
}

/// Value ids of a key column: `""` is always [`EMPTY_VALUE`].
fn new_ids() -> FastMap<String, u32> {
    let mut ids = FastMap::default();
    ids.insert(String::new(), EMPTY_VALUE);
    ids
}

#[derive(Debug)]
struct Column {
    kind: Kind,
    /// Per slot: the node's stamp when computed.
    stamps: Vec<u64>,
    data: Arc<Vec<u32>>,
    ids: Arc<FastMap<String, u32>>,
    used: u64,
}

/// A column as of one cycle.
#[derive(Clone, Debug, Default)]
pub struct ColumnView {
    /// Per slot.
    pub data: Arc<Vec<u32>>,
    /// Key columns: value → id.
    pub ids: Arc<FastMap<String, u32>>,
}

/// The table as of one cycle.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// The slot of each snapshot position.
    pub slots: Vec<u32>,
    /// Node name → slot.
    pub names: Arc<FastMap<String, u32>>,
    /// In the order of the requests.
    pub columns: Vec<ColumnView>,
}

#[derive(Debug, Default)]
struct Table {
    /// Per snapshot position: the node info seen there, and its slot.
    positions: Vec<(Weak<NodeInfo>, u32)>,
    names: Arc<FastMap<String, u32>>,
    /// Per slot: changes whenever the node info does (0: never seen).
    stamps: Vec<u64>,
    next_stamp: u64,
    columns: Vec<Column>,
    clock: u64,
}

impl Table {
    /// Follows the snapshot's nodes: a new stamp for each slot whose node info changed.
    fn sync(&mut self, nodes: &[Arc<NodeInfo>]) {
        // Names of deleted nodes keep their slot; start over when they pile up.
        if self.names.len() > 2 * nodes.len() + 64 {
            *self = Table {
                next_stamp: self.next_stamp,
                clock: self.clock,
                ..Table::default()
            };
        }
        self.positions.truncate(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            if let Some((seen, _)) = self.positions.get(i)
                && std::ptr::eq(seen.as_ptr(), Arc::as_ptr(node))
            {
                continue;
            }
            let slot = match self.names.get(node.name.as_str()) {
                Some(&slot) => slot,
                None => {
                    let slot = u32::try_from(self.stamps.len()).unwrap_or(u32::MAX);
                    Arc::make_mut(&mut self.names).insert(node.name.clone(), slot);
                    self.stamps.push(0);
                    slot
                }
            };
            self.next_stamp += 1;
            self.stamps[slot as usize] = self.next_stamp;
            let entry = (Arc::downgrade(node), slot);
            match self.positions.get_mut(i) {
                Some(position) => *position = entry,
                None => self.positions.push(entry),
            }
        }
    }

    /// The column for a request, up to date for `nodes`.
    fn column(&mut self, nodes: &[Arc<NodeInfo>], request: Request<'_>) -> ColumnView {
        self.clock += 1;
        let index = match self.columns.iter().position(|c| c.kind.is(request)) {
            Some(index) => index,
            None => {
                if self.columns.len() >= MAX_COLUMNS
                    && let Some(oldest) = self
                        .columns
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, c)| c.used)
                        .map(|(i, _)| i)
                {
                    self.columns.swap_remove(oldest);
                }
                self.columns.push(Column {
                    kind: Kind::new(request),
                    stamps: Vec::new(),
                    data: Arc::default(),
                    ids: Arc::new(new_ids()),
                    used: 0,
                });
                self.columns.len() - 1
            }
        };
        let slots = self.stamps.len();
        let column = &mut self.columns[index];
        column.used = self.clock;
        // Value ids of nodes gone pile up too: start the column over.
        if column.ids.len() > 2 * nodes.len() + 64 {
            column.ids = Arc::new(new_ids());
            column.stamps.clear();
        }
        column.stamps.resize(slots, 0);
        let stale = self
            .positions
            .iter()
            .any(|&(_, slot)| column.stamps[slot as usize] != self.stamps[slot as usize]);
        if stale {
            let data = Arc::make_mut(&mut column.data);
            data.resize(slots, MISSING);
            let ids = Arc::make_mut(&mut column.ids);
            for (node, &(_, slot)) in nodes.iter().zip(&self.positions) {
                let slot = slot as usize;
                if column.stamps[slot] != self.stamps[slot] {
                    data[slot] = column.kind.compute(node, ids);
                    column.stamps[slot] = self.stamps[slot];
                }
            }
        }
        ColumnView {
            data: column.data.clone(),
            ids: column.ids.clone(),
        }
    }

    fn view(&mut self, nodes: &[Arc<NodeInfo>], requests: &[Request<'_>]) -> View {
        self.sync(nodes);
        let columns = requests.iter().map(|r| self.column(nodes, *r)).collect();
        View {
            slots: self.positions.iter().map(|&(_, slot)| slot).collect(),
            names: self.names.clone(),
            columns,
        }
    }
}

/// The per-node facts of the snapshot, kept across cycles.
#[derive(Debug, Default)]
pub struct NodeTable {
    table: Mutex<Table>,
}

impl NodeTable {
    /// The columns asked for, up to date for `nodes` (the snapshot's nodes, in order).
    pub fn view(&self, nodes: &[Arc<NodeInfo>], requests: &[Request<'_>]) -> View {
        let mut table = match self.table.lock() {
            Ok(table) => table,
            Err(poisoned) => {
                // A panic mid-update may have left it inconsistent: start over.
                self.table.clear_poison();
                let mut table = poisoned.into_inner();
                *table = Table::default();
                table
            }
        };
        table.view(nodes, requests)
    }
}
