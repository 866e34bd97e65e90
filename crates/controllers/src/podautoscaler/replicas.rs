//! The replica calculation, pure: from the target's pods and their metrics, how many
//! replicas would bring the average to the target — Kubernetes' replica calculator.
//!
//! - `desired = ceil(ready pods × usage / target)`; within the tolerance (10%) of the
//!   target nothing changes.
//! - Pods being deleted or Failed are ignored. Pending pods, and (for CPU) pods not yet
//!   ready or whose sample predates readiness within the CPU initialization period, are
//!   "unready"; pods without a sample are "missing". Both are handled conservatively: on
//!   a scale-up they count as using nothing (unready too), on a scale-down missing pods
//!   count as using 100% of their request (or the target if higher); if that flips the
//!   direction or lands within tolerance, the count stays.
//! - Utilization is usage as a percentage of the pods' requests; a container without a
//!   request for the resource is an error.
//!
//! The pods come as [`Member`]s, what the calculation reads of each.

use super::pods::Member;
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// One pod's sample: the usage in thousandths of a unit, when it was taken and over
/// which window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: Timestamp,
    pub window: Duration,
}

/// Samples by pod name.
pub type PodMetrics = BTreeMap<String, PodMetric>;

/// The calculator's settings and the time.
#[derive(Clone, Copy, Debug)]
pub struct Calculator {
    pub tolerance: f64,
    pub cpu_initialization_period: Duration,
    pub initial_readiness_delay: Duration,
    pub now: Timestamp,
}

/// A utilization proposal: replicas, average utilization (% of request) and average
/// usage (thousandths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utilization {
    pub replicas: i32,
    pub utilization: i32,
    pub raw: i64,
}

struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

