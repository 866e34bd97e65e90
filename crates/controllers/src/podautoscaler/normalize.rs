//! From a metrics proposal to the replica count to set, pure, with each HPA's history:
//! stabilization (recent recommendations), rate limits (`behavior` policies or the legacy
//! doubling rule) and the min/max clamps — with the AbleToScale and ScalingLimited
//! conditions' reasons and messages Kubernetes gives.
//!
//! - Without `spec.behavior`: the highest recommendation of the downscale stabilization
//!   window (`--horizontal-pod-autoscaler-downscale-stabilization`, 5 m) wins; scale-up is
//!   limited to max(2 × current, 4).
//! - With it: the scale-up window's lowest and the scale-down window's highest
//!   recommendation bound the result; each direction's policies (Pods / Percent per
//!   `periodSeconds`, counted from the replicas at the period's start, per the recorded
//!   scale events) give a limit, `selectPolicy` Max / Min picks the largest / smallest
//!   change, Disabled forbids the direction.

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::{HPAScalingRules, HorizontalPodAutoscalerBehavior};
use std::time::Duration;

/// A recommendation made at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Recommendation {
    replicas: i32,
    at: Timestamp,
}

/// A scaling by `change` replicas at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScaleEvent {
    change: i32,
    at: Timestamp,
}

/// One HPA's memory between syncs.
#[derive(Clone, Debug, Default)]
pub struct History {
    recommendations: Vec<Recommendation>,
    scale_ups: Vec<ScaleEvent>,
    scale_downs: Vec<ScaleEvent>,
}

/// The outcome of normalizing a proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    pub replicas: i32,
    /// AbleToScale (True): ScaleUpStabilized / ScaleDownStabilized / ReadyForNewScale.
    pub able: (&'static str, &'static str),
    /// ScalingLimited: whether limited, reason, message.
    pub limited: (bool, &'static str, &'static str),
}

/// One direction's rules with the API's defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub window: Duration,
    pub select: Select,
    /// (is Pods, value, period).
    pub policies: Vec<(bool, i32, Duration)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    Max,
    Min,
    Disabled,
}

const READY: (&str, &str) = ("ReadyForNewScale", "recommended size matches current size");
const UP_STABILIZED: (&str, &str) = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const DOWN_STABILIZED: (&str, &str) = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const WITHIN: (&str, &str) = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const TOO_FEW: (&str, &str) = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);
const TOO_MANY: (&str, &str) = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const UP_LIMIT: (&str, &str) = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const DOWN_LIMIT: (&str, &str) = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);

fn seconds(n: i32) -> Duration {
    Duration::from_secs(u64::try_from(n).unwrap_or(0))
}

fn before(at: Timestamp, by: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(by)
        .ok()
        .and_then(|d| at.checked_sub(d).ok())
        .unwrap_or(Timestamp::MIN)
}

impl Rules {
    /// `rules` with the API's defaults for scale-up (`up`) or scale-down, the scale-down
    /// window defaulting to `down_window`.
    pub fn from_api(rules: Option<&HPAScalingRules>, up: bool, down_window: Duration) -> Rules {
        let default_policies = if up {
            vec![
                (true, 4, Duration::from_secs(15)),
                (false, 100, Duration::from_secs(15)),
            ]
        } else {
            vec![(false, 100, Duration::from_secs(15))]
        };
        let window = rules
            .and_then(|r| r.stabilization_window_seconds)
            .map(seconds)
            .unwrap_or(if up { Duration::ZERO } else { down_window });
        let select = match rules.and_then(|r| r.select_policy.as_deref()) {
            Some("Min") => Select::Min,
            Some("Disabled") => Select::Disabled,
            _ => Select::Max,
        };
        let policies = match rules.and_then(|r| r.policies.as_ref()) {
            Some(policies) if !policies.is_empty() => policies
                .iter()
                .map(|p| (p.type_ == "Pods", p.value, seconds(p.period_seconds)))
                .collect(),
            _ => default_policies,
        };
        Rules {
            window,
            select,
            policies,
        }
    }

    fn longest_period(&self) -> Duration {
        self.policies
            .iter()
            .map(|p| p.2)
            .max()
            .unwrap_or(Duration::ZERO)
    }
}

