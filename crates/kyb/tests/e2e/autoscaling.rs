//! The HorizontalPodAutoscaler controller: inside `kyb server` against the real resource
//! metrics API with no metrics to give (the fake kubelets serve none) — kubectl autoscale,
//! the minReplicas clamp, FailedGetResourceMetric
//! — and run in the test process with a fake metrics source and a fake clock — scale-up
//! under the behavior's policy, scale-down only after the stabilization window.

use crate::cluster::Cluster;
use crate::kubelet::{FakeKubelet, admin_client};
use crate::poll::{events_of, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, ListParams, PostParams};
use kyb_controllers::clock::FakeClock;
use kyb_controllers::podautoscaler::metrics::{MetricsSource, PodUsage};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

async fn default_account(client: &kube::Client) {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    let _ = accounts.create(&PostParams::default(), &account).await;
}

/// (status, reason, message) of the HPA's condition `type_`.
fn condition(hpa: &HorizontalPodAutoscaler, type_: &str) -> Option<(String, String, String)> {
    hpa.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

async fn replicas(deployments: &Api<Deployment>, name: &str) -> i32 {
    deployments
        .get(name)
        .await
        .unwrap()
        .spec
        .and_then(|s| s.replicas)
        .unwrap_or(0)
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "app", "image": "nginx",
                                        "resources": {"requests": {"cpu": "100m"}}}]}}}
    }))
    .unwrap()
}

#[tokio::test]
async fn kubectl_autoscale_without_metrics() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(dir, &["--horizontal-pod-autoscaler-sync-period=1s"]);
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["node-1"]).await;
    default_account(&client).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    cluster.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--min=2",
        "--max=5",
        "--cpu-percent=50",
    ]);

    // Below minReplicas: scaled to 2 at once, metrics or not.
    wait_for("the deployment at 2 replicas", || async {
        (replicas(&deployments, "web").await == 2).then_some(())
    })
    .await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "default");
    // Then the metrics API has none for the pods: ScalingActive False, size left alone.
    let hpa = wait_for("ScalingActive False", || async {
        let hpa = hpas.get("web").await.ok()?;
        (condition(&hpa, "ScalingActive")?.1 == "FailedGetResourceMetric").then_some(hpa)
    })
    .await;
    let (status, _, message) = condition(&hpa, "ScalingActive").unwrap();
    assert_eq!(status, "False");
    assert_eq!(
        message,
        "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"
    );
    let able = condition(&hpa, "AbleToScale").unwrap();
    assert_eq!(
        (able.0.as_str(), able.1.as_str()),
        ("True", "SucceededGetScale")
    );
    let status = hpa.status.as_ref().unwrap();
    assert_eq!(status.current_replicas, Some(2));
    assert_eq!(status.desired_replicas, 2);
    assert!(status.last_scale_time.is_some());
    assert_eq!(status.observed_generation, hpa.metadata.generation);

    let events = wait_for("the HPA's events", || async {
        let events = events_of(&client, "web").await;
        let has = |reason: &str| events.iter().any(|(r, _)| r == reason);
        (has("SuccessfulRescale")
            && has("FailedGetResourceMetric")
            && has("FailedComputeMetricsReplicas"))
        .then_some(events)
    })
    .await;
    assert!(events.contains(&(
        "SuccessfulRescale".to_string(),
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas".to_string()
    )));
    let computed = events
        .iter()
        .find(|(r, _)| r == "FailedComputeMetricsReplicas")
        .unwrap();
    assert!(
        computed.1.starts_with("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: "),
        "{}",
        computed.1
    );
    // Left alone since.
    assert_eq!(replicas(&deployments, "web").await, 2);

    let table = cluster.kubectl_ok(&["get", "hpa", "web"]);
    assert!(table.contains("<unknown>/50%"), "{table}");
    let row = crate::cluster::rows(&table);
    assert_eq!(row[0][..3], ["NAME", "REFERENCE", "TARGETS"]);
    assert!(row[1].contains(&"Deployment/web".to_string()), "{table}");
    let described = cluster.kubectl_ok(&["describe", "hpa", "web"]);
    for expected in [
        "Min replicas:",
        "AbleToScale",
        "ScalingActive",
        "FailedGetResourceMetric",
        "SuccessfulRescale",
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas",
    ] {
        assert!(described.contains(expected), "{expected} in {described}");
    }

    // A missing target: AbleToScale False FailedGetScale, with a warning.
    let ghost: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "ghost"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ghost"},
                 "maxReplicas": 3}
    }))
    .unwrap();
    hpas.create(&PostParams::default(), &ghost).await.unwrap();
    let hpa = wait_for("FailedGetScale", || async {
        let hpa = hpas.get("ghost").await.ok()?;
        condition(&hpa, "AbleToScale")
    })
    .await;
    assert_eq!(
        hpa,
        (
            "False".to_string(),
            "FailedGetScale".to_string(),
            "the HPA controller was unable to get the target's current scale: deployments.apps \"ghost\" not found".to_string()
        )
    );
    wait_for("the FailedGetScale event", || async {
        events_of(&client, "ghost")
            .await
            .contains(&(
                "FailedGetScale".to_string(),
                "deployments.apps \"ghost\" not found".to_string(),
            ))
            .then_some(())
    })
    .await;

    // A target at zero replicas is not autoscaled.
    deployments
        .create(&PostParams::default(), &deployment("idle", 0))
        .await
        .unwrap();
    cluster.kubectl_ok(&["autoscale", "deployment", "idle", "--max=3"]);
    let hpa = wait_for("ScalingDisabled", || async {
        let hpa = hpas.get("idle").await.ok()?;
        condition(&hpa, "ScalingActive")
    })
    .await;
    assert_eq!(
        hpa,
        (
            "False".to_string(),
            "ScalingDisabled".to_string(),
            "scaling is disabled since the replica count of the target is zero".to_string()
        )
    );
    assert_eq!(replicas(&deployments, "idle").await, 0);
}

