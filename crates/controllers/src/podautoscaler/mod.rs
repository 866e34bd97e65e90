//! The HorizontalPodAutoscaler controller (kube-controller-manager's
//! `horizontal-pod-autoscaler-controller`, acting as the `horizontal-pod-autoscaler`
//! service account): every `--horizontal-pod-autoscaler-sync-period` (15 s) each
//! autoscaling/v2 HPA is evaluated as Kubernetes documents it.
//!
//! - The target's `/scale` subresource ([`scale`]) gives the current replicas and the pod
//!   selector (AbleToScale SucceededGetScale, or False FailedGetScale with a Warning event).
//! - A target at 0 replicas (with minReplicas > 0) is not autoscaled (ScalingActive False
//!   ScalingDisabled); one outside [minReplicas, maxReplicas] is brought inside.
//! - Otherwise each metric ([`metrics::MetricsSource`]; Resource and ContainerResource
//!   metrics with Utilization or AverageValue targets) proposes a count ([`replicas`]); the
//!   largest wins (ScalingActive True ValidMetricFound). When every metric fails, or some
//!   fail and the rest would scale down, nothing is scaled: ScalingActive False with the
//!   first failure's reason (FailedGetResourceMetric, …), Warning events of that reason and
//!   FailedComputeMetricsReplicas.
//! - The proposal is stabilized, rate-limited and clamped ([`normalize`]; AbleToScale
//!   ScaleUpStabilized / ScaleDownStabilized / ReadyForNewScale, ScalingLimited
//!   DesiredWithinRange / TooFewReplicas / TooManyReplicas / ScaleUpLimit /
//!   ScaleDownLimit), then written to `/scale` (AbleToScale SucceededRescale and a
//!   SuccessfulRescale event "New size: N; reason: …", or FailedUpdateScale and a
//!   FailedRescale warning).
//! - Status (currentReplicas, desiredReplicas, lastScaleTime, currentMetrics,
//!   observedGeneration, conditions) is written only when it changed.
//!
//! The target's pods are read one at a time and kept as [`pods::Member`]s.

pub mod metrics;
pub mod normalize;
pub mod pods;
pub mod proposals;
pub mod quantity;
pub mod replicas;
pub mod scale;

use crate::context::Context;
use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus,
    MetricSpec, MetricStatus, MetricTarget, MetricValueStatus, ResourceMetricSource,
    ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use metrics::{ApiMetricsSource, MetricsSource, PodUsage};
use normalize::History;
use proposals::{MetricFailure, Proposal};
use replicas::{Calculator, PodMetric, PodMetrics};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub const NAME: &str = "horizontal-pod-autoscaler-controller";
/// The service account the controller acts as (its role:
/// `system:controller:horizontal-pod-autoscaler`).
pub const SERVICE_ACCOUNT: &str = "horizontal-pod-autoscaler";
/// The source of its events.
const COMPONENT: &str = "horizontal-pod-autoscaler";

const ABLE_TO_SCALE: &str = "AbleToScale";
const SCALING_ACTIVE: &str = "ScalingActive";
const SCALING_LIMITED: &str = "ScalingLimited";