fn plus(at: Timestamp, by: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(by)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

impl Calculator {
    fn group(&self, pods: &[Member], metrics: &PodMetrics, resource: &str) -> Groups {
        let mut groups = Groups {
            ready: 0,
            unready: BTreeSet::new(),
            missing: BTreeSet::new(),
            ignored: BTreeSet::new(),
        };
        for pod in pods {
            if pod.ignored {
                groups.ignored.insert(pod.name.clone());
                continue;
            }
            if pod.pending {
                groups.unready.insert(pod.name.clone());
                continue;
            }
            let Some(metric) = metrics.get(&pod.name) else {
                groups.missing.insert(pod.name.clone());
                continue;
            };
            if resource == "cpu" {
                let unready = match (pod.ready, pod.started) {
                    (Some(ready), Some(started)) => {
                        let transition = ready.since;
                        if plus(started, self.cpu_initialization_period) > self.now {
                            ready.is_false || metric.timestamp < plus(transition, metric.window)
                        } else {
                            ready.is_false
                                && plus(started, self.initial_readiness_delay) > transition
                        }
                    }
                    _ => true,
                };
                if unready {
                    groups.unready.insert(pod.name.clone());
                    continue;
                }
            }
            groups.ready += 1;
        }
        groups
    }

    /// The pods grouped, and `metrics` left with only the samples that count (no ignored
    /// or unready pods); an error when no pod or no sample is left to count.
    fn counted(
        &self,
        pods: &[Member],
        metrics: &mut PodMetrics,
        resource: &str,
    ) -> Result<Groups, String> {
        if pods.is_empty() {
            return Err("no pods returned by selector while calculating replica count".into());
        }
        let groups = self.group(pods, metrics, resource);
        for pod in groups.ignored.iter().chain(&groups.unready) {
            metrics.remove(pod);
        }
        if metrics.is_empty() {
            return Err("did not receive metrics for targeted pods (pods might be unready)".into());
        }
        Ok(groups)
    }

    /// The replicas for a utilization target (`targetUtilization`% of the request of
    /// `resource`, of `container` only if given).
    pub fn resource_replicas(
        &self,
        current: i32,
        target_utilization: i32,
        resource: &str,
        container: Option<&str>,
        pods: &[Member],
        mut metrics: PodMetrics,
    ) -> Result<Utilization, String> {
        let groups = self.counted(pods, &mut metrics, resource)?;
        let requests = requests(pods, container, resource)?;
        let (ratio, utilization, raw) = utilization_ratio(&metrics, &requests, target_utilization)?;
        let result = |replicas| Utilization {
            replicas,
            utilization,
            raw,
        };
        let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if (1.0 - ratio).abs() <= self.tolerance {
                return Ok(result(current));
            }
            return Ok(result(ceil(ratio * groups.ready as f64)));
        }
        if ratio < 1.0 {
            let fallback = i64::from(target_utilization.max(100));
            for pod in &groups.missing {
                let request = requests.get(pod).copied().unwrap_or(0);
                metrics.insert(pod.clone(), sample(request * fallback / 100));
            }
        } else if ratio > 1.0 {
            for pod in &groups.missing {
                metrics.insert(pod.clone(), sample(0));
            }
        }
        if scale_up_with_unready {
            for pod in &groups.unready {
                metrics.insert(pod.clone(), sample(0));
            }
        }
        let (new_ratio, _, _) = utilization_ratio(&metrics, &requests, target_utilization)?;
        Ok(result(self.damped(
            current,
            ratio,
            new_ratio,
            metrics.len(),
        )))
    }

    /// The replicas for an average-value target (`target` thousandths per pod) of
    /// `resource`.
    pub fn plain_replicas(
        &self,
        current: i32,
        target: i64,
        resource: &str,
        pods: &[Member],
        mut metrics: PodMetrics,
    ) -> Result<(i32, i64), String> {
        let groups = self.counted(pods, &mut metrics, resource)?;
        let (ratio, usage) = usage_ratio(&metrics, target);
        let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
        if !scale_up_with_unready && groups.missing.is_empty() {
            if (1.0 - ratio).abs() <= self.tolerance {
                return Ok((current, usage));
            }
            return Ok((ceil(ratio * groups.ready as f64), usage));
        }
        for pod in &groups.missing {
            let value = if ratio < 1.0 { target } else { 0 };
            metrics.insert(pod.clone(), sample(value));
        }
        if scale_up_with_unready {
            for pod in &groups.unready {
                metrics.insert(pod.clone(), sample(0));
            }
        }
        let (new_ratio, _) = usage_ratio(&metrics, target);
        Ok((self.damped(current, ratio, new_ratio, metrics.len()), usage))
    }

    /// The proposal after filling in unready and missing pods: unchanged when within
    /// tolerance or when the direction flipped.
    fn damped(&self, current: i32, ratio: f64, new_ratio: f64, counted: usize) -> i32 {
        if (1.0 - new_ratio).abs() <= self.tolerance
            || (ratio < 1.0 && new_ratio > 1.0)
            || (ratio > 1.0 && new_ratio < 1.0)
        {
            return current;
        }
        let replicas = ceil(new_ratio * counted as f64);
        if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
            return current;
        }
        replicas
    }
}

fn sample(value: i64) -> PodMetric {
    PodMetric {
        value,
        timestamp: Timestamp::UNIX_EPOCH,
        window: Duration::ZERO,
    }
}

fn ceil(value: f64) -> i32 {
    let v = value.ceil();
    if v >= f64::from(i32::MAX) {
        i32::MAX
    } else if v <= 0.0 {
        0
    } else {
        v as i32
    }
}

/// Each pod's request for `resource` (thousandths): its containers' and sidecars'.
fn requests(
    pods: &[Member],
    container: Option<&str>,
    resource: &str,
) -> Result<BTreeMap<String, i64>, String> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let Some(containers) = &pod.containers else {
            continue;
        };
        let mut sum = 0i64;
        for c in containers {
            if container.is_some_and(|name| name != c.container) {
                continue;
            }
            match c.get(resource) {
                Some(milli) => sum = sum.saturating_add(milli),
                None => {
                    return Err(format!(
                        "missing request for {resource} in container {} of Pod {}",
                        c.container, pod.name
                    ));
                }
            }
        }
        out.insert(pod.name.clone(), sum);
    }
    Ok(out)
}