/// Every pod the selector matches using `cpu` millicores, sampled at the fake clock's now.
struct FakeMetrics {
    client: kube::Client,
    clock: Arc<FakeClock>,
    cpu: AtomicI64,
}

impl MetricsSource for FakeMetrics {
    fn pod_resource_metrics<'a>(
        &'a self,
        namespace: &'a str,
        selector: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<PodUsage>, String>> + Send + 'a>> {
        Box::pin(async move {
            use kyb_controllers::clock::Clock;
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            let list = pods
                .list(&ListParams::default().labels(selector))
                .await
                .map_err(|e| e.to_string())?;
            let cpu = self.cpu.load(Ordering::SeqCst);
            Ok(list
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| PodUsage {
                    pod: p.metadata.name.unwrap_or_default(),
                    timestamp: self.clock.now(),
                    window: Duration::from_secs(30),
                    containers: BTreeMap::from([(
                        "app".to_string(),
                        BTreeMap::from([("cpu".to_string(), cpu)]),
                    )]),
                })
                .collect())
        })
    }
}

#[tokio::test]
async fn scales_up_by_policy_and_down_after_the_stabilization_window() {
    let dir = kyb_testkit::temp_dir("cluster").unwrap();
    let cluster = Cluster::start_with(
        dir,
        &["--controllers=*,-horizontal-pod-autoscaler-controller"],
    );
    cluster.wait_for_default_account("default");
    let client = admin_client(&cluster).await;
    let _kubelet = FakeKubelet::start(client.clone(), &["node-1"]).await;
    // An hour ahead: the pods' CPU initialization period is long over.
    let clock = Arc::new(FakeClock::new(
        k8s_openapi::jiff::Timestamp::from_second(
            k8s_openapi::jiff::Timestamp::now().as_second() + 3600,
        )
        .unwrap(),
    ));
    let metrics = Arc::new(FakeMetrics {
        client: client.clone(),
        clock: clock.clone(),
        cpu: AtomicI64::new(200),
    });
    let mut config = kyb_controllers::manager::Config::new(kyb_controllers::options::Options {
        controllers: vec![kyb_controllers::podautoscaler::NAME.into()],
        hpa_sync_period: Duration::from_millis(500),
        ..Default::default()
    });
    config.clock = clock.clone();
    config.metrics = Some(metrics.clone());
    let clients = kyb_controllers::credentials::Clients::shared(client.clone());
    tokio::spawn(kyb_controllers::manager::run(
        clients,
        config,
        std::future::pending(),
    ));

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("api", 2))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    wait_for("two running pods", || async {
        let list = pods
            .list(&ListParams::default().labels("app=api"))
            .await
            .ok()?;
        (list
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count()
            == 2)
            .then_some(())
    })
    .await;

    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "default");
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                         "target": {"type": "Utilization", "averageUtilization": 50}}}],
            "behavior": {
                "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 120}
            }
        }
    }))
    .unwrap();
    hpas.create(&PostParams::default(), &hpa).await.unwrap();

    // 200% of the request against 50%: 8 wanted, 2 + 2 allowed per minute.
    wait_for("4 replicas", || async {
        (replicas(&deployments, "api").await == 4).then_some(())
    })
    .await;
    let hpa = wait_for("ScaleUpLimit", || async {
        let hpa = hpas.get("api").await.ok()?;
        let limited = condition(&hpa, "ScalingLimited")?;
        (limited.1 == "ScaleUpLimit" && hpa.status.as_ref()?.current_replicas == Some(4))
            .then_some(hpa)
    })
    .await;
    assert_eq!(
        condition(&hpa, "ScalingLimited").unwrap(),
        (
            "True".to_string(),
            "ScaleUpLimit".to_string(),
            "the desired replica count is increasing faster than the maximum scale rate"
                .to_string()
        )
    );
    assert_eq!(
        condition(&hpa, "ScalingActive").unwrap(),
        (
            "True".to_string(),
            "ValidMetricFound".to_string(),
            "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)".to_string()
        )
    );
    let status = hpa.status.clone().unwrap();
    let current = &status.current_metrics.unwrap()[0];
    let resource = current.resource.as_ref().unwrap();
    assert_eq!(
        (current.type_.as_str(), resource.name.as_str()),
        ("Resource", "cpu")
    );
    assert_eq!(resource.current.average_utilization, Some(200));
    assert_eq!(resource.current.average_value.as_ref().unwrap().0, "200m");
    assert_eq!(status.desired_replicas, 4);
    let events = events_of(&client, "api").await;
    assert!(
        events.contains(&(
            "SuccessfulRescale".to_string(),
            "New size: 4; reason: cpu resource utilization (percentage of request) above target"
                .to_string()
        )),
        "{events:?}"
    );
    // Still within the policy's minute: several more syncs, no more replicas.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(replicas(&deployments, "api").await, 4);

    // Low usage: the two-minute window still holds the high recommendations.
    metrics.cpu.store(10, Ordering::SeqCst);
    wait_for("ScaleDownStabilized", || async {
        let hpa = hpas.get("api").await.ok()?;
        (condition(&hpa, "AbleToScale")?.1 == "ScaleDownStabilized").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(replicas(&deployments, "api").await, 4);

    // Past the window: down to ceil(4 × 10% / 50%) = 1.
    clock.advance(Duration::from_secs(121));
    wait_for("1 replica", || async {
        (replicas(&deployments, "api").await == 1).then_some(())
    })
    .await;
    let hpa = wait_for("the status at 1", || async {
        let hpa = hpas.get("api").await.ok()?;
        (hpa.status.as_ref()?.current_replicas == Some(1)).then_some(hpa)
    })
    .await;
    let status = hpa.status.unwrap();
    assert_eq!(status.desired_replicas, 1);
    assert_eq!(
        status.last_scale_time.map(|t| t.0.as_second()),
        Some(clock_now(&clock).as_second())
    );
    let events = events_of(&client, "api").await;
    assert!(
        events.contains(&(
            "SuccessfulRescale".to_string(),
            "New size: 1; reason: All metrics below target".to_string()
        )),
        "{events:?}"
    );
}

fn clock_now(clock: &FakeClock) -> k8s_openapi::jiff::Timestamp {
    use kyb_controllers::clock::Clock;
    clock.now()
}
