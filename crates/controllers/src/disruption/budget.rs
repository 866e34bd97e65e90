//! A PodDisruptionBudget's arithmetic (pure logic): how many pods it expects and needs
//! healthy (from `minAvailable`/`maxUnavailable`, ints or percents of the expected count,
//! rounded up), which pods count as healthy, what becomes of `disruptedPods` entries (the
//! eviction API's record of pods it let go; dropped once the pod is gone or deleting, or
//! after two minutes) and how many disruptions that allows. Pods come as [`Member`]s,
//! the little of each pod this reads.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kyb_component_helpers::pod_readiness::is_ready;
use std::collections::BTreeMap;

/// How long an eviction's `disruptedPods` entry keeps its pod out of the healthy count.
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(120);

/// An int, or a percent of `total` rounded up.
pub fn scaled(value: &IntOrString, total: i32) -> anyhow::Result<i32> {
    match value {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let percent: i64 = s
                .strip_suffix('%')
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| {
                    anyhow::anyhow!("invalid value for IntOrString: invalid value {s:?}")
                })?;
            let value = (percent * i64::from(total) + 99).div_euclid(100);
            Ok(value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
        }
    }
}

/// Whether the budget needs its pods' controllers' scale (percents, maxUnavailable).
pub fn needs_scale(spec: &PodDisruptionBudgetSpec) -> bool {
    spec.max_unavailable.is_some() || matches!(spec.min_available, Some(IntOrString::String(_)))
}

/// (expectedPods, desiredHealthy) given the pods' count and (when [`needs_scale`]) the
/// sum of their controllers' replicas.
pub fn expected_and_desired(
    spec: &PodDisruptionBudgetSpec,
    pods: i32,
    scale: i32,
) -> anyhow::Result<(i32, i32)> {
    if let Some(max_unavailable) = &spec.max_unavailable {
        let unavailable = scaled(max_unavailable, scale)?;
        return Ok((scale, (scale - unavailable).max(0)));
    }
    match &spec.min_available {
        Some(IntOrString::Int(i)) => Ok((pods, *i)),
        Some(percent) => Ok((scale, scaled(percent, scale)?)),
        None => Ok((pods, 0)),
    }
}

/// What a budget's arithmetic reads of one of its pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Being deleted.
    pub deleting: bool,
    pub ready: bool,
}

impl Member {
    pub fn of(pod: &Pod) -> Member {
        Member {
            name: pod.metadata.name.clone().unwrap_or_default(),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ready: is_ready(pod),
        }
    }
}

/// The `disruptedPods` entries still in force (the pod exists, is not being deleted, and
/// the entry is younger than [`DELETION_TIMEOUT`]), and when the oldest kept one expires.
pub fn live_disruptions(
    disrupted: &BTreeMap<String, Time>,
    pods: &[Member],
    now: Timestamp,
) -> (BTreeMap<String, Time>, Option<Timestamp>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    for (name, at) in disrupted {
        let Some(pod) = pods.iter().find(|p| p.name == *name) else {
            continue;
        };
        if pod.deleting {
            continue;
        }
        let Ok(expires) = at.0.checked_add(DELETION_TIMEOUT) else {
            continue;
        };
        if expires <= now {
            continue;
        }
        recheck = Some(recheck.map_or(expires, |r| r.min(expires)));
        kept.insert(name.clone(), at.clone());
    }
    (kept, recheck)
}

/// Pods that count as healthy: Ready, not being deleted, not recently disrupted.
pub fn count_healthy(pods: &[Member], disrupted: &BTreeMap<String, Time>) -> i32 {
    pods.iter()
        .filter(|p| !p.deleting && !disrupted.contains_key(&p.name) && p.ready)
        .count() as i32
}

/// Disruptions allowed.
pub fn allowed(current_healthy: i32, desired_healthy: i32, expected: i32) -> i32 {
    if expected <= 0 {
        0
    } else {
        (current_healthy - desired_healthy).max(0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> PodDisruptionBudgetSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn budgets() {
        assert_eq!(
            expected_and_desired(&spec(json!({"minAvailable": 2})), 3, 0).unwrap(),
            (3, 2)
        );
        assert_eq!(
            expected_and_desired(&spec(json!({"minAvailable": "50%"})), 2, 5).unwrap(),
            (5, 3)
        );
        assert_eq!(
            expected_and_desired(&spec(json!({"maxUnavailable": 1})), 2, 5).unwrap(),
            (5, 4)
        );
        assert_eq!(
            expected_and_desired(&spec(json!({"maxUnavailable": "30%"})), 2, 5).unwrap(),
            (5, 3)
        );
        assert_eq!(
            expected_and_desired(&spec(json!({"maxUnavailable": 9})), 2, 5).unwrap(),
            (5, 0)
        );
        assert!(expected_and_desired(&spec(json!({"minAvailable": "x%"})), 2, 5).is_err());
        assert!(needs_scale(&spec(json!({"maxUnavailable": 1}))));
        assert!(!needs_scale(&spec(json!({"minAvailable": 1}))));
        assert_eq!(allowed(3, 2, 3), 1);
        assert_eq!(allowed(1, 2, 3), 0);
        assert_eq!(allowed(3, 0, 0), 0);
    }

    #[test]
    fn health_and_disrupted_pods() {
        let pod = |name: &str, ready: bool, deleting: bool| -> Pod {
            serde_json::from_value(json!({
                "metadata": {"name": name,
                    "deletionTimestamp": if deleting { Some("2026-01-01T00:00:00Z") } else { None }},
                "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
            }))
            .unwrap()
        };
        let pods = [
            pod("a", true, false),
            pod("b", true, false),
            pod("c", false, false),
            pod("d", true, true),
        ];
        let pods: Vec<Member> = pods.iter().map(Member::of).collect();
        assert_eq!(
            pods[3],
            Member {
                name: "d".into(),
                deleting: true,
                ready: true
            }
        );
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let at = |s: &str| Time(s.parse().unwrap());
        let disrupted = BTreeMap::from([
            ("a".to_string(), at("2026-01-01T00:09:30Z")),
            ("b".to_string(), at("2026-01-01T00:07:00Z")),
            ("d".to_string(), at("2026-01-01T00:09:30Z")),
            ("gone".to_string(), at("2026-01-01T00:09:30Z")),
        ]);
        let (kept, recheck) = live_disruptions(&disrupted, &pods, now);
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(recheck, Some("2026-01-01T00:11:30Z".parse().unwrap()));
        assert_eq!(count_healthy(&pods, &kept), 1);
        assert_eq!(count_healthy(&pods, &BTreeMap::new()), 2);
    }
}
