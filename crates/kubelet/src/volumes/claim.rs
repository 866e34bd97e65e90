//! persistentVolumeClaim volumes: the claim must be Bound (and not being deleted) and its
//! PersistentVolume a `hostPath` or `local` volume of this node, whose path is handed to
//! the container; other volume sources (CSI, network file systems) are refused for now.

use super::host_path;
use crate::sources::Sources;
use std::path::PathBuf;

/// The host path behind the claim `namespace/claim_name`.
pub async fn host_path(
    sources: &dyn Sources,
    namespace: &str,
    claim_name: &str,
) -> Result<PathBuf, String> {
    let processing = |e: String| format!("error processing PVC {namespace}/{claim_name}: {e}");
    let claim = sources
        .persistent_volume_claim(namespace, claim_name)
        .await
        .map_err(|e| processing(e.to_string()))?;
    if claim.metadata.deletion_timestamp.is_some() {
        return Err(format!(
            "can't start pod because PVC {namespace}/{claim_name} is being deleted"
        ));
    }
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    let volume_name = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default();
    if phase != Some("Bound") {
        return Err(processing("PVC is not bound".into()));
    }
    if volume_name.is_empty() {
        return Err(processing("PVC has empty pvc.Spec.VolumeName".into()));
    }
    let volume = sources
        .persistent_volume(volume_name)
        .await
        .map_err(|e| processing(e.to_string()))?;
    let spec = volume.spec.as_ref();
    if let Some(host) = spec.and_then(|s| s.host_path.as_ref()) {
        host_path::check_type(&host.path, host.type_.as_deref().unwrap_or_default())?;
        return Ok(PathBuf::from(&host.path));
    }
    if let Some(local) = spec.and_then(|s| s.local.as_ref()) {
        if !std::path::Path::new(&local.path).exists() {
            return Err(format!("path {:?} does not exist", local.path));
        }
        return Ok(PathBuf::from(&local.path));
    }
    Err(format!(
        "PersistentVolume {volume_name:?} is neither a hostPath nor a local volume: this node mounts no other kind"
    ))
}
