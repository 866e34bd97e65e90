//! Acting on a preemption decision, as Kubernetes does once the node is chosen: each
//! victim not already terminating is rejected if it waits at Permit, deleted otherwise;
//! then pods of lower priority than the preemptor nominated to the same node lose their
//! nomination (they may no longer fit there). The preemptor's own nomination is the
//! scheduler's to set, with its unschedulable status.

use super::NAME;
use crate::framework::{Handle, PodInfo, PostFilterResult};

/// The pod condition the scheduler sets on a victim before deleting it.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The reason of that condition.
pub const PREEMPTION_BY_SCHEDULER: &str = "PreemptionByScheduler";
/// The message a victim waiting at Permit is rejected with.
pub const PREEMPTED_MESSAGE: &str = "preempted";

/// The message of the `DisruptionTarget` condition on a victim of a pod of
/// `scheduler_name`.
pub fn disruption_message(scheduler_name: &str) -> String {
    format!("{scheduler_name}: preempting to accommodate a higher priority pod")
}

/// Evicts the victims of `result` for `preemptor` and clears the nominations of
/// lower-priority pods on the chosen node. Stops at the first failed eviction; failing to
/// clear a nomination is only logged.
///
/// The eviction goes through [`crate::framework::ApiClient::delete_pod`], which should set
/// the `DisruptionTarget` condition ([`DISRUPTION_TARGET`], [`PREEMPTION_BY_SCHEDULER`],
/// [`disruption_message`]) before deleting: that is what tells a later cycle that the
/// preemptor's room is on its way.
pub async fn prepare_candidate(
    handle: &Handle,
    preemptor: &PodInfo,
    result: &PostFilterResult,
) -> Result<(), String> {
    for victim in &result.victims {
        if victim.terminating() {
            // Graceful deletion has started already.
            continue;
        }
        if let Some(waiting) = handle.waiting_pods.get(&victim.uid) {
            waiting.reject(NAME, PREEMPTED_MESSAGE);
        } else {
            handle.client.delete_pod(victim).await?;
        }
        tracing::debug!(
            preemptor = %preemptor.key,
            victim = %victim.key,
            node = %result.nominated_node,
            "preempted"
        );
    }
    if result.nominated_node.is_empty() {
        return Ok(());
    }
    for pod in handle.lister.pods() {
        let nominated_here = pod
            .pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            == Some(result.nominated_node.as_str());
        if nominated_here
            && pod.priority < preemptor.priority
            && pod.uid != preemptor.uid
            && pod.node_name().is_none()
            && let Err(error) = handle.client.nominate(&pod, "").await
        {
            tracing::warn!(pod = %pod.key, %error, "cannot clear the nominated node");
        }
    }
    Ok(())
}
