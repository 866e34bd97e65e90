//! A pod's lifecycle as the workload controllers read it: running and Ready, available
//! (Ready for at least `minReadySeconds`), terminating, finished.

use k8s_openapi::api::core::v1::Pod;
use std::time::Duration;

/// The time the pod's Ready condition turned True, if it is Ready.
fn ready_since(pod: &Pod) -> Option<Option<jiff::Timestamp>> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")?;
    (condition.status == "True").then(|| condition.last_transition_time.as_ref().map(|t| t.0))
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Whether the pod is Running with its Ready condition True.
pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && ready_since(pod).is_some()
}

/// Whether the pod has a Ready condition True (any phase).
pub fn is_ready(pod: &Pod) -> bool {
    ready_since(pod).is_some()
}

/// How long until a Ready pod becomes available (`Some(ZERO)` when it already is), or
/// `None` when it is not Ready.
pub fn until_available(
    pod: &Pod,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let since = ready_since(pod)?;
    if min_ready_seconds <= 0 {
        return Some(Duration::ZERO);
    }
    let Some(since) = since else {
        return Some(Duration::ZERO);
    };
    let ready_for = now.as_second() - since.as_second();
    let wanted = i64::from(min_ready_seconds);
    Some(Duration::from_secs(
        u64::try_from(wanted - ready_for).unwrap_or(0),
    ))
}

/// Whether the pod has been Ready for `min_ready_seconds`.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    until_available(pod, min_ready_seconds, now).is_some_and(|d| d.is_zero())
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Whether the pod's phase is Failed.
pub fn is_failed(pod: &Pod) -> bool {
    phase(pod) == "Failed"
}

/// Whether the pod's phase is Succeeded.
pub fn is_succeeded(pod: &Pod) -> bool {
    phase(pod) == "Succeeded"
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pod(phase: &str, ready: bool, since: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"phase": phase, "conditions": [{"type": "Ready",
                "status": if ready {"True"} else {"False"}, "lastTransitionTime": since}]},
        }))
        .unwrap()
    }

    #[test]
    fn readiness_and_availability() {
        let now: jiff::Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let p = pod("Running", true, "2026-01-01T00:00:00Z");
        assert!(is_running_and_ready(&p));
        assert!(is_available(&p, 10, now));
        assert!(!is_available(&p, 15, now));
        assert_eq!(until_available(&p, 15, now), Some(Duration::from_secs(5)));
        assert!(!is_running_and_ready(&pod(
            "Pending",
            true,
            "2026-01-01T00:00:00Z"
        )));
        assert!(!is_available(
            &pod("Running", false, "2026-01-01T00:00:00Z"),
            0,
            now
        ));
    }
}
