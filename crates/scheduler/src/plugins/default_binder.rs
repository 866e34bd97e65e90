//! DefaultBinder (Bind): binds the pod to the chosen node through the API
//! (`POST pods/<name>/binding`). A failed call is an `Error` status carrying the API's
//! message, so the pod is retried with backoff. No arguments.

use crate::framework::{ApiClient, BindPlugin, CycleState, Handle, Plugin, PodInfo, Status};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

pub const NAME: &str = "DefaultBinder";

/// The plugin: the API client it binds with.
pub struct DefaultBinder {
    client: Arc<dyn ApiClient>,
}

pub fn factory(_args: &Value, handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(DefaultBinder {
        client: handle.client.clone(),
    }))
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

#[async_trait]
impl BindPlugin for DefaultBinder {
    async fn bind(&self, _state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        match self.client.bind(pod, node).await {
            Ok(()) => Status::success(),
            Err(message) => Status::error(message),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::testing::{self, Call};
    use crate::framework::{Code, WaitingPods};
    use serde_json::json;

    #[tokio::test]
    async fn binds_through_the_api() {
        let (handle, client) = testing::handle_with(testing::FixedLister::default());
        let plugin = factory(&Value::Null, &handle).unwrap();
        let pod = testing::pod(json!({"metadata": {"name": "p", "namespace": "ns"}}));
        let status = plugin
            .as_bind()
            .unwrap()
            .bind(&CycleState::new(), &pod, "node-1")
            .await;
        assert!(status.is_success());
        assert_eq!(
            *client.calls.lock().unwrap(),
            [Call::Bind {
                pod: "ns/p".into(),
                node: "node-1".into()
            }]
        );
    }

    /// A client whose every call fails.
    struct Failing;

    #[async_trait]
    impl ApiClient for Failing {
        async fn bind(&self, pod: &PodInfo, _node: &str) -> Result<(), String> {
            Err(format!(
                "pods \"{}\" is forbidden: cannot bind a terminating pod",
                pod.name
            ))
        }
        async fn delete_pod(&self, _pod: &PodInfo) -> Result<(), String> {
            Err("failed".into())
        }
        async fn nominate(&self, _pod: &PodInfo, _node: &str) -> Result<(), String> {
            Err("failed".into())
        }
        async fn unschedulable(&self, _: &PodInfo, _: &str, _: &str) -> Result<(), String> {
            Err("failed".into())
        }
    }

    #[tokio::test]
    async fn a_failed_binding_is_an_error() {
        let handle = Arc::new(Handle {
            client: Arc::new(Failing),
            lister: Arc::new(testing::FixedLister::default()),
            waiting_pods: Arc::new(WaitingPods::default()),
        });
        let plugin = factory(&Value::Null, &handle).unwrap();
        let pod = testing::pod(json!({"metadata": {"name": "p"}}));
        let status = plugin
            .as_bind()
            .unwrap()
            .bind(&CycleState::new(), &pod, "n")
            .await;
        assert_eq!(status.code(), Code::Error);
        assert_eq!(
            status.message(),
            "pods \"p\" is forbidden: cannot bind a terminating pod"
        );
    }
}
