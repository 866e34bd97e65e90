//! The target's `/scale` subresource: `scaleTargetRef` (apiVersion + kind) resolved to a
//! resource through the API's discovery (cached), then `GET`/`PUT …/{name}/scale` — so
//! Deployments, ReplicaSets, StatefulSets, ReplicationControllers and any resource
//! (custom ones too) with a scale subresource can be autoscaled.

use k8s_openapi::api::autoscaling::v1::Scale;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use std::collections::HashMap;
use std::sync::Mutex;

pub struct Scales {
    client: kube::Client,
    resources: Mutex<HashMap<(String, String), ApiResource>>,
}

/// Kubernetes' wording for an API error (the server's Status message).
pub fn error_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

impl Scales {
    pub fn new(client: kube::Client) -> Scales {
        Scales {
            client,
            resources: Mutex::new(HashMap::new()),
        }
    }

    /// The resource serving `kind` in `api_version` (`apps/v1`, `v1`); errors as
    /// Kubernetes' REST mapper words them.
    pub async fn resolve(&self, api_version: &str, kind: &str) -> Result<ApiResource, String> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self
            .resources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(found.clone());
        }
        let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
            [version] if !version.is_empty() => ("", version),
            [group, version] if !group.is_empty() && !version.is_empty() => (group, version),
            _ => return Err(format!("unexpected GroupVersion string: {api_version}")),
        };
        let no_match = || format!("no matches for kind {kind:?} in group {group:?}");
        let list = if group.is_empty() {
            self.client.list_core_api_resources(version).await
        } else {
            self.client.list_api_group_resources(api_version).await
        };
        let list = match list {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => return Err(no_match()),
            Err(error) => return Err(error_message(&error)),
        };
        let found = list
            .resources
            .iter()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .ok_or_else(no_match)?;
        let resource = ApiResource {
            group: group.to_string(),
            version: version.to_string(),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            plural: found.name.clone(),
        };
        self.resources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, resource.clone());
        Ok(resource)
    }

    fn api(&self, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, resource)
    }

    pub async fn get(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Result<Scale, String> {
        self.api(resource, namespace)
            .get_scale(name)
            .await
            .map_err(|e| error_message(&e))
    }

    pub async fn update(
        &self,
        resource: &ApiResource,
        namespace: &str,
        scale: &Scale,
    ) -> Result<Scale, String> {
        let name = scale.metadata.name.clone().unwrap_or_default();
        self.api(resource, namespace)
            .replace_scale(&name, &PostParams::default(), scale)
            .await
            .map_err(|e| error_message(&e))
    }
}
