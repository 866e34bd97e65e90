//! The EndpointSlice controller: for every Service with a selector, EndpointSlices
//! (`discovery.k8s.io/v1`) listing the selected pods, as Kubernetes'
//! `endpointslice-controller` keeps them.
//!
//! - Slices are named `<service>-<random>` (generateName), labelled
//!   `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
//!   endpointslice-controller.k8s.io` (plus the Service's own labels, and
//!   `service.kubernetes.io/headless` for headless Services), owned by the Service, and
//!   annotated with `endpoints.kubernetes.io/last-change-trigger-time`.
//! - One address type per IP family of the Service (`spec.ipFamilies`, IPv4 by default);
//!   an endpoint per pod with an IP of that family: conditions `ready` (ready and not
//!   terminating; always with `publishNotReadyAddresses`), `serving` (ready, whether
//!   terminating or not) and `terminating`, `nodeName`, `zone` (the node's
//!   `topology.kubernetes.io/zone`), `targetRef` and `hostname`.
//! - Ports are resolved per pod ([`pods::target_port`]); pods resolving to the same set
//!   share slices; at most [`MAX_ENDPOINTS_PER_SLICE`] endpoints per slice; updates keep
//!   churn low ([`plan`]).
//! - Services without a selector are left alone (their slices are someone else's);
//!   ExternalName Services and deleted Services lose their slices (the garbage collector
//!   would delete them too, by owner reference).
//!
//! The selected pods are read one at a time and reduced to [`pods::SelectedPod`]s.
//! A pod change requeues only the Services whose selectors match the pod's old or new
//! labels. Writes the informer has not yet seen are remembered ([`expectations`]) so a
//! stale cache never creates a Service's slices twice.

mod expectations;
pub mod plan;
pub mod pods;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kyb_runtime::compact::Compacted;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::events::Recorder;
use kyb_runtime::informer::{Informer, ObjectKey};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::context::Context;
use expectations::Expectations;
use plan::{Content, Group};

pub const NAME: &str = "endpointslice-controller";
/// The service account (and `system:controller:` role) the controller acts as.
const IDENTITY: &str = "endpointslice-controller";
/// kube-controller-manager's `--max-endpoints-per-slice` default.
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The index of managed slices by `namespace/service`.
const BY_SERVICE: &str = "endpointslice-service";

struct Slices {
    services: Arc<Informer<Service>>,
    pods: Arc<Informer<Pod, Compacted>>,
    nodes: Arc<Informer<Node>>,
    slices: Arc<Informer<EndpointSlice>>,
    client: kube::Client,
    recorder: Recorder,
    expectations: Expectations,
}

/// The `namespace/service` a managed slice belongs to.
fn owning_service(slice: &EndpointSlice) -> Option<ObjectKey> {
    let labels = slice.metadata.labels.as_ref()?;
    if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY) {
        return None;
    }
    let service = labels.get(SERVICE_NAME_LABEL)?;
    Some(ObjectKey::new(
        slice.metadata.namespace.clone().unwrap_or_default(),
        service.clone(),
    ))
}

/// The address types the Service's endpoints are published for.
fn address_types(service: &Service) -> Vec<String> {
    let families: Vec<String> = service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.clone())
        .unwrap_or_default();
    if families.is_empty() {
        vec!["IPv4".to_string()]
    } else {
        families
    }
}

/// The labels of the Service's slices.
fn slice_labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    labels.remove(pods::HEADLESS_LABEL);
    if pods::is_headless(service) {
        labels.insert(pods::HEADLESS_LABEL.to_string(), String::new());
    }
    labels.insert(
        SERVICE_NAME_LABEL.to_string(),
        service.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
    labels
}

/// The endpoints each address type and port set should have.
fn desired_groups(
    service: &Service,
    selected: &[pods::SelectedPod],
    nodes: &Informer<Node>,
) -> BTreeMap<String, Group> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let publish_not_ready = pods::publishes_not_ready(service);
    let service_ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let families = address_types(service);
    for pod in selected {
        if !pod.in_endpoints(true) {
            continue;
        }
        let ports: Vec<EndpointPort> = service_ports
            .iter()
            .zip(&pod.ports)
            .filter_map(|(port, number)| {
                Some(EndpointPort {
                    name: Some(port.name.clone().unwrap_or_default()),
                    port: Some((*number)?),
                    protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".into())),
                    app_protocol: port.app_protocol.clone(),
                })
            })
            .collect();
        let terminating = pod.terminating;
        let serving = publish_not_ready || pod.ready;
        let node_name = pod.node_name.clone();
        let zone = node_name
            .as_deref()
            .and_then(|n| nodes.get("", n))
            .and_then(|n| n.metadata.labels.as_ref()?.get(ZONE_LABEL).cloned());
        for family in &families {
            let Some(ip) = pod.ips.iter().find(|ip| pods::is_family(ip, family)) else {
                continue;
            };
            let endpoint = Endpoint {
                addresses: vec![ip.clone()],
                conditions: Some(EndpointConditions {
                    ready: Some(serving && !terminating),
                    serving: Some(serving),
                    terminating: Some(terminating),
                }),
                hostname: pod.hostname.clone(),
                node_name: node_name.clone(),
                zone: zone.clone(),
                target_ref: Some(pod.target_ref()),
                ..Endpoint::default()
            };
            let key = plan::group_key(family, Some(&ports));
            groups
                .entry(key)
                .or_insert_with(|| Group {
                    address_type: family.clone(),
                    ports: Some(ports.clone()),
                    endpoints: BTreeMap::new(),
                })
                .endpoints
                .insert(plan::endpoint_key(&endpoint), endpoint);
        }
    }
    groups
}

