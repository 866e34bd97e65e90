//! The CRI v1 client: the runtime and image services of a container runtime reached over
//! its unix socket (`unix:///run/containerd/containerd.sock`).

use anyhow::Context as _;
use hyper_util::rt::TokioIo;
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use std::path::PathBuf;
use tonic::transport::{Channel, Endpoint};

/// The runtime's two CRI services over one connection. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Cri {
    pub runtime: RuntimeServiceClient<Channel>,
    pub images: ImageServiceClient<Channel>,
}

/// The socket path of an endpoint given as `unix:///path` (or a bare path).
pub fn socket_path(endpoint: &str) -> anyhow::Result<PathBuf> {
    let path = endpoint.strip_prefix("unix://").unwrap_or(endpoint);
    anyhow::ensure!(
        path.starts_with('/'),
        "the container runtime endpoint {endpoint:?} is not a unix socket (unix:///path)"
    );
    Ok(PathBuf::from(path))
}

impl Cri {
    /// Connects (lazily: the first call dials) to the runtime at `endpoint`.
    pub fn connect(endpoint: &str) -> anyhow::Result<Cri> {
        let path = socket_path(endpoint)?;
        // The URI is required by tonic but unused: every connection dials the socket.
        let channel = Endpoint::try_from("http://[::]:50051")
            .context("building the CRI endpoint")?
            .connect_with_connector_lazy(tower::service_fn(move |_: tonic::transport::Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(&path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }));
        // Images and exec outputs can be large.
        const MESSAGE_LIMIT: usize = 16 * 1024 * 1024;
        Ok(Cri {
            runtime: RuntimeServiceClient::new(channel.clone())
                .max_decoding_message_size(MESSAGE_LIMIT),
            images: ImageServiceClient::new(channel).max_decoding_message_size(MESSAGE_LIMIT),
        })
    }
}

/// The node status's view of the runtime ([`crate::node::RuntimeInfo`]) over CRI.
pub struct CriRuntimeInfo {
    pub cri: Cri,
}

#[async_trait::async_trait]
impl crate::node::RuntimeInfo for CriRuntimeInfo {
    async fn version(&self) -> anyhow::Result<(String, String)> {
        let version = self
            .cri
            .runtime
            .clone()
            .version(k8s_cri::v1::VersionRequest::default())
            .await
            .context("asking the runtime for its version")?
            .into_inner();
        Ok((version.runtime_name, version.runtime_version))
    }

    async fn images(&self) -> anyhow::Result<Vec<k8s_openapi::api::core::v1::ContainerImage>> {
        let images = self
            .cri
            .images
            .clone()
            .list_images(k8s_cri::v1::ListImagesRequest { filter: None })
            .await
            .context("listing the runtime's images")?
            .into_inner()
            .images;
        Ok(images
            .into_iter()
            .map(|image| {
                let mut names = image.repo_digests;
                names.extend(image.repo_tags);
                k8s_openapi::api::core::v1::ContainerImage {
                    names: Some(names),
                    size_bytes: i64::try_from(image.size).ok(),
                }
            })
            .collect())
    }

    async fn status(&self) -> anyhow::Result<crate::node::RuntimeStatus> {
        use crate::node::{RuntimeCondition, RuntimeStatus};
        let status = self
            .cri
            .runtime
            .clone()
            .status(k8s_cri::v1::StatusRequest { verbose: false })
            .await
            .context("asking the runtime for its status")?
            .into_inner()
            .status
            .unwrap_or_default();
        let find = |kind: &str| {
            status
                .conditions
                .iter()
                .find(|c| c.r#type == kind)
                .map_or_else(
                    || RuntimeCondition {
                        status: false,
                        reason: "Missing".into(),
                        message: format!("the runtime reports no {kind} condition"),
                    },
                    |c| RuntimeCondition {
                        status: c.status,
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                    },
                )
        };
        Ok(RuntimeStatus {
            runtime_ready: find("RuntimeReady"),
            network_ready: find("NetworkReady"),
        })
    }
}
