//! The scheduler's informers, on kyb-runtime's shared informers (one list+watch per
//! resource, resuming and re-listing by itself; objects read without managed fields):
//! their handlers feed the cache (nodes, bound pods), the queue (unscheduled pods of this
//! scheduler's profiles, and the cluster events that wake unschedulable pods) and what the
//! [`Lister`] gives plugins (namespaces, all pods, and PodDisruptionBudgets, PodGroups,
//! ElasticQuotas, Services and pod controllers as JSON).

use crate::cache::Cache;
use crate::framework::{ClusterEvent, Lister, PodInfo};
use crate::queue::SchedulingQueue;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kyb_runtime::informer::{Change, Informer, Parsed, Selection, SharedInformers, Watching};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

/// One resource's objects by `namespace/name`.
type Objects = BTreeMap<String, Arc<Value>>;

/// The pods the scheduler watches: all but finished ones.
const UNFINISHED_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// What plugins read, kept current by the informers.
pub struct Informers {
    namespaces: Arc<Informer<Namespace>>,
    /// The resources read as JSON, by (group, resource); each object converted once per
    /// change, so that a plugin may recognize an unchanged object by its `Arc`.
    objects: RwLock<HashMap<(String, String), Objects>>,
    /// Every pod watched, by UID.
    pods: RwLock<HashMap<String, Arc<PodInfo>>>,
}

impl Informers {
    /// The scheduler's view of the informers of `shared` (nothing watches until
    /// [`start`]).
    pub fn new(shared: &SharedInformers) -> Informers {
        Informers {
            namespaces: shared.get::<Namespace>(),
            objects: RwLock::default(),
            pods: RwLock::default(),
        }
    }
}

