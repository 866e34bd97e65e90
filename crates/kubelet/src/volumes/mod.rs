//! A pod's volumes on the node. (Interim: no volumes yet.)

use crate::sources::Sources;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub struct VolumeManager {
    pods_dir: PathBuf,
    _sources: Arc<dyn Sources>,
}

#[derive(Clone, Debug, Default)]
pub struct MountedVolumes {
    pub volumes: BTreeMap<String, MountedVolume>,
}

#[derive(Clone, Debug)]
pub struct MountedVolume {
    pub host_path: PathBuf,
    pub read_only: bool,
}

#[derive(Clone, Debug, thiserror::Error)]
#[error("MountVolume.SetUp failed for volume \"{volume}\" : {message}")]
pub struct VolumeError {
    pub volume: String,
    pub message: String,
}

impl VolumeManager {
    pub fn new(pods_dir: PathBuf, sources: Arc<dyn Sources>) -> VolumeManager {
        VolumeManager {
            pods_dir,
            _sources: sources,
        }
    }
    pub async fn setup(&self, _pod: &Pod) -> Result<MountedVolumes, VolumeError> {
        Ok(MountedVolumes::default())
    }
    pub async fn teardown(&self, pod_uid: &str) -> anyhow::Result<()> {
        let dir = self.pods_dir.join(pod_uid);
        if dir.exists() {
            tokio::fs::remove_dir_all(&dir).await?;
        }
        Ok(())
    }
}

pub fn container_mounts(
    _pod: &Pod,
    _container: &Container,
    _volumes: &MountedVolumes,
    _privileged: bool,
) -> Result<Vec<k8s_cri::v1::Mount>, String> {
    Ok(vec![])
}