pub struct HpaReconciler {
    hpas: Arc<Informer<HorizontalPodAutoscaler>>,
    pods: Arc<Informer<Pod, Compacted>>,
    client: kube::Client,
    scales: scale::Scales,
    metrics: Arc<dyn MetricsSource>,
    recorder: Recorder,
    ctx: Arc<Context>,
    histories: Mutex<HashMap<ObjectKey, History>>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let hpas = ctx.informers.get::<HorizontalPodAutoscaler>();
    let pods = ctx.informers.compacted::<Pod>();
    let client = ctx.client_for(SERVICE_ACCOUNT).await?;
    let metrics = ctx
        .metrics
        .clone()
        .unwrap_or_else(|| Arc::new(ApiMetricsSource::new(client.clone())));
    let reconciler = Arc::new(HpaReconciler {
        hpas: hpas.clone(),
        pods: pods.clone(),
        scales: scale::Scales::new(client.clone()),
        client,
        metrics,
        recorder: ctx.recorder(COMPONENT),
        ctx: ctx.clone(),
        histories: Mutex::new(HashMap::new()),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    // New HPAs, spec changes and deletions are looked at at once; everything else waits
    // for the HPA's next sync (its own status writes must not make it sync early).
    hpas.on_change(move |change| {
        let wanted = match change {
            Change::Added(_) | Change::Deleted(_) => true,
            Change::Updated { old, new } => old.metadata.generation != new.metadata.generation,
        };
        if wanted {
            queue.add(ObjectKey::of(change.object().as_ref()));
        }
    });
    hpas.wait_synced().await;
    pods.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

/// Sets the condition `type_` (its transition time moves only when its status does).
fn set_condition(
    hpa: &mut HorizontalPodAutoscaler,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    now: jiff::Timestamp,
) {
    let status = if status { "True" } else { "False" };
    let conditions = hpa
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    let new = HorizontalPodAutoscalerCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: Some(Time(now)),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            let since = if existing.status == status {
                existing.last_transition_time.clone()
            } else {
                new.last_transition_time.clone()
            };
            *existing = HorizontalPodAutoscalerCondition {
                last_transition_time: since,
                ..new
            };
        }
        None => conditions.push(new),
    }
}

/// The metrics used when an HPA names none: 80% CPU utilization.
fn default_metrics() -> Vec<MetricSpec> {
    vec![MetricSpec {
        type_: "Resource".to_string(),
        resource: Some(ResourceMetricSource {
            name: "cpu".to_string(),
            target: MetricTarget {
                type_: "Utilization".to_string(),
                average_utilization: Some(80),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    }]
}

/// The samples of `resource` (of `container` if given) per pod: pods whose sample lacks
/// it count as missing.
fn pod_metrics(usages: &[PodUsage], resource: &str, container: Option<&str>) -> PodMetrics {
    let mut out = PodMetrics::new();
    for usage in usages {
        let value = match container {
            Some(name) => usage
                .containers
                .get(name)
                .and_then(|c| c.get(resource))
                .copied(),
            None => usage
                .containers
                .values()
                .map(|c| c.get(resource).copied())
                .sum::<Option<i64>>(),
        };
        if let Some(value) = value {
            out.insert(
                usage.pod.clone(),
                PodMetric {
                    value,
                    timestamp: usage.timestamp,
                    window: usage.window,
                },
            );
        }
    }
    out
}

impl Reconciler for HpaReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(cached) = self.hpas.get_key(key) else {
            self.histories
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(key);
            return Ok(Action::Done);
        };
        let mut hpa = (*cached).clone();
        if let Err(error) = self.sync(&mut hpa, key).await {
            tracing::debug!(hpa = %key, %error, "horizontal pod autoscaler sync failed");
        }
        if hpa.status != cached.status {
            let api: Api<HorizontalPodAutoscaler> =
                Api::namespaced(self.client.clone(), &key.namespace);
            match api
                .replace_status(&key.name, &PostParams::default(), &hpa)
                .await
            {
                Ok(_) => {}
                // Changed meanwhile: the next sync writes the status again.
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tracing::debug!(hpa = %key, "status update conflict");
                }
                Err(error) => {
                    tracing::warn!(hpa = %key, %error, "updating the horizontal pod autoscaler's status");
                }
            }
        }
        // Failures wait for the next sync too, as in Kubernetes (no fast retries: each
        // attempt records events).
        Ok(Action::RequeueAfter(self.ctx.options.hpa_sync_period))
    }
}

impl HpaReconciler {
    fn with_history<T>(&self, key: &ObjectKey, f: impl FnOnce(&mut History) -> T) -> T {
        let mut histories = self.histories.lock().unwrap_or_else(|e| e.into_inner());
        f(histories.entry(key.clone()).or_default())
    }

    fn set_status(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        current: i32,
        desired: i32,
        metrics: Vec<MetricStatus>,
        rescaled: bool,
    ) {
        let generation = hpa.metadata.generation;
        let now = self.ctx.now();
        let status = hpa
            .status
            .get_or_insert_with(HorizontalPodAutoscalerStatus::default);
        status.current_replicas = Some(current);
        status.desired_replicas = desired;
        status.current_metrics = (!metrics.is_empty()).then_some(metrics);
        status.observed_generation = generation;
        if rescaled {
            status.last_scale_time = Some(Time(now));
        }
    }

