//! What makes the built-in metrics API look as metrics-server's does to clients and RBAC:
//! the `v1beta1.metrics.k8s.io` APIService (local — served by this server — and
//! `Available`, as kube-aggregator marks local APIServices) and metrics-server's
//! `system:aggregated-metrics-reader` ClusterRole, aggregated into `view`, `edit` and
//! `admin`. Created at start-up when missing; an existing one is left as it is.

use crate::engine::Engine;
use crate::rest::{self, internal_call};
use kyb_api::Status;
use kyb_api::registry::Subresource;
use kyb_serving::Verb;
use serde_json::{Value, json};
use std::sync::Arc;

/// The APIService's name.
pub const API_SERVICE: &str = "v1beta1.metrics.k8s.io";

/// The APIService of the metrics API.
fn api_service() -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": API_SERVICE,
            "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"},
        },
        "spec": {
            "group": super::GROUP,
            "version": "v1beta1",
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
        },
    })
}

/// metrics-server's reader role, aggregated into the default user-facing roles.
fn aggregated_metrics_reader() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": "system:aggregated-metrics-reader",
            "labels": {
                "rbac.authorization.k8s.io/aggregate-to-admin": "true",
                "rbac.authorization.k8s.io/aggregate-to-edit": "true",
                "rbac.authorization.k8s.io/aggregate-to-view": "true",
            },
        },
        "rules": [{
            "apiGroups": [super::GROUP],
            "resources": ["pods", "nodes"],
            "verbs": ["get", "list", "watch"],
        }],
    })
}

/// Creates the APIService (with its `Available` condition) and the ClusterRole if missing.
pub async fn ensure(engine: &Arc<Engine>) -> Result<(), Status> {
    let registry = engine.registry.snapshot();
    let find = |group: &str, plural: &str| {
        registry
            .find(group, "v1", plural)
            .cloned()
            .ok_or_else(|| Status::internal(format!("{plural} is not registered")))
    };
    let roles = find("rbac.authorization.k8s.io", "clusterroles")?;
    crate::bootstrap::ignore_exists(
        rest::ensure(engine, &roles, aggregated_metrics_reader(), false).await,
    )?;
    let services = find("apiregistration.k8s.io", "apiservices")?;
    let current =
        match engine
            .cache
            .lookup("apiregistration.k8s.io", "apiservices", None, API_SERVICE)
        {
            Some(current) => current,
            None => match rest::ensure(engine, &services, api_service(), false).await {
                Ok(created) => created,
                Err(status) if status.code == 409 => return Ok(()),
                Err(status) => return Err(status),
            },
        };
    let available = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Available"));
    if available {
        return Ok(());
    }
    let call = internal_call(
        engine,
        &services,
        Verb::Update,
        None,
        Some(Subresource::Status),
    )?;
    let condition = json!({
        "type": "Available",
        "status": "True",
        "lastTransitionTime": crate::util::now(),
        "reason": "Local",
        "message": "Local APIServices are always available",
    });
    rest::update_status(&call, API_SERVICE, None, json!({"conditions": [condition]}))
        .await
        .map(|_| ())
}
