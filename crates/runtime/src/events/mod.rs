//! Events as Kubernetes' controllers write them (client-go's legacy recorder, which
//! `kubectl describe` and `kubectl get events` show): core/v1 Events with
//! `source.component` set to the controller's name, `firstTimestamp`/`lastTimestamp`,
//! repeats folded into one Event whose `count` goes up, similar events combined and an
//! object's events rate-limited as client-go's correlator does (`correlator`).
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

mod correlator;

use correlator::{Correlator, FoldKey};

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

/// The Event written for a fold key (its name and count), if any yet. Each key has its own
/// lock, held while its Event is written, so a repeat waits for the first write instead of
/// creating a second Event.
type Written = Arc<Mutex<Option<(String, i32)>>>;

async fn write_events(client: kube::Client, component: String, mut rx: mpsc::Receiver<Record>) {
    let mut correlator = Correlator::default();
    let mut written: HashMap<FoldKey, Written> = HashMap::new();
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    while let Some(record) = rx.recv().await {
        let Some(verdict) = correlator.correlate(
            &record.regarding,
            record.type_,
            &record.reason,
            &record.message,
            std::time::Instant::now(),
        ) else {
            tracing::debug!(
                reason = record.reason,
                "event dropped: too many about one object"
            );
            continue;
        };
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        if written.len() >= REMEMBERED {
            written.clear();
        }
        let slot = written.entry(verdict.key).or_default().clone();
        let record = Record {
            message: verdict.message,
            ..record
        };
        let client = client.clone();
        let component = component.clone();
        tokio::spawn(async move {
            if let Err(error) = write_event(&client, &component, &slot, record).await {
                tracing::debug!(%error, "cannot write an event");
            }
            drop(permit);
        });
    }
}

async fn write_event(
    client: &kube::Client,
    component: &str,
    slot: &Mutex<Option<(String, i32)>>,
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
    let mut slot = slot.lock().await;
    if let Some((name, count)) = slot.clone() {
        let patch = json!({"count": count + 1, "lastTimestamp": now, "message": record.message});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                *slot = Some((name, count + 1));
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
    *slot = Some((name, 1));
    Ok(())
}
