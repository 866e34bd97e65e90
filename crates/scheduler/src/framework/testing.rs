//! Helpers for the plugins' unit tests: pods and nodes from JSON, node infos with pods on
//! them, and a handle whose API client records what it is asked and whose lister serves
//! given objects.

use super::handle::{ApiClient, Handle, Lister, WaitingPods};
use super::node_info::NodeInfo;
use super::pod_info::PodInfo;
use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A pod from JSON (`metadata.namespace` defaults to `default`, `metadata.uid` to the name).
pub fn pod(mut json: Value) -> Arc<PodInfo> {
    let name = json["metadata"]["name"]
        .as_str()
        .unwrap_or("pod")
        .to_string();
    if json["metadata"]["namespace"].is_null() {
        json["metadata"]["namespace"] = "default".into();
    }
    if json["metadata"]["uid"].is_null() {
        json["metadata"]["uid"] = name.into();
    }
    let pod: Pod = serde_json::from_value(json).unwrap_or_default();
    Arc::new(PodInfo::new(Arc::new(pod)))
}

/// A node from JSON, with the pods given placed on it.
pub fn node(json: Value, pods: &[Arc<PodInfo>]) -> NodeInfo {
    let node: Node = serde_json::from_value(json).unwrap_or_default();
    let mut info = NodeInfo::new(node.metadata.name.as_deref().unwrap_or_default());
    info.set_node(Arc::new(node));
    for pod in pods {
        info.add_pod(pod.clone());
    }
    info
}

/// What the recording client was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Bind {
        pod: String,
        node: String,
    },
    Delete {
        pod: String,
    },
    Nominate {
        pod: String,
        node: String,
    },
    Unschedulable {
        pod: String,
        reason: String,
        message: String,
    },
}

/// An API client that records calls and succeeds.
#[derive(Default)]
pub struct RecordingClient {
    pub calls: Mutex<Vec<Call>>,
}

#[async_trait]
impl ApiClient for RecordingClient {
    async fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        self.record(Call::Bind {
            pod: pod.key.clone(),
            node: node.to_string(),
        });
        Ok(())
    }

    async fn delete_pod(&self, pod: &PodInfo) -> Result<(), String> {
        self.record(Call::Delete {
            pod: pod.key.clone(),
        });
        Ok(())
    }

    async fn nominate(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        self.record(Call::Nominate {
            pod: pod.key.clone(),
            node: node.to_string(),
        });
        Ok(())
    }

    async fn unschedulable(
        &self,
        pod: &PodInfo,
        reason: &str,
        message: &str,
    ) -> Result<(), String> {
        self.record(Call::Unschedulable {
            pod: pod.key.clone(),
            reason: reason.to_string(),
            message: message.to_string(),
        });
        Ok(())
    }
}

impl RecordingClient {
    fn record(&self, call: Call) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }
}

/// A lister serving fixed objects.
#[derive(Default)]
pub struct FixedLister {
    pub namespaces: HashMap<String, Map<String, Value>>,
    pub objects: HashMap<(String, String), Vec<Arc<Value>>>,
    pub pods: Vec<Arc<PodInfo>>,
}

impl Lister for FixedLister {
    fn namespace_labels(&self, namespace: &str) -> Option<Map<String, Value>> {
        self.namespaces.get(namespace).cloned()
    }

    fn objects(&self, group: &str, resource: &str) -> Vec<Arc<Value>> {
        self.objects
            .get(&(group.to_string(), resource.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    fn pods(&self) -> Vec<Arc<PodInfo>> {
        self.pods.clone()
    }
}

/// A handle over a recording client and a lister.
pub fn handle_with(lister: FixedLister) -> (Arc<Handle>, Arc<RecordingClient>) {
    let client = Arc::new(RecordingClient::default());
    let handle = Arc::new(Handle {
        client: client.clone(),
        lister: Arc::new(lister),
        waiting_pods: Arc::new(WaitingPods::default()),
    });
    (handle, client)
}

/// A handle over a recording client and an empty lister.
pub fn handle() -> Arc<Handle> {
    handle_with(FixedLister::default()).0
}