impl Slices {
    fn managed_slices(&self, key: &ObjectKey) -> Vec<Arc<EndpointSlice>> {
        self.slices.by_index(BY_SERVICE, &key.to_string())
    }

    async fn delete_all(&self, key: &ObjectKey) -> anyhow::Result<()> {
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), &key.namespace);
        for slice in self.managed_slices(key) {
            let name = slice.metadata.name.clone().unwrap_or_default();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => self.expectations.expect_gone(key, &name),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("deleting EndpointSlice {name}")),
            }
        }
        Ok(())
    }

    async fn sync(&self, key: &ObjectKey, service: &Service) -> anyhow::Result<()> {
        let selected = pods::selected_pods(&self.pods, service);
        let desired = desired_groups(service, &selected, &self.nodes);
        let existing = self.managed_slices(key);
        let primary = address_types(service).remove(0);
        let plan = plan::plan(&existing, desired, MAX_ENDPOINTS_PER_SLICE, &primary);
        let labels = slice_labels(service);
        // Slices whose labels are outdated are rewritten even when their endpoints are not.
        let mut updates = plan.update;
        for slice in &existing {
            let planned = updates
                .iter()
                .any(|(s, _)| s.metadata.name == slice.metadata.name)
                || plan
                    .delete
                    .iter()
                    .any(|s| s.metadata.name == slice.metadata.name);
            if !planned && slice.metadata.labels.as_ref() != Some(&labels) {
                let content = Content {
                    address_type: slice.address_type.clone(),
                    ports: slice.ports.clone(),
                    endpoints: slice.endpoints.clone(),
                };
                updates.push((slice.clone(), content));
            }
        }
        if plan.create.is_empty() && updates.is_empty() && plan.delete.is_empty() {
            return Ok(());
        }
        let trigger = pods::trigger_time(service, &selected);
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), &key.namespace);
        let owner = crate::ownership::controller_reference(service);
        let annotate = |meta: &mut ObjectMeta| {
            let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
            match &trigger {
                Some(t) => {
                    annotations.insert(pods::TRIGGER_TIME_ANNOTATION.to_string(), t.clone());
                }
                None => {
                    annotations.remove(pods::TRIGGER_TIME_ANNOTATION);
                }
            }
        };
        for content in plan.create {
            let mut meta = ObjectMeta {
                generate_name: Some(format!("{}-", key.name)),
                namespace: Some(key.namespace.clone()),
                labels: Some(labels.clone()),
                owner_references: Some(vec![owner.clone()]),
                ..ObjectMeta::default()
            };
            annotate(&mut meta);
            let slice = EndpointSlice {
                metadata: meta,
                address_type: content.address_type,
                endpoints: content.endpoints,
                ports: content.ports,
            };
            let created = api
                .create(&PostParams::default(), &slice)
                .await
                .context("creating an EndpointSlice")?;
            self.expectations
                .expect_present(key, &created.metadata.name.unwrap_or_default(), None);
        }
        for (slice, content) in updates {
            let mut updated = (*slice).clone();
            updated.metadata.labels = Some(labels.clone());
            updated.metadata.owner_references = Some(vec![owner.clone()]);
            annotate(&mut updated.metadata);
            updated.address_type = content.address_type;
            updated.endpoints = content.endpoints;
            updated.ports = content.ports;
            let name = updated.metadata.name.clone().unwrap_or_default();
            api.replace(&name, &PostParams::default(), &updated)
                .await
                .with_context(|| format!("updating EndpointSlice {name}"))?;
            self.expectations
                .expect_present(key, &name, slice.metadata.resource_version.clone());
        }
        for slice in plan.delete {
            let name = slice.metadata.name.clone().unwrap_or_default();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => self.expectations.expect_gone(key, &name),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e).with_context(|| format!("deleting EndpointSlice {name}")),
            }
        }
        Ok(())
    }
}

