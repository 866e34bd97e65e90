//! The pods of this node, a worker each: the pods come from an informer on
//! `spec.nodeName=<node>`; the runtime's changes are found by listing its containers every
//! second (kubelet's pod lifecycle event generator) and wake the pods concerned, as do
//! probe results. Sandboxes of pods the API no longer has (the agent was down when they
//! were deleted) are stopped and removed once the informer has synced.

use super::Shared;
use super::worker::{Slot, Worker};
use crate::container::labels::{POD_NAME, POD_NAMESPACE, POD_UID};
use crate::node::static_pods::is_mirror;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::Pod;
use kyb_runtime::informer::{Change, Informer, Parsed, Selection, SharedInformers};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How often the runtime is relisted for changes.
const RELIST: Duration = Duration::from_secs(1);
/// How often sandboxes of unknown pods are looked for.
const ORPHAN_SWEEP: Duration = Duration::from_secs(60);

enum Message {
    Pod(Arc<Pod>),
    /// The static pods (from the manifest directory) now.
    Static(Vec<Pod>),
    Deleted(Arc<Pod>),
    /// Something about the pod with this UID changed in the runtime or its probes.
    Wake(String),
    Done(String),
}

/// The informer of this node's pods.
pub fn informer(informers: &SharedInformers, node_name: &str) -> Arc<Informer<Pod, Parsed>> {
    informers.get_with(Selection::all().fields(format!("spec.nodeName={node_name}")))
}

/// Runs the workers of the pods `pods` holds, and of the static pods `statics` gives,
/// until `cancel`. Mirror pods (the API's copies of static pods) get no worker of their own.
pub async fn run(
    shared: Arc<Shared>,
    pods: Arc<Informer<Pod, Parsed>>,
    statics: Option<tokio::sync::watch::Receiver<Vec<Pod>>>,
    cancel: CancellationToken,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    {
        let tx = tx.clone();
        pods.on_change(move |change| {
            let _ = match change {
                Change::Added(pod) | Change::Updated { new: pod, .. } => {
                    tx.send(Message::Pod((*pod).clone()))
                }
                Change::Deleted(pod) => tx.send(Message::Deleted((*pod).clone())),
            };
        });
    }
    for pod in pods.list() {
        let _ = tx.send(Message::Pod(pod));
    }
    let static_view = statics.clone();
    if let Some(mut statics) = statics {
        let tx = tx.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            loop {
                let now = statics.borrow_and_update().clone();
                let _ = tx.send(Message::Static(now));
                tokio::select! {
                    changed = statics.changed() => if changed.is_err() { return },
                    () = cancel.cancelled() => return,
                }
            }
        });
    }
    tokio::spawn(relist(shared.clone(), tx.clone(), cancel.clone()));
    {
        let mut results = shared.probes.subscribe();
        let tx = tx.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    uid = results.recv() => match uid {
                        Some(uid) => { let _ = tx.send(Message::Wake(uid)); }
                        None => return,
                    },
                    () = cancel.cancelled() => return,
                }
            }
        });
    }
    {
        let shared = shared.clone();
        let pods = pods.clone();
        let tx = tx.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            pods.wait_synced().await;
            loop {
                let now: Vec<Arc<Pod>> = static_view
                    .as_ref()
                    .map(|r| r.borrow().iter().cloned().map(Arc::new).collect())
                    .unwrap_or_default();
                sweep_orphans(&shared, &pods, &now, &tx).await;
                tokio::select! {
                    () = tokio::time::sleep(ORPHAN_SWEEP) => {}
                    () = cancel.cancelled() => return,
                }
            }
        });
    }

    let mut workers: HashMap<String, Arc<Slot>> = HashMap::new();
    let mut static_uids: HashSet<String> = HashSet::new();
    loop {
        let message = tokio::select! {
            message = rx.recv() => match message { Some(m) => m, None => return },
            () = cancel.cancelled() => return,
        };
        match message {
            Message::Pod(pod) if is_mirror(&pod) => {
                // Its static pod's worker writes the mirror's status.
                let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
                for slot in workers.values() {
                    if slot.key() == key {
                        slot.wake.notify_one();
                    }
                }
            }
            Message::Deleted(pod) if is_mirror(&pod) => {}
            Message::Static(now) => {
                let uids: HashSet<String> =
                    now.iter().filter_map(|p| p.metadata.uid.clone()).collect();
                for gone in static_uids.difference(&uids) {
                    if let Some(slot) = workers.get(gone) {
                        slot.remove();
                    }
                }
                for pod in now {
                    let Some(uid) = pod.metadata.uid.clone() else {
                        continue;
                    };
                    let pod = Arc::new(pod);
                    match workers.get(&uid) {
                        Some(slot) => slot.update(pod),
                        None => {
                            start_worker(&mut workers, &shared, Slot::new(pod), uid, &tx, &cancel)
                        }
                    }
                }
                static_uids = uids;
            }
            Message::Pod(pod) => {
                let Some(uid) = pod.metadata.uid.clone() else {
                    continue;
                };
                match workers.get(&uid) {
                    Some(slot) => slot.update(pod),
                    None => start_worker(&mut workers, &shared, Slot::new(pod), uid, &tx, &cancel),
                }
            }
            Message::Deleted(pod) => {
                let Some(uid) = pod.metadata.uid.clone() else {
                    continue;
                };
                match workers.get(&uid) {
                    Some(slot) => slot.remove(),
                    None => {
                        let slot = Slot::new(pod);
                        slot.remove();
                        start_worker(&mut workers, &shared, slot, uid, &tx, &cancel);
                    }
                }
            }
            Message::Wake(uid) => {
                if let Some(slot) = workers.get(&uid) {
                    slot.wake.notify_one();
                }
            }
            Message::Done(uid) => {
                workers.remove(&uid);
            }
        }
    }
}

