//! Writes pods' statuses to the API as kubelet's status manager does: a merge patch of the
//! status subresource carrying the pod's UID (so a pod deleted and re-created under the same
//! name is never written with another pod's status), sent only when the status changed, and
//! retried on the next sync when it fails. A merge patch has no resource version, so it is
//! never lost to a conflict.

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Mutex;

/// The last status sent per pod UID.
pub struct StatusManager {
    client: kube::Client,
    sent: Mutex<HashMap<String, Value>>,
}

/// A patch turning `old` into `new` when merged: `new`, with `null` for the fields only
/// `old` has.
fn merge_patch(old: &Value, new: &Value) -> Value {
    let mut patch = new.clone();
    if let (Some(old), Some(patch)) = (old.as_object(), patch.as_object_mut()) {
        for key in old.keys() {
            if !patch.contains_key(key) {
                patch.insert(key.clone(), Value::Null);
            }
        }
    }
    patch
}

impl StatusManager {
    pub fn new(client: kube::Client) -> StatusManager {
        StatusManager {
            client,
            sent: Mutex::new(HashMap::new()),
        }
    }

    /// Writes `status` for `pod` unless the API already holds it or it was sent already.
    pub async fn set(&self, pod: &Pod, status: &PodStatus) -> anyhow::Result<()> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let new = serde_json::to_value(status)?;
        let current = pod
            .status
            .as_ref()
            .map(serde_json::to_value)
            .transpose()?
            .unwrap_or(Value::Object(Map::new()));
        {
            let sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
            if sent.get(&uid) == Some(&new) || current == new {
                return Ok(());
            }
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let patch = json!({
            "metadata": { "uid": uid },
            "status": merge_patch(&current, &new),
        });
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| anyhow::anyhow!("writing the status of pod {namespace}/{name}: {e}"))?;
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uid, new);
        Ok(())
    }

    /// Deletes the pod object once its containers are gone (grace period 0, only if it is
    /// still the pod with this UID), as kubelet ends a graceful deletion.
    pub async fn delete(&self, pod: &Pod) -> anyhow::Result<()> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.clone()),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => {}
            // Gone already, or another pod now has the name.
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                return Err(anyhow::anyhow!("deleting pod {namespace}/{name}: {e}"));
            }
        }
        self.forget(&uid);
        Ok(())
    }

    /// Forgets what was sent for `uid`.
    pub fn forget(&self, uid: &str) {
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_only_the_old_status_has_are_cleared() {
        let old = json!({"phase": "Running", "podIP": "10.0.0.1", "reason": "x"});
        let new = json!({"phase": "Failed"});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"phase": "Failed", "podIP": null, "reason": null})
        );
    }
}
