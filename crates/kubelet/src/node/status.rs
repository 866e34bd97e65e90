//! The Node's status as the kubelet's status setters write it: the conditions
//! (MemoryPressure, DiskPressure, PIDPressure, Ready, with the kubelet's reasons and
//! messages and their transition times), the addresses, the images, and whether a new
//! status differs from the last one sent (heartbeat times aside).

use super::RuntimeStatus;
use k8s_openapi::api::core::v1::{ContainerImage, NodeAddress, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::net::IpAddr;

/// Which pressure conditions hold (from the eviction manager).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pressure {
    pub memory: bool,
    pub disk: bool,
    pub pid: bool,
}

/// What the Ready condition is computed from.
#[derive(Clone, Debug, Default)]
pub struct Health {
    /// The runtime's last status, if it answered.
    pub runtime: Option<RuntimeStatus>,
    /// Whether a runtime status check has ever succeeded.
    pub runtime_checked: bool,
    /// Whether the last successful check is older than the kubelet's 30 s threshold.
    pub runtime_stale: bool,
    /// Whether the pod workers are healthy (the kubelet's PLEG health check).
    pub pods_ready: bool,
}

/// The errors that make the node NotReady, in the kubelet's order (runtime, its health
/// checks, network), each with the kubelet's wording.
pub fn ready_errors(health: &Health, capacity: &[&str]) -> Vec<String> {
    let mut errors = Vec::new();
    if !health.runtime_checked {
        errors.push("container runtime status check may not have completed yet".to_string());
    } else if health.runtime_stale {
        errors.push("container runtime is down".to_string());
    }
    if !health.pods_ready {
        errors.push("PLEG is not healthy: pleg has yet to be successful".to_string());
    }
    if let Some(status) = &health.runtime {
        if !status.runtime_ready.status {
            errors.push(format!(
                "container runtime not ready: {}",
                status.runtime_ready.describe("RuntimeReady")
            ));
        }
        if !status.network_ready.status {
            errors.push(format!(
                "container runtime network not ready: {}",
                status.network_ready.describe("NetworkReady")
            ));
        }
    }
    let missing: Vec<&str> = ["cpu", "memory", "pods", "ephemeral-storage"]
        .into_iter()
        .filter(|r| !capacity.contains(r))
        .collect();
    if !missing.is_empty() {
        errors.push(format!(
            "missing node capacity for resources: {}",
            missing.join(", ")
        ));
    }
    errors
}

/// Go's `errors.NewAggregate(errs).Error()`: one message alone, several as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// An event the kubelet records on a condition's transition (`NodeReady`,
/// `NodeHasSufficientMemory`, ...).
pub type ConditionEvent = &'static str;