impl Reconciler for Slices {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        if !self.expectations.satisfied(key, &self.slices) {
            // Our last writes are not in the cache yet: try again shortly.
            return Ok(Action::RequeueAfter(Duration::from_millis(200)));
        }
        let Some(service) = self.services.get_key(key) else {
            self.delete_all(key).await?;
            return Ok(Action::Done);
        };
        if pods::selector(&service).is_none() {
            return Ok(Action::Done);
        }
        if pods::is_external_name(&service) || service.metadata.deletion_timestamp.is_some() {
            self.delete_all(key).await?;
            return Ok(Action::Done);
        }
        if let Err(error) = self.sync(key, &service).await {
            if !kyb_runtime::controller::is_conflict(&error) {
                self.recorder.warning(
                    service.as_ref(),
                    "FailedToUpdateEndpointSlices",
                    format!("Error updating Endpoint Slices for Service {key}: {error:#}"),
                );
            }
            return Err(error);
        }
        Ok(Action::Done)
    }
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let services = ctx.informers.get::<Service>();
    let pods = ctx.informers.compacted::<Pod>();
    let nodes = ctx.informers.get::<Node>();
    let slices = ctx.informers.get::<EndpointSlice>();
    slices.add_index(BY_SERVICE, |slice| {
        owning_service(slice)
            .map(|k| k.to_string())
            .into_iter()
            .collect()
    });
    let client = ctx.client_for(IDENTITY).await?;
    let reconciler = Arc::new(Slices {
        services: services.clone(),
        pods: pods.clone(),
        nodes: nodes.clone(),
        slices: slices.clone(),
        client,
        recorder: ctx.recorder(NAME),
        expectations: Expectations::default(),
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
    slices.on_change(move |change| {
        if let Some(key) = owning_service(change.object()) {
            queue.add(key);
        }
    });
    services.wait_synced().await;
    pods.wait_synced().await;
    nodes.wait_synced().await;
    slices.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoints_and_their_conditions() {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "a", "labels": {"team": "x"}},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http"},
                {"name": "metrics", "port": 9090}]},
        }))
        .unwrap();
        let pod = |name: &str, ip: &str, ready: bool, named: bool| {
            let ports = if named {
                json!([{"name": "http", "containerPort": 8080}])
            } else {
                json!([])
            };
            serde_json::from_value::<Pod>(json!({
                "metadata": {"name": name, "namespace": "a", "uid": name},
                "spec": {"nodeName": "n1", "hostname": name, "subdomain": "web",
                         "containers": [{"name": "c", "ports": ports}]},
                "status": {"phase": "Running", "podIP": ip, "conditions": [
                    {"type": "Ready", "status": if ready {"True"} else {"False"}}]},
            }))
            .unwrap()
        };
        let nodes = Informer::<Node>::detached();
        nodes.apply(
            serde_json::from_value(json!({"metadata": {"name": "n1",
            "labels": {"topology.kubernetes.io/zone": "z1"}}}))
            .unwrap(),
        );
        let pods = [
            pod("p1", "10.0.0.1", true, true),
            pod("p2", "10.0.0.2", false, true),
            pod("p3", "10.0.0.3", true, false),
        ];
        let selected: Vec<_> = pods
            .iter()
            .map(|p| pods::SelectedPod::of(p, &service))
            .collect();
        let groups = desired_groups(&service, &selected, &nodes);
        // p1 and p2 resolve both ports; p3 only the numeric one.
        assert_eq!(groups.len(), 2);
        let both = groups
            .values()
            .find(|g| g.ports.as_ref().unwrap().len() == 2)
            .unwrap();
        assert_eq!(both.endpoints.len(), 2);
        let p2 = &both.endpoints["10.0.0.2"];
        let c = p2.conditions.as_ref().unwrap();
        assert_eq!(
            (c.ready, c.serving, c.terminating),
            (Some(false), Some(false), Some(false))
        );
        assert_eq!(p2.zone.as_deref(), Some("z1"));
        assert_eq!(p2.hostname.as_deref(), Some("p2"));
        assert_eq!(both.ports.as_ref().unwrap()[0].port, Some(8080));
        // publishNotReadyAddresses makes every endpoint ready.
        let mut publishing = service.clone();
        publishing
            .spec
            .as_mut()
            .unwrap()
            .publish_not_ready_addresses = Some(true);
        let selected: Vec<_> = pods
            .iter()
            .map(|p| pods::SelectedPod::of(p, &publishing))
            .collect();
        let groups = desired_groups(&publishing, &selected, &nodes);
        assert!(
            groups.values().flat_map(|g| g.endpoints.values()).all(|e| e
                .conditions
                .as_ref()
                .unwrap()
                .ready
                == Some(true))
        );
        let labels = slice_labels(&service);
        assert_eq!(labels["team"], "x");
        assert_eq!(labels[SERVICE_NAME_LABEL], "web");
        assert_eq!(labels[MANAGED_BY_LABEL], MANAGED_BY);
    }
}
