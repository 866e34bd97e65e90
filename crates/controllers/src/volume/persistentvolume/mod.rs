//! The PersistentVolume binder (kube-controller-manager's
//! `persistentvolume-binder-controller`, events from `persistentvolume-controller`):
//! binds PersistentVolumeClaims to PersistentVolumes and moves volumes through their
//! phases. Static binding only — dynamic provisioning is left to external provisioners.
//!
//! - Claims ([`claims`]): a Pending claim gets the best Available volume
//!   ([`matching`]) and both are bound in Kubernetes' order ([`binding`]); no volume →
//!   `FailedBinding` "no persistent volumes available for this claim and no storage class
//!   is set", or for a class: `ExternalProvisioning` (an external provisioner's class),
//!   `ProvisioningFailed` (a missing class or an in-tree provisioner such as
//!   `kubernetes.io/no-provisioner`), `WaitForFirstConsumer` (a class binding on first use,
//!   until the scheduler's `volume.kubernetes.io/selected-node`; `WaitForPodScheduled`
//!   "waiting for pod … to be scheduled" once pods use the claim). A bound claim whose
//!   volume vanished or went to another claim is `Lost` (`ClaimLost`, `ClaimMisbound`).
//! - Volumes ([`volumes`]): without a claim `Available`; bound to a claim that no longer
//!   exists `Released`, then reclaimed by policy (Retain: kept; Delete and Recycle: no
//!   in-process plugin here, so `Failed` with `VolumeFailedDelete`/`VolumeFailedRecycle`,
//!   unless an external provisioner owns the volume). `status.lastPhaseTransitionTime`
//!   follows every phase change.
//!
//! Keys of PersistentVolumes (cluster-scoped, empty namespace) and of claims share one
//! queue; everything is resynced every `--pvclaimbinder-sync-period`.

pub mod binding;
pub mod claims;
pub mod matching;
pub mod volumes;
pub mod written;

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use kyb_runtime::queue::WorkQueue;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use written::Written;

pub const NAME: &str = "persistentvolume-binder-controller";
/// The service account kube-controller-manager runs this controller as.
const SERVICE_ACCOUNT: &str = "persistent-volume-binder";
/// The component its events come from.
const COMPONENT: &str = "persistentvolume-controller";

/// The claim binding is complete (set on the claim).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The controller, not the user, made this side of the binding.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The node the scheduler chose for a WaitForFirstConsumer claim.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner that created (and so deletes) a volume.
pub const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// The provisioner a claim waits for.
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";

/// The index of volumes by the claim (`namespace/name`) their claimRef names.
const BY_CLAIM: &str = "pv-claim";
/// The index of claims by `spec.volumeName`.
const BY_VOLUME: &str = "pvc-volume";
/// The index of claims not yet bound (one value, `unbound`).
const UNBOUND: &str = "pvc-unbound";
/// The index of pods by the claims (`namespace/name`) their volumes use.
const PODS_BY_CLAIM: &str = "pvc";

pub struct Binder {
    volumes: Arc<Informer<PersistentVolume>>,
    claims: Arc<Informer<PersistentVolumeClaim>>,
    classes: Arc<Informer<StorageClass>>,
    nodes: Arc<Informer<Node>>,
    pods: Arc<Informer<Pod, Compacted>>,
    written_volumes: Written<PersistentVolume>,
    written_claims: Written<PersistentVolumeClaim>,
    client: kube::Client,
    recorder: Recorder,
    queue: OnceLock<Arc<WorkQueue<ObjectKey>>>,
    ctx: Arc<Context>,
}

/// The key of the claim a volume's claimRef names.
fn claim_ref_key(volume: &PersistentVolume) -> Option<ObjectKey> {
    let r = volume.spec.as_ref()?.claim_ref.as_ref()?;
    Some(ObjectKey::new(r.namespace.clone()?, r.name.clone()?))
}

fn volume_key(name: &str) -> ObjectKey {
    ObjectKey::new("", name)
}

/// A claim's `spec.volumeName`, unless empty.
fn volume_name(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .spec
        .as_ref()?
        .volume_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

fn has_annotation<K: kube::Resource>(object: &K, key: &str) -> bool {
    object
        .meta()
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(key))
}

/// The keys (`namespace/name`) of the claims a pod's volumes use, generic ephemeral
/// volumes' claims (`<pod>-<volume>`) included.
fn claims_of(pod: &Pod) -> Vec<String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref());
    volumes
        .unwrap_or_default()
        .iter()
        .filter_map(|v| {
            if let Some(claim) = &v.persistent_volume_claim {
                Some(format!("{namespace}/{}", claim.claim_name))
            } else {
                v.ephemeral
                    .as_ref()
                    .map(|_| format!("{namespace}/{pod_name}-{}", v.name))
            }
        })
        .collect()
}

/// Whether a pod waits for the scheduler (not on a node, not finished).
fn is_unscheduled(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.spec.as_ref().is_some_and(|s| s.node_name.is_none())
        && !matches!(phase, Some("Succeeded" | "Failed"))
}

