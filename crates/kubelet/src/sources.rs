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

/// How long an object read from the API is reused before it is read again (kubelet's
/// cache-based change detection): configMap and secret volumes follow their sources
/// within this and the pods' resync period.
const TTL: std::time::Duration = std::time::Duration::from_secs(5);

/// [`Sources`] over the API: ConfigMaps, secrets, claims and volumes read one by one (what
/// the Node authorizer allows a node) and kept for [`TTL`]; services from an informer.
pub struct ApiSources {
    client: kube::Client,
    services: Arc<kyb_runtime::informer::Informer<Service>>,
    cache: std::sync::Mutex<std::collections::HashMap<CacheKey, (std::time::Instant, Cached)>>,
}

/// (kind, namespace, name).
type CacheKey = (&'static str, String, String);

/// A cached object of any kind (a ConfigMap or a Secret), read back by its type.
type Cached = Arc<dyn std::any::Any + Send + Sync>;

fn api_error(kind: &str, name: &str, error: kube::Error) -> SourceError {
    match error {
        kube::Error::Api(status) if status.code == 404 => {
            SourceError::NotFound(format!("{kind} \"{name}\" not found"))
        }
        other => SourceError::Failed(format!("getting {kind} \"{name}\": {other}")),
    }
}

impl ApiSources {
    pub fn new(
        client: kube::Client,
        informers: &kyb_runtime::informer::SharedInformers,
    ) -> ApiSources {
        ApiSources {
            client,
            services: informers.get::<Service>(),
            cache: Default::default(),
        }
    }

    /// The namespaced object `namespace/name` of kind `K` (`kind` as Kubernetes' messages
    /// name it), from the cache if read within [`TTL`], else from the API.
    async fn namespaced<K>(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, SourceError>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        let key = (kind, namespace.to_string(), name.to_string());
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((read, object)) = cache.get(&key)
                && read.elapsed() < TTL
                && let Ok(found) = object.clone().downcast::<K>()
            {
                return Ok(found);
            }
        }
        let api: kube::Api<K> = kube::Api::namespaced(self.client.clone(), namespace);
        let found = Arc::new(api.get(name).await.map_err(|e| api_error(kind, name, e))?);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|_, (read, _)| read.elapsed() < TTL * 12);
        cache.insert(key, (std::time::Instant::now(), found.clone()));
        Ok(found)
    }
}

#[async_trait]
impl Sources for ApiSources {
    async fn config_map(&self, namespace: &str, name: &str) -> Result<Arc<ConfigMap>, SourceError> {
        self.namespaced("configmap", namespace, name).await
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Arc<Secret>, SourceError> {
        self.namespaced("secret", namespace, name).await
    }

    async fn services(&self, namespace: &str) -> Result<Vec<Arc<Service>>, SourceError> {
        if !self.services.has_synced() {
            self.services.wait_synced().await;
        }
        let mut services = self.services.list_namespace(namespace);
        if namespace != "default"
            && let Some(kubernetes) = self.services.get("default", "kubernetes")
        {
            services.push(kubernetes);
        }
        Ok(services)
    }

    async fn service_account_token(
        &self,
        pod: &Pod,
        service_account: &str,
        audience: &str,
        expiration_seconds: i64,
    ) -> Result<IssuedToken, SourceError> {
        use k8s_openapi::api::authentication::v1::{
            BoundObjectReference, TokenRequest, TokenRequestSpec,
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let api: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
            kube::Api::namespaced(self.client.clone(), namespace);
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: if audience.is_empty() {
                    vec![]
                } else {
                    vec![audience.to_string()]
                },
                expiration_seconds: Some(expiration_seconds),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }),
            },
            ..Default::default()
        };
        let issued = api
            .create_token_request(service_account, &Default::default(), &request)
            .await
            .map_err(|e| api_error("serviceaccounts", service_account, e))?;
        let status = issued
            .status
            .ok_or_else(|| SourceError::Failed("the token request has no status".into()))?;
        Ok(IssuedToken {
            token: status.token,
            expiration: status.expiration_timestamp.0,
        })
    }

    async fn persistent_volume_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<PersistentVolumeClaim>, SourceError> {
        let api: kube::Api<PersistentVolumeClaim> =
            kube::Api::namespaced(self.client.clone(), namespace);
        Ok(Arc::new(api.get(name).await.map_err(|e| {
            api_error("persistentvolumeclaims", name, e)
        })?))
    }

    async fn persistent_volume(&self, name: &str) -> Result<Arc<PersistentVolume>, SourceError> {
        let api: kube::Api<PersistentVolume> = kube::Api::all(self.client.clone());
        Ok(Arc::new(
            api.get(name)
                .await
                .map_err(|e| api_error("persistentvolumes", name, e))?,
        ))
    }
}
