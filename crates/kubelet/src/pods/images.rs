//! Making sure a container's image is on the node before it is created (interim: present
//! or pulled through CRI, `imagePullPolicy` honoured; back-off and pull secrets come with
//! the image puller).

use super::status::Waiting;
use crate::cri::Cri;
use k8s_cri::v1 as cri;
use k8s_openapi::api::core::v1::Container;

/// The image reference to create the container from, and the events to record.
pub struct Ensured {
    pub image_ref: String,
    pub events: Vec<(&'static str, bool, String)>,
}

/// The pull policy Kubernetes defaults when none is given: `Always` for `:latest` or an
/// untagged image, `IfNotPresent` otherwise.
pub fn pull_policy(container: &Container) -> &str {
    if let Some(policy) = container.image_pull_policy.as_deref() {
        return policy;
    }
    let image = container.image.as_deref().unwrap_or_default();
    let name = image.split('@').next().unwrap_or(image);
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ if image.contains('@') => "IfNotPresent",
        _ => "Always",
    }
}

pub async fn ensure(cri: &Cri, container: &Container) -> Result<Ensured, Waiting> {
    let image = container.image.clone().unwrap_or_default();
    let spec = cri::ImageSpec {
        image: image.clone(),
        ..Default::default()
    };
    let present = cri
        .images
        .clone()
        .image_status(cri::ImageStatusRequest {
            image: Some(spec.clone()),
            verbose: false,
        })
        .await
        .map_err(|e| Waiting {
            reason: "ErrImagePull".into(),
            message: e.message().to_string(),
        })?
        .into_inner()
        .image;
    let policy = pull_policy(container);
    if let Some(found) = &present
        && policy != "Always"
    {
        return Ok(Ensured {
            image_ref: found.id.clone(),
            events: vec![(
                "Pulled",
                false,
                format!("Container image \"{image}\" already present on machine"),
            )],
        });
    }
    if policy == "Never" {
        return Err(Waiting {
            reason: "ErrImageNeverPull".into(),
            message: format!(
                "Container image \"{image}\" is not present with pull policy of Never"
            ),
        });
    }
    let started = std::time::Instant::now();
    let pulled = cri
        .images
        .clone()
        .pull_image(cri::PullImageRequest {
            image: Some(spec),
            auth: None,
            sandbox_config: None,
        })
        .await;
    match pulled {
        Ok(response) => Ok(Ensured {
            image_ref: response.into_inner().image_ref,
            events: vec![
                ("Pulling", false, format!("Pulling image \"{image}\"")),
                (
                    "Pulled",
                    false,
                    format!(
                        "Successfully pulled image \"{image}\" in {:?}",
                        started.elapsed()
                    ),
                ),
            ],
        }),
        Err(status) => Err(Waiting {
            reason: "ErrImagePull".into(),
            message: format!(
                "failed to pull and unpack image \"{image}\": {}",
                status.message()
            ),
        }),
    }
}
