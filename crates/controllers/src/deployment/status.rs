//! A Deployment's status from its ReplicaSets (replicas, updatedReplicas, readyReplicas,
//! availableReplicas, unavailableReplicas, observedGeneration) and its conditions:
//! `Available` (MinimumReplicasAvailable / MinimumReplicasUnavailable) and `Progressing`
//! (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
//! ProgressDeadlineExceeded, DeploymentPaused, DeploymentResumed), with Kubernetes'
//! messages and its rule that a condition keeps its transition time while its status
//! stays the same.

use super::rollout::{max_unavailable, replicas, rs_available, rs_replicas, rs_status_replicas};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub const AVAILABLE: &str = "Available";
pub const PROGRESSING: &str = "Progressing";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";
pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const RS_UPDATED: &str = "ReplicaSetUpdated";
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const PAUSED: &str = "DeploymentPaused";
pub const RESUMED: &str = "DeploymentResumed";

pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: jiff::Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

pub fn get<'a>(status: &'a DeploymentStatus, type_: &str) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// Sets `c`, unless one of its type with the same status and reason is there; a
/// condition whose status does not change keeps its transition time.
pub fn set(status: &mut DeploymentStatus, mut c: DeploymentCondition) {
    if let Some(current) = get(status, &c.type_) {
        if current.status == c.status && current.reason == c.reason {
            return;
        }
        if current.status == c.status {
            c.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove(status, &c.type_);
    status.conditions.get_or_insert_with(Vec::new).push(c);
}

pub fn remove(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
    }
}

/// The progress deadline, if the Deployment has one.
pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    let deadline = d
        .spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(600);
    (deadline != i32::MAX).then_some(deadline)
}

/// The status the ReplicaSets `all` (and the new one) give `d`, its conditions but
/// `Available` carried over.
pub fn calculate(
    d: &Deployment,
    all: &[&ReplicaSet],
    new: Option<&ReplicaSet>,
    now: jiff::Timestamp,
) -> DeploymentStatus {
    let available: i32 = all.iter().map(|rs| rs_available(rs)).sum();
    let total: i32 = all.iter().map(|rs| rs_replicas(rs)).sum();
    let old = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        replicas: Some(all.iter().map(|rs| rs_status_replicas(rs)).sum()),
        updated_replicas: Some(new.map(rs_status_replicas).unwrap_or(0)),
        ready_replicas: Some(
            all.iter()
                .map(|rs| {
                    rs.status
                        .as_ref()
                        .and_then(|s| s.ready_replicas)
                        .unwrap_or(0)
                })
                .sum(),
        ),
        available_replicas: Some(available),
        unavailable_replicas: Some((total - available).max(0)),
        observed_generation: d.metadata.generation,
        collision_count: old.collision_count,
        conditions: old.conditions.clone(),
        terminating_replicas: None,
    };
    if available >= replicas(d) - max_unavailable(d) {
        set(
            &mut status,
            condition(
                AVAILABLE,
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".to_string(),
                now,
            ),
        );
    } else {
        set(
            &mut status,
            condition(
                AVAILABLE,
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".to_string(),
                now,
            ),
        );
    }
    status
}

/// Every replica updated, present and available, and the latest generation observed.
pub fn complete(d: &Deployment, status: &DeploymentStatus) -> bool {
    let want = replicas(d);
    status.updated_replicas == Some(want)
        && status.replicas == Some(want)
        && status.available_replicas == Some(want)
        && status.observed_generation >= d.metadata.generation
}

/// Whether the new status shows progress over `d`'s current one.
pub fn progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old = n(old.replicas) - n(old.updated_replicas);
    let new_old = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// Whether the rollout has gone without progress for longer than the deadline; else,
/// how long until it would have.
pub fn timed_out(
    d: &Deployment,
    status: &DeploymentStatus,
    now: jiff::Timestamp,
) -> (bool, Option<std::time::Duration>) {
    let Some(deadline) = progress_deadline(d) else {
        return (false, None);
    };
    let Some(c) = get(status, PROGRESSING) else {
        return (false, None);
    };
    match c.reason.as_deref() {
        Some(NEW_RS_AVAILABLE) => return (false, None),
        Some(TIMED_OUT) => return (true, None),
        _ => {}
    }
    let Some(from) = c.last_update_time.as_ref() else {
        return (false, None);
    };
    let at = from.0 + jiff::SignedDuration::from_secs(i64::from(deadline));
    if at < now {
        (true, None)
    } else {
        (false, Some(now.duration_until(at).unsigned_abs()))
    }
}