    /// One evaluation of `hpa` (its status updated in place); errors are what Kubernetes
    /// logs.
    async fn sync(&self, hpa: &mut HorizontalPodAutoscaler, key: &ObjectKey) -> Result<(), String> {
        let now = self.ctx.now();
        let spec = hpa.spec.clone().unwrap_or_default();
        let target = &spec.scale_target_ref;
        let reference = format!("{}/{}/{}", target.kind, key.namespace, target.name);
        let api_version = target.api_version.clone().unwrap_or_default();

        let scale = match self.scales.resolve(&api_version, &target.kind).await {
            Ok(resource) => self
                .scales
                .get(&resource, &key.namespace, &target.name)
                .await
                .map(|scale| (resource, scale)),
            Err(error) => Err(error),
        };
        let (resource, mut scale) = match scale {
            Ok(found) => found,
            Err(error) => {
                self.recorder
                    .warning(&*hpa, "FailedGetScale", error.clone());
                set_condition(
                    hpa,
                    ABLE_TO_SCALE,
                    false,
                    "FailedGetScale",
                    format!(
                        "the HPA controller was unable to get the target's current scale: {error}"
                    ),
                    now,
                );
                return Err(format!(
                    "failed to query scale subresource for {reference}: {error}"
                ));
            }
        };
        set_condition(
            hpa,
            ABLE_TO_SCALE,
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale".to_string(),
            now,
        );
        let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        self.with_history(key, |h| h.initialize(current, now));
        let min = spec.min_replicas.unwrap_or(1);
        let max = spec.max_replicas;

        let mut metric_statuses = vec![];
        let mut result = Ok(());
        let (desired, rescale_reason, rescale) = if current == 0 && min != 0 {
            set_condition(
                hpa,
                SCALING_ACTIVE,
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero".to_string(),
                now,
            );
            (0, String::new(), false)
        } else if current > max {
            (
                max,
                "Current number of replicas above Spec.MaxReplicas".to_string(),
                true,
            )
        } else if current < min {
            (
                min,
                "Current number of replicas below Spec.MinReplicas".to_string(),
                true,
            )
        } else {
            let (proposed, metric, statuses, error) = self
                .replicas_for_metrics(hpa, &spec.metrics, &scale, key)
                .await;
            metric_statuses = statuses;
            let Some(proposed) = proposed else {
                let desired = hpa.status.as_ref().map_or(0, |s| s.desired_replicas);
                self.set_status(hpa, current, desired, metric_statuses, false);
                let error = error.unwrap_or_default();
                self.recorder
                    .warning(&*hpa, "FailedComputeMetricsReplicas", error.clone());
                return Err(format!(
                    "failed to compute desired number of replicas based on listed metrics for {reference}: {error}"
                ));
            };
            if let Some(error) = error {
                result = Err(error);
            }
            let reason = if proposed > current {
                format!("{metric} above target")
            } else if proposed < current {
                "All metrics below target".to_string()
            } else {
                String::new()
            };
            let normalized = match &spec.behavior {
                None => self.with_history(key, |h| {
                    h.normalize_legacy(
                        now,
                        self.ctx.options.hpa_downscale_stabilization,
                        current,
                        proposed,
                        min,
                        max,
                    )
                }),
                Some(behavior) => {
                    let (up, down) =
                        normalize::rules(behavior, self.ctx.options.hpa_downscale_stabilization);
                    self.with_history(key, |h| {
                        h.normalize(now, &up, &down, current, proposed, min, max)
                    })
                }
            };
            set_condition(
                hpa,
                ABLE_TO_SCALE,
                true,
                normalized.able.0,
                normalized.able.1.to_string(),
                now,
            );
            set_condition(
                hpa,
                SCALING_LIMITED,
                normalized.limited.0,
                normalized.limited.1,
                normalized.limited.2.to_string(),
                now,
            );
            (normalized.replicas, reason, normalized.replicas != current)
        };

        if rescale {
            scale.spec.get_or_insert_with(Default::default).replicas = Some(desired);
            if let Err(error) = self.scales.update(&resource, &key.namespace, &scale).await {
                self.recorder.warning(
                    &*hpa,
                    "FailedRescale",
                    format!("New size: {desired}; reason: {rescale_reason}; error: {error}"),
                );
                set_condition(
                    hpa,
                    ABLE_TO_SCALE,
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {error}"),
                    now,
                );
                let previous = hpa.status.as_ref().map_or(0, |s| s.desired_replicas);
                self.set_status(hpa, current, previous, metric_statuses, false);
                return Err(format!("failed to rescale {reference}: {error}"));
            }
            set_condition(
                hpa,
                ABLE_TO_SCALE,
                true,
                "SucceededRescale",
                format!("the HPA controller was able to update the target scale to {desired}"),
                now,
            );
            self.recorder.normal(
                &*hpa,
                "SuccessfulRescale",
                format!("New size: {desired}; reason: {rescale_reason}"),
            );
            if let Some(behavior) = &spec.behavior {
                let (up, down) =
                    normalize::rules(behavior, self.ctx.options.hpa_downscale_stabilization);
                self.with_history(key, |h| {
                    h.record_scale(Some((&up, &down)), now, current, desired)
                });
            }
            tracing::info!(hpa = %key, from = current, to = desired, reason = %rescale_reason, "rescaled");
        }
        let desired = if rescale { desired } else { current };
        self.set_status(hpa, current, desired, metric_statuses, rescale);
        result
    }

