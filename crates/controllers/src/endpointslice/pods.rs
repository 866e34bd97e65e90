//! What a Service's endpoints are made of, shared by the EndpointSlice and Endpoints
//! controllers: which pods a Service selects, whether a pod belongs in its endpoints
//! (it has an IP and is not finished), its readiness, the ports a Service port resolves
//! to on it (a named `targetPort` looks up the pod's container port of that name), its
//! DNS hostname, and the `endpoints.kubernetes.io/last-change-trigger-time` to record.
//!
//! The selected pods are read one at a time ([`Informer::visit_namespace`]) and each is
//! reduced at once to a [`SelectedPod`] — what an endpoint is made of — so a Service over
//! thousands of pods never holds thousands of whole pods.

use k8s_openapi::api::core::v1::{Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kyb_component_helpers::pod_readiness::is_ready;
use kyb_runtime::compact::Compacted;
use kyb_runtime::informer::{Change, Informer, ObjectKey};
use std::collections::BTreeMap;

/// The annotation recording when the change that led to the last write happened.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// The label marking headless Services' endpoints.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// The Service's selector when it selects pods (a Service without one, or with an empty
/// one, has its endpoints managed by someone else).
pub fn selector(service: &Service) -> Option<&BTreeMap<String, String>> {
    service
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .filter(|s| !s.is_empty())
}

/// Whether the Service is of type ExternalName (no endpoints at all).
pub fn is_external_name(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ExternalName")
}

/// Whether the Service is headless (`clusterIP: None`).
pub fn is_headless(service: &Service) -> bool {
    service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

/// Whether not-ready pods count as ready (`publishNotReadyAddresses`).
pub fn publishes_not_ready(service: &Service) -> bool {
    service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false)
}

/// What the endpoint controllers keep of a pod a Service selects: what its endpoints are
/// made of, resolved for that Service (a few hundred bytes, where the pod is kilobytes).
#[derive(Clone, Debug, PartialEq)]
pub struct SelectedPod {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub uid: Option<String>,
    /// Whether it belongs in endpoints counting terminating pods in
    /// ([`should_be_in_endpoints`] with `include_terminating`).
    pub eligible: bool,
    /// Being deleted.
    pub terminating: bool,
    /// Its `Ready` condition is true.
    pub ready: bool,
    /// [`pod_ips`].
    pub ips: Vec<String>,
    pub node_name: Option<String>,
    /// Its DNS hostname within the Service ([`hostname`]).
    pub hostname: Option<String>,
    /// The port each of the Service's ports (in `spec.ports` order) reaches on it
    /// ([`target_port`]).
    pub ports: Vec<Option<i32>>,
    /// Its last readiness transition, else its creation (see [`trigger_time`]).
    pub changed: Option<jiff::Timestamp>,
}

impl SelectedPod {
    pub fn of(pod: &Pod, service: &Service) -> SelectedPod {
        let ports = service
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .into_iter()
            .flatten()
            .map(|port| target_port(pod, port))
            .collect();
        let changed = kyb_component_helpers::pod_readiness::ready_condition(pod)
            .and_then(|c| c.last_transition_time.as_ref())
            .or(pod.metadata.creation_timestamp.as_ref())
            .map(|t| t.0);
        SelectedPod {
            name: pod.metadata.name.clone(),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            eligible: should_be_in_endpoints(pod, true),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            ready: is_ready(pod),
            ips: pod_ips(pod),
            node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            hostname: hostname(pod, service),
            ports,
            changed,
        }
    }

    /// Whether the pod belongs in endpoints ([`should_be_in_endpoints`]).
    pub fn in_endpoints(&self, include_terminating: bool) -> bool {
        self.eligible && (include_terminating || !self.terminating)
    }

    /// The `targetRef` of its endpoints.
    pub fn target_ref(&self) -> k8s_openapi::api::core::v1::ObjectReference {
        k8s_openapi::api::core::v1::ObjectReference {
            kind: Some("Pod".into()),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            ..Default::default()
        }
    }
}

/// The pods of the Service's namespace its selector matches, read one at a time and
/// reduced to what their endpoints need.
pub fn selected_pods(pods: &Informer<Pod, Compacted>, service: &Service) -> Vec<SelectedPod> {
    let Some(selector) = selector(service) else {
        return vec![];
    };
    let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
    let mut selected = vec![];
    pods.visit_namespace(namespace, |pod| {
        if crate::selector::map_matches(selector, pod.metadata.labels.as_ref()) {
            selected.push(SelectedPod::of(&pod, service));
        }
    });
    selected
}

/// The keys of the Services of `services` whose selectors match the pod (before or after
/// a change): what a pod change requeues.
pub fn services_selecting(
    services: &Informer<Service>,
    namespace: &str,
    labels: &[Option<&BTreeMap<String, String>>],
) -> Vec<ObjectKey> {
    services
        .list_namespace(namespace)
        .iter()
        .filter(|s| {
            selector(s)
                .is_some_and(|sel| labels.iter().any(|l| crate::selector::map_matches(sel, *l)))
        })
        .map(|s| ObjectKey::of(s.as_ref()))
        .collect()
}

/// The Services to look at again after a pod change: those selecting its old or new
/// labels — none when nothing endpoints are made of (labels, status, deletion, node,
/// hostname, subdomain) changed.
pub fn services_for_change(
    services: &Informer<Service>,
    change: &Change<'_, Pod>,
) -> Vec<ObjectKey> {
    let (old, new) = match change {
        Change::Added(p) | Change::Deleted(p) => (None, p),
        Change::Updated { old, new } => (Some(old), new),
    };
    if let Some(old) = old
        && old.metadata.labels == new.metadata.labels
        && old.status == new.status
        && old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
        && placement(old) == placement(new)
    {
        return vec![];
    }
    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    let labels = [
        old.and_then(|o| o.metadata.labels.as_ref()),
        new.metadata.labels.as_ref(),
    ];
    services_selecting(services, namespace, &labels)
}

/// Where a pod runs and the names it answers to.
fn placement(pod: &Pod) -> Option<(&Option<String>, &Option<String>, &Option<String>)> {
    pod.spec
        .as_ref()
        .map(|s| (&s.node_name, &s.hostname, &s.subdomain))
}

/// Whether the pod belongs in endpoints: it has an IP, and has not finished for good
/// (terminal for its restart policy). Terminating pods are included only when
/// `include_terminating` (EndpointSlices always; Endpoints when publishing not-ready).
pub fn should_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    let has_ip = status.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty())
        || status.pod_ips.as_ref().is_some_and(|ips| !ips.is_empty());
    if !has_ip {
        return false;
    }
    if !include_terminating && pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let phase = status.phase.as_deref().unwrap_or_default();
    let restart = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always");
    match restart {
        "Never" => phase != "Failed" && phase != "Succeeded",
        "OnFailure" => phase != "Succeeded",
        _ => true,
    }
}

