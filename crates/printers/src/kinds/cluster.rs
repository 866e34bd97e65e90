//! Cluster-level objects: Namespace, Node, Lease, PriorityClass, RuntimeClass and
//! APIService.

use super::{AGE, NAME, Printer, boolean, int, integer, name, owned, string, wide};
use crate::fields::{text, text_or};
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{at, bool_at, int_at, items, map_at, opt_str, str_at};
use serde_json::Value;
use std::collections::BTreeSet;

pub(crate) static NAMESPACE: Printer = Printer {
    columns: &[
        NAME,
        string("Status", "Active, or Terminating while being deleted."),
        AGE,
    ],
    cells: namespace_cells,
};

fn namespace_cells(namespace: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(namespace),
        text(str_at(namespace, &["status", "phase"])),
        age(namespace, now),
    ]
}

pub(crate) static NODE: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Status",
            "Whether the node is ready, and whether scheduling is disabled.",
        ),
        string("Roles", "The roles given by the node's role labels."),
        AGE,
        string("Version", "The kubelet version the node runs."),
        wide(string("Internal-IP", "The node's first internal address.")),
        wide(string("External-IP", "The node's first external address.")),
        wide(string("OS-Image", "The operating system the node reports.")),
        wide(string(
            "Kernel-Version",
            "The kernel version the node reports.",
        )),
        wide(string(
            "Container-Runtime",
            "The container runtime and its version.",
        )),
    ],
    cells: node_cells,
};

const ROLE_LABEL_PREFIX: &str = "node-role.kubernetes.io/";
const ROLE_LABEL: &str = "kubernetes.io/role";

fn node_status(node: &Value) -> String {
    // The last Ready condition listed wins, as a map keyed by type would keep it.
    let ready = items(node, &["status", "conditions"])
        .iter()
        .rfind(|c| str_at(c, &["type"]) == "Ready")
        .map(|c| {
            if str_at(c, &["status"]) == "True" {
                "Ready"
            } else {
                "NotReady"
            }
        })
        .unwrap_or("Unknown");
    if bool_at(node, &["spec", "unschedulable"]) {
        format!("{ready},SchedulingDisabled")
    } else {
        ready.to_owned()
    }
}

fn node_roles(node: &Value) -> String {
    let mut roles = BTreeSet::new();
    for (key, value) in map_at(node, &["metadata", "labels"]).into_iter().flatten() {
        if let Some(role) = key.strip_prefix(ROLE_LABEL_PREFIX) {
            if !role.is_empty() {
                roles.insert(role);
            }
        } else if key == ROLE_LABEL
            && let Some(role) = value.as_str().filter(|r| !r.is_empty())
        {
            roles.insert(role);
        }
    }
    if roles.is_empty() {
        return "<none>".to_owned();
    }
    roles.into_iter().collect::<Vec<_>>().join(",")
}

fn node_address<'a>(node: &'a Value, address_type: &str) -> &'a str {
    items(node, &["status", "addresses"])
        .iter()
        .find(|a| str_at(a, &["type"]) == address_type)
        .map(|a| str_at(a, &["address"]))
        .unwrap_or("<none>")
}

fn node_cells(node: &Value, now: Timestamp) -> Vec<Value> {
    let info = |field: &str| str_at(node, &["status", "nodeInfo", field]);
    vec![
        name(node),
        owned(node_status(node)),
        owned(node_roles(node)),
        age(node, now),
        text(info("kubeletVersion")),
        text(node_address(node, "InternalIP")),
        text(node_address(node, "ExternalIP")),
        text_or(info("osImage"), "<unknown>"),
        text_or(info("kernelVersion"), "<unknown>"),
        text_or(info("containerRuntimeVersion"), "<unknown>"),
    ]
}

pub(crate) static LEASE: Printer = Printer {
    columns: &[
        NAME,
        string("Holder", "The identity currently holding the lease."),
        AGE,
    ],
    cells: lease_cells,
};

fn lease_cells(lease: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(lease),
        text(str_at(lease, &["spec", "holderIdentity"])),
        age(lease, now),
    ]
}

pub(crate) static PRIORITY_CLASS: Printer = Printer {
    columns: &[
        NAME,
        integer("Value", "The priority given to pods of this class."),
        boolean(
            "Global-Default",
            "Whether pods without a class get this one.",
        ),
        AGE,
        string(
            "PreemptionPolicy",
            "Whether pods of this class may preempt others.",
        ),
    ],
    cells: priority_class_cells,
};

fn priority_class_cells(class: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(class),
        int(int_at(class, &["value"])),
        Value::Bool(bool_at(class, &["globalDefault"])),
        age(class, now),
        text(str_at(class, &["preemptionPolicy"])),
    ]
}

pub(crate) static RUNTIME_CLASS: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Handler",
            "The container runtime handler pods of this class use.",
        ),
        AGE,
    ],
    cells: runtime_class_cells,
};

fn runtime_class_cells(class: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(class),
        text(str_at(class, &["handler"])),
        age(class, now),
    ]
}

pub(crate) static API_SERVICE: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Service",
            "The service serving this API, or Local when built in.",
        ),
        string(
            "Available",
            "Whether the API is available, with the reason when it is not.",
        ),
        AGE,
    ],
    cells: api_service_cells,
};

