//! `PodInfo`: a pod as the scheduler works with it — the object, and what plugins ask of it
//! over and over, computed once: its requests, priority, host ports, and its pod
//! (anti-)affinity terms with their selectors parsed.

use super::resources::{self, Resources};
use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm};
use kyb_apimachinery::labels::Selector;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A required or preferred pod (anti-)affinity term, ready to match.
#[derive(Clone, Debug)]
pub struct AffinityTerm {
    /// The namespaces the term selects pods in (its own, when the term names none and has
    /// no namespace selector).
    pub namespaces: BTreeSet<String>,
    /// Selects namespaces by label (`None`: not set; an empty selector: all namespaces).
    pub namespace_selector: Option<Selector>,
    pub selector: Selector,
    pub topology_key: String,
    /// For preferred terms, the weight; 0 for required ones.
    pub weight: i32,
}

impl AffinityTerm {
    fn from_term(term: &PodAffinityTerm, own_namespace: &str, weight: i32) -> AffinityTerm {
        let selector = term
            .label_selector
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .map(|s| Selector::from_label_selector(&s).unwrap_or_else(|_| nothing()))
            // A term without a label selector matches no pods.
            .unwrap_or_else(nothing);
        let namespace_selector = term
            .namespace_selector
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .map(|s| Selector::from_label_selector(&s).unwrap_or_else(|_| nothing()));
        let mut namespaces: BTreeSet<String> = term.namespaces.iter().flatten().cloned().collect();
        if namespaces.is_empty() && namespace_selector.is_none() {
            namespaces.insert(own_namespace.to_string());
        }
        AffinityTerm {
            namespaces,
            namespace_selector,
            selector,
            topology_key: term.topology_key.clone(),
            weight,
        }
    }

    /// Whether `pod` (in a namespace with `namespace_labels`) is one the term selects.
    pub fn matches(
        &self,
        pod: &PodInfo,
        namespace_labels: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> bool {
        let in_namespace = self.namespaces.contains(&pod.namespace)
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(namespace_labels));
        in_namespace && self.selector.matches_pairs(|key| pod.label(key))
    }
}

/// A selector that matches nothing (for terms Kubernetes treats as matching no pods).
fn nothing() -> Selector {
    Selector::nothing()
}

/// A container port bound on the node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub protocol: String,
    pub ip: String,
    pub port: i32,
}

/// A pod and what the scheduler computes from it once.
#[derive(Debug)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    pub name: String,
    pub namespace: String,
    pub uid: String,
    /// `namespace/name`.
    pub key: String,
    pub requests: Resources,
    pub non_zero_requests: Resources,
    pub priority: i32,
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<AffinityTerm>,
    pub preferred_anti_affinity: Vec<AffinityTerm>,
    /// The host ports of the containers and sidecars.
    pub host_ports: Vec<HostPort>,
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> PodInfo {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let spec = pod.spec.as_ref();
        let affinity = spec.and_then(|s| s.affinity.as_ref());
        let required = |terms: Option<&Vec<PodAffinityTerm>>| -> Vec<AffinityTerm> {
            terms
                .into_iter()
                .flatten()
                .map(|t| AffinityTerm::from_term(t, &namespace, 0))
                .collect()
        };
        let pod_affinity = affinity.and_then(|a| a.pod_affinity.as_ref());
        let pod_anti_affinity = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let preferred =
            |terms: Option<&Vec<k8s_openapi::api::core::v1::WeightedPodAffinityTerm>>| {
                terms
                    .into_iter()
                    .flatten()
                    .map(|t| AffinityTerm::from_term(&t.pod_affinity_term, &namespace, t.weight))
                    .collect()
            };
        // Host ports are held by the containers and by the sidecars (restartable init
        // containers), which run for the pod's whole life; ordinary init containers are
        // not counted.
        let host_ports = spec
            .map(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .filter(|c| c.restart_policy.as_deref() == Some("Always"))
                    .chain(s.containers.iter())
                    .flat_map(|c| c.ports.iter().flatten())
                    .filter(|p| p.host_port.is_some_and(|h| h > 0))
                    .map(|p| HostPort {
                        protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                        ip: p
                            .host_ip
                            .clone()
                            .filter(|ip| !ip.is_empty())
                            .unwrap_or_else(|| "0.0.0.0".into()),
                        port: p.host_port.unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        PodInfo {
            key: format!("{namespace}/{name}"),
            requests: resources::pod_requests(&pod),
            non_zero_requests: resources::pod_non_zero_requests(&pod),
            priority: spec.and_then(|s| s.priority).unwrap_or(0),
            required_affinity: required(pod_affinity.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            required_anti_affinity: required(pod_anti_affinity.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            preferred_affinity: preferred(pod_affinity.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            preferred_anti_affinity: preferred(pod_anti_affinity.and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })),
            host_ports,
            name,
            namespace,
            uid,
            pod,
        }
    }

    /// A label of the pod.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    }

    /// The node the pod is bound (or nominated by binding) to.
    pub fn node_name(&self) -> Option<&str> {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty())
    }

    /// `status.nominatedNodeName`: where preemption made room for the pod.
    pub fn nominated_node_name(&self) -> Option<&str> {
        self.pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .filter(|n| !n.is_empty())
    }

    /// `spec.schedulerName` (`default-scheduler` when unset).
    pub fn scheduler_name(&self) -> &str {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .filter(|n| !n.is_empty())
            .unwrap_or(super::DEFAULT_SCHEDULER_NAME)
    }

    pub fn has_affinity(&self) -> bool {
        !self.required_affinity.is_empty()
            || !self.required_anti_affinity.is_empty()
            || !self.preferred_affinity.is_empty()
            || !self.preferred_anti_affinity.is_empty()
    }

    pub fn has_required_anti_affinity(&self) -> bool {
        !self.required_anti_affinity.is_empty()
    }

    /// Whether the pod is being deleted.
    pub fn terminating(&self) -> bool {
        self.pod.metadata.deletion_timestamp.is_some()
    }

    /// `spec.preemptionPolicy` is `Never`.
    pub fn never_preempts(&self) -> bool {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.preemption_policy.as_deref())
            == Some("Never")
    }
}