/// The status after a rollout step: progress conditions updated as Kubernetes'
/// `syncRolloutStatus` does, and when to look again for the progress deadline.
pub fn rollout(
    d: &Deployment,
    all: &[&ReplicaSet],
    new: Option<&ReplicaSet>,
    now: jiff::Timestamp,
) -> (DeploymentStatus, Option<std::time::Duration>) {
    let mut status = calculate(d, all, new, now);
    let name = d.metadata.name.clone().unwrap_or_default();
    let mut wait = None;
    if progress_deadline(d).is_none() {
        remove(&mut status, PROGRESSING);
    }
    let complete_before = status.replicas == status.updated_replicas
        && get(&status, PROGRESSING).and_then(|c| c.reason.as_deref()) == Some(NEW_RS_AVAILABLE);
    if progress_deadline(d).is_some() && !complete_before {
        let subject = |what: &str| match new {
            Some(rs) => format!(
                "ReplicaSet \"{}\" {what}",
                rs.metadata.name.as_deref().unwrap_or_default()
            ),
            None => format!("Deployment \"{name}\" {what}"),
        };
        if complete(d, &status) {
            set(
                &mut status,
                condition(
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE,
                    subject("has successfully progressed."),
                    now,
                ),
            );
        } else if progressing(d, &status) {
            let mut c = condition(
                PROGRESSING,
                "True",
                RS_UPDATED,
                subject("is progressing."),
                now,
            );
            if let Some(current) = get(&status, PROGRESSING)
                && current.status == "True"
            {
                c.last_transition_time = current.last_transition_time.clone();
            }
            remove(&mut status, PROGRESSING);
            status.conditions.get_or_insert_with(Vec::new).push(c);
            wait = progress_deadline(d).map(|s| std::time::Duration::from_secs(s as u64));
        } else {
            let (out, until) = timed_out(d, &status, now);
            if out {
                set(
                    &mut status,
                    condition(
                        PROGRESSING,
                        "False",
                        TIMED_OUT,
                        subject("has timed out progressing."),
                        now,
                    ),
                );
            } else {
                wait = until;
            }
        }
    }
    // A ReplicaSet failing to create pods shows on the Deployment.
    let failure = all.iter().find_map(|rs| {
        rs.status
            .as_ref()?
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == REPLICA_FAILURE && c.status == "True")
            .cloned()
    });
    match failure {
        Some(f) => set(
            &mut status,
            DeploymentCondition {
                type_: REPLICA_FAILURE.to_string(),
                status: f.status,
                reason: f.reason,
                message: f.message,
                last_update_time: f.last_transition_time.clone(),
                last_transition_time: f.last_transition_time,
            },
        ),
        None => remove(&mut status, REPLICA_FAILURE),
    }
    (status, wait)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn rs(name: &str, spec: i32, replicas: i32, available: i32) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"replicas": spec, "selector": {}},
            "status": {"replicas": replicas, "readyReplicas": available, "availableReplicas": available},
        }))
        .unwrap()
    }

    fn deployment(status: serde_json::Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "generation": 2},
            "spec": {"replicas": 4, "selector": {}, "template": {}, "progressDeadlineSeconds": 60},
            "status": status,
        }))
        .unwrap()
    }

    fn t(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn counts_and_availability() {
        let d = deployment(json!({}));
        let old = rs("web-a", 2, 2, 2);
        let new = rs("web-b", 3, 3, 1);
        let s = calculate(&d, &[&old, &new], Some(&new), t("2026-01-01T00:00:00Z"));
        assert_eq!(s.replicas, Some(5));
        assert_eq!(s.updated_replicas, Some(3));
        assert_eq!(s.available_replicas, Some(3));
        assert_eq!(s.unavailable_replicas, Some(2));
        assert_eq!(s.observed_generation, Some(2));
        let a = get(&s, AVAILABLE).unwrap();
        assert_eq!(
            (a.status.as_str(), a.reason.as_deref()),
            ("True", Some("MinimumReplicasAvailable"))
        );
    }

    #[test]
    fn progress_then_completion_then_nothing_changes() {
        let now = t("2026-01-01T00:00:00Z");
        let d = deployment(json!({}));
        let new = rs("web-b", 4, 4, 2);
        let (s, wait) = rollout(&d, &[&new], Some(&new), now);
        let p = get(&s, PROGRESSING).unwrap();
        assert_eq!(p.reason.as_deref(), Some(RS_UPDATED));
        assert_eq!(
            p.message.as_deref(),
            Some("ReplicaSet \"web-b\" is progressing.")
        );
        assert_eq!(wait, Some(std::time::Duration::from_secs(60)));
        let d = deployment(serde_json::to_value(&s).unwrap());
        let done = rs("web-b", 4, 4, 4);
        let (s, _) = rollout(&d, &[&done], Some(&done), now);
        let p = get(&s, PROGRESSING).unwrap();
        assert_eq!(p.reason.as_deref(), Some(NEW_RS_AVAILABLE));
        assert_eq!(
            p.message.as_deref(),
            Some("ReplicaSet \"web-b\" has successfully progressed.")
        );
    }

    #[test]
    fn no_progress_past_the_deadline_times_out() {
        let d = deployment(
            json!({"replicas": 4, "updatedReplicas": 4, "availableReplicas": 2,
            "readyReplicas": 2, "conditions": [{"type": PROGRESSING, "status": "True",
            "reason": RS_UPDATED, "lastUpdateTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        let new = rs("web-b", 4, 4, 2);
        let (s, wait) = rollout(&d, &[&new], Some(&new), t("2026-01-01T00:00:30Z"));
        assert_eq!(
            get(&s, PROGRESSING).unwrap().reason.as_deref(),
            Some(RS_UPDATED)
        );
        assert_eq!(wait, Some(std::time::Duration::from_secs(30)));
        let (s, _) = rollout(&d, &[&new], Some(&new), t("2026-01-01T00:01:01Z"));
        let p = get(&s, PROGRESSING).unwrap();
        assert_eq!(
            (p.status.as_str(), p.reason.as_deref()),
            ("False", Some(TIMED_OUT))
        );
        assert_eq!(
            p.message.as_deref(),
            Some("ReplicaSet \"web-b\" has timed out progressing.")
        );
    }
}
