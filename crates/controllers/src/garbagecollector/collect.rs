//! The collector's decisions for one UID (see the module doc of `garbagecollector`):
//! orphaning, foreground deletion, and deleting objects whose owners are all gone. Writes
//! go through the collector's own service-account client, with the object's UID as a
//! precondition on deletes and its resourceVersion as one on patches.

use super::graph::{Graph, Node, Owner, Uid};
use super::monitor::node_of;
use super::resources::{Table, Watched};
use anyhow::Context as _;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy,
};
use kube::core::PartialObjectMeta;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::{EventType, Recorder};
use kyb_runtime::informer::ObjectKey;
use kyb_runtime::queue::WorkQueue;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// How many owners known to be absent are remembered (Kubernetes keeps a similar cache).
const ABSENT_CACHE: usize = 4096;

/// The collector's state; its work-queue keys are `ObjectKey { namespace: "", name: uid }`.
pub struct Collector {
    graph: Mutex<Graph>,
    table: RwLock<Table>,
    /// The manager's client (watches, discovery).
    reader: kube::Client,
    /// The collector's own client (lookups and writes).
    client: kube::Client,
    recorder: Recorder,
    queue: OnceLock<Arc<WorkQueue<ObjectKey>>>,
    /// "namespace/uid" of owners known to be gone.
    absent: Mutex<HashSet<String>>,
}

