//! A Service's `core/v1` Endpoints subsets from its pods, as Kubernetes' endpoints
//! controller builds them: each selected pod's address (with `nodeName`, `targetRef` and
//! `hostname`) under every Service port it resolves, ready pods in `addresses` and the
//! others in `notReadyAddresses` (all in `addresses` with `publishNotReadyAddresses`);
//! headless Services without ports get the addresses with no ports. Subsets are then
//! repacked — addresses with the same ports share a subset — and sorted, and truncated
//! to [`MAX_ADDRESSES`] (ready addresses first). The pods come as [`SelectedPod`]s, what
//! their addresses are made of.

use crate::endpointslice::pods::{self, SelectedPod};
use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Service};
use std::collections::BTreeMap;

/// Addresses an Endpoints object holds at most.
pub const MAX_ADDRESSES: usize = 1000;

/// Sortable identity of a port.
fn port_key(port: &EndpointPort) -> (String, i32, String) {
    (
        port.name.clone().unwrap_or_default(),
        port.port,
        port.protocol.clone().unwrap_or_default(),
    )
}

/// The subsets of the Service over its selected pods.
pub fn build(service: &Service, selected: &[SelectedPod]) -> Vec<EndpointSubset> {
    let publish_not_ready = pods::publishes_not_ready(service);
    let family = service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.as_ref())
        .and_then(|f| f.first().cloned())
        .unwrap_or_else(|| "IPv4".to_string());
    let service_ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    // Per address (by IP and pod UID): its ports and readiness.
    type Entry = (EndpointAddress, bool, Vec<EndpointPort>);
    let mut entries: BTreeMap<(String, String), Entry> = BTreeMap::new();
    for pod in selected {
        if !pod.in_endpoints(publish_not_ready) {
            continue;
        }
        let Some(ip) = pod
            .ips
            .iter()
            .find(|ip| pods::is_family(ip, &family))
            .cloned()
        else {
            continue;
        };
        let address = EndpointAddress {
            ip: ip.clone(),
            hostname: pod.hostname.clone(),
            node_name: pod.node_name.clone(),
            target_ref: Some(pod.target_ref()),
        };
        let ready = publish_not_ready || pod.ready;
        let mut ports: Vec<EndpointPort> = service_ports
            .iter()
            .zip(&pod.ports)
            .filter_map(|(port, number)| {
                Some(EndpointPort {
                    name: port.name.clone().filter(|n| !n.is_empty()),
                    port: (*number)?,
                    protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".into())),
                    app_protocol: port.app_protocol.clone(),
                })
            })
            .collect();
        if ports.is_empty() && !(service_ports.is_empty() && pods::is_headless(service)) {
            continue;
        }
        ports.sort_by_key(port_key);
        let uid = pod.uid.clone().unwrap_or_default();
        entries.insert((ip, uid), (address, ready, ports));
    }
    // Repack: one subset per port set.
    let mut by_ports: BTreeMap<Vec<(String, i32, String)>, EndpointSubset> = BTreeMap::new();
    for (_, (address, ready, ports)) in entries {
        let subset = by_ports
            .entry(ports.iter().map(port_key).collect())
            .or_insert_with(|| EndpointSubset {
                ports: (!ports.is_empty()).then(|| ports.clone()),
                ..EndpointSubset::default()
            });
        let list = if ready {
            subset.addresses.get_or_insert_with(Vec::new)
        } else {
            subset.not_ready_addresses.get_or_insert_with(Vec::new)
        };
        list.push(address);
    }
    by_ports.into_values().collect()
}

/// Cuts `subsets` down to [`MAX_ADDRESSES`] addresses, ready ones first; whether it did.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let count = |l: &Option<Vec<EndpointAddress>>| l.as_ref().map_or(0, Vec::len);
    let total: usize = subsets
        .iter()
        .map(|s| count(&s.addresses) + count(&s.not_ready_addresses))
        .sum();
    if total <= MAX_ADDRESSES {
        return false;
    }
    let mut room = MAX_ADDRESSES;
    for subset in subsets.iter_mut() {
        if let Some(list) = subset.addresses.as_mut() {
            list.truncate(room);
            room -= list.len();
        }
    }
    for subset in subsets.iter_mut() {
        if let Some(list) = subset.not_ready_addresses.as_mut() {
            list.truncate(room);
            room -= list.len();
        }
    }
    for subset in subsets.iter_mut() {
        if subset.addresses.as_ref().is_some_and(Vec::is_empty) {
            subset.addresses = None;
        }
        if subset
            .not_ready_addresses
            .as_ref()
            .is_some_and(Vec::is_empty)
        {
            subset.not_ready_addresses = None;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod(name: &str, ip: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "a", "uid": name},
            "spec": {"nodeName": "n1", "containers": [{"name": "c",
                     "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": ip, "conditions": [
                {"type": "Ready", "status": if ready {"True"} else {"False"}}]},
        }))
        .unwrap()
    }

    fn selected(service: &Service, pods: &[Pod]) -> Vec<SelectedPod> {
        pods.iter().map(|p| SelectedPod::of(p, service)).collect()
    }

    fn service(publish: bool) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"selector": {"app": "web"}, "publishNotReadyAddresses": publish,
                     "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        }))
        .unwrap()
    }

    #[test]
    fn ready_and_not_ready_addresses() {
        let pods = [pod("p1", "10.0.0.1", true), pod("p2", "10.0.0.2", false)];
        let subsets = build(&service(false), &selected(&service(false), &pods));
        assert_eq!(subsets.len(), 1);
        let s = &subsets[0];
        assert_eq!(s.addresses.as_ref().unwrap()[0].ip, "10.0.0.1");
        assert_eq!(s.not_ready_addresses.as_ref().unwrap()[0].ip, "10.0.0.2");
        assert_eq!(s.ports.as_ref().unwrap()[0].port, 8080);
        assert_eq!(s.ports.as_ref().unwrap()[0].name.as_deref(), Some("http"));
        let subsets = build(&service(true), &selected(&service(true), &pods));
        assert_eq!(subsets[0].addresses.as_ref().unwrap().len(), 2);
        assert!(subsets[0].not_ready_addresses.is_none());
    }

    #[test]
    fn truncation_keeps_ready_addresses_first() {
        let pods: Vec<_> = (0..1100)
            .map(|i| {
                pod(
                    &format!("p{i}"),
                    &format!("10.0.{}.{}", i / 250, i % 250),
                    i >= 100,
                )
            })
            .collect();
        let mut subsets = build(&service(false), &selected(&service(false), &pods));
        assert!(truncate(&mut subsets));
        let s = &subsets[0];
        assert_eq!(s.addresses.as_ref().unwrap().len(), 1000);
        assert!(s.not_ready_addresses.is_none());
        assert!(!truncate(&mut subsets));
    }
}