/// The pod's IPs (`status.podIPs`, else `status.podIP`).
pub fn pod_ips(pod: &Pod) -> Vec<String> {
    let Some(status) = &pod.status else {
        return vec![];
    };
    let mut ips: Vec<String> = status
        .pod_ips
        .iter()
        .flatten()
        .map(|ip| ip.ip.clone())
        .filter(|ip| !ip.is_empty())
        .collect();
    if ips.is_empty()
        && let Some(ip) = status.pod_ip.as_ref().filter(|ip| !ip.is_empty())
    {
        ips.push(ip.clone());
    }
    ips
}

/// Whether `ip` is of the address family `family` (`IPv4` or `IPv6`).
pub fn is_family(ip: &str, family: &str) -> bool {
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => family == "IPv4",
        Ok(std::net::IpAddr::V6(_)) => family == "IPv6",
        Err(_) => false,
    }
}

/// The port a Service port reaches on the pod: its `targetPort` number (the service port
/// when unset), or the pod's container port of that name; `None` when the name is not
/// found on the pod.
pub fn target_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(0)) => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            let protocol = port.protocol.as_deref().unwrap_or("TCP");
            let spec = pod.spec.as_ref()?;
            kyb_component_helpers::pod_readiness::lasting_containers(spec)
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port)
        }
    }
}

/// The pod's DNS hostname within the Service: its `hostname`, when its `subdomain` is
/// the Service's name.
pub fn hostname(pod: &Pod, service: &Service) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let hostname = spec.hostname.as_deref().filter(|h| !h.is_empty())?;
    let same_namespace = pod.metadata.namespace == service.metadata.namespace;
    (same_namespace && spec.subdomain.as_deref() == service.metadata.name.as_deref())
        .then(|| hostname.to_string())
}

