//! The scheduler's writes through kube-rs: bindings (`pods/<name>/binding`), graceful
//! deletes of preemption victims, `status.nominatedNodeName`, and for pods that do not fit
//! the `PodScheduled=False` condition and a `FailedScheduling` event — what `kubectl
//! describe pod` shows.

use crate::framework::{ApiClient, PodInfo};
use crate::plugins::default_preemption::{
    DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER, disruption_message,
};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

/// The component name on events and conditions.
pub const COMPONENT: &str = "default-scheduler";

/// The most requests the scheduler has in flight at once. Bindings run concurrently, off
/// the scheduling loop; without a bound a burst of decisions opens a connection (and a TLS
/// handshake) per binding and runs into the API server's in-flight limit (429). Sized for
/// a local API server: enough to keep it busy, few enough to reuse connections.
pub const MAX_REQUESTS_IN_FLIGHT: usize = 32;

/// An [`ApiClient`] over a kube-rs client.
pub struct KubeClient {
    client: kube::Client,
    /// The scheduler's identity on its events (the instance).
    instance: String,
    in_flight: tokio::sync::Semaphore,
}

impl KubeClient {
    pub fn new(client: kube::Client, instance: &str) -> KubeClient {
        KubeClient {
            client,
            instance: instance.to_string(),
            in_flight: tokio::sync::Semaphore::new(MAX_REQUESTS_IN_FLIGHT),
        }
    }

    /// Waits for a turn to send (held for the request's duration).
    async fn turn(&self) -> Result<tokio::sync::SemaphorePermit<'_>, String> {
        self.in_flight.acquire().await.map_err(|e| e.to_string())
    }

    fn pods(&self, pod: &PodInfo) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &pod.namespace)
    }
}

/// Now, as `metav1.Time` (seconds).
fn now() -> String {
    jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[async_trait]
impl ApiClient for KubeClient {
    async fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let _turn = self.turn().await?;
        self.pods(pod)
            .create_subresource::<_, serde_json::Value>(
                "binding",
                &pod.name,
                &PostParams::default(),
                &binding,
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn delete_pod(&self, pod: &PodInfo) -> Result<(), String> {
        // First the condition that says why it goes (what a PodDisruptionBudget-aware
        // controller and `kubectl describe` see), then the graceful delete.
        let condition = json!({
            "type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
            "message": disruption_message(pod.scheduler_name()),
            "lastTransitionTime": now(),
        });
        let patch = json!({"status": {"conditions": [condition]}});
        let _turn = self.turn().await?;
        match self
            .pods(pod)
            .patch_status(
                &pod.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(pod.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.pods(pod).delete(&pod.name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn nominate(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        let value = if node.is_empty() {
            serde_json::Value::Null
        } else {
            node.into()
        };
        let patch = json!({"status": {"nominatedNodeName": value}});
        let _turn = self.turn().await?;
        self.pods(pod)
            .patch_status(&pod.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn unschedulable(
        &self,
        pod: &PodInfo,
        reason: &str,
        message: &str,
    ) -> Result<(), String> {
        let now = now();
        let condition = json!({
            "type": "PodScheduled", "status": "False", "reason": reason,
            "message": message, "lastProbeTime": null, "lastTransitionTime": now,
        });
        let patch = json!({"status": {"conditions": [condition]}});
        let _turn = self.turn().await?;
        let patched = self
            .pods(pod)
            .patch_status(
                &pod.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await;
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": format!("{}.", pod.name), "namespace": pod.namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                "namespace": pod.namespace, "uid": pod.uid},
            "reason": "FailedScheduling", "message": message, "type": "Warning",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT, "reportingInstance": self.instance,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "action": "Scheduling",
        });
        let event: Event = serde_json::from_value(event).map_err(|e| e.to_string())?;
        let recorded = Api::<Event>::namespaced(self.client.clone(), &pod.namespace)
            .create(&PostParams::default(), &event)
            .await;
        patched.map_err(|e| e.to_string())?;
        recorded.map(|_| ()).map_err(|e| e.to_string())
    }
}
