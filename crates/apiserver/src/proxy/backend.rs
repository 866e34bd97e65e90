//! Where a proxied request goes: a kubelet (through the kubelet client, with the API
//! server's client certificate) or a pod or endpoint address directly (plain HTTP, or
//! HTTPS without verifying the certificate, as kube-apiserver's proxy transport does).

use crate::kubelet::dial::{join_host_port, open};
use crate::kubelet::{KubeletClient, KubeletLocation, origin_form};
use http::{Request, Response};
use hyper::body::Incoming;
use kyb_serving::Body;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long connecting to a pod or endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

pub enum Backend {
    Kubelet {
        client: KubeletClient,
        location: KubeletLocation,
    },
    Direct {
        https: bool,
        host: String,
        port: u16,
    },
}

impl Backend {
    /// `host:port` of the backend.
    pub fn authority(&self) -> String {
        match self {
            Backend::Kubelet { location, .. } => location.authority(),
            Backend::Direct { host, port, .. } => join_host_port(host, *port),
        }
    }

    /// Sends `request` (in origin form, `Host` set to the backend); a failure is worded as
    /// the transport words it (`dial tcp 10.42.0.5:80: connect: connection refused`).
    pub async fn round_trip(&self, request: Request<Body>) -> Result<Response<Incoming>, String> {
        match self {
            Backend::Kubelet { client, location } => client.round_trip(location, request).await,
            Backend::Direct { https, host, port } => {
                let tls = if *https { Some(insecure_tls()?) } else { None };
                let mut sender = open(host, *port, tls, CONNECT_TIMEOUT).await?;
                let request = origin_form(request, &join_host_port(host, *port))?;
                sender
                    .send_request(request)
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// TLS to pods: any certificate accepted, none presented.
fn insecure_tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| kyb_pki::tls::insecure_client_config(None).map_err(|e| e.to_string()))
        .clone()
}