/// The trigger time to record: the latest of the Service's creation and the selected pods'
/// last readiness transitions (creations for pods without one), in RFC 3339.
pub fn trigger_time(service: &Service, pods: &[SelectedPod]) -> Option<String> {
    let service_time = service.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let pod_times = pods.iter().filter_map(|pod| pod.changed);
    service_time
        .into_iter()
        .chain(pod_times)
        .max()
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn target_ports_by_number_and_name() {
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "ports": [{"name": "http", "containerPort": 8080},
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}}));
        let port = |v| serde_json::from_value::<ServicePort>(v).unwrap();
        assert_eq!(target_port(&p, &port(json!({"port": 80}))), Some(80));
        assert_eq!(
            target_port(&p, &port(json!({"port": 80, "targetPort": 9000}))),
            Some(9000)
        );
        assert_eq!(
            target_port(&p, &port(json!({"port": 80, "targetPort": "http"}))),
            Some(8080)
        );
        assert_eq!(
            target_port(&p, &port(json!({"port": 80, "targetPort": "dns"}))),
            None,
            "the protocol must match"
        );
        assert_eq!(
            target_port(
                &p,
                &port(json!({"port": 53, "targetPort": "dns", "protocol": "UDP"}))
            ),
            Some(53)
        );
        assert_eq!(
            target_port(&p, &port(json!({"port": 80, "targetPort": "nope"}))),
            None
        );
    }

    #[test]
    fn which_pods_belong() {
        let base = json!({"metadata": {"name": "p"}, "spec": {"containers": []},
                          "status": {"phase": "Running", "podIP": "10.0.0.1"}});
        assert!(should_be_in_endpoints(&pod(base.clone()), false));
        let mut no_ip = base.clone();
        no_ip["status"]["podIP"] = json!(null);
        assert!(!should_be_in_endpoints(&pod(no_ip), true));
        let mut done = base.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert!(
            should_be_in_endpoints(&pod(done.clone()), true),
            "Always restarts"
        );
        done["spec"]["restartPolicy"] = json!("OnFailure");
        assert!(!should_be_in_endpoints(&pod(done), true));
        let mut deleting = base;
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!should_be_in_endpoints(&pod(deleting.clone()), false));
        assert!(should_be_in_endpoints(&pod(deleting), true));
    }

    #[test]
    fn a_selected_pod_keeps_what_its_endpoints_need() {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http"},
                {"name": "other", "port": 81, "targetPort": "nope"},
                {"name": "metrics", "port": 9090}]},
        }))
        .unwrap();
        let p = pod(json!({
            "metadata": {"name": "p", "namespace": "a", "uid": "u1",
                         "creationTimestamp": "2026-01-01T00:00:00Z",
                         "deletionTimestamp": "2026-01-01T00:05:00Z"},
            "spec": {"nodeName": "n1", "hostname": "h", "subdomain": "web",
                     "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:01:00Z"}]},
        }));
        let s = SelectedPod::of(&p, &service);
        assert_eq!(s.ports, [Some(8080), None, Some(9090)]);
        assert_eq!(s.ips, ["10.0.0.1", "fd00::1"]);
        assert_eq!(s.hostname.as_deref(), Some("h"));
        assert_eq!(s.node_name.as_deref(), Some("n1"));
        assert!(s.ready && s.terminating && s.eligible);
        assert!(s.in_endpoints(true) && !s.in_endpoints(false));
        assert_eq!(s.target_ref().uid.as_deref(), Some("u1"));
        assert_eq!(s.changed, Some("2026-01-01T00:01:00Z".parse().unwrap()));
        // Without a readiness transition, the creation counts.
        let mut young = p.clone();
        young.status = None;
        let s = SelectedPod::of(&young, &service);
        assert_eq!(s.changed, Some("2026-01-01T00:00:00Z".parse().unwrap()));
        assert!(!s.eligible && !s.ready && s.ips.is_empty());
        assert_eq!(
            trigger_time(&service, &[s]).as_deref(),
            Some("2026-01-01T00:00:00Z")
        );
    }

    #[test]
    fn hostnames_need_the_service_as_subdomain() {
        let svc: Service =
            serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "a"}})).unwrap();
        let p = |sub: &str| {
            pod(json!({"metadata": {"name": "p", "namespace": "a"},
                       "spec": {"containers": [], "hostname": "h", "subdomain": sub}}))
        };
        assert_eq!(hostname(&p("web"), &svc).as_deref(), Some("h"));
        assert_eq!(hostname(&p("db"), &svc), None);
    }
}