fn is_available_and_free(volume: &PersistentVolume) -> bool {
    volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available")
        && volume.spec.as_ref().is_some_and(|s| s.claim_ref.is_none())
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let volumes = ctx.informers.get::<PersistentVolume>();
    let claims = ctx.informers.get::<PersistentVolumeClaim>();
    let classes = ctx.informers.get::<StorageClass>();
    let nodes = ctx.informers.get::<Node>();
    let pods = ctx.informers.compacted::<Pod>();
    pods.add_index(PODS_BY_CLAIM, claims_of);
    volumes.add_index(BY_CLAIM, |v: &PersistentVolume| {
        claim_ref_key(v)
            .map(|k| k.to_string())
            .into_iter()
            .collect()
    });
    claims.add_index(BY_VOLUME, |c: &PersistentVolumeClaim| {
        volume_name(c).map(str::to_string).into_iter().collect()
    });
    claims.add_index(UNBOUND, |c: &PersistentVolumeClaim| {
        if has_annotation(c, ANN_BIND_COMPLETED) {
            vec![]
        } else {
            vec!["unbound".to_string()]
        }
    });
    let client = ctx
        .client_for(SERVICE_ACCOUNT)
        .await
        .context("persistent volume binder client")?;
    let binder = Arc::new(Binder {
        volumes: volumes.clone(),
        claims: claims.clone(),
        classes: classes.clone(),
        nodes: nodes.clone(),
        pods: pods.clone(),
        written_volumes: Written::default(),
        written_claims: Written::default(),
        client,
        recorder: ctx.recorder(COMPONENT),
        queue: OnceLock::new(),
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, binder.clone());
    let queue = controller.queue();
    let _ = binder.queue.set(queue.clone());
    {
        let queue = queue.clone();
        let claims = claims.clone();
        volumes.on_change(move |change| {
            let volume = change.object();
            let name = volume.metadata.name.as_deref().unwrap_or_default();
            queue.add(volume_key(name));
            if let Some(claim) = claim_ref_key(volume) {
                queue.add(claim);
            }
            if let Change::Updated { old, .. } = change
                && let Some(claim) = claim_ref_key(old)
            {
                queue.add(claim);
            }
            for claim in claims.by_index(BY_VOLUME, name) {
                queue.add(ObjectKey::of(claim.as_ref()));
            }
            // A volume that became free is a candidate for every unbound claim.
            let freed = match change {
                Change::Added(v) => is_available_and_free(v),
                Change::Updated { old, new } => {
                    is_available_and_free(new) && !is_available_and_free(old)
                }
                Change::Deleted(_) => false,
            };
            if freed {
                for claim in claims.by_index(UNBOUND, "unbound") {
                    queue.add(ObjectKey::of(claim.as_ref()));
                }
            }
        });
    }
    {
        let queue = queue.clone();
        let volumes = volumes.clone();
        claims.on_change(move |change| {
            let claim = change.object();
            let key = ObjectKey::of(claim.as_ref());
            if let Some(volume) = volume_name(claim) {
                queue.add(volume_key(volume));
            }
            for volume in volumes.by_index(BY_CLAIM, &key.to_string()) {
                queue.add(volume_key(
                    volume.metadata.name.as_deref().unwrap_or_default(),
                ));
            }
            queue.add(key);
        });
    }
    {
        // A class appearing or changing may unblock waiting claims.
        let queue = queue.clone();
        let claims = claims.clone();
        classes.on_change(move |change| {
            if matches!(change, Change::Deleted(_)) {
                return;
            }
            for claim in claims.by_index(UNBOUND, "unbound") {
                queue.add(ObjectKey::of(claim.as_ref()));
            }
        });
    }
    {
        // A new consumer of a claim waiting for one changes what the claim reports.
        let queue = queue.clone();
        let claims = claims.clone();
        pods.on_change(move |change| {
            let Change::Added(pod) = change else { return };
            if !is_unscheduled(pod) {
                return;
            }
            for key in claims_of(pod) {
                let Some((namespace, name)) = key.split_once('/') else {
                    continue;
                };
                if claims
                    .get(namespace, name)
                    .is_some_and(|c| !has_annotation(c.as_ref(), ANN_BIND_COMPLETED))
                {
                    queue.add(ObjectKey::new(namespace, name));
                }
            }
        });
    }
    volumes.wait_synced().await;
    claims.wait_synced().await;
    classes.wait_synced().await;
    nodes.wait_synced().await;
    pods.wait_synced().await;
    let period = ctx
        .options
        .pvclaimbinder_sync_period
        .max(Duration::from_millis(100));
    {
        let queue = queue.clone();
        let volumes = volumes.clone();
        let claims = claims.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                for key in claims.keys().into_iter().chain(volumes.keys()) {
                    queue.add(key);
                }
            }
        });
    }
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Reconciler for Binder {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        if key.namespace.is_empty() {
            self.sync_volume(&key.name).await?;
        } else {
            self.sync_claim(key).await?;
        }
        Ok(Action::Done)
    }
}

impl Binder {
    /// The newest known version of a volume.
    fn volume(&self, name: &str) -> Option<Arc<PersistentVolume>> {
        self.written_volumes
            .latest(&self.volumes, &volume_key(name))
    }

    /// The newest known version of a claim.
    fn claim(&self, key: &ObjectKey) -> Option<Arc<PersistentVolumeClaim>> {
        self.written_claims.latest(&self.claims, key)
    }

    /// Asks for `key` to be synced (soon, by a worker).
    fn enqueue(&self, key: ObjectKey) {
        if let Some(queue) = self.queue.get() {
            queue.add(key);
        }
    }
}