impl Lister for Informers {
    fn namespace_labels(&self, namespace: &str) -> Option<Map<String, Value>> {
        let namespace = self.namespaces.get("", namespace)?;
        Some(
            namespace
                .metadata
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    }

    fn objects(&self, group: &str, resource: &str) -> Vec<Arc<Value>> {
        self.objects
            .read()
            .ok()
            .and_then(|o| {
                o.get(&(group.to_string(), resource.to_string()))
                    .map(|m| m.values().cloned().collect())
            })
            .unwrap_or_default()
    }

    fn pods(&self) -> Vec<Arc<PodInfo>> {
        self.pods
            .read()
            .map(|p| p.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// The resources read as JSON, with the event their changes are to the queue.
const JSON_RESOURCES: &[(&str, &str, &str, &str, Option<ClusterEvent>)] = &[
    // What selects pods: PodTopologySpread's default constraints spread a pod's siblings.
    ("", "v1", "Service", "services", None),
    (
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        None,
    ),
    ("apps", "v1", "ReplicaSet", "replicasets", None),
    ("apps", "v1", "StatefulSet", "statefulsets", None),
    (
        "scheduling.x-k8s.io",
        "v1alpha1",
        "PodGroup",
        "podgroups",
        Some(ClusterEvent::Other),
    ),
    (
        "scheduling.x-k8s.io",
        "v1alpha1",
        "ElasticQuota",
        "elasticquotas",
        Some(ClusterEvent::Other),
    ),
];

/// Tells when the pods and nodes have been listed once; the informers watch for as long
/// as it is kept.
pub struct Synced {
    pods: Arc<Informer<Pod>>,
    nodes: Arc<Informer<Node>>,
    _watching: Watching,
}

impl Synced {
    pub async fn wait(&mut self) {
        self.pods.wait_synced().await;
        self.nodes.wait_synced().await;
    }
}

/// Connects the informers of `shared` to `informers`, the cache and the queue, and starts
/// them; they watch until the returned [`Synced`] is dropped.
pub fn start(
    shared: &SharedInformers,
    informers: Arc<Informers>,
    cache: Arc<Mutex<Cache>>,
    queue: Arc<SchedulingQueue>,
) -> Synced {
    let nodes = shared.get::<Node>();
    {
        let cache = cache.clone();
        let queue = queue.clone();
        nodes.on_change(move |change| node_changed(&cache, &queue, change));
    }
    let pods = shared.get_with::<Pod, Parsed>(Selection::all().fields(UNFINISHED_PODS));
    {
        let informers = informers.clone();
        let queue = queue.clone();
        pods.on_change(move |change| pod_changed(&informers, &cache, &queue, change));
    }
    let pdb = ApiResource::erase::<PodDisruptionBudget>(&());
    let json = JSON_RESOURCES
        .iter()
        .map(|(group, version, kind, plural, event)| {
            let gvk = GroupVersionKind::gvk(group, version, kind);
            (ApiResource::from_gvk_with_plural(&gvk, plural), *event)
        });
    for (resource, event) in std::iter::once((pdb, None)).chain(json) {
        let id = (resource.group.clone(), resource.plural.clone());
        let informers = informers.clone();
        let queue = queue.clone();
        shared
            .dynamic(&resource, Selection::all())
            .on_change(move |change| {
                json_changed(&informers, &id, change);
                if let Some(event) = event {
                    queue.on_event(event);
                }
            });
    }
    let watching = shared.start();
    Synced {
        pods,
        nodes,
        _watching: watching,
    }
}

fn node_changed(cache: &Mutex<Cache>, queue: &SchedulingQueue, change: &Change<'_, Node>) {
    let event = match change {
        Change::Added(node) | Change::Updated { new: node, .. } => {
            if let Ok(mut cache) = cache.lock() {
                cache.upsert_node(Arc::clone(node));
            }
            if matches!(change, Change::Added(_)) {
                ClusterEvent::NodeAdd
            } else {
                ClusterEvent::NodeUpdate
            }
        }
        Change::Deleted(node) => {
            if let Ok(mut cache) = cache.lock() {
                cache.remove_node(node.metadata.name.as_deref().unwrap_or_default());
            }
            ClusterEvent::NodeDelete
        }
    };
    queue.on_event(event);
}

fn pod_changed(
    informers: &Informers,
    cache: &Mutex<Cache>,
    queue: &SchedulingQueue,
    change: &Change<'_, Pod>,
) {
    let uid = |pod: &Pod| pod.metadata.uid.clone().unwrap_or_default();
    match change {
        Change::Added(pod) => apply_pod(informers, cache, queue, pod),
        Change::Updated { old, new } => {
            // The same name, another pod (deleted and created again while the watch was
            // down): the old one is gone.
            if old.metadata.uid != new.metadata.uid {
                delete_pod(informers, cache, queue, &uid(old));
            }
            apply_pod(informers, cache, queue, new);
        }
        Change::Deleted(pod) => delete_pod(informers, cache, queue, &uid(pod)),
    }
}

fn apply_pod(informers: &Informers, cache: &Mutex<Cache>, queue: &SchedulingQueue, pod: &Arc<Pod>) {
    let info = Arc::new(PodInfo::new(Arc::clone(pod)));
    let previous = informers
        .pods
        .write()
        .ok()
        .and_then(|mut p| p.insert(info.uid.clone(), info.clone()));
    if info.node_name().is_some() {
        let was_bound = previous.as_ref().is_some_and(|p| p.node_name().is_some());
        if let Ok(mut cache) = cache.lock() {
            cache.upsert_pod(info.clone());
        }
        queue.delete(&info.uid);
        queue.on_event(if was_bound {
            ClusterEvent::PodUpdate
        } else {
            ClusterEvent::PodAdd
        });
    } else if info.terminating() {
        queue.delete(&info.uid);
    } else if queue.responsible_for(&info) {
        queue.add(info);
    }
}

fn delete_pod(informers: &Informers, cache: &Mutex<Cache>, queue: &SchedulingQueue, uid: &str) {
    if let Ok(mut pods) = informers.pods.write() {
        pods.remove(uid);
    }
    if let Ok(mut cache) = cache.lock() {
        cache.remove_pod(uid);
    }
    queue.delete(uid);
    queue.on_event(ClusterEvent::PodDelete);
}

/// Keeps the JSON of resource `id` current.
fn json_changed(informers: &Informers, id: &(String, String), change: &Change<'_, DynamicObject>) {
    let object = change.object();
    let meta = &object.metadata;
    let key = match &meta.namespace {
        Some(ns) => format!("{ns}/{}", meta.name.as_deref().unwrap_or_default()),
        None => meta.name.clone().unwrap_or_default(),
    };
    let value = match change {
        Change::Deleted(_) => None,
        Change::Added(_) | Change::Updated { .. } => match serde_json::to_value(&**object) {
            Ok(value) => Some(Arc::new(value)),
            Err(error) => {
                tracing::debug!(%error, object = %key, "an object not readable as JSON");
                return;
            }
        },
    };
    let Ok(mut objects) = informers.objects.write() else {
        return;
    };
    let objects = objects.entry(id.clone()).or_default();
    match value {
        Some(value) => objects.insert(key, value),
        None => objects.remove(&key),
    };
}
