//! The binder's writes, each a no-op when already done, so a sync interrupted between
//! them (a crash, a conflict) is completed by the next one.
//!
//! Binding goes in Kubernetes' order: the volume's `spec.claimRef` (plus
//! `pv.kubernetes.io/bound-by-controller` when the controller chose the volume), the
//! volume's phase `Bound`, the claim's `spec.volumeName` with
//! `pv.kubernetes.io/bind-completed` (and `bound-by-controller` when the controller chose
//! the volume), and the claim's phase `Bound` with the volume's capacity and access modes.
//! Updates are full PUTs carrying the `resourceVersion` they were computed from, as
//! Kubernetes' controller does (its role grants `update`, not `patch`).

use super::{ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, Binder, matching};
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::PostParams;
use std::sync::Arc;

/// A volume phase change and the event that goes with it.
pub struct PhaseEvent<'a> {
    pub warning: bool,
    pub reason: &'a str,
    pub message: String,
}

impl Binder {
    fn volume_api(&self) -> Api<PersistentVolume> {
        Api::all(self.client.clone())
    }

    fn claim_api(&self, namespace: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Binds the volume and the claim to each other; returns the bound volume.
    pub async fn bind(
        &self,
        volume: &Arc<PersistentVolume>,
        claim: &Arc<PersistentVolumeClaim>,
    ) -> anyhow::Result<Arc<PersistentVolume>> {
        let volume = self.bind_volume_to_claim(volume, claim).await?;
        let volume = self.update_volume_phase(&volume, "Bound", None).await?;
        let claim = self.bind_claim_to_volume(claim, &volume).await?;
        self.update_claim_phase(&claim, "Bound", Some(&volume))
            .await?;
        tracing::debug!(volume = ?volume.metadata.name, claim = ?claim.metadata.name, "bound");
        Ok(volume)
    }

    /// Sets the volume's claimRef to the claim (step 1).
    async fn bind_volume_to_claim(
        &self,
        volume: &Arc<PersistentVolume>,
        claim: &PersistentVolumeClaim,
    ) -> anyhow::Result<Arc<PersistentVolume>> {
        let chosen_by_controller = !matching::is_bound_to(volume, claim);
        let current = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let refers = current.is_some_and(|r| {
            r.name == claim.metadata.name
                && r.namespace == claim.metadata.namespace
                && r.uid == claim.metadata.uid
        });
        let mark = chosen_by_controller
            && !super::has_annotation(volume.as_ref(), ANN_BOUND_BY_CONTROLLER);
        if refers && !mark {
            return Ok(volume.clone());
        }
        let mut updated = PersistentVolume::clone(volume);
        if !refers {
            updated.spec.get_or_insert_default().claim_ref = Some(ObjectReference {
                api_version: Some("v1".to_string()),
                kind: Some("PersistentVolumeClaim".to_string()),
                name: claim.metadata.name.clone(),
                namespace: claim.metadata.namespace.clone(),
                uid: claim.metadata.uid.clone(),
                resource_version: claim.metadata.resource_version.clone(),
                field_path: None,
            });
        }
        if mark {
            updated
                .metadata
                .annotations
                .get_or_insert_default()
                .insert(ANN_BOUND_BY_CONTROLLER.to_string(), "yes".to_string());
        }
        self.replace_volume(&updated).await
    }

    /// Sets the claim's volumeName and binding annotations (step 3).
    async fn bind_claim_to_volume(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        volume: &PersistentVolume,
    ) -> anyhow::Result<Arc<PersistentVolumeClaim>> {
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let chosen_by_controller = super::volume_name(claim) != Some(name);
        let mut updated = PersistentVolumeClaim::clone(claim);
        let mut dirty = false;
        if chosen_by_controller {
            updated.spec.get_or_insert_default().volume_name = Some(name.to_string());
            dirty = true;
        }
        let annotations = updated.metadata.annotations.get_or_insert_default();
        if chosen_by_controller && !annotations.contains_key(ANN_BOUND_BY_CONTROLLER) {
            annotations.insert(ANN_BOUND_BY_CONTROLLER.to_string(), "yes".to_string());
            dirty = true;
        }
        if !annotations.contains_key(ANN_BIND_COMPLETED) {
            annotations.insert(ANN_BIND_COMPLETED.to_string(), "yes".to_string());
            dirty = true;
        }
        if !dirty {
            return Ok(claim.clone());
        }
        self.replace_claim(&updated).await
    }

    /// Sets the volume's phase (and message), stamping `lastPhaseTransitionTime`; with an
    /// event when it changes.
    pub async fn update_volume_phase(
        &self,
        volume: &Arc<PersistentVolume>,
        phase: &str,
        event: Option<PhaseEvent<'_>>,
    ) -> anyhow::Result<Arc<PersistentVolume>> {
        let status = volume.status.as_ref();
        if status.and_then(|s| s.phase.as_deref()) == Some(phase) {
            return Ok(volume.clone());
        }
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let mut updated = PersistentVolume::clone(volume);
        let status = updated
            .status
            .get_or_insert_with(PersistentVolumeStatus::default);
        status.phase = Some(phase.to_string());
        status.message = event.as_ref().map(|e| e.message.clone());
        status.last_phase_transition_time = Some(Time(self.ctx.now()));
        let updated = self
            .volume_api()
            .replace_status(name, &PostParams::default(), &updated)
            .await
            .with_context(|| format!("setting volume {name} {phase}"))?;
        let updated = self.written_volumes.store(updated);
        tracing::debug!(volume = %name, phase, "volume phase");
        if let Some(event) = event {
            if event.warning {
                self.recorder
                    .warning(updated.as_ref(), event.reason, event.message);
            } else {
                self.recorder
                    .normal(updated.as_ref(), event.reason, event.message);
            }
        }
        Ok(updated)
    }

    /// Sets the claim's phase; a Bound claim gets the volume's access modes (and, when it
    /// becomes Bound, its capacity), any other phase loses both.
    pub async fn update_claim_phase(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        phase: &str,
        volume: Option<&PersistentVolume>,
    ) -> anyhow::Result<Arc<PersistentVolumeClaim>> {
        let mut updated = PersistentVolumeClaim::clone(claim);
        let status = updated
            .status
            .get_or_insert_with(PersistentVolumeClaimStatus::default);
        let mut dirty = false;
        let changes_phase = status.phase.as_deref() != Some(phase);
        if changes_phase {
            status.phase = Some(phase.to_string());
            dirty = true;
        }
        match volume {
            None => {
                if status.access_modes.is_some() {
                    status.access_modes = None;
                    dirty = true;
                }
                if status.capacity.is_some() {
                    status.capacity = None;
                    dirty = true;
                }
            }
            Some(volume) => {
                let spec = volume.spec.as_ref();
                let modes = spec.and_then(|s| s.access_modes.clone());
                if status.access_modes != modes {
                    status.access_modes = modes;
                    dirty = true;
                }
                if changes_phase {
                    let capacity = spec.and_then(|s| s.capacity.as_ref());
                    let storage = capacity.and_then(|c| c.get("storage"));
                    let have = status.capacity.as_ref().and_then(|c| c.get("storage"));
                    if storage.is_some()
                        && have.and_then(|q| matching::parse_quantity(&q.0))
                            != storage.and_then(|q| matching::parse_quantity(&q.0))
                    {
                        status.capacity = capacity.cloned();
                        dirty = true;
                    }
                }
            }
        }
        if !dirty {
            return Ok(claim.clone());
        }
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        let updated = self
            .claim_api(namespace)
            .replace_status(name, &PostParams::default(), &updated)
            .await
            .with_context(|| format!("setting claim {namespace}/{name} {phase}"))?;
        Ok(self.written_claims.store(updated))
    }

    /// Sets the claim's phase with an event, unless it is in that phase already.
    pub async fn update_claim_phase_with_event(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        phase: &str,
        reason: &str,
        message: &str,
    ) -> anyhow::Result<()> {
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase) {
            return Ok(());
        }
        let updated = self.update_claim_phase(claim, phase, None).await?;
        self.recorder.warning(updated.as_ref(), reason, message);
        Ok(())
    }

