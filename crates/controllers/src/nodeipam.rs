//! The node IPAM controller (kube-controller-manager's `node-ipam-controller` with the
//! range allocator): when `--allocate-node-cidrs` is on, each node without a pod CIDR
//! gets the next free `/--node-cidr-mask-size` block of `--cluster-cidr` as
//! `spec.podCIDR` and `spec.podCIDRs` (one per family for a dual-stack `a,b` cluster CIDR;
//! IPv6 blocks are /64). Blocks nodes already hold are taken as used at start; a deleted
//! node's blocks are freed. When the range is exhausted the node gets the event
//! `CIDRNotAvailable` and is retried later.

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Informer, ObjectKey};
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const NAME: &str = "node-ipam-controller";
/// The service account kube-controller-manager runs this controller as.
const SERVICE_ACCOUNT: &str = "node-controller";
/// The prefix length of IPv6 node blocks.
const IPV6_MASK: u8 = 64;

/// Hands out the blocks of one cluster CIDR.
#[derive(Debug)]
pub struct Allocator {
    v6: bool,
    /// The network's first address.
    base: u128,
    /// The network's and each block's prefix lengths.
    prefix: u8,
    mask: u8,
    /// How many blocks there are (capped at 2^32).
    blocks: u64,
    used: BTreeSet<u64>,
    /// Where the next search starts.
    next: u64,
}

impl Allocator {
    /// An allocator of `/mask` blocks of `cidr` (e.g. `10.42.0.0/16`, 24).
    pub fn new(cidr: &str, mask: u8) -> anyhow::Result<Allocator> {
        let (address, prefix) = cidr
            .trim()
            .split_once('/')
            .with_context(|| format!("cluster CIDR {cidr:?} has no prefix length"))?;
        let address: IpAddr = address
            .parse()
            .with_context(|| format!("cluster CIDR {cidr:?}"))?;
        let prefix: u8 = prefix
            .parse()
            .with_context(|| format!("cluster CIDR {cidr:?}"))?;
        let (v6, bits, value) = match address {
            IpAddr::V4(a) => (false, 32u8, u128::from(u32::from(a))),
            IpAddr::V6(a) => (true, 128u8, u128::from(a)),
        };
        anyhow::ensure!(
            prefix <= mask && mask <= bits,
            "node CIDR mask /{mask} does not fit cluster CIDR {cidr}"
        );
        let host_bits = u32::from(bits - prefix);
        let network_mask = if host_bits >= 128 {
            0
        } else {
            !((1u128 << host_bits) - 1)
        };
        let base = value
            & network_mask
            & if bits == 32 {
                u128::from(u32::MAX)
            } else {
                u128::MAX
            };
        let blocks = 1u64 << u32::from(mask - prefix).min(32);
        Ok(Allocator {
            v6,
            base,
            prefix,
            mask,
            blocks,
            used: BTreeSet::new(),
            next: 0,
        })
    }

    fn bits(&self) -> u8 {
        if self.v6 { 128 } else { 32 }
    }

    fn format(&self, index: u64) -> String {
        let shift = u32::from(self.bits() - self.mask);
        let value = self.base | (u128::from(index) << shift);
        let address = if self.v6 {
            IpAddr::V6(value.into())
        } else {
            IpAddr::V4((value as u32).into())
        };
        format!("{address}/{}", self.mask)
    }

    /// The block index of `cidr` if it is one of this allocator's blocks.
    fn index_of(&self, cidr: &str) -> Option<u64> {
        let (address, mask) = cidr.split_once('/')?;
        if mask.parse::<u8>().ok()? != self.mask {
            return None;
        }
        let value = match address.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) if !self.v6 => u128::from(u32::from(a)),
            IpAddr::V6(a) if self.v6 => u128::from(a),
            _ => return None,
        };
        let shift = u32::from(self.bits() - self.mask);
        let network_shift = u32::from(self.bits() - self.prefix);
        if network_shift < 128 && value >> network_shift != self.base >> network_shift {
            return None;
        }
        let index = ((value - self.base) >> shift) as u64;
        (index < self.blocks).then_some(index)
    }

    /// Marks `cidr` used (if it is ours); returns whether it is.
    pub fn occupy(&mut self, cidr: &str) -> Option<u64> {
        let index = self.index_of(cidr)?;
        self.used.insert(index);
        Some(index)
    }

    /// The next free block, marked used; `None` when the range is exhausted.
    pub fn allocate(&mut self) -> Option<(u64, String)> {
        if self.used.len() as u64 >= self.blocks {
            return None;
        }
        let mut index = self.next % self.blocks;
        while self.used.contains(&index) {
            index = (index + 1) % self.blocks;
        }
        self.used.insert(index);
        self.next = (index + 1) % self.blocks;
        Some((index, self.format(index)))
    }

    pub fn release(&mut self, index: u64) {
        self.used.remove(&index);
    }

    /// Whether this allocator's family matches `cidr`'s.
    fn family_of(&self, cidr: &str) -> bool {
        cidr.contains(':') == self.v6
    }
}

#[derive(Default)]
struct State {
    allocators: Vec<Allocator>,
    /// Blocks each node holds: (allocator, index).
    held: HashMap<String, Vec<(usize, u64)>>,
}

impl State {
    /// Records the blocks `node` holds.
    fn occupy(&mut self, node: &Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let spec = node.spec.as_ref();
        let cidrs: Vec<String> = spec
            .and_then(|s| s.pod_cidrs.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| spec.and_then(|s| s.pod_cidr.clone()).map(|c| vec![c]))
            .unwrap_or_default();
        let mut held = vec![];
        for cidr in &cidrs {
            for (i, allocator) in self.allocators.iter_mut().enumerate() {
                if allocator.family_of(cidr)
                    && let Some(index) = allocator.occupy(cidr)
                {
                    held.push((i, index));
                }
            }
        }
        self.held.insert(name, held);
    }

