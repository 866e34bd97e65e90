//! The scheduler's informers: one list+watch per resource (kube-runtime's `watcher`,
//! resuming and relisting by itself), feeding the cache (nodes, bound pods), the queue
//! (unscheduled pods of this scheduler's profiles, and the cluster events that wake
//! unschedulable pods) and the lister plugins read (namespaces, PodDisruptionBudgets,
//! PodGroups, ElasticQuotas, Services and pod controllers, all pods).

use crate::cache::Cache;
use crate::framework::{ClusterEvent, Lister, PodInfo};
use crate::queue::SchedulingQueue;
use crate::slim::Slim;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::watch;

/// One resource's objects by `namespace/name`.
type Objects = BTreeMap<String, Arc<Value>>;

/// The objects plugins read, kept by the informers.
#[derive(Default)]
pub struct Informers {
    namespaces: RwLock<HashMap<String, Map<String, Value>>>,
    objects: RwLock<HashMap<(String, String), Objects>>,
    pods: RwLock<HashMap<String, Arc<PodInfo>>>,
}

impl Lister for Informers {
    fn namespace_labels(&self, namespace: &str) -> Option<Map<String, Value>> {
        self.namespaces.read().ok()?.get(namespace).cloned()
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

/// The resources watched as JSON, with the event their changes are to the queue.
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

/// Tells when the pods and nodes have been listed once.
pub struct Synced {
    pub pods: watch::Receiver<bool>,
    pub nodes: watch::Receiver<bool>,
}

impl Synced {
    pub async fn wait(&mut self) {
        let _ = self.pods.wait_for(|s| *s).await;
        let _ = self.nodes.wait_for(|s| *s).await;
    }
}

fn key_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    match &meta.namespace {
        Some(ns) => format!("{ns}/{}", meta.name.as_deref().unwrap_or_default()),
        None => meta.name.clone().unwrap_or_default(),
    }
}

/// Starts every informer; they run for as long as the process does.
pub fn start(
    client: kube::Client,
    informers: Arc<Informers>,
    cache: Arc<Mutex<Cache>>,
    queue: Arc<SchedulingQueue>,
) -> Synced {
    let (pods_synced, pods_rx) = watch::channel(false);
    let (nodes_synced, nodes_rx) = watch::channel(false);
    tokio::spawn(watch_nodes(
        Api::<Slim<Node>>::all(client.clone()),
        cache.clone(),
        queue.clone(),
        nodes_synced,
    ));
    tokio::spawn(watch_pods(
        Api::<Slim<Pod>>::all(client.clone()),
        informers.clone(),
        cache,
        queue.clone(),
        pods_synced,
    ));
    tokio::spawn(watch_namespaces(
        Api::all(client.clone()),
        informers.clone(),
    ));
    let pdb = ApiResource::erase::<PodDisruptionBudget>(&());
    tokio::spawn(watch_json(
        client.clone(),
        pdb,
        informers.clone(),
        queue.clone(),
        None,
    ));
    for (group, version, kind, plural, event) in JSON_RESOURCES {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        tokio::spawn(watch_json(
            client.clone(),
            resource,
            informers.clone(),
            queue.clone(),
            *event,
        ));
    }
    Synced {
        pods: pods_rx,
        nodes: nodes_rx,
    }
}

async fn watch_nodes(
    api: Api<Slim<Node>>,
    cache: Arc<Mutex<Cache>>,
    queue: Arc<SchedulingQueue>,
    synced: watch::Sender<bool>,
) {
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut seen: Option<HashSet<String>> = None;
    let mut known: HashSet<String> = HashSet::new();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::debug!(%error, "node watch");
                continue;
            }
        };
        match event {
            Event::Init => seen = Some(HashSet::new()),
            Event::InitApply(Slim(node)) | Event::Apply(Slim(node)) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                if let Some(seen) = &mut seen {
                    seen.insert(name.clone());
                }
                let added = known.insert(name);
                if let Ok(mut cache) = cache.lock() {
                    cache.upsert_node(Arc::new(node));
                }
                queue.on_event(if added {
                    ClusterEvent::NodeAdd
                } else {
                    ClusterEvent::NodeUpdate
                });
            }
            Event::Delete(Slim(node)) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                known.remove(&name);
                if let Ok(mut cache) = cache.lock() {
                    cache.remove_node(&name);
                }
                queue.on_event(ClusterEvent::NodeDelete);
            }
            Event::InitDone => {
                if let Some(seen) = seen.take() {
                    let gone: Vec<String> = known.difference(&seen).cloned().collect();
                    for name in gone {
                        known.remove(&name);
                        if let Ok(mut cache) = cache.lock() {
                            cache.remove_node(&name);
                        }
                    }
                }
                let _ = synced.send(true);
            }
        }
    }
}

