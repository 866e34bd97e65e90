//! Every active namespace has a `default` ServiceAccount (pods run as it unless they name
//! another; admission refuses pods whose account does not exist) and the
//! `kube-root-ca.crt` ConfigMap holding the cluster CA (what pods trust the API server
//! with, mounted with their token). Both are put back if deleted or changed.

use crate::cache::EventType;
use crate::server::Server;
use kyb_api::registry;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

const ACCOUNT: &str = "default";
const ROOT_CA: &str = "kube-root-ca.crt";

/// Brings every namespace up to date now (before the server reports ready).
pub async fn ensure_all(server: &Server) {
    let namespaces = server.cache.objects("", "namespaces", None);
    let names: Vec<&str> = namespaces.iter().filter_map(kyb_api::meta::name).collect();
    crate::util::join_all(names.into_iter().map(|name| ensure(server, name))).await;
}

/// Follows namespaces, service accounts and configmaps for as long as the server runs.
pub async fn run(server: Arc<Server>) {
    let mut changes = server.cache.changes();
    loop {
        match changes.recv().await {
            Ok(change) => {
                let def = change.def;
                let name = change.name.as_deref().unwrap_or_default();
                let namespace = match (def.group, def.plural) {
                    // A namespace's own change carries no namespace: its name is it.
                    ("", "namespaces") if change.kind != EventType::Deleted => change.name,
                    ("", "serviceaccounts")
                        if change.kind != EventType::Added && name == ACCOUNT =>
                    {
                        change.namespace
                    }
                    ("", "configmaps") if change.kind != EventType::Added && name == ROOT_CA => {
                        change.namespace
                    }
                    _ => None,
                };
                if let Some(namespace) = namespace {
                    ensure(&server, &namespace).await;
                }
            }
            Err(RecvError::Lagged(_)) => ensure_all(&server).await,
            Err(RecvError::Closed) => return,
        }
    }
}

/// Creates what is missing in one namespace (and restores a changed CA ConfigMap).
pub async fn ensure(server: &Server, namespace: &str) {
    let cache = &server.cache;
    let Some(ns) = cache.lookup("", "namespaces", None, namespace) else {
        return;
    };
    if kyb_api::meta::deletion_timestamp(&ns).is_some()
        || ns.pointer("/status/phase") == Some(&Value::from("Terminating"))
    {
        return;
    }
    if cache
        .lookup("", "serviceaccounts", Some(namespace), ACCOUNT)
        .is_none()
    {
        let account = json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": namespace},
        });
        create(server, "serviceaccounts", account, false).await;
    }
    let ca = server.ca_pem.as_str();
    let current = cache.lookup("", "configmaps", Some(namespace), ROOT_CA);
    if current.as_ref().and_then(|c| c.pointer("/data/ca.crt")) != Some(&Value::from(ca)) {
        let config_map = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA, "namespace": namespace,
                "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."},
            },
            "data": {"ca.crt": ca},
        });
        create(server, "configmaps", config_map, true).await;
    }
}

async fn create(server: &Server, plural: &str, object: Value, update: bool) {
    let Some(def) = registry::find_stored("", plural) else {
        return;
    };
    match crate::rest::ensure(server, def, object, update).await {
        Ok(_) => {}
        Err(status) if status.code == 409 => {}
        Err(status) if status.code == 403 || status.code == 404 => {
            // The namespace is going away (or gone) meanwhile.
            tracing::debug!(plural, error = %status.message, "not created");
        }
        Err(status) => tracing::warn!(plural, error = %status.message, "cannot create"),
    }
}
