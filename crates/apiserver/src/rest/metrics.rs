//! `metrics.k8s.io/v1beta1` `nodes` (NodeMetrics) and `pods` (PodMetrics): get and list
//! answered from the metrics API's store (`crate::metrics_api`) as metrics-server answers
//! them — the nodes and pods (and their labels) from the watch cache, `labelSelector` and
//! `fieldSelector` (`metadata.name`, `metadata.namespace`) applied to those, only Running
//! pods, only objects with usage known; never stored, no other verb.

use super::{Call, present};
use crate::metrics_api::{self, scrape::now_nanos};
use crate::response::Response;
use http::StatusCode;
use kyb_api::Status;
use kyb_serving::Verb;
use serde_json::Value;
use std::sync::Arc;

/// Serves a request for one of the metrics resources.
pub async fn serve(call: &Call<'_>) -> Result<Response, Status> {
    if !matches!(call.verb, Verb::Get | Verb::List) || call.subresource.is_some() {
        return Err(Status::method_not_supported());
    }
    let pods = call.def.plural == "pods";
    if call.verb == Verb::Get {
        let name = call.name()?;
        let value = if pods {
            get_pod(call, name)?
        } else {
            get_node(call, name)?
        };
        return Ok(present::value_response(call, &value, StatusCode::OK));
    }
    let filter = super::read::filter(call)?;
    let matches = |object: &Value| {
        filter.labels.matches(
            object
                .pointer("/metadata/labels")
                .and_then(Value::as_object),
        ) && filter.fields.matches(&[], object)
    };
    let store = &call.engine.metrics;
    let now = now_nanos();
    let (list_kind, items) = if pods {
        let items = objects(call, "pods", filter.namespace.as_deref())
            .filter(|pod| matches(pod) && is_running(pod))
            .filter_map(|pod| {
                let usage = store.pod(namespace(&pod), name(&pod))?;
                Some(metrics_api::pod_metrics(&pod, &usage, now))
            })
            .collect();
        ("PodMetricsList", items)
    } else {
        let items = objects(call, "nodes", None)
            .filter(|node| matches(node))
            .filter_map(|node| {
                let usage = store.node(name(&node))?;
                Some(metrics_api::node_metrics(&node, &usage, now))
            })
            .collect();
        ("NodeMetricsList", items)
    };
    Ok(present::computed_list(call, list_kind, items))
}

/// The cached nodes or pods (in `namespace`), in key order.
fn objects(
    call: &Call<'_>,
    plural: &str,
    namespace: Option<&str>,
) -> impl Iterator<Item = Arc<Value>> {
    call.engine
        .cache
        .objects_shared("", plural, namespace)
        .into_iter()
}

fn name(object: &Value) -> &str {
    kyb_apimachinery::meta::name(object).unwrap_or_default()
}

fn namespace(object: &Value) -> &str {
    kyb_apimachinery::meta::namespace(object).unwrap_or_default()
}

fn is_running(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
}

/// A node's metrics: `404 nodes "x" not found` without the node, `404
/// nodemetrics.metrics.k8s.io "x" not found` without its usage.
fn get_node(call: &Call<'_>, name: &str) -> Result<Value, Status> {
    let node = call
        .engine
        .cache
        .lookup_shared("", "nodes", None, name)
        .ok_or_else(|| Status::not_found("", "nodes", name))?;
    let usage = call
        .engine
        .metrics
        .node(name)
        .ok_or_else(|| Status::not_found(metrics_api::GROUP, "nodemetrics", name))?;
    Ok(metrics_api::node_metrics(&node, &usage, now_nanos()))
}

/// A pod's metrics: `404 pods "x" not found` without the pod, `404
/// podmetrics.metrics.k8s.io "ns/x" not found` when it is not Running or has no usage.
fn get_pod(call: &Call<'_>, name: &str) -> Result<Value, Status> {
    let namespace = call.namespace.as_deref().unwrap_or_default();
    let pod = call
        .engine
        .cache
        .lookup_shared("", "pods", Some(namespace), name)
        .ok_or_else(|| Status::not_found("", "pods", name))?;
    let not_found = || {
        Status::not_found(
            metrics_api::GROUP,
            "podmetrics",
            &format!("{namespace}/{name}"),
        )
    };
    if !is_running(&pod) {
        return Err(not_found());
    }
    let usage = call
        .engine
        .metrics
        .pod(namespace, name)
        .ok_or_else(not_found)?;
    Ok(metrics_api::pod_metrics(&pod, &usage, now_nanos()))
}
