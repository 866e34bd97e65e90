//! A pod's volumes on the node, as kubelet's volume manager and plugins lay them out:
//! `<pods_dir>/<uid>/volumes/<plugin>/<name>` (`kubernetes.io~empty-dir`,
//! `kubernetes.io~configmap`, `kubernetes.io~secret`, `kubernetes.io~downward-api`,
//! `kubernetes.io~projected`), hostPath and claims' host paths handed over as they are.
//!
//! [`VolumeManager::setup`] runs on every sync of a pod: it creates what is missing and
//! refreshes configMap, secret, downwardAPI and projected contents in place through the
//! [`atomic_writer`]. Secret and projected volumes live on a tmpfs when the agent runs as
//! root (as kubelet keeps secrets off the disk). [`container_mounts`] turns a container's
//! `volumeMounts` into CRI mounts. [`VolumeManager::teardown`] unmounts and removes a pod's
//! directory without ever following a symlink out of it.
//!
//! File-system work is done inline in the async functions: it is small (a volume's few
//! files) and local.
//!
//! # Modules
//!
//! - [`atomic_writer`]: timestamped directories behind the `..data` symlink.
//! - [`projection`]: the files of configMap, secret, downwardAPI volumes (items, modes,
//!   optional).
//! - [`downward_api`]: pod fields and container resources as file contents.
//! - [`token`]: service-account tokens for projected volumes, cached and renewed.
//! - [`ownership`]: `fsGroup` ownership and group permissions.
//! - [`empty_dir`]: emptyDir directories and tmpfs, their size and usage.
//! - [`host_path`]: hostPath `type` checks.
//! - [`claim`]: persistentVolumeClaims bound to hostPath or local volumes.
//! - [`mounts`]: a container's `volumeMounts` as CRI mounts, `subPath` kept inside.
//! - [`cleanup`]: pod directories' teardown and orphans.

pub mod atomic_writer;
pub mod claim;
pub mod cleanup;
pub mod downward_api;
pub mod empty_dir;
pub mod host_path;
pub mod mounts;
pub mod ownership;
pub mod projection;
pub mod token;

#[cfg(test)]
mod tests;

pub use downward_api::Allocatable;
pub use mounts::container_mounts;

use crate::sources::Sources;
use atomic_writer::Payload;
use k8s_openapi::api::core::v1::{Pod, Volume};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The plugin directories of the volumes that live in the pod's directory.
pub const EMPTY_DIR: &str = "kubernetes.io~empty-dir";
pub const CONFIG_MAP: &str = "kubernetes.io~configmap";
pub const SECRET: &str = "kubernetes.io~secret";
pub const DOWNWARD_API: &str = "kubernetes.io~downward-api";
pub const PROJECTED: &str = "kubernetes.io~projected";

/// A volume that could not be set up; the pod does not start. Its `Display` is kubelet's
/// FailedMount event message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("MountVolume.SetUp failed for volume {volume:?} : {message}")]
pub struct VolumeError {
    /// The volume's name in the pod.
    pub volume: String,
    /// What failed (`configmap "x" not found`).
    pub message: String,
}

/// A pod's volumes once set up, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MountedVolumes {
    pub volumes: BTreeMap<String, MountedVolume>,
}

/// One volume ready to be mounted into containers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountedVolume {
    /// The path on the node that containers mount.
    pub host_path: PathBuf,
    /// Whether every mount of it is read-only (secret, configMap, downwardAPI, projected,
    /// a claim with `readOnly`).
    pub read_only: bool,
    /// Whether mounts made below it on the host can reach containers (a host path:
    /// hostPath and claims), so that `HostToContainer`/`Bidirectional` mean something;
    /// false for volumes the agent writes itself.
    pub propagation_allowed: bool,
}

/// Sets up, measures and tears down the volumes of the node's pods.
pub struct VolumeManager {
    pods_dir: PathBuf,
    sources: Arc<dyn Sources>,
    allocatable: RwLock<Allocatable>,
    tokens: token::TokenCache,
    memory_backed: bool,
}

impl VolumeManager {
    /// `pods_dir` = `<root_dir>/pods`; each pod gets `<pods_dir>/<uid>/volumes/<plugin>/<name>`.
    pub fn new(pods_dir: PathBuf, sources: Arc<dyn Sources>) -> VolumeManager {
        VolumeManager {
            pods_dir,
            sources,
            allocatable: RwLock::new(Allocatable::new()),
            tokens: token::TokenCache::default(),
            memory_backed: kyb_node_sys::privileges::is_root(),
        }
    }

    /// Whether secret and projected volumes are kept on a tmpfs (kubelet's behaviour; the
    /// default when running as root, since mounting needs it). Off, they are plain
    /// directories, which a harness that removes the data directory without tearing pods
    /// down cannot leave mounted.
    pub fn with_memory_backed_secrets(mut self, on: bool) -> VolumeManager {
        self.memory_backed = on;
        self
    }