/// The replicas changed in the period ending `now`.
fn changed_within(events: &[ScaleEvent], period: Duration, now: Timestamp) -> i32 {
    let cutoff = before(now, period);
    events
        .iter()
        .filter(|e| e.at > cutoff)
        .map(|e| e.change)
        .sum()
}

impl History {
    /// Starts the history with the current count (so a fresh controller does not scale
    /// down before a full stabilization window has passed).
    pub fn initialize(&mut self, current: i32, now: Timestamp) {
        if self.recommendations.is_empty() {
            self.recommendations.push(Recommendation {
                replicas: current,
                at: now,
            });
        }
    }

    /// Records `replicas` as made `now`, reusing a slot older than `max_age`.
    fn record(&mut self, replicas: i32, now: Timestamp, max_age: Duration) {
        let cutoff = before(now, max_age);
        let entry = Recommendation { replicas, at: now };
        match self.recommendations.iter_mut().find(|r| r.at < cutoff) {
            Some(old) => *old = entry,
            None => self.recommendations.push(entry),
        }
    }

    /// Without `behavior`: stabilized over `window`, then clamped (legacy rules).
    pub fn normalize_legacy(
        &mut self,
        now: Timestamp,
        window: Duration,
        current: i32,
        proposed: i32,
        min: i32,
        max: i32,
    ) -> Normalized {
        let cutoff = before(now, window);
        let stabilized = self
            .recommendations
            .iter()
            .filter(|r| r.at >= cutoff)
            .map(|r| r.replicas)
            .fold(proposed, i32::max);
        self.record(proposed, now, window);
        let able = if stabilized == proposed {
            READY
        } else {
            DOWN_STABILIZED
        };
        let scale_up_limit = current.saturating_mul(2).max(4);
        let (maximum, over) = if max > scale_up_limit {
            (scale_up_limit, UP_LIMIT)
        } else {
            (max, TOO_MANY)
        };
        let (replicas, why) = if stabilized < min {
            (min, TOO_FEW)
        } else if stabilized > maximum {
            (maximum, over)
        } else {
            (stabilized, WITHIN)
        };
        Normalized {
            replicas,
            able,
            limited: (replicas != stabilized, why.0, why.1),
        }
    }

    /// With `behavior` (its rules `up` and `down`): stabilized, then rate-limited and
    /// clamped.
    #[allow(clippy::too_many_arguments)]
    pub fn normalize(
        &mut self,
        now: Timestamp,
        up: &Rules,
        down: &Rules,
        current: i32,
        proposed: i32,
        min: i32,
        max: i32,
    ) -> Normalized {
        let up_cutoff = before(now, up.window);
        let down_cutoff = before(now, down.window);
        let mut up_bound = proposed;
        let mut down_bound = proposed;
        for r in &self.recommendations {
            if r.at > up_cutoff {
                up_bound = up_bound.min(r.replicas);
            }
            if r.at > down_cutoff {
                down_bound = down_bound.max(r.replicas);
            }
        }
        let stabilized = current.max(up_bound).min(down_bound);
        self.record(proposed, now, up.window.max(down.window));
        let able = if stabilized == proposed {
            READY
        } else if proposed >= current {
            UP_STABILIZED
        } else {
            DOWN_STABILIZED
        };

        let (replicas, why) = if stabilized > current {
            let limit = self.scale_up_limit(up, current, now).max(current);
            let (maximum, over) = if max > limit {
                (limit, UP_LIMIT)
            } else {
                (max, TOO_MANY)
            };
            if stabilized > maximum {
                (maximum, over)
            } else {
                (stabilized, WITHIN)
            }
        } else if stabilized < current {
            let limit = self.scale_down_limit(down, current, now).min(current);
            let (minimum, under) = if min < limit {
                (limit, DOWN_LIMIT)
            } else {
                (min, TOO_FEW)
            };
            if stabilized < minimum {
                (minimum, under)
            } else {
                (stabilized, WITHIN)
            }
        } else {
            (stabilized, WITHIN)
        };
        Normalized {
            replicas,
            able,
            limited: (replicas != stabilized, why.0, why.1),
        }
    }

    fn period_start(&self, current: i32, period: Duration, now: Timestamp) -> i32 {
        current - changed_within(&self.scale_ups, period, now)
            + changed_within(&self.scale_downs, period, now)
    }

