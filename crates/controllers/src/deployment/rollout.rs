//! The arithmetic of rollouts, as Kubernetes' deployment controller does it: resolving
//! `maxSurge` (percentages round up) and `maxUnavailable` (round down; both zero means
//! one unavailable), how far the new ReplicaSet may grow, how far old ones may shrink,
//! and proportional scaling of every ReplicaSet when a Deployment is resized mid-rollout.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
}

pub fn rs_available(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

pub fn rs_status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map(|s| s.replicas).unwrap_or(0)
}

pub fn is_recreate(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some("Recreate")
}

/// An int or a percentage of `total`, rounded up or down.
pub fn scaled(value: Option<&IntOrString>, default: &str, total: i32, round_up: bool) -> i32 {
    match value {
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => percent(s, total, round_up),
        None => percent(default, total, round_up),
    }
}

fn percent(s: &str, total: i32, round_up: bool) -> i32 {
    match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
        Some(p) => {
            let product = p * i64::from(total);
            let v = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            v as i32
        }
        None => s.parse().unwrap_or(0),
    }
}

/// `(maxSurge, maxUnavailable)` for `d` (rolling updates; both zero for Recreate).
pub fn fenceposts(d: &Deployment) -> (i32, i32) {
    if is_recreate(d) {
        return (0, 0);
    }
    let rolling = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    let total = replicas(d);
    let surge = scaled(
        rolling.and_then(|r| r.max_surge.as_ref()),
        "25%",
        total,
        true,
    );
    let mut unavailable = scaled(
        rolling.and_then(|r| r.max_unavailable.as_ref()),
        "25%",
        total,
        false,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

pub fn max_surge(d: &Deployment) -> i32 {
    fenceposts(d).0
}

/// `maxUnavailable`, at most the replica count.
pub fn max_unavailable(d: &Deployment) -> i32 {
    if is_recreate(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

/// The size the new ReplicaSet may grow to now (rolling update).
pub fn new_rs_replicas(d: &Deployment, all: &[&ReplicaSet], new: &ReplicaSet) -> i32 {
    if is_recreate(d) {
        return replicas(d);
    }
    let current: i32 = all.iter().map(|rs| rs_replicas(rs)).sum();
    let max_total = replicas(d) + max_surge(d);
    if current >= max_total {
        return rs_replicas(new);
    }
    let up = (max_total - current).min(replicas(d) - rs_replicas(new));
    rs_replicas(new) + up.max(0)
}

/// The available replicas an RS will keep: its status may still count pods above a size it
/// was just scaled down to (the ReplicaSet controller has not deleted them yet, or not
/// reported it); those are going away and must not be counted on to keep the rollout
/// within `maxUnavailable`.
pub fn available_within_size(rs: &ReplicaSet) -> i32 {
    rs_available(rs).min(rs_replicas(rs)).max(0)
}

/// How many of an old ReplicaSet's unavailable replicas to remove, at most `budget`. An RS
/// whose available pods are not fewer than its size has none to remove: while it scales down,
/// its status may still count more available pods than its new size, which must not turn
/// into a scale-up.
pub fn unhealthy_to_remove(spec: i32, available: i32, budget: i32) -> i32 {
    if spec <= available {
        return 0;
    }
    budget.min(spec - available).max(0)
}

/// How much an RS gets of `to_add` replicas (negative: removed) in proportional scaling.
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

fn fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    if replicas(d) == 0 {
        return -rs_replicas(rs);
    }
    let deployment_replicas = replicas(d) + max_surge(d);
    let annotated = super::revision::int_annotation(rs, super::revision::MAX_REPLICAS)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated == 0 {
        return 0;
    }
    let size = f64::from(rs_replicas(rs)) * f64::from(deployment_replicas) / f64::from(annotated);
    size.round() as i32 - rs_replicas(rs)
}

/// New sizes for the active ReplicaSets `active` (sorted: largest first, then newest when
/// growing / oldest when shrinking) when the Deployment's size changed mid-rollout.
pub fn proportional_sizes(d: &Deployment, active: &[&ReplicaSet]) -> Vec<i32> {
    let current: i32 = active.iter().map(|rs| rs_replicas(rs)).sum();
    let allowed = if replicas(d) > 0 {
        replicas(d) + max_surge(d)
    } else {
        0
    };
    let to_add = allowed - current;
    let mut added = 0;
    let mut sizes: Vec<i32> = active
        .iter()
        .map(|rs| {
            let p = proportion(rs, d, to_add, added);
            added += p;
            rs_replicas(rs) + p
        })
        .collect();
    if to_add != 0
        && let Some(first) = sizes.first_mut()
    {
        *first = (*first + to_add - added).max(0);
    }
    sizes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn deployment(
        replicas: i32,
        surge: serde_json::Value,
        unavailable: serde_json::Value,
    ) -> Deployment {
        serde_json::from_value(json!({"spec": {
            "replicas": replicas,
            "selector": {},
            "template": {},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
        }}))
        .unwrap()
    }

    fn rs(replicas: i32, max: Option<i32>) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"annotations": max.map(|m| json!({super::super::revision::MAX_REPLICAS: m.to_string()}))},
            "spec": {"replicas": replicas, "selector": {}},
        }))
        .unwrap()
    }

    #[test]
    fn surge_rounds_up_unavailable_down() {
        let d = deployment(10, json!("25%"), json!("25%"));
        assert_eq!(fenceposts(&d), (3, 2));
        let d = deployment(3, json!(0), json!("10%"));
        assert_eq!(fenceposts(&d), (0, 1), "both zero: one unavailable");
        let d = deployment(3, json!(2), json!(5));
        assert_eq!(max_unavailable(&d), 3, "at most the replica count");
    }

    #[test]
    fn the_new_replica_set_grows_within_the_surge() {
        let d = deployment(10, json!("25%"), json!("25%"));
        let old = rs(10, None);
        let new = rs(0, None);
        assert_eq!(new_rs_replicas(&d, &[&old, &new], &new), 3);
        let new = rs(3, None);
        assert_eq!(
            new_rs_replicas(&d, &[&old, &new], &new),
            3,
            "at 13, no more"
        );
        let old = rs(5, None);
        assert_eq!(new_rs_replicas(&d, &[&old, &new], &new), 8);
    }

    #[test]
    fn pods_above_a_replica_sets_size_are_not_counted_available() {
        let mut old: ReplicaSet = rs(3, None);
        old.status =
            Some(serde_json::from_value(json!({"replicas": 4, "availableReplicas": 4})).unwrap());
        assert_eq!(available_within_size(&old), 3);
        old.status =
            Some(serde_json::from_value(json!({"replicas": 3, "availableReplicas": 2})).unwrap());
        assert_eq!(available_within_size(&old), 2);
    }

    #[test]
    fn only_unavailable_old_replicas_are_cleaned_up() {
        assert_eq!(unhealthy_to_remove(3, 1, 5), 2);
        assert_eq!(unhealthy_to_remove(3, 1, 1), 1, "within the budget");
        assert_eq!(unhealthy_to_remove(2, 2, 5), 0);
        assert_eq!(
            unhealthy_to_remove(1, 2, 5),
            0,
            "scaled down to 1 with 2 still available: nothing to remove, never a scale-up"
        );
    }

    #[test]
    fn scaling_mid_rollout_is_proportional() {
        // 10 replicas, surge 3: 8 old + 5 new = 13; scaled to 20 (surge 5): 25 allowed.
        let d = deployment(20, json!("25%"), json!("25%"));
        let a = rs(8, Some(13));
        let b = rs(5, Some(13));
        let sizes = proportional_sizes(&d, &[&a, &b]);
        assert_eq!(sizes.iter().sum::<i32>(), 25);
        assert_eq!(sizes, [15, 10]);
        // Down to 0.
        let d = deployment(0, json!("25%"), json!("25%"));
        assert_eq!(proportional_sizes(&d, &[&a, &b]), [0, 0]);
    }
}