    /// The largest proposal of the metrics (None when none may be acted on), the metric
    /// behind it, the metrics' statuses, and the first failure.
    async fn replicas_for_metrics(
        &self,
        hpa: &mut HorizontalPodAutoscaler,
        specs: &Option<Vec<MetricSpec>>,
        scale: &k8s_openapi::api::autoscaling::v1::Scale,
        key: &ObjectKey,
    ) -> (Option<i32>, String, Vec<MetricStatus>, Option<String>) {
        let now = self.ctx.now();
        let specs = match specs {
            Some(specs) if !specs.is_empty() => specs.clone(),
            _ => default_metrics(),
        };
        let selector_text = scale
            .status
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        if selector_text.is_empty() {
            self.recorder.warning(
                &*hpa,
                "SelectorRequired",
                "selector is required".to_string(),
            );
            set_condition(
                hpa,
                SCALING_ACTIVE,
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector".to_string(),
                now,
            );
            return (
                None,
                String::new(),
                vec![],
                Some("selector is required".to_string()),
            );
        }
        let selector = match kyb_apimachinery::labels::Selector::parse(&selector_text) {
            Ok(selector) => selector,
            Err(error) => {
                let message = format!(
                    "couldn't convert selector into a corresponding internal selector object: {error}"
                );
                self.recorder
                    .warning(&*hpa, "InvalidSelector", message.clone());
                set_condition(
                    hpa,
                    SCALING_ACTIVE,
                    false,
                    "InvalidSelector",
                    message.clone(),
                    now,
                );
                return (None, String::new(), vec![], Some(message));
            }
        };
        let spec_replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let mut pods: Vec<pods::Member> = vec![];
        self.pods.visit_namespace(&key.namespace, |p| {
            let labels = p.metadata.labels.as_ref();
            if selector.matches_pairs(|k| labels.and_then(|l| l.get(k)).map(String::as_str)) {
                pods.push(pods::Member::of(&p));
            }
        });

        let mut results = Vec::with_capacity(specs.len());
        for spec in &specs {
            let result = self
                .replicas_for_metric(spec, spec_replicas, &key.namespace, &selector_text, &pods)
                .await;
            if let Err(failure) = &result {
                self.recorder
                    .warning(&*hpa, failure.reason, failure.cause.clone());
            }
            results.push(result);
        }
        let combined = proposals::combine(results, spec_replicas);
        let (status, reason, message) = combined.condition;
        set_condition(hpa, SCALING_ACTIVE, status, reason, message, now);
        (
            combined.replicas,
            combined.metric,
            combined.statuses,
            combined.first_error,
        )
    }