    /// Undoes the controller's half of a binding: a volume the controller bound loses its
    /// claimRef, one a user pre-bound keeps it without the UID; then it is Available.
    pub async fn unbind_volume(&self, volume: &Arc<PersistentVolume>) -> anyhow::Result<()> {
        let mut updated = PersistentVolume::clone(volume);
        if super::has_annotation(volume.as_ref(), ANN_BOUND_BY_CONTROLLER) {
            updated.spec.get_or_insert_default().claim_ref = None;
            if let Some(annotations) = updated.metadata.annotations.as_mut() {
                annotations.remove(ANN_BOUND_BY_CONTROLLER);
                if annotations.is_empty() {
                    updated.metadata.annotations = None;
                }
            }
        } else if let Some(r) = updated.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
            r.uid = None;
        }
        let updated = self.replace_volume(&updated).await?;
        self.update_volume_phase(&updated, "Available", None)
            .await?;
        Ok(())
    }

    /// Sets the external provisioner a claim waits for (both annotations).
    pub async fn set_claim_provisioner(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        provisioner: &str,
    ) -> anyhow::Result<Arc<PersistentVolumeClaim>> {
        let annotations = claim.metadata.annotations.as_ref();
        let set = |key: &str| {
            annotations.and_then(|a| a.get(key)).map(String::as_str) == Some(provisioner)
        };
        if set(super::ANN_STORAGE_PROVISIONER) && set(super::ANN_BETA_STORAGE_PROVISIONER) {
            return Ok(claim.clone());
        }
        let mut updated = PersistentVolumeClaim::clone(claim);
        let annotations = updated.metadata.annotations.get_or_insert_default();
        for key in [
            super::ANN_STORAGE_PROVISIONER,
            super::ANN_BETA_STORAGE_PROVISIONER,
        ] {
            annotations.insert(key.to_string(), provisioner.to_string());
        }
        self.replace_claim(&updated).await
    }

    async fn replace_volume(
        &self,
        volume: &PersistentVolume,
    ) -> anyhow::Result<Arc<PersistentVolume>> {
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let updated = self
            .volume_api()
            .replace(name, &PostParams::default(), volume)
            .await
            .with_context(|| format!("updating volume {name}"))?;
        Ok(self.written_volumes.store(updated))
    }

    async fn replace_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> anyhow::Result<Arc<PersistentVolumeClaim>> {
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        let updated = self
            .claim_api(namespace)
            .replace(name, &PostParams::default(), claim)
            .await
            .with_context(|| format!("updating claim {namespace}/{name}"))?;
        Ok(self.written_claims.store(updated))
    }
}
