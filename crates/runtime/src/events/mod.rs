//! Events as Kubernetes' controllers write them (client-go's legacy recorder, which
//! `kubectl describe` and `kubectl get events` show): core/v1 Events with
//! `source.component` set to the controller's name, `firstTimestamp`/`lastTimestamp`, and
//! repeats of the same event (same object, type, reason and message) folded into one
//! Event whose `count` goes up.
//!
//! Recording never blocks a reconcile: events go through a bounded channel to a task that
//! writes them, and are dropped (with a debug log) if that falls far behind.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{Mutex, Semaphore, mpsc};

/// Events waiting to be written before new ones are dropped.
const BACKLOG: usize = 4096;
/// Event writes in flight at once.
const CONCURRENCY: usize = 8;
/// Distinct events remembered for folding repeats.
const REMEMBERED: usize = 4096;

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

struct Record {
    regarding: ObjectReference,
    type_: EventType,
    reason: String,
    message: String,
}

/// Writes one component's events (cheap to clone).
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<Record>,
}

/// An object reference for an event about `object`.
pub fn reference<K: kube::Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    let meta = object.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).to_string()),
        kind: Some(K::kind(&()).to_string()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

impl Recorder {
    /// A recorder writing as `component` (e.g. `deployment-controller`).
    pub fn new(client: kube::Client, component: &str) -> Recorder {
        let (tx, rx) = mpsc::channel(BACKLOG);
        tokio::spawn(write_events(client, component.to_string(), rx));
        Recorder { tx }
    }

    /// A recorder that writes nothing (tests of code that records events).
    pub fn discard() -> Recorder {
        let (tx, mut rx) = mpsc::channel::<Record>(BACKLOG);
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        Recorder { tx }
    }

    /// Records an event about `regarding`.
    pub fn record(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let record = Record {
            regarding,
            type_,
            reason: reason.to_string(),
            message: message.into(),
        };
        if self.tx.try_send(record).is_err() {
            tracing::debug!(reason, "event dropped: the event writer is behind");
        }
    }

    pub fn normal<K: kube::Resource<DynamicType = ()>>(
        &self,
        object: &K,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.record(reference(object), EventType::Normal, reason, message);
    }

    pub fn warning<K: kube::Resource<DynamicType = ()>>(
        &self,
        object: &K,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.record(reference(object), EventType::Warning, reason, message);
    }
}

/// What identifies repeats of one event.
type FoldKey = (String, String, EventType, String, String);

async fn write_events(client: kube::Client, component: String, mut rx: mpsc::Receiver<Record>) {
    let seen: Arc<Mutex<HashMap<FoldKey, (String, i32)>>> = Arc::default();
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    while let Some(record) = rx.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let client = client.clone();
        let component = component.clone();
        let seen = seen.clone();
        tokio::spawn(async move {
            if let Err(error) = write_event(&client, &component, &seen, record).await {
                tracing::debug!(%error, "cannot write an event");
            }
            drop(permit);
        });
    }
}

async fn write_event(
    client: &kube::Client,
    component: &str,
    seen: &Mutex<HashMap<FoldKey, (String, i32)>>,
    record: Record,
) -> Result<(), kube::Error> {
    let namespace = record
        .regarding
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let key: FoldKey = (
        record.regarding.uid.clone().unwrap_or_default(),
        record.regarding.name.clone().unwrap_or_default(),
        record.type_,
        record.reason.clone(),
        record.message.clone(),
    );
    let repeat = seen.lock().await.get(&key).cloned();
    if let Some((name, count)) = repeat {
        let patch = json!({"count": count + 1, "lastTimestamp": now});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                seen.lock().await.insert(key, (name, count + 1));
                return Ok(());
            }
            // Gone (expired or deleted): write it anew.
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    let object_name = record.regarding.name.clone().unwrap_or_default();
    let name = format!(
        "{object_name}.{:x}",
        k8s_openapi::jiff::Timestamp::now().as_nanosecond()
    );
    let event = Event {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        involved_object: record.regarding,
        reason: Some(record.reason),
        message: Some(record.message),
        type_: Some(record.type_.as_str().to_string()),
        source: Some(EventSource {
            component: Some(component.to_string()),
            host: None,
        }),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        reporting_component: Some(component.to_string()),
        reporting_instance: Some(component.to_string()),
        ..Event::default()
    };
    api.create(&PostParams::default(), &event).await?;
    let mut seen = seen.lock().await;
    if seen.len() >= REMEMBERED {
        seen.clear();
    }
    seen.insert(key, (name, 1));
    Ok(())
}
