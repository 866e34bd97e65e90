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
