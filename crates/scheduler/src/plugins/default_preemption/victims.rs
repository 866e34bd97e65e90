//! The fewest pods to evict from one node for the preemptor to fit there, found on a copy
//! of the node and of the cycle state: every lower-priority pod removed, then as many as
//! possible put back, the most important first, those protected by a disruption budget
//! before the others.

use super::pdb::Budgets;
use crate::framework::{CycleState, Framework, NodeInfo, PodInfo, Status};
use std::cmp::Ordering;
use std::sync::Arc;

/// The reason of a node holding no pod of lower priority than the preemptor.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// When a pod started, in nanoseconds since the epoch; `now` for a pod not started yet
/// (assumed or bound, not running).
pub fn start_time(pod: &PodInfo, now: i128) -> i128 {
    pod.pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(now, |t| t.0.as_nanosecond())
}

/// Kubernetes' `MoreImportantPod` as an ordering: higher priority first, then the one
/// that started earlier.
pub fn importance(a: &PodInfo, b: &PodInfo, now: i128) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| start_time(a, now).cmp(&start_time(b, now)))
}

/// The victims chosen on a node.
#[derive(Clone, Debug)]
pub struct Victims {
    /// The most important first.
    pub pods: Vec<Arc<PodInfo>>,
    /// How many of them a disruption budget protects.
    pub pdb_violations: usize,
}

/// A node and cycle state being changed for a what-if.
struct WhatIf<'a> {
    framework: &'a Framework,
    pod: &'a PodInfo,
    node: NodeInfo,
    state: CycleState,
}

impl WhatIf<'_> {
    fn remove(&mut self, victim: &Arc<PodInfo>) -> Result<(), Status> {
        self.node.remove_pod(&victim.key);
        let status = self
            .framework
            .run_remove_pod(&mut self.state, self.pod, victim, &self.node);
        extension_result(status, "RemovePod")
    }

    fn add(&mut self, victim: &Arc<PodInfo>) -> Result<(), Status> {
        self.node.add_pod(victim.clone());
        let status = self
            .framework
            .run_add_pod(&mut self.state, self.pod, victim, &self.node);
        extension_result(status, "AddPod")
    }

    fn filter(&self) -> Status {
        self.framework.run_filter(&self.state, self.pod, &self.node)
    }

    /// Puts a victim back; if the pod no longer fits, takes it out again and counts it
    /// as a victim. Whether it could stay.
    fn reprieve(
        &mut self,
        victim: &Arc<PodInfo>,
        victims: &mut Vec<Arc<PodInfo>>,
    ) -> Result<bool, Status> {
        self.add(victim)?;
        if self.filter().is_success() {
            return Ok(true);
        }
        self.remove(victim)?;
        victims.push(victim.clone());
        Ok(false)
    }
}

/// A PreFilter extension failing is an error (not a scheduling decision).
fn extension_result(status: Status, point: &str) -> Result<(), Status> {
    if status.is_success() {
        return Ok(());
    }
    Err(Status::error(format!(
        "running {point} on PreFilter plugin {:?}: {}",
        status.plugin().unwrap_or_default(),
        status.message()
    )))
}

/// The victims on `node` for `pod`, or the node's status when preemption cannot help
/// there: `UnschedulableAndUnresolvable` without lower-priority pods, the Filter status
/// when the pod does not fit even without them, an error when a plugin failed.
pub fn select_victims(
    framework: &Framework,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    budgets: &Budgets,
    now: i128,
) -> Result<Victims, Status> {
    let mut potential: Vec<Arc<PodInfo>> = node
        .pods
        .iter()
        .filter(|p| p.priority < pod.priority)
        .cloned()
        .collect();
    if potential.is_empty() {
        // Nothing to remove: the node is as Filter saw it.
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let mut what_if = WhatIf {
        framework,
        pod,
        node: node.clone(),
        state: state.clone(),
    };
    for victim in &potential {
        what_if.remove(victim)?;
    }
    // Not fitting even without every lower-priority pod: preemption does not help here.
    // (Affinity of the pod to some of those pods is not considered, as in Kubernetes.)
    let status = what_if.filter();
    if !status.is_success() {
        return Err(status);
    }
    potential.sort_by(|a, b| importance(a, b, now));
    let (violating, others) = budgets.split_violating(potential);
    let mut victims = Vec::new();
    let mut pdb_violations = 0;
    for victim in &violating {
        if !what_if.reprieve(victim, &mut victims)? {
            pdb_violations += 1;
        }
    }
    for victim in &others {
        what_if.reprieve(victim, &mut victims)?;
    }
    if !violating.is_empty() && !others.is_empty() {
        victims.sort_by(|a, b| importance(a, b, now));
    }
    Ok(Victims {
        pods: victims,
        pdb_violations,
    })
}
