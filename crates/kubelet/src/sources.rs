//! What the agent reads from the API besides its own pods, for the code that builds
//! containers (environment variables) and volumes (configMap, secret, projected,
//! persistentVolumeClaim): one trait, implemented over the API (objects watched one by one
//! by name, as kubelet's watch-based managers do, which the Node authorizer allows for the
//! objects its pods reference), and by plain maps in tests.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service,
};
use std::sync::Arc;

/// Why a source could not be read.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SourceError {
    /// The object does not exist; the message is Kubernetes' (`configmap "x" not found`).
    #[error("{0}")]
    NotFound(String),
    /// Any other failure (the API unreachable, forbidden, ...), with its message.
    #[error("{0}")]
    Failed(String),
}

/// A service-account token issued for a pod (TokenRequest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: String,
    /// When it expires.
    pub expiration: jiff::Timestamp,
}

/// The objects a pod's containers and volumes are built from.
#[async_trait]
pub trait Sources: Send + Sync + 'static {
    /// The ConfigMap `namespace/name`; `SourceError::NotFound` with
    /// `configmap "name" not found` when it does not exist.
    async fn config_map(&self, namespace: &str, name: &str) -> Result<Arc<ConfigMap>, SourceError>;
    /// The Secret `namespace/name`; `SourceError::NotFound` with `secret "name" not found`.
    async fn secret(&self, namespace: &str, name: &str) -> Result<Arc<Secret>, SourceError>;
    /// The services whose environment variables a pod in `namespace` gets: those of
    /// `namespace` and the `kubernetes` service of `default`.
    async fn services(&self, namespace: &str) -> Result<Vec<Arc<Service>>, SourceError>;
    /// A token for `pod`'s service account `service_account`, for `audience` (the API
    /// server's when empty), valid `expiration_seconds`, bound to the pod.
    async fn service_account_token(
        &self,
        pod: &Pod,
        service_account: &str,
        audience: &str,
        expiration_seconds: i64,
    ) -> Result<IssuedToken, SourceError>;
    /// The claim `namespace/name`.
    async fn persistent_volume_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<PersistentVolumeClaim>, SourceError>;
    /// The PersistentVolume `name`.
    async fn persistent_volume(&self, name: &str) -> Result<Arc<PersistentVolume>, SourceError>;
}
