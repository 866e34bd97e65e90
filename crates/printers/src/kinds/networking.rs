//! Services and traffic: Service, Endpoints, EndpointSlice, Ingress, IngressClass and
//! NetworkPolicy.

use super::{AGE, NAME, Printer, name, owned, string, wide};
use crate::fields::text;
use crate::selectors::{format_label_selector, format_labels};
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{at, int_at, items, map_at, opt_int, opt_str, str_at};
use serde_json::Value;
use std::collections::BTreeSet;

/// Lists of addresses are cut after this many entries ("… + N more...").
const LIST_LIMIT: usize = 3;

pub(crate) static SERVICE: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Type",
            "How the service is exposed: ClusterIP, NodePort, LoadBalancer, ExternalName.",
        ),
        string("Cluster-IP", "The service's virtual IP inside the cluster."),
        string(
            "External-IP",
            "Addresses reaching the service from outside the cluster.",
        ),
        string(
            "Port(s)",
            "The service's ports, with node ports, and protocols.",
        ),
        AGE,
        wide(string(
            "Selector",
            "The labels of the pods behind the service.",
        )),
    ],
    cells: service_cells,
};

/// The distinct load-balancer addresses (IP, else hostname), sorted.
fn load_balancer_addresses(ingress: &[Value]) -> BTreeSet<&str> {
    ingress
        .iter()
        .filter_map(|entry| {
            let ip = str_at(entry, &["ip"]);
            let hostname = str_at(entry, &["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !hostname.is_empty() {
                Some(hostname)
            } else {
                None
            }
        })
        .collect()
}

fn join<'a>(parts: impl IntoIterator<Item = &'a str>, separator: &str) -> String {
    let mut out = String::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(part);
    }
    out
}