async fn watch_pods(
    api: Api<Slim<Pod>>,
    informers: Arc<Informers>,
    cache: Arc<Mutex<Cache>>,
    queue: Arc<SchedulingQueue>,
    synced: watch::Sender<bool>,
) {
    let config = watcher::Config::default().fields("status.phase!=Succeeded,status.phase!=Failed");
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut seen: Option<HashSet<String>> = None;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::debug!(%error, "pod watch");
                continue;
            }
        };
        match event {
            Event::Init => seen = Some(HashSet::new()),
            Event::InitApply(Slim(pod)) | Event::Apply(Slim(pod)) => {
                let info = Arc::new(PodInfo::new(Arc::new(pod)));
                if let Some(seen) = &mut seen {
                    seen.insert(info.uid.clone());
                }
                apply_pod(&informers, &cache, &queue, info);
            }
            Event::Delete(Slim(pod)) => {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                delete_pod(&informers, &cache, &queue, &uid);
            }
            Event::InitDone => {
                if let Some(seen) = seen.take() {
                    let gone: Vec<String> = informers
                        .pods
                        .read()
                        .map(|p| {
                            p.keys()
                                .filter(|uid| !seen.contains(*uid))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default();
                    for uid in gone {
                        delete_pod(&informers, &cache, &queue, &uid);
                    }
                }
                let _ = synced.send(true);
            }
        }
    }
}

fn apply_pod(
    informers: &Informers,
    cache: &Mutex<Cache>,
    queue: &SchedulingQueue,
    info: Arc<PodInfo>,
) {
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

async fn watch_namespaces(api: Api<Namespace>, informers: Arc<Informers>) {
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = stream.next().await {
        let Ok(event) = event else { continue };
        match event {
            Event::InitApply(ns) | Event::Apply(ns) => {
                let labels: Map<String, Value> = ns
                    .metadata
                    .labels
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                if let Ok(mut namespaces) = informers.namespaces.write() {
                    namespaces.insert(ns.metadata.name.unwrap_or_default(), labels);
                }
            }
            Event::Delete(ns) => {
                if let Ok(mut namespaces) = informers.namespaces.write() {
                    namespaces.remove(ns.metadata.name.as_deref().unwrap_or_default());
                }
            }
            Event::Init | Event::InitDone => {}
        }
    }
}

async fn watch_json(
    client: kube::Client,
    resource: ApiResource,
    informers: Arc<Informers>,
    queue: Arc<SchedulingQueue>,
    event: Option<ClusterEvent>,
) {
    let id = (resource.group.clone(), resource.plural.clone());
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut fresh: Option<Objects> = None;
    while let Some(next) = stream.next().await {
        let next = match next {
            Ok(next) => next,
            Err(error) => {
                tracing::debug!(%error, resource = %resource.plural, "watch");
                continue;
            }
        };
        let store = |f: &mut dyn FnMut(&mut Objects)| {
            if let Ok(mut objects) = informers.objects.write() {
                f(objects.entry(id.clone()).or_default());
            }
        };
        match next {
            Event::Init => fresh = Some(BTreeMap::new()),
            Event::InitApply(object) => {
                if let (Some(fresh), Ok(value)) = (&mut fresh, serde_json::to_value(&object)) {
                    fresh.insert(key_of(&object.metadata), Arc::new(value));
                }
            }
            Event::InitDone => {
                if let Some(fresh) = fresh.take() {
                    store(&mut |objects| *objects = fresh.clone());
                }
                if let Some(event) = event {
                    queue.on_event(event);
                }
            }
            Event::Apply(object) => {
                if let Ok(value) = serde_json::to_value(&object) {
                    let key = key_of(&object.metadata);
                    store(&mut |objects| {
                        objects.insert(key.clone(), Arc::new(value.clone()));
                    });
                }
                if let Some(event) = event {
                    queue.on_event(event);
                }
            }
            Event::Delete(object) => {
                let key = key_of(&object.metadata);
                store(&mut |objects| {
                    objects.remove(&key);
                });
                if let Some(event) = event {
                    queue.on_event(event);
                }
            }
        }
    }
}