/// What became of one owner reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnerState {
    /// Exists and is not being deleted in the foreground.
    Solid,
    /// Gone, or replaced by an object with another UID.
    Dangling,
    /// Being deleted in the foreground (waiting for its dependents).
    Waiting,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Collector {
    pub fn new(reader: kube::Client, client: kube::Client, recorder: Recorder) -> Collector {
        Collector {
            graph: Mutex::default(),
            table: RwLock::default(),
            reader,
            client,
            recorder,
            queue: OnceLock::new(),
            absent: Mutex::default(),
        }
    }

    pub fn set_queue(&self, queue: Arc<WorkQueue<ObjectKey>>) {
        let _ = self.queue.set(queue);
    }

    pub fn reader(&self) -> &kube::Client {
        &self.reader
    }

    pub fn table<T>(&self, f: impl FnOnce(&Table) -> T) -> T {
        f(&self
            .table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    pub fn table_mut<T>(&self, f: impl FnOnce(&mut Table) -> T) -> T {
        f(&mut self
            .table
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    pub fn synced(&self) -> bool {
        self.table(Table::synced)
    }

    pub fn objects(&self) -> usize {
        lock(&self.graph).len()
    }

    fn enqueue(&self, uids: Vec<Uid>) {
        if let Some(queue) = self.queue.get() {
            for uid in uids {
                queue.add(ObjectKey::new("", &*uid));
            }
        }
    }

    /// Records an object's current metadata; returns its UID.
    pub fn observe(&self, index: usize, object: &PartialObjectMeta<DynamicObject>) -> Option<Uid> {
        let attention = {
            let mut graph = lock(&self.graph);
            let (uid, node) = node_of(index, object, &mut |s| graph.intern(s))?;
            let attention = graph.upsert(uid.clone(), node);
            (uid, attention)
        };
        let (uid, attention) = attention;
        self.enqueue(attention.0);
        Some(uid)
    }

    /// Forgets a deleted object.
    pub fn forget(&self, uid: &str) {
        let attention = lock(&self.graph).remove(uid);
        self.enqueue(attention.0);
    }

    /// Forgets the objects of `index` a relist did not return.
    pub fn forget_missing(&self, index: usize, seen: &HashSet<Uid>) {
        let gone: Vec<Uid> = lock(&self.graph)
            .uids_of(index)
            .into_iter()
            .filter(|u| !seen.contains(u))
            .collect();
        for uid in gone {
            self.forget(&uid);
        }
    }

    /// Forgets every object of a resource no longer served.
    pub fn forget_resource(&self, index: usize) {
        self.forget_missing(index, &HashSet::new());
    }

    fn api(&self, entry: &Watched, namespace: Option<&str>) -> Api<DynamicObject> {
        match (entry.namespaced, namespace) {
            (true, Some(namespace)) => {
                Api::namespaced_with(self.client.clone(), namespace, &entry.resource)
            }
            _ => Api::all_with(self.client.clone(), &entry.resource),
        }
    }

    /// The API of the object `node` (by its resource index).
    fn api_of(&self, node: &Node) -> Option<(Api<DynamicObject>, kube::discovery::ApiResource)> {
        self.table(|t| {
            let entry = t.entries.get(node.resource)?;
            Some((
                self.api(entry, node.namespace.as_deref()),
                entry.resource.clone(),
            ))
        })
    }

    async fn process(&self, uid: &str) -> anyhow::Result<()> {
        let Some(node) = lock(&self.graph).get(uid).cloned() else {
            return Ok(());
        };
        if node.orphaning() {
            return self.orphan_dependents(uid, &node).await;
        }
        if node.deleting_dependents() {
            return self.delete_dependents(uid, &node).await;
        }
        if node.deleting || node.owners.is_empty() {
            return Ok(());
        }
        let mut solid = 0;
        let mut stale: Vec<Uid> = vec![];
        let mut waiting = 0;
        for owner in &node.owners {
            match self.owner_state(uid, &node, owner).await? {
                OwnerState::Solid => solid += 1,
                OwnerState::Dangling => stale.push(owner.uid.clone()),
                OwnerState::Waiting => {
                    waiting += 1;
                    stale.push(owner.uid.clone());
                }
            }
        }
        if solid > 0 {
            if !stale.is_empty() {
                tracing::debug!(uid, "removing references to gone owners");
                self.remove_owner_references(&node, uid, &stale).await?;
            }
            return Ok(());
        }
        let (has_dependents, dependent_waiting) = {
            let graph = lock(&self.graph);
            let dependents = graph.dependents(uid);
            let waiting = dependents
                .iter()
                .any(|d| graph.get(d).is_some_and(Node::deleting_dependents));
            (!dependents.is_empty(), waiting)
        };
        if waiting > 0 && has_dependents && dependent_waiting {
            // An owner and a dependent both wait for their dependents: a cycle (or what may
            // be one). As Kubernetes does, this object's references stop blocking, so the
            // owners it would hold back can finish, and it is deleted in the foreground.
            tracing::debug!(uid, name = %node.name, "unblocking owner references to break a possible cycle");
            self.unblock_owner_references(&node, uid).await?;
        }
        let policy = if waiting > 0 && has_dependents {
            PropagationPolicy::Foreground
        } else if node.orphan {
            PropagationPolicy::Orphan
        } else if node.foreground {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        tracing::debug!(uid, name = %node.name, ?policy, "deleting an object whose owners are gone");
        self.delete(&node, uid, policy).await
    }

    /// Whether `owner` (a reference of the object `uid`) still exists.
    async fn owner_state(
        &self,
        uid: &str,
        node: &Node,
        owner: &Owner,
    ) -> anyhow::Result<OwnerState> {
        let namespace = node.namespace.as_deref().unwrap_or_default();
        let absent_key = format!("{namespace}/{}", owner.uid);
        if lock(&self.absent).contains(&absent_key) {
            return Ok(OwnerState::Dangling);
        }
        let seen = lock(&self.graph).get(&owner.uid).cloned();
        if let Some(seen) = &seen {
            if seen.namespace.is_none() || seen.namespace == node.namespace {
                return Ok(if seen.deleting_dependents() {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                });
            }
            self.invalid_namespace(uid, node, owner, seen);
        }
        let Some((entry_namespaced, api)) = self.table(|t| {
            t.for_kind(&owner.api_version, &owner.kind)
                .map(|e| (e.namespaced, self.api(e, node.namespace.as_deref())))
        }) else {
            anyhow::bail!(
                "unable to get REST mapping for {}/{}",
                owner.api_version,
                owner.kind
            );
        };
        if entry_namespaced && node.namespace.is_none() {
            // A cluster-scoped object cannot be owned by a namespaced one.
            self.remember_absent(absent_key);
            return Ok(OwnerState::Dangling);
        }
        let found = api.get_metadata_opt(&owner.name).await.with_context(|| {
            format!(
                "looking up owner {}/{} {}",
                owner.api_version, owner.kind, owner.name
            )
        })?;
        match found {
            Some(found) if found.metadata.uid.as_deref() == Some(&*owner.uid) => {
                let foreground = found.metadata.deletion_timestamp.is_some()
                    && found
                        .metadata
                        .finalizers
                        .as_deref()
                        .unwrap_or_default()
                        .iter()
                        .any(|f| f == "foregroundDeletion");
                Ok(if foreground {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                })
            }
            _ => {
                self.remember_absent(absent_key);
                Ok(OwnerState::Dangling)
            }
        }
    }

    fn remember_absent(&self, key: String) {
        let mut absent = lock(&self.absent);
        if absent.len() >= ABSENT_CACHE {
            absent.clear();
        }
        absent.insert(key);
    }

    /// Records `OwnerRefInvalidNamespace` on a dependent whose owner lives elsewhere.
    fn invalid_namespace(&self, uid: &str, node: &Node, owner: &Owner, seen: &Node) {
        let Some((api_version, kind)) = self.table(|t| {
            t.entries
                .get(node.resource)
                .map(|e| (e.resource.api_version.clone(), e.resource.kind.clone()))
        }) else {
            return;
        };
        let namespace = node.namespace.as_deref().unwrap_or_default();
        let message = format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
            owner.api_version, owner.kind, namespace, owner.name, owner.uid, namespace
        );
        tracing::debug!(uid, owner_namespace = ?seen.namespace, "{message}");
        self.recorder.record(
            ObjectReference {
                api_version: Some(api_version),
                kind: Some(kind),
                name: Some(node.name.to_string()),
                namespace: node.namespace.as_deref().map(str::to_string),
                uid: Some(uid.to_string()),
                ..Default::default()
            },
            EventType::Warning,
            "OwnerRefInvalidNamespace",
            message,
        );
    }

    /// `orphan`: every dependent loses its reference to `uid`, then the finalizer goes.
    async fn orphan_dependents(&self, uid: &str, node: &Node) -> anyhow::Result<()> {
        let dependents = lock(&self.graph).dependents(uid);
        let owner: Uid = Arc::from(uid);
        for dependent in dependents {
            let Some(dependent_node) = lock(&self.graph).get(&dependent).cloned() else {
                continue;
            };
            self.remove_owner_references(&dependent_node, &dependent, std::slice::from_ref(&owner))
                .await
                .with_context(|| format!("orphaning {}", dependent_node.name))?;
        }
        self.remove_finalizer(node, uid, "orphan").await
    }

    /// `foregroundDeletion`: dependents are deleted; the finalizer goes once no blocking
    /// dependent remains.
    async fn delete_dependents(&self, uid: &str, node: &Node) -> anyhow::Result<()> {
        let (blocking, to_delete) = {
            let graph = lock(&self.graph);
            let dependents = graph.dependents(uid);
            let blocking = dependents.iter().filter(|d| graph.blocks(d, uid)).count();
            let to_delete: Vec<Uid> = dependents
                .into_iter()
                .filter(|d| graph.get(d).is_some_and(|n| !n.deleting))
                .collect();
            (blocking, to_delete)
        };
        if blocking == 0 {
            return self.remove_finalizer(node, uid, "foregroundDeletion").await;
        }
        // Each dependent sees this owner waiting and is deleted by its own processing.
        self.enqueue(to_delete);
        Ok(())
    }

    async fn delete(
        &self,
        node: &Node,
        uid: &str,
        policy: PropagationPolicy,
    ) -> anyhow::Result<()> {
        let Some((api, _)) = self.api_of(node) else {
            return Ok(());
        };
        let params = DeleteParams {
            propagation_policy: Some(policy),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(&node.name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
            Err(error) => Err(error).with_context(|| format!("deleting {}", node.name)),
        }
    }

    /// Removes the references to `owners` from the object `uid`.
    async fn remove_owner_references(
        &self,
        node: &Node,
        uid: &str,
        owners: &[Uid],
    ) -> anyhow::Result<()> {
        self.patch_metadata(node, uid, |meta| {
            let references = meta.owner_references.clone().unwrap_or_default();
            let kept: Vec<_> = references
                .iter()
                .filter(|r| !owners.iter().any(|o| **o == *r.uid))
                .collect();
            if kept.len() == references.len() {
                return None;
            }
            Some(json!({ "ownerReferences": if kept.is_empty() { Value::Null } else { json!(kept) } }))
        })
        .await
    }

    /// Makes every blocking owner reference of the object `uid` non-blocking.
    async fn unblock_owner_references(&self, node: &Node, uid: &str) -> anyhow::Result<()> {
        self.patch_metadata(node, uid, |meta| {
            let mut references = meta.owner_references.clone().unwrap_or_default();
            let mut changed = false;
            for reference in &mut references {
                if reference.block_owner_deletion == Some(true) {
                    reference.block_owner_deletion = Some(false);
                    changed = true;
                }
            }
            changed.then(|| json!({ "ownerReferences": references }))
        })
        .await
    }

    async fn remove_finalizer(
        &self,
        node: &Node,
        uid: &str,
        finalizer: &str,
    ) -> anyhow::Result<()> {
        tracing::debug!(uid, finalizer, "removing a propagation finalizer");
        self.patch_metadata(node, uid, |meta| {
            let finalizers = meta.finalizers.clone().unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                return None;
            }
            let kept: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            Some(json!({ "finalizers": if kept.is_empty() { Value::Null } else { json!(kept) } }))
        })
        .await
    }

    /// Reads the object's metadata, lets `change` compute a metadata merge patch, and
    /// applies it with the read resourceVersion as precondition, retrying on conflicts.
    async fn patch_metadata(
        &self,
        node: &Node,
        uid: &str,
        change: impl Fn(&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<Value>,
    ) -> anyhow::Result<()> {
        let Some((api, _)) = self.api_of(node) else {
            return Ok(());
        };
        for _ in 0..8 {
            let Some(current) = api
                .get_metadata_opt(&node.name)
                .await
                .with_context(|| format!("reading {}", node.name))?
            else {
                return Ok(());
            };
            if current.metadata.uid.as_deref() != Some(uid) {
                return Ok(());
            }
            let Some(mut patch) = change(&current.metadata) else {
                return Ok(());
            };
            if let Some(map) = patch.as_object_mut() {
                map.insert(
                    "resourceVersion".into(),
                    json!(current.metadata.resource_version),
                );
            }
            let patch = json!({ "metadata": patch });
            match api
                .patch(&node.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
                Err(error) => return Err(error).with_context(|| format!("patching {}", node.name)),
            }
        }
        anyhow::bail!("too many conflicts patching {}", node.name)
    }
}

impl Reconciler for Collector {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        self.process(&key.name).await?;
        Ok(Action::Done)
    }
}
