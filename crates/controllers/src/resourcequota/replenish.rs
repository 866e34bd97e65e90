//! When a change to a counted object must bring its namespace's quotas up to date
//! ("replenishment", Kubernetes' quota monitor): deletions always; updates only when they
//! lower what the object uses — a pod turning terminal (`Succeeded`/`Failed`) or passing
//! its deletion grace period, a Service changing type (node ports and load balancers), a
//! claim's requested or allocated storage changing. Creations never: quota admission has
//! already charged them.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use std::time::Duration;

/// Whether a pod still counts for compute quota (Kubernetes' `QuotaV1Pod`): not terminal,
/// and not past the end of its deletion grace period.
pub fn pod_counts(pod: &Pod, now: jiff::Timestamp) -> bool {
    let terminal = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    !terminal && grace_left(pod, now).is_none_or(|left| !left.is_zero())
}

/// For a pod being deleted gracefully, how long until its grace period ends (zero once
/// it has); `None` for a pod not being deleted.
pub fn grace_left(pod: &Pod, now: jiff::Timestamp) -> Option<Duration> {
    let deletion = pod.metadata.deletion_timestamp.as_ref()?.0;
    let grace = pod.metadata.deletion_grace_period_seconds?;
    let end = deletion
        .checked_add(jiff::SignedDuration::from_secs(grace))
        .ok()?;
    if now > end {
        return Some(Duration::ZERO);
    }
    Some(Duration::try_from(end.duration_since(now)).unwrap_or(Duration::ZERO))
}

/// A pod update that lowers usage: the pod counted before and no longer does.
pub fn pod_update(old: &Pod, new: &Pod, now: jiff::Timestamp) -> bool {
    pod_counts(old, now) && !pod_counts(new, now)
}

/// The type quota distinguishes (`GetQuotaServiceType`): `NodePort`, `LoadBalancer`, or
/// none.
fn quota_service_type(service: &Service) -> Option<&str> {
    let kind = service.spec.as_ref()?.type_.as_deref()?;
    matches!(kind, "NodePort" | "LoadBalancer").then_some(kind)
}

/// A service update that may change usage: its type changed.
pub fn service_update(old: &Service, new: &Service) -> bool {
    quota_service_type(old) != quota_service_type(new)
}

/// A claim update that may change usage: its requested or allocated resources changed.
pub fn claim_update(old: &PersistentVolumeClaim, new: &PersistentVolumeClaim) -> bool {
    let requests = |c: &PersistentVolumeClaim| {
        c.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.clone())
    };
    let allocated = |c: &PersistentVolumeClaim| {
        c.status
            .as_ref()
            .and_then(|s| s.allocated_resources.clone())
    };
    requests(old) != requests(new) || allocated(old) != allocated(new)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(phase: &str, deletion: Option<(&str, i64)>) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p",
                "deletionTimestamp": deletion.map(|d| d.0),
                "deletionGracePeriodSeconds": deletion.map(|d| d.1),
            },
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn pods_stop_counting_when_terminal_or_past_their_grace() {
        let now: jiff::Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        assert!(pod_counts(&pod("Running", None), now));
        assert!(pod_counts(&pod("Pending", None), now));
        assert!(!pod_counts(&pod("Failed", None), now));
        assert!(!pod_counts(&pod("Succeeded", None), now));
        let deleting = pod("Running", Some(("2026-01-01T00:00:00Z", 30)));
        assert!(pod_counts(&deleting, now));
        assert_eq!(grace_left(&deleting, now), Some(Duration::from_secs(20)));
        let gone = pod("Running", Some(("2026-01-01T00:00:00Z", 5)));
        assert!(!pod_counts(&gone, now));
        assert_eq!(grace_left(&gone, now), Some(Duration::ZERO));

        assert!(pod_update(&pod("Running", None), &pod("Failed", None), now));
        assert!(!pod_update(&pod("Failed", None), &pod("Failed", None), now));
        assert!(!pod_update(
            &pod("Pending", None),
            &pod("Running", None),
            now
        ));
    }

    #[test]
    fn services_and_claims_replenish_on_what_quota_counts() {
        let svc =
            |t: &str| -> Service { serde_json::from_value(json!({"spec": {"type": t}})).unwrap() };
        assert!(service_update(&svc("NodePort"), &svc("ClusterIP")));
        assert!(service_update(&svc("LoadBalancer"), &svc("NodePort")));
        assert!(!service_update(&svc("ClusterIP"), &svc("ExternalName")));
        let claim = |size: &str| -> PersistentVolumeClaim {
            serde_json::from_value(json!({"spec": {"resources": {"requests": {"storage": size}}}}))
                .unwrap()
        };
        assert!(claim_update(&claim("1Gi"), &claim("2Gi")));
        assert!(!claim_update(&claim("1Gi"), &claim("1Gi")));
    }
}
