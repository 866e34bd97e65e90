//! A pod's lifecycle as the controllers and the API server read it (Kubernetes'
//! `pkg/api/v1/pod` helpers): Ready (the first `Ready` condition is `True`), running and
//! Ready, available (Ready for at least `minReadySeconds`), terminating, finished — from a
//! pod, from its JSON form, or from its [`Lifecycle`], the few bytes of it a controller
//! keeps per pod while it reads its pods one at a time.
//!
//! Availability as the workload controllers have always counted it here: a pod Ready for
//! `minReadySeconds` or more is available, and so is a Ready pod whose condition has no
//! transition time.

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use kyb_apimachinery::json;
use serde_json::Value;
use std::time::Duration;

/// The pod's `Ready` condition, the first of that type (`GetPodReadyCondition`).
pub fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
}

/// The time the pod's Ready condition turned True, if it is Ready.
pub fn ready_since(pod: &Pod) -> Option<Option<jiff::Timestamp>> {
    let condition = ready_condition(pod)?;
    (condition.status == "True").then(|| condition.last_transition_time.as_ref().map(|t| t.0))
}

/// Whether a pod in JSON form has its Ready condition True (`IsPodReady`).
pub fn is_ready_json(pod: &Value) -> bool {
    json::items(pod, &["status", "conditions"])
        .iter()
        .find(|c| json::str_at(c, &["type"]) == "Ready")
        .is_some_and(|c| json::str_at(c, &["status"]) == "True")
}

/// How long until a pod Ready since `ready_since` (see [`ready_since`]) becomes available
/// (`Some(ZERO)` when it already is): once its Ready condition has been True for
/// `min_ready_seconds`, counted exactly from the condition's transition time. `None` when
/// the pod is not Ready, or is Ready without a transition time while `min_ready_seconds`
/// is positive — Kubernetes' `IsPodAvailable` never counts such a pod available. (The
/// DaemonSet and StatefulSet copy counted it available at once, the ReplicaSet copy never;
/// Kubernetes is the latter.)
pub fn until_available_since(
    ready_since: Option<Option<jiff::Timestamp>>,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let since = ready_since?;
    if min_ready_seconds <= 0 {
        return Some(Duration::ZERO);
    }
    let at = since?.checked_add(jiff::SignedDuration::from_secs(i64::from(
        min_ready_seconds,
    )));
    let at = at.ok()?;
    if at <= now {
        Some(Duration::ZERO)
    } else {
        Some(now.duration_until(at).unsigned_abs())
    }
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
    /// or `None` when it is not Ready or never will be (see [`until_available_since`]).
    pub fn until_available(
        &self,
        min_ready_seconds: i32,
        now: jiff::Timestamp,
    ) -> Option<Duration> {
        until_available_since(self.ready_since, min_ready_seconds, now)
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
    fn availability_is_counted_exactly_and_needs_a_transition_time() {
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        let since = Some(Some(at("2026-01-01T00:00:10Z")));
        assert_eq!(
            until_available_since(since, 5, at("2026-01-01T00:00:14.5Z")),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            until_available_since(since, 5, at("2026-01-01T00:00:15Z")),
            Some(Duration::ZERO)
        );
        // Ready without a transition time: available only without minReadySeconds.
        assert_eq!(
            until_available_since(Some(None), 0, at("2026-01-01T00:00:15Z")),
            Some(Duration::ZERO)
        );
        assert_eq!(
            until_available_since(Some(None), 5, at("2026-01-01T00:00:15Z")),
            None
        );
        assert_eq!(
            until_available_since(None, 0, at("2026-01-01T00:00:15Z")),
            None
        );
    }

    #[test]
    fn the_first_ready_condition_counts_in_either_form() {
        let value = serde_json::json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
            {"type": "Ready", "status": "True"}]}});
        let typed: Pod = serde_json::from_value(value.clone()).unwrap();
        assert!(!is_ready(&typed));
        assert!(!is_ready_json(&value));
        let ready =
            serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(is_ready_json(&ready));
        assert!(!is_ready_json(&serde_json::json!({"status": null})));
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
