//! Where the HPA controller gets its metrics: a [`MetricsSource`]. The production one,
//! [`ApiMetricsSource`], lists `PodMetrics` from the resource metrics API
//! (`/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods?labelSelector=…`, served by a
//! metrics server behind an APIService); tests substitute their own. Custom (object,
//! pods) and external metrics are not supported yet (the controller reports them as
//! failing metrics).

use futures::future::BoxFuture;
use jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// One pod's resource usage sample.
#[derive(Clone, Debug, PartialEq)]
pub struct PodUsage {
    pub pod: String,
    /// When the sample was taken (the end of its window).
    pub timestamp: Timestamp,
    /// The interval it averages over.
    pub window: Duration,
    /// Per container: usage in thousandths by resource name (`cpu` in millicores,
    /// `memory` in thousandths of a byte).
    pub containers: BTreeMap<String, BTreeMap<String, i64>>,
}

/// A source of metrics for the HPA controller. Errors are messages as the HPA reports
/// them (`unable to fetch metrics from resource metrics API: …`).
pub trait MetricsSource: Send + Sync + 'static {
    /// The usage samples of the pods in `namespace` matching `selector` (a label
    /// selector in string form).
    fn pod_resource_metrics<'a>(
        &'a self,
        namespace: &'a str,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<PodUsage>, String>>;
}

/// The resource metrics API through the API server.
pub struct ApiMetricsSource {
    client: kube::Client,
}

impl ApiMetricsSource {
    pub fn new(client: kube::Client) -> ApiMetricsSource {
        ApiMetricsSource { client }
    }
}

/// client-go's wording for an API error on `get pods.metrics.k8s.io`.
fn api_error(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => match status.code {
            404 => "the server could not find the requested resource (get pods.metrics.k8s.io)"
                .to_string(),
            503 => "the server is currently unable to handle the request (get pods.metrics.k8s.io)"
                .to_string(),
            _ if !status.message.is_empty() => status.message.clone(),
            code => format!(
                "an error on the server ({code}) has prevented the request from succeeding (get pods.metrics.k8s.io)"
            ),
        },
        other => other.to_string(),
    }
}

/// A `PodMetrics` object's sample.
pub fn pod_usage(object: &DynamicObject) -> PodUsage {
    let data = &object.data;
    let timestamp = data
        .get("timestamp")
        .and_then(|t| t.as_str())
        .and_then(|t| t.parse().ok())
        .unwrap_or(Timestamp::UNIX_EPOCH);
    let window = data
        .get("window")
        .and_then(|w| w.as_str())
        .map(|w| kyb_apimachinery::duration::parse(w).unwrap_or_default())
        .unwrap_or_default();
    let mut containers = BTreeMap::new();
    for container in data
        .get("containers")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        let name = container
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_string();
        let usage = container
            .get("usage")
            .and_then(|u| u.as_object())
            .into_iter()
            .flatten()
            .filter_map(|(resource, amount)| {
                Some((
                    resource.clone(),
                    super::quantity::parse_milli(amount.as_str()?)?,
                ))
            })
            .collect();
        containers.insert(name, usage);
    }
    PodUsage {
        pod: object.metadata.name.clone().unwrap_or_default(),
        timestamp,
        window,
        containers,
    }
}

impl MetricsSource for ApiMetricsSource {
    fn pod_resource_metrics<'a>(
        &'a self,
        namespace: &'a str,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<PodUsage>, String>> {
        Box::pin(async move {
            let resource = ApiResource {
                group: "metrics.k8s.io".to_string(),
                version: "v1beta1".to_string(),
                api_version: "metrics.k8s.io/v1beta1".to_string(),
                kind: "PodMetrics".to_string(),
                plural: "pods".to_string(),
            };
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), namespace, &resource);
            let list = api
                .list(&ListParams::default().labels(selector))
                .await
                .map_err(|e| {
                    format!(
                        "unable to fetch metrics from resource metrics API: {}",
                        api_error(&e)
                    )
                })?;
            Ok(list.items.iter().map(pod_usage).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_pod_metrics() {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
            "metadata": {"name": "web-1", "namespace": "default"},
            "timestamp": "2026-01-01T00:00:00Z", "window": "1m0.5s",
            "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "1Ki"}}]
        }))
        .unwrap();
        let usage = pod_usage(&object);
        assert_eq!(usage.pod, "web-1");
        assert_eq!(usage.window, Duration::from_millis(60_500));
        assert_eq!(usage.containers["app"]["cpu"], 250);
        assert_eq!(usage.containers["app"]["memory"], 1_024_000);
    }
}