/// (usage / target ratio, utilization %, average usage) over the pods with requests.
fn utilization_ratio(
    metrics: &PodMetrics,
    requests: &BTreeMap<String, i64>,
    target: i32,
) -> Result<(f64, i32, i64), String> {
    let mut total = 0i64;
    let mut requested = 0i64;
    let mut entries = 0i64;
    for (pod, metric) in metrics {
        let Some(request) = requests.get(pod) else {
            continue;
        };
        total = total.saturating_add(metric.value);
        requested = requested.saturating_add(*request);
        entries += 1;
    }
    if requested == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = i32::try_from(total.saturating_mul(100) / requested).unwrap_or(i32::MAX);
    Ok((
        f64::from(utilization) / f64::from(target.max(1)),
        utilization,
        total / entries,
    ))
}

/// (usage / target ratio, average usage).
fn usage_ratio(metrics: &PodMetrics, target: i64) -> (f64, i64) {
    let total: i64 = metrics.values().map(|m| m.value).sum();
    let usage = total / (metrics.len().max(1) as i64);
    (usage as f64 / target.max(1) as f64, usage)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    const NOW: i64 = 1_700_000_000;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn calc() -> Calculator {
        Calculator {
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
            now: at(NOW),
        }
    }

    /// A running pod requesting 1 CPU, started long ago, ready (or not) since then.
    fn pod(name: &str, phase: &str, ready: bool) -> Member {
        pod_started(name, phase, ready, NOW - 3600, NOW - 3500)
    }

    fn whole_pod(name: &str, phase: &str, ready: bool, start: i64, transition: i64) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "100Mi"}}}]},
            "status": {"phase": phase, "startTime": at(start).to_string(),
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                                       "lastTransitionTime": at(transition).to_string()}]}
        }))
        .unwrap()
    }

    fn pod_started(name: &str, phase: &str, ready: bool, start: i64, transition: i64) -> Member {
        Member::of(&whole_pod(name, phase, ready, start, transition))
    }

    fn metrics(values: &[(&str, i64)]) -> PodMetrics {
        values
            .iter()
            .map(|(n, v)| {
                (
                    n.to_string(),
                    PodMetric {
                        value: *v,
                        timestamp: at(NOW - 10),
                        window: Duration::from_secs(30),
                    },
                )
            })
            .collect()
    }

    fn replicas(
        current: i32,
        target: i32,
        pods: &[Member],
        m: &[(&str, i64)],
    ) -> Result<i32, String> {
        calc()
            .resource_replicas(current, target, "cpu", None, pods, metrics(m))
            .map(|u| u.replicas)
    }

    #[test]
    fn scales_in_proportion_outside_the_tolerance() {
        let pods = [pod("a", "Running", true), pod("b", "Running", true)];
        // 90% of request against a 50% target: ceil(2 × 1.8) = 4.
        assert_eq!(replicas(2, 50, &pods, &[("a", 900), ("b", 900)]), Ok(4));
        let u = calc()
            .resource_replicas(
                2,
                50,
                "cpu",
                None,
                &pods,
                metrics(&[("a", 900), ("b", 900)]),
            )
            .unwrap();
        assert_eq!((u.utilization, u.raw), (90, 900));
        // 54% against 50%: within 10%, unchanged.
        assert_eq!(replicas(2, 50, &pods, &[("a", 540), ("b", 540)]), Ok(2));
        // 10% against 50%: ceil(2 × 0.2) = 1.
        assert_eq!(replicas(2, 50, &pods, &[("a", 100), ("b", 100)]), Ok(1));
    }

    #[test]
    fn deleted_and_failed_pods_are_ignored() {
        let mut deleted = whole_pod("c", "Running", true, NOW - 3600, NOW - 3500);
        deleted.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(NOW)),
        );
        let pods = [
            pod("a", "Running", true),
            pod("b", "Failed", true),
            Member::of(&deleted),
        ];
        assert_eq!(
            replicas(3, 50, &pods, &[("a", 1000), ("b", 0), ("c", 0)]),
            Ok(2)
        );
    }

    #[test]
    fn unready_pods_damp_a_scale_up() {
        // One ready pod at 100% of a 50% target, two pending: they count as 0%:
        // (100 + 0 + 0) / 3 = 33% → would scale down, so the count stays.
        let pods = [
            pod("a", "Running", true),
            pod("b", "Pending", false),
            pod("c", "Pending", false),
        ];
        assert_eq!(replicas(3, 50, &pods, &[("a", 1000)]), Ok(3));
        // At 300%: (300 + 0 + 0) / 3 = 100% of 50% → ceil(3 × 2) = 6.
        assert_eq!(replicas(3, 50, &pods, &[("a", 3000)]), Ok(6));
        // A CPU sample taken before the pod became ready, within the initialization
        // period, is unready too.
        let fresh = pod_started("b", "Running", true, NOW - 60, NOW - 20);
        let pods = [pod("a", "Running", true), fresh];
        // (Counted, it would be (100% + 300%) / 2 = 200% of 50% → 8; as 0%, it is 50%.)
        assert_eq!(replicas(2, 50, &pods, &[("a", 1000), ("b", 3000)]), Ok(2));
        // Memory ignores readiness: both count.
        let fresh = pod_started("b", "Running", false, NOW - 60, NOW - 20);
        let pods = [pod("a", "Running", true), fresh];
        let u = calc()
            .resource_replicas(
                2,
                50,
                "memory",
                None,
                &pods,
                metrics(&[("a", 1000), ("b", 3000)]),
            )
            .unwrap();
        assert_eq!(u.utilization, 0);
    }

    #[test]
    fn missing_metrics_are_filled_in_conservatively() {
        let pods = [
            pod("a", "Running", true),
            pod("b", "Running", true),
            pod("c", "Running", true),
        ];
        // Scale-down: the missing pod counts as 100%: (10 + 10 + 100)/3 = 40% of 50%.
        assert_eq!(replicas(3, 50, &pods, &[("a", 100), ("b", 100)]), Ok(3));
        // Scale-down that stays a scale-down: (0 + 0 + 100)/3 = 33% of 100%.
        assert_eq!(replicas(3, 100, &pods, &[("a", 0), ("b", 0)]), Ok(1));
        // Scale-up: the missing pod counts as 0%: (200 + 200 + 0)/3 = 133% of 50%.
        assert_eq!(replicas(3, 50, &pods, &[("a", 2000), ("b", 2000)]), Ok(8));
        // Nothing at all.
        assert_eq!(
            replicas(3, 50, &pods, &[]),
            Err("did not receive metrics for targeted pods (pods might be unready)".into())
        );
        assert_eq!(
            replicas(3, 50, &[], &[]),
            Err("no pods returned by selector while calculating replica count".into())
        );
    }

    #[test]
    fn a_missing_request_is_an_error() {
        let pod = Member::of(
            &serde_json::from_value(json!({
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "app"}]},
                "status": {"phase": "Running"}
            }))
            .unwrap(),
        );
        assert_eq!(
            calc()
                .resource_replicas(1, 50, "memory", None, &[pod], metrics(&[("p", 1)]))
                .map(|u| u.replicas),
            Err("missing request for memory in container app of Pod p".into())
        );
    }

    #[test]
    fn average_value_targets() {
        let pods = [pod("a", "Running", true), pod("b", "Running", true)];
        // 300m average against 100m: 3 × 2 = 6.
        assert_eq!(
            calc().plain_replicas(2, 100, "cpu", &pods, metrics(&[("a", 300), ("b", 300)])),
            Ok((6, 300))
        );
        assert_eq!(
            calc().plain_replicas(2, 100, "memory", &pods, metrics(&[("a", 105), ("b", 105)])),
            Ok((2, 105))
        );
    }
}