    fn scale_up_limit(&self, rules: &Rules, current: i32, now: Timestamp) -> i32 {
        let pick: fn(i32, i32) -> i32 = match rules.select {
            Select::Disabled => return current,
            Select::Min => i32::min,
            Select::Max => i32::max,
        };
        let mut result: Option<i32> = None;
        for &(pods, value, period) in &rules.policies {
            let start = self.period_start(current, period, now);
            let proposed = if pods {
                start.saturating_add(value)
            } else {
                (f64::from(start) * (1.0 + f64::from(value) / 100.0)).ceil() as i32
            };
            result = Some(result.map_or(proposed, |r| pick(r, proposed)));
        }
        result.unwrap_or(current)
    }

    fn scale_down_limit(&self, rules: &Rules, current: i32, now: Timestamp) -> i32 {
        let pick: fn(i32, i32) -> i32 = match rules.select {
            Select::Disabled => return current,
            Select::Min => i32::max,
            Select::Max => i32::min,
        };
        let mut result: Option<i32> = None;
        for &(pods, value, period) in &rules.policies {
            let start = self.period_start(current, period, now);
            let proposed = if pods {
                start.saturating_sub(value)
            } else {
                (f64::from(start) * (1.0 - f64::from(value) / 100.0)) as i32
            };
            result = Some(result.map_or(proposed, |r| pick(r, proposed)));
        }
        result.unwrap_or(current)
    }

    /// Records a rescale from `previous` to `new` (kept only for HPAs with a behavior,
    /// whose policies count them).
    pub fn record_scale(
        &mut self,
        behavior: Option<(&Rules, &Rules)>,
        now: Timestamp,
        previous: i32,
        new: i32,
    ) {
        let Some((up, down)) = behavior else {
            return;
        };
        let (events, rules, change) = if new > previous {
            (&mut self.scale_ups, up, new - previous)
        } else {
            (&mut self.scale_downs, down, previous - new)
        };
        let cutoff = before(now, rules.longest_period());
        events.retain(|e| e.at > cutoff);
        events.push(ScaleEvent { change, at: now });
    }
}

