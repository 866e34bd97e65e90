//! The API server's client to kubelets (kube-apiserver's `pkg/kubelet/client`): where a
//! node's kubelet is ([`KubeletClient::location`], from the Node in the watch cache) and
//! HTTPS requests to it with the API server's kubelet client certificate — plain ones with
//! the response body streamed ([`KubeletClient::send`]) and upgrades
//! ([`KubeletClient::upgrade`]) for exec, attach and port-forward. The connectors
//! (`pods/log`, `nodes/proxy`, `pods/exec`, …) reach it through `Engine::kubelet`.

mod address;
mod client;
pub(crate) mod dial;
mod errors;

pub use address::{
    DEFAULT_PREFERRED_ADDRESS_TYPES, NODE_ADDRESS_TYPES, kubelet_port, preferred_address,
};
pub use client::{KubeletClient, KubeletClientConfig, KubeletLocation, origin_form};
pub use errors::{backend_status, transport_error};

/// The ClusterRoleBinding that lets the API server's kubelet client user call every
/// kubelet API (`nodes/proxy`, `nodes/log`, `nodes/stats`, `nodes/metrics`), which
/// kubelets authorize by SubjectAccessReview — as k3s binds its `kube-apiserver` user.
pub fn api_admin_binding(user: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": "kube-apiserver-kubelet-admin",
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:kubelet-api-admin",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })
}

#[cfg(test)]
mod tests;