/// The node's conditions after one status update: each kept from `existing` with a new
/// heartbeat, its transition time moved only when its status changes. Returns the
/// conditions (existing ones of other types kept in place, ours appended in the kubelet's
/// order when new) and the events of the transitions.
pub fn conditions(
    existing: &[NodeCondition],
    now: &Time,
    pressure: Pressure,
    not_ready: &[String],
) -> (Vec<NodeCondition>, Vec<ConditionEvent>) {
    type Side = (&'static str, &'static str, &'static str);
    let pressures: [(&str, bool, Side, Side); 3] = [
        (
            "MemoryPressure",
            pressure.memory,
            (
                "KubeletHasInsufficientMemory",
                "kubelet has insufficient memory available",
                "NodeHasInsufficientMemory",
            ),
            (
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
                "NodeHasSufficientMemory",
            ),
        ),
        (
            "DiskPressure",
            pressure.disk,
            (
                "KubeletHasDiskPressure",
                "kubelet has disk pressure",
                "NodeHasDiskPressure",
            ),
            (
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure",
                "NodeHasNoDiskPressure",
            ),
        ),
        (
            "PIDPressure",
            pressure.pid,
            (
                "KubeletHasInsufficientPID",
                "kubelet has insufficient PID available",
                "NodeHasInsufficientPID",
            ),
            (
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
                "NodeHasSufficientPID",
            ),
        ),
    ];
    let mut list = existing.to_vec();
    let mut events = Vec::new();
    let mut set = |list: &mut Vec<NodeCondition>,
                   kind: &str,
                   status: &str,
                   reason: &str,
                   message: String,
                   event: ConditionEvent| {
        let index = match list.iter().position(|c| c.type_ == kind) {
            Some(i) => i,
            None => {
                list.push(NodeCondition {
                    type_: kind.to_string(),
                    status: "Unknown".to_string(),
                    ..Default::default()
                });
                list.len() - 1
            }
        };
        let condition = &mut list[index];
        condition.last_heartbeat_time = Some(now.clone());
        if condition.status != status {
            condition.last_transition_time = Some(now.clone());
            events.push(event);
        }
        condition.status = status.to_string();
        condition.reason = Some(reason.to_string());
        condition.message = Some(message);
    };
    for (kind, on, yes, no) in pressures {
        let (reason, message, event) = if on { yes } else { no };
        let status = if on { "True" } else { "False" };
        set(&mut list, kind, status, reason, message.to_string(), event);
    }
    if not_ready.is_empty() {
        set(
            &mut list,
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status".to_string(),
            "NodeReady",
        );
    } else {
        set(
            &mut list,
            "Ready",
            "False",
            "KubeletNotReady",
            aggregate(not_ready),
            "NodeNotReady",
        );
    }
    (list, events)
}

/// The node's addresses as the kubelet reports them: the InternalIP (`--node-ip`, else
/// the first given candidate that is not a loopback, link-local or unspecified address),
/// then the Hostname. With no usable address the kubelet reports none but the host name
/// (it logs `can't get ip address of node`); so do we.
pub fn addresses(
    node_ip: Option<IpAddr>,
    candidates: &[IpAddr],
    hostname: &str,
) -> Vec<NodeAddress> {
    let usable = |ip: &&IpAddr| {
        !ip.is_loopback()
            && !ip.is_unspecified()
            && match ip {
                IpAddr::V4(v4) => !v4.is_link_local(),
                IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
            }
    };
    let ip = node_ip
        .filter(|ip| !ip.is_unspecified())
        .or_else(|| candidates.iter().find(usable).copied());
    let mut list = Vec::new();
    if let Some(ip) = ip {
        list.push(NodeAddress {
            type_: "InternalIP".to_string(),
            address: ip.to_string(),
        });
    }
    list.push(NodeAddress {
        type_: "Hostname".to_string(),
        address: hostname.to_string(),
    });
    list
}

/// The images the node reports: largest first, at most 50, each with at most 5 names.
pub fn images(mut images: Vec<ContainerImage>) -> Vec<ContainerImage> {
    images.sort_by_key(|image| std::cmp::Reverse(image.size_bytes.unwrap_or(0)));
    images.truncate(50);
    for image in &mut images {
        if let Some(names) = &mut image.names {
            names.truncate(5);
        }
    }
    images
}

/// Whether `new` differs from `old` other than in the conditions' heartbeat times (the
/// kubelet's `nodeStatusHasChanged`): a status unchanged is sent only every report period.
pub fn changed(old: &NodeStatus, new: &NodeStatus) -> bool {
    let strip = |status: &NodeStatus| {
        let mut status = status.clone();
        for c in status.conditions.iter_mut().flatten() {
            c.last_heartbeat_time = None;
        }
        status
    };
    strip(old) != strip(new)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::RuntimeCondition;
    use super::*;

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn healthy() -> Health {
        Health {
            runtime: Some(RuntimeStatus {
                runtime_ready: RuntimeCondition::ready(),
                network_ready: RuntimeCondition::ready(),
            }),
            runtime_checked: true,
            runtime_stale: false,
            pods_ready: true,
        }
    }

    const CAPACITY: [&str; 4] = ["cpu", "memory", "pods", "ephemeral-storage"];

    #[test]
    fn a_healthy_node_is_ready_with_the_kubelet_s_reasons() {
        let now = time("2026-01-01T00:00:00Z");
        let errors = ready_errors(&healthy(), &CAPACITY);
        assert!(errors.is_empty(), "{errors:?}");
        let (list, events) = conditions(&[], &now, Pressure::default(), &errors);
        let kinds: Vec<_> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            kinds,
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        let ready = &list[3];
        assert_eq!(ready.status, "True");
        assert_eq!(ready.reason.as_deref(), Some("KubeletReady"));
        assert_eq!(
            ready.message.as_deref(),
            Some("kubelet is posting ready status")
        );
        assert_eq!(
            list[0].reason.as_deref(),
            Some("KubeletHasSufficientMemory")
        );
        assert_eq!(
            list[1].message.as_deref(),
            Some("kubelet has no disk pressure")
        );
        assert_eq!(list[2].reason.as_deref(), Some("KubeletHasSufficientPID"));
        assert_eq!(
            events,
            [
                "NodeHasSufficientMemory",
                "NodeHasNoDiskPressure",
                "NodeHasSufficientPID",
                "NodeReady"
            ]
        );
    }

    #[test]
    fn transitions_move_only_on_a_status_change() {
        let t0 = time("2026-01-01T00:00:00Z");
        let t1 = time("2026-01-01T00:00:10Z");
        let (first, _) = conditions(&[], &t0, Pressure::default(), &[]);
        let (second, events) = conditions(&first, &t1, Pressure::default(), &[]);
        assert!(events.is_empty());
        assert_eq!(second[3].last_transition_time, Some(t0.clone()));
        assert_eq!(second[3].last_heartbeat_time, Some(t1.clone()));
        assert!(!changed(
            &NodeStatus {
                conditions: Some(first.clone()),
                ..Default::default()
            },
            &NodeStatus {
                conditions: Some(second.clone()),
                ..Default::default()
            }
        ));
        let pressure = Pressure {
            memory: true,
            ..Default::default()
        };
        let down = vec!["container runtime is down".to_string()];
        let (third, events) = conditions(&second, &t1, pressure, &down);
        assert_eq!(events, ["NodeHasInsufficientMemory", "NodeNotReady"]);
        assert_eq!(third[0].status, "True");
        assert_eq!(
            third[0].message.as_deref(),
            Some("kubelet has insufficient memory available")
        );
        assert_eq!(third[3].status, "False");
        assert_eq!(third[3].reason.as_deref(), Some("KubeletNotReady"));
        assert_eq!(
            third[3].message.as_deref(),
            Some("container runtime is down")
        );
        assert_eq!(third[3].last_transition_time, Some(t1));
        assert!(changed(
            &NodeStatus {
                conditions: Some(second),
                ..Default::default()
            },
            &NodeStatus {
                conditions: Some(third),
                ..Default::default()
            }
        ));
    }

    #[test]
    fn not_ready_messages_are_the_kubelet_s() {
        let health = Health {
            pods_ready: true,
            ..Default::default()
        };
        assert_eq!(
            aggregate(&ready_errors(&health, &CAPACITY)),
            "container runtime status check may not have completed yet"
        );
        let mut health = healthy();
        health.runtime.as_mut().unwrap().network_ready = RuntimeCondition {
            status: false,
            reason: "NetworkPluginNotReady".into(),
            message: "Network plugin returns error: cni plugin not initialized".into(),
        };
        health.runtime_stale = true;
        assert_eq!(
            aggregate(&ready_errors(&health, &["cpu", "memory"])),
            "[container runtime is down, container runtime network not ready: NetworkReady=false \
             reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not \
             initialized, missing node capacity for resources: pods, ephemeral-storage]"
        );
        let mut health = healthy();
        health.pods_ready = false;
        assert_eq!(
            ready_errors(&health, &CAPACITY),
            ["PLEG is not healthy: pleg has yet to be successful"]
        );
    }

    #[test]
    fn addresses_prefer_the_node_ip_then_a_routable_candidate() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let ll: IpAddr = "169.254.1.1".parse().unwrap();
        let a: IpAddr = "10.0.0.5".parse().unwrap();
        let b: IpAddr = "192.168.1.2".parse().unwrap();
        let got = addresses(Some(b), &[a], "host");
        assert_eq!(got[0].address, "192.168.1.2");
        assert_eq!(got[0].type_, "InternalIP");
        assert_eq!(got[1].type_, "Hostname");
        assert_eq!(addresses(None, &[lo, ll, a], "host")[0].address, "10.0.0.5");
        let only_host = addresses(None, &[lo], "host");
        assert_eq!(only_host.len(), 1);
        assert_eq!(only_host[0].address, "host");
    }

    #[test]
    fn images_are_largest_first_and_trimmed() {
        let image = |size: i64, names: usize| ContainerImage {
            names: Some((0..names).map(|i| format!("n{i}")).collect()),
            size_bytes: Some(size),
        };
        let got = images((0..60).map(|i| image(i, 7)).collect());
        assert_eq!(got.len(), 50);
        assert_eq!(got[0].size_bytes, Some(59));
        assert_eq!(got[0].names.as_ref().unwrap().len(), 5);
    }
}
