//! The API server's client to kubelets (kube-apiserver's `pkg/kubelet/client`): where a
//! node's kubelet is ([`KubeletClient::location`], from the Node in the watch cache) and
//! HTTPS requests to it with the API server's kubelet client certificate — plain ones with
//! the response body streamed ([`KubeletClient::send`]) and upgrades
//! ([`KubeletClient::upgrade`]) for exec, attach and port-forward. The connectors
//! (`pods/log`, `nodes/proxy`, `pods/exec`, …) reach it through `Engine::kubelet`.

mod address;
mod client;
mod errors;

pub use address::{
    DEFAULT_PREFERRED_ADDRESS_TYPES, kubelet_port, parse_preferred_address_types, preferred_address,
};
pub use client::{KubeletClient, KubeletClientConfig, KubeletLocation};
pub use errors::{backend_status, transport_error};

#[cfg(test)]
mod tests;