    fn calculator(&self) -> Calculator {
        Calculator {
            tolerance: self.ctx.options.hpa_tolerance,
            cpu_initialization_period: self.ctx.options.hpa_cpu_initialization_period,
            initial_readiness_delay: self.ctx.options.hpa_initial_readiness_delay,
            now: self.ctx.now(),
        }
    }

    async fn replicas_for_metric(
        &self,
        spec: &MetricSpec,
        current: i32,
        namespace: &str,
        selector: &str,
        pods: &[pods::Member],
    ) -> Result<Proposal, MetricFailure> {
        let (resource, container, target) = match spec.type_.as_str() {
            "Resource" => match &spec.resource {
                Some(r) => (r.name.clone(), None, r.target.clone()),
                None => return Err(invalid_spec(spec)),
            },
            "ContainerResource" => match &spec.container_resource {
                Some(r) => (r.name.clone(), Some(r.container.clone()), r.target.clone()),
                None => return Err(invalid_spec(spec)),
            },
            "Pods" | "Object" | "External" => return Err(unsupported(spec)),
            other => {
                let error = format!("unknown metric source type {other:?}");
                return Err(MetricFailure::new(
                    "InvalidMetricSourceType",
                    error.clone(),
                    error,
                ));
            }
        };
        let (reason, wrap) = match &container {
            None => (
                "FailedGetResourceMetric",
                format!("failed to get {resource} resource metric value"),
            ),
            Some(c) => (
                "FailedGetContainerResourceMetric",
                format!("failed to get {c} container metric value"),
            ),
        };
        let fail =
            |error: String| MetricFailure::new(reason, error.clone(), format!("{wrap}: {error}"));

        let fetched = self
            .metrics
            .pod_resource_metrics(namespace, selector)
            .await
            .and_then(|usages| {
                if usages.is_empty() {
                    Err("no metrics returned from resource metrics API".to_string())
                } else {
                    Ok(pod_metrics(&usages, &resource, container.as_deref()))
                }
            })
            .map_err(|e| format!("unable to get metrics for resource {resource}: {e}"));
        let calculator = self.calculator();
        let container_word = if container.is_some() {
            " container"
        } else {
            ""
        };
        if let Some(average) = &target.average_value {
            let metrics =
                fetched.map_err(|e| fail(format!("failed to get {resource} usage: {e}")))?;
            let (replicas, usage) = calculator
                .plain_replicas(current, quantity::milli(average), &resource, pods, metrics)
                .map_err(|e| fail(format!("failed to get {resource} usage: {e}")))?;
            return Ok(Proposal {
                replicas,
                name: format!("{resource}{container_word} resource"),
                status: metric_status(
                    spec,
                    &resource,
                    container.as_deref(),
                    MetricValueStatus {
                        average_value: Some(quantity::from_milli(usage)),
                        ..MetricValueStatus::default()
                    },
                ),
            });
        }
        let Some(target_utilization) = target.average_utilization else {
            return Err(fail("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".to_string()));
        };
        let metrics =
            fetched.map_err(|e| fail(format!("failed to get {resource} utilization: {e}")))?;
        let computed = calculator
            .resource_replicas(
                current,
                target_utilization,
                &resource,
                container.as_deref(),
                pods,
                metrics,
            )
            .map_err(|e| fail(format!("failed to get {resource} utilization: {e}")))?;
        Ok(Proposal {
            replicas: computed.replicas,
            name: format!(
                "{resource}{container_word} resource utilization (percentage of request)"
            ),
            status: metric_status(
                spec,
                &resource,
                container.as_deref(),
                MetricValueStatus {
                    average_utilization: Some(computed.utilization),
                    average_value: Some(quantity::from_milli(computed.raw)),
                    value: None,
                },
            ),
        })
    }
}

fn invalid_spec(spec: &MetricSpec) -> MetricFailure {
    let error = format!("invalid {} metric source: no source given", spec.type_);
    MetricFailure::new("InvalidMetricSourceType", error.clone(), error)
}

/// Custom and external metrics: not supported yet; reported as a failing metrics API.
fn unsupported(spec: &MetricSpec) -> MetricFailure {
    let (reason, kind, name) = match spec.type_.as_str() {
        "Pods" => (
            "FailedGetPodsMetric",
            "pods",
            spec.pods.as_ref().map(|p| p.metric.name.clone()),
        ),
        "Object" => (
            "FailedGetObjectMetric",
            "object",
            spec.object.as_ref().map(|o| o.metric.name.clone()),
        ),
        _ => (
            "FailedGetExternalMetric",
            "external",
            spec.external.as_ref().map(|e| e.metric.name.clone()),
        ),
    };
    let api = if kind == "external" {
        "external metrics API"
    } else {
        "custom metrics API"
    };
    let cause = format!(
        "unable to get metric {}: unable to fetch metrics from {api}: {kind} metrics are not supported",
        name.unwrap_or_default()
    );
    MetricFailure::new(
        reason,
        cause.clone(),
        format!("failed to get {kind} metric value: {cause}"),
    )
}

fn metric_status(
    spec: &MetricSpec,
    resource: &str,
    container: Option<&str>,
    current: MetricValueStatus,
) -> MetricStatus {
    match container {
        None => MetricStatus {
            type_: spec.type_.clone(),
            resource: Some(ResourceMetricStatus {
                name: resource.to_string(),
                current,
            }),
            ..MetricStatus::default()
        },
        Some(container) => MetricStatus {
            type_: spec.type_.clone(),
            container_resource: Some(
                k8s_openapi::api::autoscaling::v2::ContainerResourceMetricStatus {
                    name: resource.to_string(),
                    container: container.to_string(),
                    current,
                },
            ),
            ..MetricStatus::default()
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::BTreeMap;

    fn t(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let mut hpa = HorizontalPodAutoscaler::default();
        set_condition(
            &mut hpa,
            ABLE_TO_SCALE,
            true,
            "SucceededGetScale",
            "a".into(),
            t(0),
        );
        set_condition(
            &mut hpa,
            SCALING_ACTIVE,
            false,
            "ScalingDisabled",
            "b".into(),
            t(0),
        );
        set_condition(
            &mut hpa,
            ABLE_TO_SCALE,
            true,
            "SucceededRescale",
            "c".into(),
            t(10),
        );
        set_condition(
            &mut hpa,
            SCALING_ACTIVE,
            true,
            "ValidMetricFound",
            "d".into(),
            t(20),
        );
        let conditions = hpa.status.unwrap().conditions.unwrap();
        let summary: Vec<_> = conditions
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.reason.as_deref().unwrap(),
                    c.last_transition_time.as_ref().unwrap().0,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (ABLE_TO_SCALE, "SucceededRescale", t(0)),
                (SCALING_ACTIVE, "ValidMetricFound", t(20))
            ]
        );
    }

    #[test]
    fn pod_samples_sum_containers_and_skip_pods_missing_the_resource() {
        let usage = |pod: &str, containers: &[(&str, &[(&str, i64)])]| PodUsage {
            pod: pod.to_string(),
            timestamp: t(0),
            window: std::time::Duration::from_secs(30),
            containers: containers
                .iter()
                .map(|(name, usage)| {
                    (
                        name.to_string(),
                        usage
                            .iter()
                            .map(|(r, v)| (r.to_string(), *v))
                            .collect::<BTreeMap<_, _>>(),
                    )
                })
                .collect(),
        };
        let usages = [
            usage(
                "a",
                &[("app", &[("cpu", 100)]), ("sidecar", &[("cpu", 20)])],
            ),
            usage(
                "b",
                &[("app", &[("cpu", 100)]), ("sidecar", &[("memory", 5)])],
            ),
        ];
        let all = pod_metrics(&usages, "cpu", None);
        assert_eq!(all.len(), 1);
        assert_eq!(all["a"].value, 120);
        let app = pod_metrics(&usages, "cpu", Some("app"));
        assert_eq!((app["a"].value, app["b"].value), (100, 100));
        assert!(pod_metrics(&usages, "cpu", Some("other")).is_empty());
    }
}