fn external_ip(service: &Value) -> String {
    let external: Vec<&str> = items(service, &["spec", "externalIPs"])
        .iter()
        .map(|ip| ip.as_str().unwrap_or(""))
        .collect();
    match str_at(service, &["spec", "type"]) {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".to_owned()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let balancer =
                load_balancer_addresses(items(service, &["status", "loadBalancer", "ingress"]));
            if balancer.is_empty() && external.is_empty() {
                "<pending>".to_owned()
            } else {
                join(balancer.into_iter().chain(external), ",")
            }
        }
        "ExternalName" => str_at(service, &["spec", "externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    }
}

fn service_ports(service: &Value) -> String {
    let mut out = String::new();
    for (i, port) in items(service, &["spec", "ports"]).iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let number = int_at(port, &["port"]);
        let node_port = int_at(port, &["nodePort"]);
        let protocol = str_at(port, &["protocol"]);
        if node_port > 0 {
            out.push_str(&format!("{number}:{node_port}/{protocol}"));
        } else {
            out.push_str(&format!("{number}/{protocol}"));
        }
    }
    if out.is_empty() {
        "<none>".to_owned()
    } else {
        out
    }
}

fn service_cells(service: &Value, now: Timestamp) -> Vec<Value> {
    let cluster_ip = items(service, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .or_else(|| opt_str(service, &["spec", "clusterIP"]).filter(|ip| !ip.is_empty()))
        .unwrap_or("<none>");
    vec![
        name(service),
        text(str_at(service, &["spec", "type"])),
        text(cluster_ip),
        owned(external_ip(service)),
        owned(service_ports(service)),
        age(service, now),
        owned(format_labels(map_at(service, &["spec", "selector"]))),
    ]
}

pub(crate) static ENDPOINTS: Printer = Printer {
    columns: &[
        NAME,
        string("Endpoints", "The first few address:port pairs."),
        AGE,
    ],
    cells: endpoints_cells,
};

/// `host:port`, bracketing IPv6 hosts.
fn host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn format_endpoints(endpoints: &Value) -> String {
    let subsets = items(endpoints, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut total = 0usize;
    for subset in subsets {
        let addresses = items(subset, &["addresses"]);
        let ports = items(subset, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports: list bare IPs.
            total += addresses.len();
            for address in addresses {
                if list.len() == LIST_LIMIT {
                    more = true;
                    break;
                }
                list.push(str_at(address, &["ip"]).to_owned());
            }
            continue;
        }
        for port in ports {
            total += addresses.len();
            for address in addresses {
                if list.len() == LIST_LIMIT {
                    more = true;
                    break;
                }
                list.push(host_port(str_at(address, &["ip"]), int_at(port, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", total.saturating_sub(LIST_LIMIT))
    } else {
        joined
    }
}

fn endpoints_cells(endpoints: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(endpoints),
        owned(format_endpoints(endpoints)),
        age(endpoints, now),
    ]
}

pub(crate) static ENDPOINT_SLICE: Printer = Printer {
    columns: &[
        NAME,
        string(
            "AddressType",
            "The family of the addresses: IPv4, IPv6 or FQDN.",
        ),
        string("Ports", "The first few ports."),
        string("Endpoints", "The first few addresses."),
        AGE,
    ],
    cells: endpoint_slice_cells,
};

/// The first few entries joined by commas, then "+ N more..."; `<unset>` when empty.
fn list_with_more(list: &[String], more: bool, total: usize) -> String {
    let joined = list.join(",");
    if more {
        return format!("{joined} + {} more...", total.saturating_sub(LIST_LIMIT));
    }
    if joined.is_empty() {
        "<unset>".to_owned()
    } else {
        joined
    }
}

fn endpoint_slice_cells(slice: &Value, now: Timestamp) -> Vec<Value> {
    let ports = items(slice, &["ports"]);
    let port_list: Vec<String> = ports
        .iter()
        .take(LIST_LIMIT)
        .map(|port| match opt_int(port, &["port"]) {
            Some(n) => n.to_string(),
            None => opt_str(port, &["name"]).unwrap_or("*").to_owned(),
        })
        .collect();
    let mut addresses: Vec<String> = Vec::new();
    let mut total = 0usize;
    for endpoint in items(slice, &["endpoints"]) {
        for address in items(endpoint, &["addresses"]) {
            if addresses.len() < LIST_LIMIT {
                addresses.push(address.as_str().unwrap_or("").to_owned());
            }
            total += 1;
        }
    }
    vec![
        name(slice),
        text(str_at(slice, &["addressType"])),
        owned(list_with_more(
            &port_list,
            ports.len() > LIST_LIMIT,
            ports.len(),
        )),
        owned(list_with_more(&addresses, total > LIST_LIMIT, total)),
        age(slice, now),
    ]
}

pub(crate) static INGRESS: Printer = Printer {
    columns: &[
        NAME,
        string("Class", "The IngressClass handling this ingress."),
        string("Hosts", "The host names the rules match."),
        string(
            "Address",
            "Where the load balancer for this ingress listens.",
        ),
        string("Ports", "The ports served: 80, and 443 with TLS."),
        AGE,
    ],
    cells: ingress_cells,
};

fn ingress_hosts(ingress: &Value) -> String {
    let rules = items(ingress, &["spec", "rules"]);
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == LIST_LIMIT {
            more = true;
        }
        let host = str_at(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_owned();
    }
    let joined = list.join(",");
    if more {
        format!(
            "{joined} + {} more...",
            rules.len().saturating_sub(LIST_LIMIT)
        )
    } else {
        joined
    }
}

fn ingress_cells(ingress: &Value, now: Timestamp) -> Vec<Value> {
    let address = join(
        load_balancer_addresses(items(ingress, &["status", "loadBalancer", "ingress"])),
        ",",
    );
    let ports = if items(ingress, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(ingress),
        text(opt_str(ingress, &["spec", "ingressClassName"]).unwrap_or("<none>")),
        owned(ingress_hosts(ingress)),
        owned(address),
        text(ports),
        age(ingress, now),
    ]
}

pub(crate) static INGRESS_CLASS: Printer = Printer {
    columns: &[
        NAME,
        string("Controller", "The controller implementing this class."),
        string(
            "Parameters",
            "The resource holding the class's extra configuration.",
        ),
        AGE,
    ],
    cells: ingress_class_cells,
};

fn ingress_class_cells(class: &Value, now: Timestamp) -> Vec<Value> {
    let parameters = match at(class, &["spec", "parameters"]) {
        Some(p) => {
            let mut out = str_at(p, &["kind"]).to_owned();
            if let Some(group) = opt_str(p, &["apiGroup"]) {
                out.push('.');
                out.push_str(group);
            }
            out.push('/');
            out.push_str(str_at(p, &["name"]));
            out
        }
        None => "<none>".to_owned(),
    };
    vec![
        name(class),
        text(str_at(class, &["spec", "controller"])),
        owned(parameters),
        age(class, now),
    ]
}

pub(crate) static NETWORK_POLICY: Printer = Printer {
    columns: &[
        NAME,
        string("Pod-Selector", "The pods the policy applies to."),
        AGE,
    ],
    cells: network_policy_cells,
};

fn network_policy_cells(policy: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(policy),
        owned(format_label_selector(at(policy, &["spec", "podSelector"]))),
        age(policy, now),
    ]
}

pub(crate) static SERVICE_CIDR: Printer = Printer {
    columns: &[
        NAME,
        string("CIDRs", "The ranges cluster IPs are allocated from."),
        AGE,
    ],
    cells: service_cidr_cells,
};

fn service_cidr_cells(cidr: &Value, now: Timestamp) -> Vec<Value> {
    let cidrs: Vec<&str> = items(cidr, &["spec", "cidrs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    vec![name(cidr), owned(cidrs.join(",")), age(cidr, now)]
}

/// Kubernetes defines two columns but computes a third cell (the age), which clients
/// drop; only the two defined ones are sent here.
pub(crate) static IP_ADDRESS: Printer = Printer {
    columns: &[
        NAME,
        string("ParentRef", "The object this IP address is allocated to."),
    ],
    cells: ip_address_cells,
};

fn ip_address_cells(address: &Value, _now: Timestamp) -> Vec<Value> {
    let parent = at(address, &["spec", "parentRef"]);
    let reference = match parent {
        Some(parent) if parent.is_object() => {
            let group = str_at(parent, &["group"]);
            let resource = str_at(parent, &["resource"]);
            let mut text = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let namespace = str_at(parent, &["namespace"]);
            if !namespace.is_empty() {
                text.push('/');
                text.push_str(namespace);
            }
            text.push('/');
            text.push_str(str_at(parent, &["name"]));
            text
        }
        _ => "<none>".to_string(),
    };
    vec![name(address), owned(reference)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    fn service(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "web", "creationTimestamp": ago(45)}, "spec": spec, "status": status})
    }

    #[test]
    fn cluster_ip_service_row() {
        let s = service(
            json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                   "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
                   "selector": {"k8s-app": "kube-dns"}}),
            json!({}),
        );
        assert_eq!(
            row(service_cells(&s, now())),
            json!([
                "web",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "53/UDP,53/TCP",
                "45s",
                "k8s-app=kube-dns"
            ])
        );
    }

    #[test]
    fn node_port_and_headless_services() {
        let s = service(
            json!({"type": "NodePort", "clusterIP": "10.0.0.1", "externalIPs": ["1.2.3.4", "5.6.7.8"],
                   "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}),
            json!({}),
        );
        assert_eq!(
            row(service_cells(&s, now())),
            json!([
                "web",
                "NodePort",
                "10.0.0.1",
                "1.2.3.4,5.6.7.8",
                "80:30080/TCP",
                "45s",
                "<none>"
            ])
        );
        let headless = service(
            json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}),
            json!({}),
        );
        let cells = service_cells(&headless, now());
        assert_eq!(cells[2], json!("None"));
        assert_eq!(cells[4], json!("<none>"));
    }

    #[test]
    fn load_balancer_external_ips() {
        let pending = service(
            json!({"type": "LoadBalancer", "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
            json!({}),
        );
        assert_eq!(external_ip(&pending), "<pending>");
        let ready = service(
            json!({"type": "LoadBalancer", "externalIPs": ["9.9.9.9"]}),
            json!({"loadBalancer": {"ingress": [
                {"ip": "203.0.113.7"}, {"hostname": "a-very-long-balancer-name.example.com"}, {"ip": "203.0.113.7"}]}}),
        );
        // Not shortened: the server always prints the wide form.
        assert_eq!(
            external_ip(&ready),
            "203.0.113.7,a-very-long-balancer-name.example.com,9.9.9.9"
        );
    }

    #[test]
    fn external_name_and_unknown_types() {
        let s = service(
            json!({"type": "ExternalName", "externalName": "db.example.com"}),
            json!({}),
        );
        assert_eq!(
            row(service_cells(&s, now())),
            json!([
                "web",
                "ExternalName",
                "<none>",
                "db.example.com",
                "<none>",
                "45s",
                "<none>"
            ])
        );
        assert_eq!(external_ip(&json!({})), "<unknown>");
    }

    #[test]
    fn endpoints_rows() {
        let e = json!({"metadata": {"name": "web", "creationTimestamp": ago(10)},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                         "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}]});
        assert_eq!(
            row(endpoints_cells(&e, now())),
            json!([
                "web",
                "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
                "10s"
            ])
        );
        let headless = json!({"subsets": [{"addresses": [{"ip": "fd00::1"}, {"ip": "fd00::2"}]}]});
        assert_eq!(format_endpoints(&headless), "fd00::1,fd00::2");
        let v6 =
            json!({"subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 8080}]}]});
        assert_eq!(format_endpoints(&v6), "[fd00::1]:8080");
        assert_eq!(format_endpoints(&json!({"subsets": []})), "<none>");
        assert_eq!(format_endpoints(&json!({"subsets": [{}]})), "");
    }

    #[test]
    fn endpoint_slice_row() {
        let s = json!({"metadata": {"name": "web-abc12", "creationTimestamp": ago(10)},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "metrics"}, {}, {"port": 9}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]});
        assert_eq!(
            row(endpoint_slice_cells(&s, now())),
            json!([
                "web-abc12",
                "IPv4",
                "80,metrics,* + 1 more...",
                "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
                "10s"
            ])
        );
        let empty = json!({"addressType": "IPv6"});
        assert_eq!(
            row(endpoint_slice_cells(&empty, now())),
            json!(["", "IPv6", "<unset>", "<unset>", "<unknown>"])
        );
    }

    #[test]
    fn ingress_row() {
        let i = json!({"metadata": {"name": "site", "creationTimestamp": ago(90)},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                     "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}});
        assert_eq!(
            row(ingress_cells(&i, now())),
            json!([
                "site",
                "nginx",
                "a.example.com,b.example.com",
                "192.0.2.1",
                "80, 443",
                "90s"
            ])
        );
        let bare = json!({"spec": {"rules": [{}]}});
        assert_eq!(
            row(ingress_cells(&bare, now())),
            json!(["", "<none>", "*", "", "80", "<unknown>"])
        );
    }

    #[test]
    fn ingress_hosts_are_cut_after_three() {
        let rules: Vec<Value> = (1..=5).map(|i| json!({"host": format!("h{i}")})).collect();
        assert_eq!(
            ingress_hosts(&json!({"spec": {"rules": rules}})),
            "h1,h2,h3 + 2 more..."
        );
    }

    #[test]
    fn ingress_class_row() {
        let c = json!({"metadata": {"name": "nginx", "creationTimestamp": ago(86400 * 10)},
            "spec": {"controller": "k8s.io/ingress-nginx",
                     "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}});
        assert_eq!(
            row(ingress_class_cells(&c, now())),
            json!([
                "nginx",
                "k8s.io/ingress-nginx",
                "IngressParameters.k8s.example.com/external-lb",
                "10d"
            ])
        );
        let plain = json!({"spec": {"controller": "x", "parameters": {"kind": "ConfigMap", "name": "cfg"}}});
        assert_eq!(
            ingress_class_cells(&plain, now())[2],
            json!("ConfigMap/cfg")
        );
        assert_eq!(ingress_class_cells(&json!({}), now())[2], json!("<none>"));
    }

    #[test]
    fn network_policy_row() {
        let p = json!({"metadata": {"name": "deny", "creationTimestamp": ago(5)}, "spec": {"podSelector": {}}});
        assert_eq!(
            row(network_policy_cells(&p, now())),
            json!(["deny", "<none>", "5s"])
        );
        let p = json!({"metadata": {"name": "db"}, "spec": {"podSelector": {"matchLabels": {"role": "db"}}}});
        assert_eq!(network_policy_cells(&p, now())[1], json!("role=db"));
    }
}
