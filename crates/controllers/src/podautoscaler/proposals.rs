//! The metrics' proposals combined, pure: the largest working proposal wins
//! (ScalingActive True ValidMetricFound); when every metric failed, or some failed and the
//! rest would scale down, there is no proposal (ScalingActive False with the first
//! failure's reason) — Kubernetes' rule for HPAs with several metrics.

use k8s_openapi::api::autoscaling::v2::MetricStatus;

/// A failed metric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricFailure {
    /// The ScalingActive condition's (and the Warning event's) reason.
    pub reason: &'static str,
    /// The metric's own error (the Warning event's message).
    pub cause: String,
    /// The condition's message.
    pub message: String,
    /// The error it makes of the sync.
    pub error: String,
}

impl MetricFailure {
    /// `cause` is the metric's own error, `error` the error it makes of the sync.
    pub fn new(reason: &'static str, cause: String, error: String) -> MetricFailure {
        MetricFailure {
            reason,
            message: format!("the HPA was unable to compute the replica count: {cause}"),
            cause,
            error,
        }
    }
}

/// What a working metric proposes.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub replicas: i32,
    /// How the metric is named in messages (`cpu resource utilization (percentage of
    /// request)`).
    pub name: String,
    pub status: MetricStatus,
}

/// The combined outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Combined {
    /// The proposal to act on, if any.
    pub replicas: Option<i32>,
    /// The metric behind it.
    pub metric: String,
    /// One status per metric (empty ones for failed metrics).
    pub statuses: Vec<MetricStatus>,
    /// `invalid metrics (N invalid out of M), first error is: …`.
    pub first_error: Option<String>,
    /// ScalingActive: status, reason, message.
    pub condition: (bool, &'static str, String),
}

/// Combines the metrics' results (in `spec.metrics` order) for a target at
/// `spec_replicas`.
pub fn combine(results: Vec<Result<Proposal, MetricFailure>>, spec_replicas: i32) -> Combined {
    let total = results.len();
    let mut statuses = vec![MetricStatus::default(); total];
    let mut best: Option<(i32, String)> = None;
    let mut failures: Vec<MetricFailure> = vec![];
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Ok(proposal) => {
                if best.as_ref().is_none_or(|(r, _)| proposal.replicas > *r) {
                    best = Some((proposal.replicas, proposal.name));
                }
                statuses[i] = proposal.status;
            }
            Err(failure) => failures.push(failure),
        }
    }
    let first_error = failures.first().map(|f| {
        format!(
            "invalid metrics ({} invalid out of {total}), first error is: {}",
            failures.len(),
            f.error
        )
    });
    let (replicas, metric) = best.unwrap_or((0, String::new()));
    let invalid = failures.len();
    if let Some(first) = failures.into_iter().next()
        && (invalid >= total || replicas < spec_replicas)
    {
        return Combined {
            replicas: None,
            metric: String::new(),
            statuses,
            first_error,
            condition: (false, first.reason, first.message),
        };
    }
    Combined {
        replicas: Some(replicas),
        condition: (
            true,
            "ValidMetricFound",
            format!("the HPA was able to successfully calculate a replica count from {metric}"),
        ),
        metric,
        statuses,
        first_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(replicas: i32, name: &str) -> Result<Proposal, MetricFailure> {
        Ok(Proposal {
            replicas,
            name: name.to_string(),
            status: MetricStatus {
                type_: "Resource".to_string(),
                ..MetricStatus::default()
            },
        })
    }

    fn failed(reason: &'static str) -> Result<Proposal, MetricFailure> {
        Err(MetricFailure::new(
            reason,
            "boom".into(),
            format!("{reason}: boom"),
        ))
    }

    #[test]
    fn the_largest_proposal_wins() {
        let c = combine(vec![ok(3, "cpu"), ok(7, "memory"), ok(5, "x")], 4);
        assert_eq!(c.replicas, Some(7));
        assert_eq!(c.metric, "memory");
        assert_eq!(
            c.condition,
            (
                true,
                "ValidMetricFound",
                "the HPA was able to successfully calculate a replica count from memory".into()
            )
        );
        assert_eq!(c.statuses.len(), 3);
        assert_eq!(c.first_error, None);
    }

    #[test]
    fn failures_block_scale_down_but_not_scale_up() {
        // All failed.
        let c = combine(vec![failed("FailedGetResourceMetric")], 2);
        assert_eq!(c.replicas, None);
        assert_eq!(
            c.condition,
            (
                false,
                "FailedGetResourceMetric",
                "the HPA was unable to compute the replica count: boom".into()
            )
        );
        assert_eq!(
            c.first_error.as_deref(),
            Some(
                "invalid metrics (1 invalid out of 1), first error is: FailedGetResourceMetric: boom"
            )
        );
        assert_eq!(c.statuses, vec![MetricStatus::default()]);
        // One failed, the other would scale down: nothing.
        let c = combine(vec![ok(1, "cpu"), failed("FailedGetPodsMetric")], 4);
        assert_eq!((c.replicas, c.condition.1), (None, "FailedGetPodsMetric"));
        // One failed, the other scales up: go, reporting the failure.
        let c = combine(vec![failed("FailedGetPodsMetric"), ok(6, "cpu")], 4);
        assert_eq!((c.replicas, c.condition.1), (Some(6), "ValidMetricFound"));
        assert_eq!(
            c.first_error.as_deref(),
            Some("invalid metrics (1 invalid out of 2), first error is: FailedGetPodsMetric: boom")
        );
    }
}