fn api_service_cells(service: &Value, now: Timestamp) -> Vec<Value> {
    let backend = match at(service, &["spec", "service"]) {
        Some(s) => format!("{}/{}", str_at(s, &["namespace"]), str_at(s, &["name"])),
        None => "Local".to_owned(),
    };
    let available = items(service, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Available")
        .map(|c| {
            let status = str_at(c, &["status"]);
            match opt_str(c, &["reason"]).filter(|r| !r.is_empty()) {
                Some(reason) if status != "True" => format!("{status} ({reason})"),
                _ => status.to_owned(),
            }
        })
        .unwrap_or_else(|| "Unknown".to_owned());
    vec![
        name(service),
        owned(backend),
        owned(available),
        age(service, now),
    ]
}

pub(crate) static COMPONENT_STATUS: Printer = Printer {
    columns: &[
        NAME,
        string("Status", "Status of the component conditions"),
        string("Message", "Message of the component conditions"),
        string("Error", "Error of the component conditions"),
    ],
    cells: component_status_cells,
};

fn component_status_cells(component: &Value, _now: Timestamp) -> Vec<Value> {
    let healthy = kyb_apimachinery::json::items(component, &["conditions"])
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Healthy"));
    let (status, message, error) = match healthy {
        Some(condition) => {
            let field = |key: &str| condition.get(key).and_then(Value::as_str).unwrap_or("");
            let status = if field("status") == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            };
            (status, field("message"), field("error"))
        }
        None => ("Unknown", "", ""),
    };
    vec![name(component), text(status), text(message), text(error)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn namespace_row() {
        let n = json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(86400 * 40)},
                       "status": {"phase": "Active"}});
        assert_eq!(
            row(namespace_cells(&n, now())),
            json!(["kube-system", "Active", "40d"])
        );
    }

    fn node() -> Value {
        json!({
            "metadata": {"name": "node-1", "creationTimestamp": ago(86400 * 3),
                         "labels": {"node-role.kubernetes.io/control-plane": "",
                                    "node-role.kubernetes.io/": "", "kubernetes.io/role": "etcd",
                                    "kubernetes.io/hostname": "node-1"}},
            "spec": {},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"},
                               {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "node-1"},
                              {"type": "InternalIP", "address": "192.168.1.10"}],
                "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
                             "kernelVersion": "6.1.0-18-amd64", "containerRuntimeVersion": "containerd://1.6.20"}
            }
        })
    }

    #[test]
    fn node_row() {
        assert_eq!(
            row(node_cells(&node(), now())),
            json!([
                "node-1",
                "Ready",
                "control-plane,etcd",
                "3d",
                "v1.33.1",
                "192.168.1.10",
                "<none>",
                "Debian GNU/Linux 12 (bookworm)",
                "6.1.0-18-amd64",
                "containerd://1.6.20"
            ])
        );
    }

    #[test]
    fn node_statuses() {
        let mut n = node();
        n["spec"]["unschedulable"] = json!(true);
        assert_eq!(node_status(&n), "Ready,SchedulingDisabled");
        n["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown"}]);
        assert_eq!(node_status(&n), "NotReady,SchedulingDisabled");
        assert_eq!(node_status(&json!({})), "Unknown");
        assert_eq!(
            row(node_cells(&json!({}), now())),
            json!([
                "",
                "Unknown",
                "<none>",
                "<unknown>",
                "",
                "<none>",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>"
            ])
        );
    }

    #[test]
    fn lease_priority_and_runtime_class_rows() {
        let l = json!({"metadata": {"name": "kube-scheduler", "creationTimestamp": ago(7200)},
                       "spec": {"holderIdentity": "host_1234"}});
        assert_eq!(
            row(lease_cells(&l, now())),
            json!(["kube-scheduler", "host_1234", "120m"])
        );
        let p = json!({"metadata": {"name": "system-node-critical", "creationTimestamp": ago(60)},
                       "value": 2000001000, "preemptionPolicy": "PreemptLowerPriority"});
        assert_eq!(
            row(priority_class_cells(&p, now())),
            json!([
                "system-node-critical",
                2000001000,
                false,
                "60s",
                "PreemptLowerPriority"
            ])
        );
        let r = json!({"metadata": {"name": "gvisor", "creationTimestamp": ago(1)}, "handler": "runsc"});
        assert_eq!(
            row(runtime_class_cells(&r, now())),
            json!(["gvisor", "runsc", "1s"])
        );
    }

    #[test]
    fn api_service_rows() {
        let local = json!({"metadata": {"name": "v1.apps", "creationTimestamp": ago(600)},
                           "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(
            row(api_service_cells(&local, now())),
            json!(["v1.apps", "Local", "True", "10m"])
        );
        let remote = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
                            "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                            "status": {"conditions": [{"type": "Available", "status": "False",
                                                       "reason": "MissingEndpoints"}]}});
        assert_eq!(
            row(api_service_cells(&remote, now())),
            json!([
                "v1beta1.metrics.k8s.io",
                "kube-system/metrics-server",
                "False (MissingEndpoints)",
                "<unknown>"
            ])
        );
        assert_eq!(api_service_cells(&json!({}), now())[2], json!("Unknown"));
    }
}