    /// The node's allocatable resources: the default of containers' limits in downwardAPI
    /// files and the bound of memory-backed emptyDir volumes.
    pub fn set_node_allocatable(&self, allocatable: Allocatable) {
        *self.allocatable.write().unwrap_or_else(|e| e.into_inner()) = allocatable;
    }

    fn allocatable(&self) -> Allocatable {
        self.allocatable
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The pod's directory.
    pub fn pod_dir(&self, pod_uid: &str) -> PathBuf {
        self.pods_dir.join(pod_uid)
    }

    /// Sets up (idempotently) every volume of `pod`, refreshing configMap, secret,
    /// downwardAPI and projected contents in place; called on every sync of the pod.
    pub async fn setup(&self, pod: &Pod) -> Result<MountedVolumes, VolumeError> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let mut mounted = MountedVolumes::default();
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            let error = |message: String| VolumeError {
                volume: volume.name.clone(),
                message,
            };
            if uid.is_empty() || uid.contains('/') || uid.starts_with('.') {
                return Err(error(format!("invalid pod uid {uid:?}")));
            }
            let one = self.setup_volume(pod, uid, volume).await.map_err(error)?;
            mounted.volumes.insert(volume.name.clone(), one);
        }
        Ok(mounted)
    }

    async fn setup_volume(
        &self,
        pod: &Pod,
        uid: &str,
        volume: &Volume,
    ) -> Result<MountedVolume, String> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let dir = |plugin: &str| {
            self.pod_dir(uid)
                .join("volumes")
                .join(plugin)
                .join(&volume.name)
        };
        let security = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
        let fs_group = security
            .and_then(|s| s.fs_group)
            .and_then(|g| u32::try_from(g).ok());
        let on_root_mismatch =
            security.and_then(|s| s.fs_group_change_policy.as_deref()) == Some("OnRootMismatch");
        let owned = |path: &Path, read_only: bool| -> Result<(), String> {
            match fs_group {
                Some(group) => {
                    ownership::set_volume_ownership(path, group, read_only, on_root_mismatch)
                        .map_err(|e| e.to_string())
                }
                None => Ok(()),
            }
        };
        let written = |host_path: PathBuf| MountedVolume {
            host_path,
            read_only: true,
            propagation_allowed: false,
        };

        if let Some(source) = &volume.empty_dir {
            let path = dir(EMPTY_DIR);
            if empty_dir::setup(&path, source, pod, &self.allocatable())? {
                owned(&path, false)?;
            }
            return Ok(MountedVolume {
                host_path: path,
                read_only: false,
                propagation_allowed: false,
            });
        }
        if let Some(source) = &volume.host_path {
            host_path::check_type(&source.path, source.type_.as_deref().unwrap_or_default())?;
            return Ok(MountedVolume {
                host_path: PathBuf::from(&source.path),
                read_only: false,
                propagation_allowed: true,
            });
        }
        if let Some(source) = &volume.persistent_volume_claim {
            let path = claim::host_path(&*self.sources, namespace, &source.claim_name).await?;
            return Ok(MountedVolume {
                host_path: path,
                read_only: source.read_only.unwrap_or(false),
                propagation_allowed: true,
            });
        }
        if let Some(source) = &volume.config_map {
            let optional = source.optional.unwrap_or(false);
            let mode = source.default_mode.unwrap_or(projection::DEFAULT_MODE);
            let object = self.sources.config_map(namespace, &source.name).await;
            let payload =
                projection::config_map_files(object, source.items.as_deref(), mode, optional)?;
            let path = dir(CONFIG_MAP);
            self.write(pod, &path, &payload, false, &owned)?;
            return Ok(written(path));
        }
        if let Some(source) = &volume.secret {
            let optional = source.optional.unwrap_or(false);
            let mode = source.default_mode.unwrap_or(projection::DEFAULT_MODE);
            let name = source.secret_name.as_deref().unwrap_or_default();
            let object = self.sources.secret(namespace, name).await;
            let payload =
                projection::secret_files(object, source.items.as_deref(), mode, optional)?;
            let path = dir(SECRET);
            self.write(pod, &path, &payload, self.memory_backed(), &owned)?;
            return Ok(written(path));
        }
        if let Some(source) = &volume.downward_api {
            let mode = source.default_mode.unwrap_or(projection::DEFAULT_MODE);
            let payload = projection::downward_api_payload(
                source.items.as_deref().unwrap_or_default(),
                pod,
                &self.allocatable(),
                mode,
            )?;
            let path = dir(DOWNWARD_API);
            self.write(pod, &path, &payload, false, &owned)?;
            return Ok(written(path));
        }
        if let Some(source) = &volume.projected {
            let payload = self
                .projected_payload(pod, namespace, source, fs_group.is_some())
                .await?;
            let path = dir(PROJECTED);
            self.write(pod, &path, &payload, self.memory_backed(), &owned)?;
            return Ok(written(path));
        }
        Err("no volume plugin matched".to_string())
    }

    /// Whether secret and projected volumes are kept in memory.
    fn memory_backed(&self) -> bool {
        self.memory_backed
    }

    /// Writes a payload into the volume directory `path` (created, and a tmpfs mounted on
    /// it when `memory`, sized as a memory-backed emptyDir without `sizeLimit`), then applies `fsGroup` ownership to what was written.
    fn write(
        &self,
        pod: &Pod,
        path: &Path,
        payload: &Payload,
        memory: bool,
        owned: &dyn Fn(&Path, bool) -> Result<(), String>,
    ) -> Result<(), String> {
        std::fs::create_dir_all(path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        if memory {
            let size = empty_dir::memory_size(pod, None, &self.allocatable());
            empty_dir::mount_memory(path, size)?;
        }
        // The new files get their group before they become visible, the rest (the root,
        // the symlinks) right after.
        let set_perms = |ts_dir: &Path| owned(ts_dir, true).map_err(std::io::Error::other);
        let outcome = atomic_writer::write(path, payload, &set_perms).map_err(|e| e.to_string())?;
        if outcome == atomic_writer::Outcome::Written {
            owned(path, true)?;
        }
        Ok(())
    }

    /// A projected volume's files from all its sources; the errors of all sources, as
    /// kubelet aggregates them.
    async fn projected_payload(
        &self,
        pod: &Pod,
        namespace: &str,
        source: &k8s_openapi::api::core::v1::ProjectedVolumeSource,
        fs_group: bool,
    ) -> Result<Payload, String> {
        let default_mode = source.default_mode.unwrap_or(projection::DEFAULT_MODE);
        let mut payload = Payload::new();
        let mut errors = vec![];
        for projected in source.sources.iter().flatten() {
            let part = if let Some(cm) = &projected.config_map {
                let optional = cm.optional.unwrap_or(false);
                let object = self.sources.config_map(namespace, &cm.name).await;
                projection::config_map_files(object, cm.items.as_deref(), default_mode, optional)
            } else if let Some(secret) = &projected.secret {
                let optional = secret.optional.unwrap_or(false);
                let object = self.sources.secret(namespace, &secret.name).await;
                projection::secret_files(object, secret.items.as_deref(), default_mode, optional)
            } else if let Some(downward) = &projected.downward_api {
                projection::downward_api_payload(
                    downward.items.as_deref().unwrap_or_default(),
                    pod,
                    &self.allocatable(),
                    default_mode,
                )
            } else if let Some(token) = &projected.service_account_token {
                self.token_file(pod, token, default_mode, fs_group).await
            } else {
                // clusterTrustBundle (and later kinds): not projected by this node yet.
                Ok(Payload::new())
            };
            match part {
                Ok(part) => payload.extend(part),
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Ok(payload),
            _ => Err(projection::aggregate(&errors)),
        }
    }

    /// The file of a serviceAccountToken projection: mode `defaultMode`, or 0600 when the
    /// pod has an `fsGroup` (its ownership then adds group read: 0640).
    async fn token_file(
        &self,
        pod: &Pod,
        projection: &k8s_openapi::api::core::v1::ServiceAccountTokenProjection,
        default_mode: i32,
        fs_group: bool,
    ) -> Result<Payload, String> {
        let service_account = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or("default");
        let expiration = projection
            .expiration_seconds
            .unwrap_or(token::DEFAULT_EXPIRATION_SECONDS);
        let audience = projection.audience.as_deref().unwrap_or_default();
        let issued = self
            .tokens
            .get(&*self.sources, pod, service_account, audience, expiration)
            .await
            .map_err(|e| format!("failed to fetch token: {e}"))?;
        let mode = if fs_group { 0o600 } else { default_mode as u32 };
        Ok(Payload::from([(
            projection.path.clone(),
            atomic_writer::FileProjection {
                data: issued.token.into_bytes(),
                mode,
            },
        )]))
    }

    /// Removes the pod's volumes and directory (unmounting tmpfs first), after its
    /// containers are gone. A host path is never touched: nothing below the pod's
    /// directory is followed through a symlink, and nothing is removed while a mount
    /// remains below it.
    pub async fn teardown(&self, pod_uid: &str) -> anyhow::Result<()> {
        self.tokens.forget_pod(pod_uid);
        cleanup::remove_pod_dir(&self.pods_dir, pod_uid)
    }

    /// Pod directories on disk whose uid is not in `live` (for cleanup after a restart).
    pub fn orphaned(&self, live: &HashSet<String>) -> Vec<String> {
        cleanup::orphaned(&self.pods_dir, live)
    }

    /// Bytes used by the pod's emptyDir volumes, by volume name (for `sizeLimit` eviction
    /// and stats).
    pub fn empty_dir_usage(&self, pod_uid: &str) -> Vec<(String, u64)> {
        let dir = self.pod_dir(pod_uid).join("volumes").join(EMPTY_DIR);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return vec![];
        };
        let mut usage: Vec<(String, u64)> = entries
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    empty_dir::usage(&e.path()),
                )
            })
            .collect();
        usage.sort();
        usage
    }
}