/// Starts the worker of the pod `uid` and keeps its slot.
fn start_worker(
    workers: &mut HashMap<String, Arc<Slot>>,
    shared: &Arc<Shared>,
    slot: Arc<Slot>,
    uid: String,
    tx: &mpsc::UnboundedSender<Message>,
    cancel: &CancellationToken,
) {
    workers.insert(uid.clone(), slot.clone());
    let worker = Worker::new(shared.clone(), slot, uid.clone());
    let tx = tx.clone();
    let cancel = cancel.clone();
    tokio::spawn(async move {
        worker.run(cancel).await;
        let _ = tx.send(Message::Done(uid));
    });
}

/// Lists the runtime's containers and sandboxes every second and wakes the pods whose
/// containers or sandboxes changed state.
async fn relist(
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Message>,
    cancel: CancellationToken,
) {
    let mut known: HashMap<String, (String, i32)> = HashMap::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(RELIST) => {}
            () = cancel.cancelled() => return,
        }
        let mut runtime = shared.cri.runtime.clone();
        let containers = match runtime
            .list_containers(cri::ListContainersRequest { filter: None })
            .await
        {
            Ok(response) => response.into_inner().containers,
            Err(error) => {
                tracing::debug!(error = %error.message(), "relisting containers");
                continue;
            }
        };
        let sandboxes = match runtime
            .list_pod_sandbox(cri::ListPodSandboxRequest { filter: None })
            .await
        {
            Ok(response) => response.into_inner().items,
            Err(error) => {
                tracing::debug!(error = %error.message(), "relisting sandboxes");
                continue;
            }
        };
        let mut now: HashMap<String, (String, i32)> = HashMap::new();
        for c in containers {
            let uid = c.labels.get(POD_UID).cloned().unwrap_or_default();
            now.insert(c.id, (uid, c.state));
        }
        for s in sandboxes {
            let uid = s.labels.get(POD_UID).cloned().unwrap_or_default();
            now.insert(s.id, (uid, 100 + s.state));
        }
        let mut changed = HashSet::new();
        for (id, (uid, state)) in &now {
            if known.get(id).map(|(_, s)| s) != Some(state) {
                changed.insert(uid.clone());
            }
        }
        for (id, (uid, _)) in &known {
            if !now.contains_key(id) {
                changed.insert(uid.clone());
            }
        }
        known = now;
        for uid in changed.into_iter().filter(|u| !u.is_empty()) {
            let _ = tx.send(Message::Wake(uid));
        }
    }
}

/// Hands the sandboxes of pods the API does not have to workers that remove them.
async fn sweep_orphans(
    shared: &Shared,
    pods: &Informer<Pod, Parsed>,
    statics: &[Arc<Pod>],
    tx: &mpsc::UnboundedSender<Message>,
) {
    let sandboxes = match shared
        .cri
        .runtime
        .clone()
        .list_pod_sandbox(cri::ListPodSandboxRequest { filter: None })
        .await
    {
        Ok(response) => response.into_inner().items,
        Err(_) => return,
    };
    let live: HashSet<String> = pods
        .list()
        .iter()
        .chain(statics.iter())
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    let mut seen = HashSet::new();
    for sandbox in sandboxes {
        let Some(uid) = sandbox.labels.get(POD_UID) else {
            continue;
        };
        if live.contains(uid) || !seen.insert(uid.clone()) {
            continue;
        }
        tracing::info!(%uid, "removing the sandbox of a pod the API no longer has");
        let mut pod = Pod::default();
        pod.metadata.uid = Some(uid.clone());
        pod.metadata.name = sandbox.labels.get(POD_NAME).cloned();
        pod.metadata.namespace = sandbox.labels.get(POD_NAMESPACE).cloned();
        let _ = tx.send(Message::Deleted(Arc::new(pod)));
    }
}
