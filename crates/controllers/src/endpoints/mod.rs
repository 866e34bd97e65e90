//! The endpoints controller: for every Service with a selector, the `core/v1` Endpoints
//! object of the same name listing the selected pods ([`subsets`]), as Kubernetes'
//! `endpoints-controller` keeps it:
//!
//! - labels: the Service's own, plus `endpointslice.kubernetes.io/skip-mirror: "true"`
//!   (the EndpointSlice mirroring controller leaves it alone) and
//!   `service.kubernetes.io/headless` for headless Services;
//! - annotations: `endpoints.kubernetes.io/last-change-trigger-time`, and
//!   `endpoints.kubernetes.io/over-capacity: truncated` when more than 1000 addresses had
//!   to be cut;
//! - written only when subsets, labels or the capacity annotation changed;
//! - deleted with its Service. Services without a selector (whose Endpoints users write
//!   themselves) and ExternalName Services are left alone.
//!
//! Warnings on failed writes: `FailedToCreateEndpoint` ("Failed to create endpoint for
//! service ns/name: ...") and `FailedToUpdateEndpoint` ("Failed to update endpoint
//! ns/name: ...").

pub mod subsets;

use crate::context::Context;
use crate::endpointslice::pods;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const NAME: &str = "endpoints-controller";
/// The service account (and `system:controller:` role) the controller acts as.
const IDENTITY: &str = "endpoint-controller";
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";

struct EndpointsController {
    services: Arc<Informer<Service>>,
    pods: Arc<Informer<Pod, Compacted>>,
    endpoints: Arc<Informer<Endpoints>>,
    client: kube::Client,
    recorder: Recorder,
}

/// The labels of the Service's Endpoints.
fn endpoints_labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    labels.insert(SKIP_MIRROR_LABEL.to_string(), "true".to_string());
    if pods::is_headless(service) {
        labels.insert(pods::HEADLESS_LABEL.to_string(), String::new());
    } else {
        labels.remove(pods::HEADLESS_LABEL);
    }
    labels
}

impl EndpointsController {
    async fn delete(&self, key: &ObjectKey) -> anyhow::Result<()> {
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), &key.namespace);
        match api.delete(&key.name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("deleting Endpoints {key}")),
        }
    }
}

impl Reconciler for EndpointsController {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(service) = self.services.get_key(key) else {
            if self.endpoints.get_key(key).is_some() {
                self.delete(key).await?;
            }
            return Ok(Action::Done);
        };
        if pods::selector(&service).is_none() || pods::is_external_name(&service) {
            return Ok(Action::Done);
        }
        let selected = pods::selected_pods(&self.pods, &service);
        let mut subsets = subsets::build(&service, &selected);
        let truncated = subsets::truncate(&mut subsets);
        let labels = endpoints_labels(&service);
        let current = self.endpoints.get_key(key);
        if let Some(current) = &current {
            let same_subsets = current.subsets.as_deref().unwrap_or_default() == subsets.as_slice();
            let same_labels = current.metadata.labels.as_ref() == Some(&labels);
            let capacity = current
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(OVER_CAPACITY_ANNOTATION));
            let same_capacity = capacity.map(String::as_str) == truncated.then_some("truncated");
            if same_subsets && same_labels && same_capacity {
                return Ok(Action::Done);
            }
        }
        let mut meta = match &current {
            Some(current) => current.metadata.clone(),
            None => ObjectMeta {
                name: Some(key.name.clone()),
                namespace: Some(key.namespace.clone()),
                ..ObjectMeta::default()
            },
        };
        meta.labels = Some(labels);
        let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
        match pods::trigger_time(&service, &selected) {
            Some(t) => annotations.insert(pods::TRIGGER_TIME_ANNOTATION.to_string(), t),
            None => annotations.remove(pods::TRIGGER_TIME_ANNOTATION),
        };
        if truncated {
            annotations.insert(
                OVER_CAPACITY_ANNOTATION.to_string(),
                "truncated".to_string(),
            );
        } else {
            annotations.remove(OVER_CAPACITY_ANNOTATION);
        }
        let endpoints = Endpoints {
            metadata: meta,
            subsets: (!subsets.is_empty()).then_some(subsets),
        };
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), &key.namespace);
        let result = match current {
            Some(_) => api
                .replace(&key.name, &PostParams::default(), &endpoints)
                .await
                .map(|_| ()),
            None => api
                .create(&PostParams::default(), &endpoints)
                .await
                .map(|_| ()),
        };
        match result {
            Ok(()) => Ok(Action::Done),
            // The namespace is being deleted: nothing more to write there.
            Err(kube::Error::Api(s))
                if current.is_none() && s.code == 403 && s.reason == "Forbidden" =>
            {
                tracing::debug!(service = %key, error = %s.message, "Endpoints not created");
                Ok(Action::Done)
            }
            Err(error) => {
                let conflict = matches!(&error, kube::Error::Api(s) if s.code == 409);
                if !conflict {
                    let (reason, message) = match current {
                        Some(_) => (
                            "FailedToUpdateEndpoint",
                            format!("Failed to update endpoint {key}: {error}"),
                        ),
                        None => (
                            "FailedToCreateEndpoint",
                            format!("Failed to create endpoint for service {key}: {error}"),
                        ),
                    };
                    self.recorder.warning(service.as_ref(), reason, &message);
                }
                Err(error).with_context(|| format!("writing Endpoints {key}"))
            }
        }
    }
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let services = ctx.informers.get::<Service>();
    let pods = ctx.informers.compacted::<Pod>();
    let endpoints = ctx.informers.get::<Endpoints>();
    let client = ctx.client_for(IDENTITY).await?;
    let reconciler = Arc::new(EndpointsController {
        services: services.clone(),
        pods: pods.clone(),
        endpoints: endpoints.clone(),
        client,
        recorder: ctx.recorder(NAME),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    {
        let queue = queue.clone();
        services.on_change(move |change| queue.add(ObjectKey::of(change.object().as_ref())));
    }
    {
        let queue = queue.clone();
        let services = services.clone();
        pods.on_change(move |change| {
            for key in pods::services_for_change(&services, change) {
                queue.add(key);
            }
        });
    }
    {
        // A deleted Endpoints object of a Service is put back.
        let queue = queue.clone();
        endpoints.on_change(move |change| {
            if let Change::Deleted(e) = change {
                queue.add(ObjectKey::of(e.as_ref()));
            }
        });
    }
    services.wait_synced().await;
    pods.wait_synced().await;
    endpoints.wait_synced().await;
    // Endpoints this controller wrote for Services deleted while it was not running.
    for e in endpoints.list() {
        let ours = e
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(pods::TRIGGER_TIME_ANNOTATION));
        if ours && services.get_key(&ObjectKey::of(e.as_ref())).is_none() {
            queue.add(ObjectKey::of(e.as_ref()));
        }
    }
    controller.run(ctx.options.workers).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_mark_skip_mirror_and_headless() {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"clusterIP": "None", "selector": {"app": "web"}},
        }))
        .unwrap();
        let labels = endpoints_labels(&service);
        assert_eq!(labels[SKIP_MIRROR_LABEL], "true");
        assert_eq!(labels["app"], "web");
        assert_eq!(labels[pods::HEADLESS_LABEL], "");
    }
}
