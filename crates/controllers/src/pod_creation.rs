//! Creating pods when only the new pod's name is wanted (for the `SuccessfulCreate`
//! event): the API server's answer is read for `metadata.name` alone instead of being
//! parsed into a whole `Pod`, so a slow-start batch of hundreds of creations holds
//! hundreds of names, not hundreds of parsed pods.

use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use serde::Deserialize;

#[derive(Deserialize)]
struct Created {
    metadata: CreatedMeta,
}

#[derive(Deserialize)]
struct CreatedMeta {
    #[serde(default)]
    name: Option<String>,
}

/// Creates `pod` in `namespace`; the created pod's name (generated from `generateName`).
pub async fn create(
    client: &kube::Client,
    namespace: &str,
    pod: &Pod,
) -> Result<String, kube::Error> {
    use kube::Resource as _;
    let url = Pod::url_path(&(), Some(namespace));
    let body = serde_json::to_vec(pod).map_err(kube::Error::SerdeError)?;
    let request = kube::core::Request::new(url)
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    let created: Created = client.request(request).await?;
    Ok(created.metadata.name.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_the_name_is_read_from_the_answer() {
        let answer = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-x7k2p", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Pending"},
        });
        let created: Created = serde_json::from_value(answer).unwrap();
        assert_eq!(created.metadata.name.as_deref(), Some("web-x7k2p"));
    }
}