    fn release(&mut self, name: &str) {
        for (i, index) in self.held.remove(name).unwrap_or_default() {
            if let Some(a) = self.allocators.get_mut(i) {
                a.release(index);
            }
        }
    }
}

struct Ipam {
    nodes: Arc<Informer<Node>>,
    client: kube::Client,
    recorder: Recorder,
    state: Mutex<State>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    if !ctx.options.allocate_node_cidrs {
        tracing::info!("node CIDR allocation is off (--allocate-node-cidrs=false)");
        return Ok(());
    }
    let mut allocators = vec![];
    for cidr in ctx.options.cluster_cidr.split(',') {
        let mask = if cidr.contains(':') {
            IPV6_MASK
        } else {
            ctx.options.node_cidr_mask_size
        };
        allocators.push(Allocator::new(cidr, mask)?);
    }
    let nodes = ctx.informers.get::<Node>();
    let client = ctx
        .client_for(SERVICE_ACCOUNT)
        .await
        .context("node IPAM controller client")?;
    nodes.wait_synced().await;
    let mut state = State {
        allocators,
        held: HashMap::new(),
    };
    for node in nodes.list() {
        state.occupy(&node);
    }
    let reconciler = Arc::new(Ipam {
        nodes: nodes.clone(),
        client,
        recorder: ctx.recorder("node-controller"),
        state: Mutex::new(state),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    nodes.on_change(move |change| queue.add(ObjectKey::of(change.object().as_ref())));
    controller.run(1).await;
    Ok(())
}

impl Ipam {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Reconciler for Ipam {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let name = key.name.as_str();
        let Some(node) = self.nodes.get_key(key) else {
            self.state().release(name);
            return Ok(Action::Done);
        };
        let has_cidr = node
            .spec
            .as_ref()
            .is_some_and(|s| s.pod_cidr.as_deref().is_some_and(|c| !c.is_empty()));
        if has_cidr {
            let mut state = self.state();
            if state.held.get(name).is_none_or(|h| h.is_empty()) {
                state.occupy(&node);
            }
            return Ok(Action::Done);
        }
        let taken = {
            let mut state = self.state();
            state.release(name);
            let mut taken = vec![];
            let mut exhausted = false;
            for (i, allocator) in state.allocators.iter_mut().enumerate() {
                match allocator.allocate() {
                    Some((index, cidr)) => taken.push((i, index, cidr)),
                    None => exhausted = true,
                }
            }
            if exhausted {
                for (i, index, _) in &taken {
                    if let Some(a) = state.allocators.get_mut(*i) {
                        a.release(*index);
                    }
                }
                None
            } else {
                state.held.insert(
                    name.to_string(),
                    taken.iter().map(|(i, index, _)| (*i, *index)).collect(),
                );
                Some(taken)
            }
        };
        let Some(taken) = taken else {
            self.recorder.normal(
                node.as_ref(),
                "CIDRNotAvailable",
                format!("Node {name} status is now: CIDRNotAvailable"),
            );
            return Ok(Action::RequeueAfter(Duration::from_secs(30)));
        };
        let cidrs: Vec<&str> = taken.iter().map(|(_, _, c)| c.as_str()).collect();
        let patch = json!({"spec": {"podCIDR": cidrs.first(), "podCIDRs": cidrs}});
        let api: Api<Node> = Api::all(self.client.clone());
        if let Err(error) = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            self.state().release(name);
            return Err(error).with_context(|| format!("setting the pod CIDR of node {name}"));
        }
        tracing::debug!(node = %name, cidrs = ?cidrs, "pod CIDR allocated");
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn allocates_in_order_skipping_used_blocks() {
        let mut a = Allocator::new("10.42.0.0/16", 24).unwrap();
        assert_eq!(a.occupy("10.42.1.0/24"), Some(1));
        assert_eq!(a.occupy("10.43.1.0/24"), None);
        assert_eq!(a.occupy("10.42.2.0/25"), None);
        assert_eq!(a.allocate().unwrap().1, "10.42.0.0/24");
        assert_eq!(a.allocate().unwrap().1, "10.42.2.0/24");
        a.release(1);
        assert_eq!(a.allocate().unwrap().1, "10.42.3.0/24");
    }

    #[test]
    fn exhaustion_and_reuse() {
        let mut a = Allocator::new("10.0.0.0/30", 31).unwrap();
        assert_eq!(a.allocate().unwrap().1, "10.0.0.0/31");
        assert_eq!(a.allocate().unwrap().1, "10.0.0.2/31");
        assert!(a.allocate().is_none());
        a.release(0);
        assert_eq!(a.allocate().unwrap().1, "10.0.0.0/31");
    }

    #[test]
    fn ipv6_and_bad_input() {
        let mut a = Allocator::new("fd00:10::/48", 64).unwrap();
        assert_eq!(a.allocate().unwrap().1, "fd00:10::/64");
        assert_eq!(a.allocate().unwrap().1, "fd00:10:0:1::/64");
        assert_eq!(a.occupy("fd00:10:0:5::/64"), Some(5));
        assert!(Allocator::new("10.0.0.0/24", 16).is_err());
        assert!(Allocator::new("nonsense", 24).is_err());
        // A host address in the cluster CIDR is masked to its network.
        let mut b = Allocator::new("10.42.7.9/16", 24).unwrap();
        assert_eq!(b.allocate().unwrap().1, "10.42.0.0/24");
    }
}
