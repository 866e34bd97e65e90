//! The streaming connect subresources of pods — `pods/exec`, `pods/attach`,
//! `pods/portforward` — served through the node's kubelet: [`options`] (the query,
//! checked as Kubernetes does), [`target`] (the pod, its container and node) and
//! [`connector`] (authorization, the kubelet's upgrade, and SPDY piped, WebSocket
//! translated or tunnelled, as kube-apiserver does).

pub mod connector;
pub mod options;
pub mod target;

use crate::router::Connectors;
use std::sync::Arc;

/// Registers the three connectors.
pub(crate) fn register(connectors: &mut Connectors) {
    for kind in [
        options::Kind::Exec,
        options::Kind::Attach,
        options::Kind::PortForward,
    ] {
        connectors.register(
            "",
            "pods",
            kind.subresource(),
            Arc::new(connector::StreamConnector(kind)),
        );
    }
}
