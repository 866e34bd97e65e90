//! A pod's lifecycle as the workload controllers read it: running and Ready, available
//! (Ready for at least `minReadySeconds`), terminating, finished — from a pod, or from
//! its [`Lifecycle`], the few bytes of it a controller keeps per pod while it reads its
//! pods one at a time.

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

/// The pod phases these checks tell apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    Succeeded,
    Failed,
    Other,
}

fn phase(pod: &Pod) -> Phase {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Running") => Phase::Running,
        Some("Succeeded") => Phase::Succeeded,
        Some("Failed") => Phase::Failed,
        _ => Phase::Other,
    }
}

/// A pod's lifecycle reduced to what these checks read (a few bytes): what a controller
/// keeps per pod when it reads its pods one at a time instead of holding them whole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lifecycle {
    phase: Phase,
    ready_since: Option<Option<jiff::Timestamp>>,
    terminating: bool,
}

impl Lifecycle {
    pub fn of(pod: &Pod) -> Lifecycle {
        Lifecycle {
            phase: phase(pod),
            ready_since: ready_since(pod),
            terminating: pod.metadata.deletion_timestamp.is_some(),
        }
    }

    /// Whether the pod is Running with its Ready condition True.
    pub fn is_running_and_ready(&self) -> bool {
        self.phase == Phase::Running && self.ready_since.is_some()
    }

    /// Whether the pod has a Ready condition True (any phase).
    pub fn is_ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// How long until a Ready pod becomes available (`Some(ZERO)` when it already is),
    /// or `None` when it is not Ready.
    pub fn until_available(
        &self,
        min_ready_seconds: i32,
        now: jiff::Timestamp,
    ) -> Option<Duration> {
        let since = self.ready_since?;
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
    pub fn is_available(&self, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
        self.until_available(min_ready_seconds, now)
            .is_some_and(|d| d.is_zero())
    }

    /// Whether the pod is being deleted.
    pub fn is_terminating(&self) -> bool {
        self.terminating
    }

    /// Whether the pod's phase is Failed.
    pub fn is_failed(&self) -> bool {
        self.phase == Phase::Failed
    }

    /// Whether the pod's phase is Succeeded.
    pub fn is_succeeded(&self) -> bool {
        self.phase == Phase::Succeeded
    }
}

/// Whether the pod is Running with its Ready condition True.
pub fn is_running_and_ready(pod: &Pod) -> bool {
    Lifecycle::of(pod).is_running_and_ready()
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
    Lifecycle::of(pod).until_available(min_ready_seconds, now)
}

/// Whether the pod has been Ready for `min_ready_seconds`.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    Lifecycle::of(pod).is_available(min_ready_seconds, now)
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Whether the pod's phase is Failed.
pub fn is_failed(pod: &Pod) -> bool {
    phase(pod) == Phase::Failed
}

/// Whether the pod's phase is Succeeded.
pub fn is_succeeded(pod: &Pod) -> bool {
    phase(pod) == Phase::Succeeded
}

/// A pod's containers that run for its whole life: its containers and its sidecars
/// (init containers with `restartPolicy: Always`).
pub fn lasting_containers(
    spec: &k8s_openapi::api::core::v1::PodSpec,
) -> impl Iterator<Item = &k8s_openapi::api::core::v1::Container> {
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers.iter().chain(sidecars)
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

    #[test]
    fn a_lifecycle_answers_as_its_pod() {
        let now: jiff::Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let mut deleting = pod("Running", true, "2026-01-01T00:00:08Z");
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
        let pods = [
            pod("Running", true, "2026-01-01T00:00:00Z"),
            pod("Running", false, "2026-01-01T00:00:00Z"),
            pod("Pending", true, "2026-01-01T00:00:00Z"),
            pod("Failed", false, "2026-01-01T00:00:00Z"),
            pod("Succeeded", false, "2026-01-01T00:00:00Z"),
            deleting,
            serde_json::from_value(serde_json::json!({"metadata": {"name": "bare"}})).unwrap(),
        ];
        for p in &pods {
            let l = Lifecycle::of(p);
            assert_eq!(l.is_running_and_ready(), is_running_and_ready(p));
            assert_eq!(l.is_ready(), is_ready(p));
            assert_eq!(l.is_terminating(), is_terminating(p));
            assert_eq!(l.is_failed(), is_failed(p));
            assert_eq!(l.is_succeeded(), is_succeeded(p));
            for min in [0, 5, 15] {
                assert_eq!(l.until_available(min, now), until_available(p, min, now));
                assert_eq!(l.is_available(min, now), is_available(p, min, now));
            }
        }
        let l = Lifecycle::of(&pods[5]);
        assert!(l.is_terminating() && l.is_running_and_ready());
        assert_eq!(l.until_available(5, now), Some(Duration::from_secs(3)));
        assert!(Lifecycle::of(&pods[3]).is_failed());
        assert!(Lifecycle::of(&pods[4]).is_succeeded());
    }
}