/// Both directions' rules of a behavior, defaults filled in.
pub fn rules(behavior: &HorizontalPodAutoscalerBehavior, down_window: Duration) -> (Rules, Rules) {
    (
        Rules::from_api(behavior.scale_up.as_ref(), true, down_window),
        Rules::from_api(behavior.scale_down.as_ref(), false, down_window),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    fn defaults() -> (Rules, Rules) {
        rules(
            &HorizontalPodAutoscalerBehavior::default(),
            Duration::from_secs(300),
        )
    }

    #[test]
    fn legacy_clamps_and_limits() {
        let mut h = History::default();
        h.initialize(2, t(0));
        let n = h.normalize_legacy(t(0), Duration::from_secs(300), 2, 10, 1, 20);
        assert_eq!(n.replicas, 4);
        assert_eq!(n.limited, (true, "ScaleUpLimit", UP_LIMIT.1));
        let n = h.normalize_legacy(t(15), Duration::from_secs(300), 4, 30, 1, 6);
        assert_eq!((n.replicas, n.limited.1), (6, "TooManyReplicas"));
        // A lower proposal is held up by the window's highest recommendation.
        let n = h.normalize_legacy(t(30), Duration::from_secs(300), 6, 1, 2, 6);
        assert_eq!((n.replicas, n.able.0), (6, "ScaleDownStabilized"));
        // After the window, it goes through — to the minimum.
        let n = h.normalize_legacy(t(400), Duration::from_secs(300), 6, 1, 2, 6);
        assert_eq!(
            (n.replicas, n.able.0, n.limited.1),
            (2, "ReadyForNewScale", "TooFewReplicas")
        );
    }

    #[test]
    fn default_behavior_scales_up_by_max_of_4_pods_and_100_percent() {
        let (up, down) = defaults();
        let mut h = History::default();
        h.initialize(1, t(0));
        let n = h.normalize(t(0), &up, &down, 1, 20, 1, 50);
        assert_eq!(
            (n.replicas, n.limited.0, n.limited.1),
            (5, true, "ScaleUpLimit")
        );
        h.record_scale(Some((&up, &down)), t(0), 1, 5);
        // Within the same 15 s period: the period started at 1 → still at most 5.
        let n = h.normalize(t(5), &up, &down, 5, 20, 1, 50);
        assert_eq!(n.replicas, 5);
        // Next period: max(5 + 4, 5 × 2) = 10.
        let n = h.normalize(t(20), &up, &down, 5, 20, 1, 50);
        assert_eq!(n.replicas, 10);
        // The maximum wins when lower.
        let n = h.normalize(t(40), &up, &down, 10, 20, 1, 12);
        assert_eq!((n.replicas, n.limited.1), (12, "TooManyReplicas"));
    }

    #[test]
    fn min_select_policy_and_disabled() {
        let behavior: HorizontalPodAutoscalerBehavior = serde_json::from_value(serde_json::json!({
            "scaleUp": {"selectPolicy": "Min", "policies": [
                {"type": "Pods", "value": 1, "periodSeconds": 60},
                {"type": "Percent", "value": 50, "periodSeconds": 60}]},
            "scaleDown": {"selectPolicy": "Disabled", "stabilizationWindowSeconds": 0}
        }))
        .unwrap();
        let (up, down) = rules(&behavior, Duration::from_secs(300));
        let mut h = History::default();
        h.initialize(4, t(0));
        let n = h.normalize(t(0), &up, &down, 4, 10, 1, 20);
        assert_eq!(n.replicas, 5);
        let n = h.normalize(t(1), &up, &down, 4, 1, 1, 20);
        assert_eq!((n.replicas, n.limited.1), (4, "ScaleDownLimit"));
    }

    #[test]
    fn scale_down_waits_for_the_stabilization_window() {
        let (up, down) = defaults();
        let mut h = History::default();
        h.initialize(6, t(0));
        let n = h.normalize(t(15), &up, &down, 6, 2, 1, 10);
        assert_eq!((n.replicas, n.able.0), (6, "ScaleDownStabilized"));
        assert_eq!(n.able.1, DOWN_STABILIZED.1);
        let n = h.normalize(t(200), &up, &down, 6, 3, 1, 10);
        assert_eq!(n.replicas, 6);
        // 301 s after the last 6: the highest recent recommendation is 3.
        let n = h.normalize(t(301), &up, &down, 6, 2, 1, 10);
        assert_eq!((n.replicas, n.able.0), (3, "ScaleDownStabilized"));
        let n = h.normalize(t(501), &up, &down, 6, 2, 1, 10);
        assert_eq!((n.replicas, n.able.0), (2, "ReadyForNewScale"));
    }

    #[test]
    fn scale_down_percent_policy_per_period() {
        let behavior: HorizontalPodAutoscalerBehavior = serde_json::from_value(serde_json::json!({
            "scaleDown": {"stabilizationWindowSeconds": 0, "policies": [
                {"type": "Percent", "value": 50, "periodSeconds": 60}]}
        }))
        .unwrap();
        let (up, down) = rules(&behavior, Duration::from_secs(300));
        let mut h = History::default();
        let n = h.normalize(t(0), &up, &down, 10, 1, 1, 10);
        assert_eq!((n.replicas, n.limited.1), (5, "ScaleDownLimit"));
        h.record_scale(Some((&up, &down)), t(0), 10, 5);
        // Same period: it started at 10, so 5 is already the limit.
        let n = h.normalize(t(30), &up, &down, 5, 1, 1, 10);
        assert_eq!(n.replicas, 5);
        let n = h.normalize(t(61), &up, &down, 5, 1, 1, 10);
        assert_eq!(n.replicas, 2);
    }

    #[test]
    fn scale_up_stabilization_applies_the_lowest_recent_recommendation() {
        let behavior: HorizontalPodAutoscalerBehavior = serde_json::from_value(serde_json::json!({
            "scaleUp": {"stabilizationWindowSeconds": 60}
        }))
        .unwrap();
        let (up, down) = rules(&behavior, Duration::from_secs(300));
        let mut h = History::default();
        h.initialize(2, t(0));
        let n = h.normalize(t(10), &up, &down, 2, 6, 1, 10);
        assert_eq!((n.replicas, n.able.0), (2, "ScaleUpStabilized"));
        let n = h.normalize(t(65), &up, &down, 2, 6, 1, 10);
        assert_eq!(n.replicas, 6);
    }
}
