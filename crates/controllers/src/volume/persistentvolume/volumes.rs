//! Syncing one PersistentVolume (Kubernetes' `syncVolume`) and reclaiming released ones.
//!
//! No claimRef, or a user's pre-binding without a UID → `Available`. A claimRef to a
//! claim that is gone (or was recreated with another UID) → `Released`, then the reclaim
//! policy: `Retain` keeps the volume Released until an administrator clears its claimRef
//! (it is then Available again); `Delete` needs a deleter — none runs in this process, so
//! the volume goes `Failed` with `VolumeFailedDelete` (Kubernetes' message for volumes no
//! plugin can delete), unless `pv.kubernetes.io/provisioned-by` names an external
//! provisioner, whose job it is; `Recycle` (deprecated) goes `Failed` with
//! `VolumeFailedRecycle`. A claimRef to a claim still unbound asks for the claim's sync; one
//! to a claim bound elsewhere is undone.

use super::binding::PhaseEvent;
use super::{ANN_PROVISIONED_BY, Binder, matching, volume_key};
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kyb_runtime::informer::ObjectKey;
use std::sync::Arc;

impl Binder {
    pub(super) async fn sync_volume(&self, name: &str) -> anyhow::Result<()> {
        let Some(volume) = self.volume(name) else {
            self.written_volumes.forget(&volume_key(name));
            return Ok(());
        };
        let Some(claim_ref) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
            self.update_volume_phase(&volume, "Available", None).await?;
            return Ok(());
        };
        let uid = claim_ref.uid.as_deref().unwrap_or_default();
        if uid.is_empty() {
            // Pre-bound by a user to a claim not bound yet: the claim's sync binds it.
            self.update_volume_phase(&volume, "Available", None).await?;
            return Ok(());
        }
        let key = ObjectKey::new(
            claim_ref.namespace.clone().unwrap_or_default(),
            claim_ref.name.clone().unwrap_or_default(),
        );
        let phase = volume.status.as_ref().and_then(|s| s.phase.as_deref());
        let released = matches!(phase, Some("Released" | "Failed"));
        let mut claim = self.claim(&key);
        if claim.is_none() && !released {
            // The informer may not have seen a new claim yet: make sure before releasing.
            claim = self.live_claim(&key).await?;
        }
        let claim = claim.filter(|c| c.metadata.uid.as_deref() == Some(uid));
        let Some(claim) = claim else {
            let volume = if released {
                volume
            } else {
                self.update_volume_phase(&volume, "Released", None).await?
            };
            return self.reclaim(&volume).await;
        };
        match super::volume_name(&claim) {
            None => {
                if matching::volume_mode_mismatch(&claim, &volume) {
                    let claim_name = claim.metadata.name.as_deref().unwrap_or_default();
                    self.recorder.warning(
                        volume.as_ref(),
                        "VolumeMismatch",
                        format!(
                            "Cannot bind PersistentVolume to requested PersistentVolumeClaim {claim_name:?} due to incompatible volumeMode."
                        ),
                    );
                    self.recorder.warning(
                        claim.as_ref(),
                        "VolumeMismatch",
                        format!(
                            "Cannot bind PersistentVolume {name:?} to requested PersistentVolumeClaim due to incompatible volumeMode."
                        ),
                    );
                    return Ok(());
                }
                // Half-bound (the claim's side is missing): the claim's sync finishes it.
                self.enqueue(key);
            }
            Some(bound) if bound == name => {
                self.update_volume_phase(&volume, "Bound", None).await?;
            }
            Some(_) => {
                // The claim went to another volume.
                let dynamic = volume
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(ANN_PROVISIONED_BY));
                let policy = volume
                    .spec
                    .as_ref()
                    .and_then(|s| s.persistent_volume_reclaim_policy.as_deref());
                if dynamic && policy == Some("Delete") {
                    let volume = self.update_volume_phase(&volume, "Released", None).await?;
                    return self.reclaim(&volume).await;
                }
                self.unbind_volume(&volume).await?;
            }
        }
        Ok(())
    }

    /// The claim from the API server (`None`: not found).
    async fn live_claim(
        &self,
        key: &ObjectKey,
    ) -> anyhow::Result<Option<Arc<PersistentVolumeClaim>>> {
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &key.namespace);
        let claim = api
            .get_opt(&key.name)
            .await
            .with_context(|| format!("reading claim {key}"))?;
        Ok(claim.map(Arc::new))
    }

    /// Applies the reclaim policy of a Released volume.
    async fn reclaim(&self, volume: &Arc<PersistentVolume>) -> anyhow::Result<()> {
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let spec = volume.spec.as_ref();
        match spec.and_then(|s| s.persistent_volume_reclaim_policy.as_deref()) {
            Some("Delete") => {
                let provisioner = volume
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(ANN_PROVISIONED_BY));
                if provisioner.is_some_and(|p| !p.starts_with("kubernetes.io/")) {
                    // An external provisioner deletes what it provisioned.
                    return Ok(());
                }
                let message = match spec.and_then(|s| s.host_path.as_ref()) {
                    Some(host) if !under_tmp(&host.path) => format!(
                        "host_path deleter only supports /tmp/.+ but received provided {}",
                        host.path
                    ),
                    _ => format!(
                        "error getting deleter volume plugin for volume {name:?}: no deletable volume plugin matched"
                    ),
                };
                let event = PhaseEvent {
                    warning: true,
                    reason: "VolumeFailedDelete",
                    message,
                };
                self.update_volume_phase(volume, "Failed", Some(event))
                    .await?;
            }
            Some("Recycle") => {
                let event = PhaseEvent {
                    warning: true,
                    reason: "VolumeFailedRecycle",
                    message: "No recycler plugin found for the volume!".to_string(),
                };
                self.update_volume_phase(volume, "Failed", Some(event))
                    .await?;
            }
            _ => {
                tracing::debug!(volume = %name, "released volume retained");
            }
        }
        Ok(())
    }
}

/// Whether a hostPath is one Kubernetes' hostPath deleter would delete (`/tmp/.+`).
fn under_tmp(path: &str) -> bool {
    path.find("/tmp/")
        .is_some_and(|at| path.len() > at + "/tmp/".len())
}

#[cfg(test)]
mod tests {
    use super::under_tmp;

    #[test]
    fn host_paths_the_deleter_accepts() {
        assert!(under_tmp("/tmp/data"));
        assert!(!under_tmp("/tmp/"));
        assert!(!under_tmp("/mnt/data"));
        assert!(under_tmp("/var/tmp/x"));
    }
}
