//! Syncing one PersistentVolumeClaim (Kubernetes' `syncClaim`).
//!
//! A claim without `pv.kubernetes.io/bind-completed` is unbound: it gets the best
//! matching volume (or the one its `spec.volumeName` names, if that volume satisfies it:
//! otherwise `VolumeMismatch` "Cannot bind to requested volume …"), or stays Pending with
//! the event that says why. A bound claim is checked against its volume: gone →
//! `ClaimLost`, bound to another claim → `ClaimMisbound`, both phase `Lost`.

use super::matching::{self, NodeTarget};
use super::{ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, Binder};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kyb_runtime::informer::ObjectKey;
use std::sync::Arc;

const NO_CLASS_MESSAGE: &str =
    "no persistent volumes available for this claim and no storage class is set";
const WAIT_MESSAGE: &str = "waiting for first consumer to be created before binding";

impl Binder {
    pub(super) async fn sync_claim(&self, key: &ObjectKey) -> anyhow::Result<()> {
        let Some(claim) = self.claim(key) else {
            self.written_claims.forget(key);
            return Ok(());
        };
        if super::has_annotation(claim.as_ref(), ANN_BIND_COMPLETED) {
            self.sync_bound_claim(&claim).await
        } else {
            self.sync_unbound_claim(&claim).await
        }
    }

    async fn sync_unbound_claim(&self, claim: &Arc<PersistentVolumeClaim>) -> anyhow::Result<()> {
        let Some(name) = super::volume_name(claim) else {
            return self.find_volume_for(claim).await;
        };
        // The user asked for a particular volume.
        let Some(volume) = self.volume(name) else {
            self.update_claim_phase(claim, "Pending", None).await?;
            return Ok(());
        };
        let claim_ref = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        if claim_ref.is_none() {
            if let Err(why) = matching::check_satisfies(claim, &volume) {
                self.recorder.warning(
                    claim.as_ref(),
                    "VolumeMismatch",
                    format!("Cannot bind to requested volume {name:?}: {why}"),
                );
                self.update_claim_phase(claim, "Pending", None).await?;
                return Ok(());
            }
            self.bind(&volume, claim).await?;
            return Ok(());
        }
        if matching::is_bound_to(&volume, claim) {
            self.bind(&volume, claim).await?;
            return Ok(());
        }
        // The volume belongs to another claim.
        if super::has_annotation(claim.as_ref(), ANN_BOUND_BY_CONTROLLER) {
            anyhow::bail!(
                "invalid binding of claim {} to volume {name}: the volume is bound to another claim",
                ObjectKey::of(claim.as_ref())
            );
        }
        self.recorder.warning(
            claim.as_ref(),
            "FailedBinding",
            format!("volume {name:?} already bound to a different claim."),
        );
        self.update_claim_phase(claim, "Pending", None).await?;
        Ok(())
    }

    /// A claim without `spec.volumeName`: the best match, else an explanation.
    async fn find_volume_for(&self, claim: &Arc<PersistentVolumeClaim>) -> anyhow::Result<()> {
        let class_name = matching::claim_class(claim);
        let class = (!class_name.is_empty())
            .then(|| self.classes.get("", class_name))
            .flatten();
        let waits_for_consumer = class
            .as_ref()
            .and_then(|c| c.volume_binding_mode.as_deref())
            == Some("WaitForFirstConsumer");
        let selected = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_SELECTED_NODE));
        let delay_binding = waits_for_consumer && selected.is_none();
        let node = match selected {
            Some(name) if waits_for_consumer => Some((name.as_str(), self.nodes.get("", name))),
            _ => None,
        };
        let target = node.as_ref().map(|(name, node)| NodeTarget {
            name,
            labels: node.as_ref().and_then(|n| n.metadata.labels.as_ref()),
        });
        let volumes: Vec<Arc<PersistentVolume>> = self.written_volumes.list(&self.volumes);
        if let Some(volume) = matching::find_best_match(claim, &volumes, target, delay_binding) {
            self.bind(volume, claim).await?;
            return Ok(());
        }
        if delay_binding {
            self.report_waiting(claim);
        } else if !class_name.is_empty() {
            return self.provision(claim, class_name, class.as_deref()).await;
        } else {
            self.recorder
                .normal(claim.as_ref(), "FailedBinding", NO_CLASS_MESSAGE);
        }
        self.update_claim_phase(claim, "Pending", None).await?;
        Ok(())
    }

    /// A claim waiting for its first consumer says so, or names its consumers waiting for
    /// the scheduler.
    fn report_waiting(&self, claim: &PersistentVolumeClaim) {
        let key = ObjectKey::of(claim).to_string();
        let mut waiting: Vec<String> = self
            .pods
            .by_index(super::PODS_BY_CLAIM, &key)
            .iter()
            .filter(|p| super::is_unscheduled(p))
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        waiting.sort();
        match waiting.as_slice() {
            [] => self
                .recorder
                .normal(claim, "WaitForFirstConsumer", WAIT_MESSAGE),
            [pod] => self.recorder.normal(
                claim,
                "WaitForPodScheduled",
                format!("waiting for pod {pod} to be scheduled"),
            ),
            pods => self.recorder.normal(
                claim,
                "WaitForPodScheduled",
                format!("waiting for pods {} to be scheduled", pods.join(",")),
            ),
        }
    }

    /// No volume for a claim of a class: dynamic provisioning's turn. This controller has
    /// no in-tree provisioners, so an external one is waited for, and anything else fails.
    async fn provision(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        class_name: &str,
        class: Option<&k8s_openapi::api::storage::v1::StorageClass>,
    ) -> anyhow::Result<()> {
        let Some(class) = class else {
            self.recorder.warning(
                claim.as_ref(),
                "ProvisioningFailed",
                format!("storageclass.storage.k8s.io {class_name:?} not found"),
            );
            return Ok(());
        };
        let provisioner = class.provisioner.as_str();
        if provisioner.starts_with("kubernetes.io/") {
            self.recorder.warning(
                claim.as_ref(),
                "ProvisioningFailed",
                format!("no volume plugin matched name: {provisioner}"),
            );
            return Ok(());
        }
        let claim = self.set_claim_provisioner(claim, provisioner).await?;
        self.recorder.normal(
            claim.as_ref(),
            "ExternalProvisioning",
            format!(
                "Waiting for a volume to be created either by the external provisioner '{provisioner}' \
                 or manually by the system administrator. If volume creation is delayed, please \
                 verify that the provisioner is running and correctly registered."
            ),
        );
        Ok(())
    }

    async fn sync_bound_claim(&self, claim: &Arc<PersistentVolumeClaim>) -> anyhow::Result<()> {
        let Some(name) = super::volume_name(claim) else {
            return self
                .update_claim_phase_with_event(
                    claim,
                    "Lost",
                    "ClaimLost",
                    "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
                )
                .await;
        };
        let Some(volume) = self.volume(name) else {
            return self
                .update_claim_phase_with_event(
                    claim,
                    "Lost",
                    "ClaimLost",
                    "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                )
                .await;
        };
        let claim_ref = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let ours = claim_ref.is_some_and(|r| r.uid.is_some() && r.uid == claim.metadata.uid);
        if claim_ref.is_none() || ours {
            // Not bound on the volume's side yet, or all is well: bind() completes what
            // is missing and does nothing otherwise.
            self.bind(&volume, claim).await?;
            return Ok(());
        }
        self.update_claim_phase_with_event(
            claim,
            "Lost",
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        )
        .await
    }
}
