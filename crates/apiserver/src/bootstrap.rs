//! What exists in every cluster from the first start: the namespaces `default`,
//! `kube-system`, `kube-public` and `kube-node-lease`, and the `kubernetes` service in
//! `default` (the first ClusterIP) with its Endpoints and EndpointSlice pointing at this
//! API server; the system PriorityClasses (`system-cluster-critical`,
//! `system-node-critical`); and the default RBAC roles and bindings (created when missing; the
//! aggregated ClusterRoles `admin`, `edit`, `view` with their aggregated rules filled in),
//! with the kubelet client's user bound to `system:kubelet-api-admin`.

use crate::engine::Engine;
use crate::rest;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub const NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Where clients reach this API server: the `kubernetes` service's endpoint.
pub struct Advertised {
    pub address: std::net::Ipv4Addr,
    pub port: u16,
}

/// Creates (or refreshes) the default objects, retrying until it succeeds.
pub async fn run(engine: &Arc<Engine>, advertised: &Advertised) {
    loop {
        match try_run(engine, advertised).await {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(%error, "bootstrapping the default objects failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn try_run(engine: &Arc<Engine>, advertised: &Advertised) -> Result<(), kyb_api::Status> {
    let registry = engine.registry.snapshot();
    let find = |group, version, plural| {
        registry
            .find(group, version, plural)
            .ok_or_else(|| kyb_api::Status::internal(format!("{plural} is not registered")))
    };
    let namespaces = find("", "v1", "namespaces")?;
    for name in NAMESPACES {
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        ignore_exists(rest::ensure(engine, namespaces, namespace, false).await)?;
    }
    // The `kubernetes` service's address comes from the default ServiceCIDR.
    crate::keepers::service_cidrs::ensure_default(engine).await?;
    let port = advertised.port;
    let address = advertised.address.to_string();
    let cluster_ip = rest::first_service_ip(engine.services.service_cidr).to_string();
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": cluster_ip,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    });
    let ports = json!([{"name": "https", "port": port, "protocol": "TCP"}]);
    let endpoints = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address}], "ports": ports}],
    });
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
        "ports": ports,
    });
    rest::ensure(engine, find("", "v1", "services")?, service, true).await?;
    policy(engine).await?;
    crate::metrics_api::register::ensure(engine).await?;
    // Where the API server can be reached from pods: worth a warning, not a refusal to serve.
    for (object, resource) in [
        (endpoints, find("", "v1", "endpoints")?),
        (slice, find("discovery.k8s.io", "v1", "endpointslices")?),
    ] {
        if let Err(error) = rest::ensure(engine, resource, object, true).await {
            tracing::warn!(%error, "cannot publish the kubernetes service's endpoints");
        }
    }
    Ok(())
}

/// The bootstrap RBAC policy and the system PriorityClasses, each object created if it
/// does not exist.
async fn policy(engine: &Arc<Engine>) -> Result<(), kyb_api::Status> {
    const GROUP: &str = "rbac.authorization.k8s.io";
    let registry = engine.registry.snapshot();
    let find = |plural| {
        registry
            .find(GROUP, "v1", plural)
            .ok_or_else(|| kyb_api::Status::internal(format!("{plural} is not registered")))
    };
    let mut cluster_roles = kyb_rbac::bootstrap::cluster_roles();
    let aggregated = kyb_rbac::aggregation::aggregate_cluster_roles(&cluster_roles);
    for role in &mut cluster_roles {
        let name = kyb_apimachinery::meta::name(role)
            .unwrap_or_default()
            .to_string();
        if let (Some(Ok(rules)), Some(fields)) = (aggregated.get(&name), role.as_object_mut())
            && kyb_rbac::aggregation::is_aggregated(&Value::Object(fields.clone()))
        {
            fields.insert("rules".into(), kyb_rbac::PolicyRule::list_to_json(rules));
        }
    }
    let mut cluster_role_bindings = kyb_rbac::bootstrap::cluster_role_bindings();
    if let Some(user) = engine.kubelet.user() {
        cluster_role_bindings.push(crate::kubelet::api_admin_binding(user));
    }
    let sets = [
        ("clusterroles", cluster_roles),
        ("clusterrolebindings", cluster_role_bindings),
        ("roles", kyb_rbac::bootstrap::roles()),
        ("rolebindings", kyb_rbac::bootstrap::role_bindings()),
    ];
    // Written all at once: the store commits them together.
    let mut writes = Vec::new();
    for (plural, objects) in sets {
        let def = find(plural)?;
        for object in objects {
            writes.push(rest::ensure(engine, def, object, false));
        }
    }
    let classes = registry
        .find("scheduling.k8s.io", "v1", "priorityclasses")
        .ok_or_else(|| kyb_api::Status::internal("priorityclasses is not registered"))?;
    for class in kyb_admission::priority::system_priority_classes() {
        writes.push(rest::ensure(engine, classes, class, false));
    }
    for result in crate::util::join_all(writes).await {
        ignore_exists(result)?;
    }
    Ok(())
}

pub(crate) fn ignore_exists(result: Result<Value, kyb_api::Status>) -> Result<(), kyb_api::Status> {
    match result {
        Ok(_) => Ok(()),
        Err(status) if status.code == 409 => Ok(()),
        Err(status) => Err(status),
    }
}
