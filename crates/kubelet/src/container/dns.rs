//! A pod's DNS configuration (the sandbox's resolv.conf), as Kubernetes' kubelet forms it
//! (`pkg/kubelet/network/dns`): per `dnsPolicy` — `ClusterFirst` (the cluster's DNS servers,
//! the search path `<ns>.svc.<domain> svc.<domain> <domain>` then the node's, `ndots:5`;
//! the node's settings for a host-network pod, and when no cluster DNS is configured,
//! with a `MissingClusterDNS` warning), `ClusterFirstWithHostNet`, `Default` (the node's
//! resolv.conf) and `None` — then the pod's `dnsConfig` merged in, and the result cut to
//! the resolver's limits (3 servers, 32 search domains, 2048 characters).

use super::{Warning, format_pod};
use k8s_cri::v1::DnsConfig;
use k8s_openapi::api::core::v1::{Pod, PodDNSConfigOption};
use std::net::IpAddr;

/// The most name servers a resolver uses.
pub const MAX_DNS_NAMESERVERS: usize = 3;
/// The most search domains.
pub const MAX_DNS_SEARCH_PATHS: usize = 32;
/// The longest search line.
pub const MAX_DNS_SEARCH_LIST_CHARS: usize = 2048;
/// The longest search domain (a DNS subdomain).
const MAX_SEARCH_DOMAIN_LEN: usize = 253;

/// The settings of a resolv.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvConf {
    pub nameservers: Vec<String>,
    pub searches: Vec<String>,
    pub options: Vec<String>,
}

/// Reads a resolv.conf as kubelet does: `nameserver` lines accumulate, the last `search`
/// line wins (trailing dots dropped, `.` ignored), `options` merge by name.
pub fn parse_resolv_conf(text: &str) -> Result<ResolvConf, String> {
    let mut conf = ResolvConf::default();
    let mut errors = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["nameserver", server, ..] => conf.nameservers.push((*server).to_string()),
            ["nameserver"] => errors.push("nameserver list is empty "),
            ["search", domains @ ..] => {
                conf.searches = domains
                    .iter()
                    .filter(|d| **d != ".")
                    .map(|d| d.strip_suffix('.').unwrap_or(d).to_string())
                    .collect();
            }
            ["options", options @ ..] => {
                for option in options {
                    merge_option(&mut conf.options, option.to_string());
                }
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(conf)
    } else {
        Err(errors.join(", "))
    }
}

/// Sets an option (`name` or `name:value`), replacing one of the same name.
fn merge_option(options: &mut Vec<String>, option: String) {
    let name = |o: &str| o.split(':').next().unwrap_or_default().to_string();
    let key = name(&option);
    match options.iter_mut().find(|o| name(o) == key) {
        Some(existing) => *existing = option,
        None => options.push(option),
    }
}

fn omit_duplicates(items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

/// What the node provides for pods' DNS.
#[derive(Clone, Copy, Debug)]
pub struct NodeDns<'a> {
    /// `--cluster-dns`.
    pub cluster_dns: &'a [IpAddr],
    /// `--cluster-domain` (`cluster.local`).
    pub cluster_domain: &'a str,
    /// The node's resolv.conf (`--resolv-conf`); None when that is set to "".
    pub host: Option<&'a ResolvConf>,
    /// The node's addresses (for the loopback server used when there is no resolv.conf).
    pub node_ips: &'a [String],
}

/// The pod's DNS configuration, with the warnings (events) kubelet records on the pod.
pub fn pod_dns(pod: &Pod, node: &NodeDns) -> (DnsConfig, Vec<Warning>) {
    let mut warnings = Vec::new();
    let spec = pod.spec.as_ref();
    let host_network = spec.and_then(|s| s.host_network).unwrap_or(false);
    let policy = spec
        .and_then(|s| s.dns_policy.as_deref())
        .unwrap_or("ClusterFirst");
    let host = node.host.cloned().unwrap_or_default();
    let mut config = DnsConfig {
        servers: host.nameservers,
        searches: host.searches,
        options: host.options,
    };
    enum Kind {
        None,
        Cluster,
        Host,
    }
    let kind = match policy {
        "None" => Kind::None,
        "ClusterFirstWithHostNet" => Kind::Cluster,
        "ClusterFirst" if !host_network => Kind::Cluster,
        "ClusterFirst" | "Default" => Kind::Host,
        // The API server refuses other values; kubelet falls back to ClusterFirst.
        _ => Kind::Cluster,
    };
    let mut use_host = matches!(kind, Kind::Host);
    match kind {
        Kind::None => config = DnsConfig::default(),
        Kind::Cluster if !node.cluster_dns.is_empty() => {
            config.servers = node.cluster_dns.iter().map(ToString::to_string).collect();
            if !node.cluster_domain.is_empty() {
                let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                let domain = node.cluster_domain;
                let mut searches = vec![
                    format!("{namespace}.svc.{domain}"),
                    format!("svc.{domain}"),
                    domain.to_string(),
                ];
                searches.append(&mut config.searches);
                config.searches = omit_duplicates(searches);
            }
            config.options = vec!["ndots:5".to_string()];
        }
        Kind::Cluster => {
            warnings.push(Warning {
                reason: "MissingClusterDNS",
                message: format!(
                    "pod: {:?}. kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy.",
                    format_pod(pod)
                ),
            });
            use_host = true;
        }
        Kind::Host => {}
    }
    if use_host && node.host.is_none() {
        // No resolv.conf: the local machine's name server, as the resolver's own default.
        for ip in node.node_ips {
            config
                .servers
                .push(if ip.contains(':') { "::1" } else { "127.0.0.1" }.to_string());
        }
        if config.servers.is_empty() {
            config.servers.push("127.0.0.1".to_string());
        }
        config.searches = vec![".".to_string()];
    }
    if let Some(pod_config) = spec.and_then(|s| s.dns_config.as_ref()) {
        let mut servers = std::mem::take(&mut config.servers);
        servers.extend(pod_config.nameservers.iter().flatten().cloned());
        config.servers = omit_duplicates(servers);
        let mut searches = std::mem::take(&mut config.searches);
        searches.extend(pod_config.searches.iter().flatten().cloned());
        config.searches = omit_duplicates(searches);
        merge_pod_options(&mut config.options, pod_config.options.iter().flatten());
    }
    fit_limits(&mut config, &mut warnings);
    (config, warnings)
}

fn merge_pod_options<'a>(
    options: &mut Vec<String>,
    pod_options: impl Iterator<Item = &'a PodDNSConfigOption>,
) {
    for option in pod_options {
        let name = option.name.clone().unwrap_or_default();
        let text = match option.value.as_deref() {
            Some(value) if !value.is_empty() => format!("{name}:{value}"),
            _ => name,
        };
        merge_option(options, text);
    }
}

/// Cuts the servers and the search path to the resolver's limits.
fn fit_limits(config: &mut DnsConfig, warnings: &mut Vec<Warning>) {
    if config.servers.len() > MAX_DNS_NAMESERVERS {
        config.servers.truncate(MAX_DNS_NAMESERVERS);
        warnings.push(Warning {
            reason: "DNSConfigForming",
            message: format!(
                "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: {}",
                config.servers.join(" ")
            ),
        });
    }
    let mut exceeded = false;
    if config.searches.len() > MAX_DNS_SEARCH_PATHS {
        config.searches.truncate(MAX_DNS_SEARCH_PATHS);
        exceeded = true;
    }
    let before = config.searches.len();
    config.searches.retain(|s| s.len() <= MAX_SEARCH_DOMAIN_LEN);
    exceeded |= config.searches.len() != before;
    let line_len = config.searches.join(" ").len();
    if line_len > MAX_DNS_SEARCH_LIST_CHARS {
        let mut cut_len = 0;
        let mut cut = 0;
        for search in config.searches.iter().rev() {
            cut_len += search.len() + 1;
            cut += 1;
            if line_len - cut_len.min(line_len) <= MAX_DNS_SEARCH_LIST_CHARS {
                break;
            }
        }
        let keep = config.searches.len() - cut;
        config.searches.truncate(keep);
        exceeded = true;
    }
    if exceeded {
        warnings.push(Warning {
            reason: "DNSConfigForming",
            message: format!(
                "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: {}",
                config.searches.join(" ")
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::pod;
    use super::*;
    use serde_json::json;

    fn host() -> ResolvConf {
        parse_resolv_conf(
            "# comment\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch old.example\nsearch corp.example. . lab.example\noptions ndots:2 timeout:1\noptions ndots:3\n",
        )
        .unwrap()
    }

    const CLUSTER_DNS: [IpAddr; 1] = [IpAddr::V4(std::net::Ipv4Addr::new(10, 96, 0, 10))];

    fn node<'a>(host: &'a ResolvConf, cluster_dns: &'a [IpAddr]) -> NodeDns<'a> {
        NodeDns {
            cluster_dns,
            cluster_domain: "cluster.local",
            host: Some(host),
            node_ips: &[],
        }
    }

    #[test]
    fn resolv_conf_is_read_as_kubelet_reads_it() {
        let conf = host();
        assert_eq!(conf.nameservers, ["10.0.0.2", "10.0.0.3"]);
        assert_eq!(conf.searches, ["corp.example", "lab.example"]);
        assert_eq!(conf.options, ["ndots:3", "timeout:1"]);
        assert_eq!(
            parse_resolv_conf("nameserver\n").unwrap_err(),
            "nameserver list is empty "
        );
    }

    #[test]
    fn cluster_first_uses_the_cluster_dns_and_search_path() {
        let host = host();
        let (config, warnings) = pod_dns(&pod(json!({})), &node(&host, &CLUSTER_DNS));
        assert!(warnings.is_empty());
        assert_eq!(config.servers, ["10.96.0.10"]);
        assert_eq!(
            config.searches,
            [
                "prod.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "corp.example",
                "lab.example"
            ]
        );
        assert_eq!(config.options, ["ndots:5"]);
    }

    #[test]
    fn host_network_pods_use_the_node_unless_cluster_first_with_host_net() {
        let host = host();
        let node = node(&host, &CLUSTER_DNS);
        let (config, _) = pod_dns(&pod(json!({"hostNetwork": true})), &node);
        assert_eq!(config.servers, ["10.0.0.2", "10.0.0.3"]);
        assert_eq!(config.options, ["ndots:3", "timeout:1"]);
        let (config, _) = pod_dns(
            &pod(json!({"hostNetwork": true, "dnsPolicy": "ClusterFirstWithHostNet"})),
            &node,
        );
        assert_eq!(config.servers, ["10.96.0.10"]);
        let (config, _) = pod_dns(&pod(json!({"dnsPolicy": "Default"})), &node);
        assert_eq!(config.searches, ["corp.example", "lab.example"]);
    }

    #[test]
    fn without_cluster_dns_cluster_first_falls_back_to_default() {
        let host = host();
        let (config, warnings) = pod_dns(&pod(json!({})), &node(&host, &[]));
        assert_eq!(config.servers, ["10.0.0.2", "10.0.0.3"]);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].reason, "MissingClusterDNS");
        assert_eq!(
            warnings[0].message,
            "pod: \"web_prod(u1)\". kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy."
        );
        // Without a resolv.conf either: the local name server.
        let node = NodeDns {
            cluster_dns: &[],
            cluster_domain: "cluster.local",
            host: None,
            node_ips: &["10.1.1.1".to_string(), "fd00::1".to_string()],
        };
        let (config, _) = pod_dns(&pod(json!({"dnsPolicy": "Default"})), &node);
        assert_eq!(config.servers, ["127.0.0.1", "::1"]);
        assert_eq!(config.searches, ["."]);
    }

    #[test]
    fn none_takes_the_pod_dns_config_only_and_merges() {
        let host = host();
        let node = node(&host, &CLUSTER_DNS);
        let dns_config = json!({"nameservers": ["1.1.1.1"], "searches": ["a.example"],
            "options": [{"name": "ndots", "value": "1"}, {"name": "edns0"}]});
        let (config, _) = pod_dns(
            &pod(json!({"dnsPolicy": "None", "dnsConfig": dns_config})),
            &node,
        );
        assert_eq!(config.servers, ["1.1.1.1"]);
        assert_eq!(config.searches, ["a.example"]);
        assert_eq!(config.options, ["ndots:1", "edns0"]);
        // Merged into ClusterFirst: pod options override, duplicates dropped.
        let dns_config = json!({"nameservers": ["10.96.0.10", "1.1.1.1"],
            "searches": ["cluster.local", "a.example"],
            "options": [{"name": "ndots", "value": "2"}]});
        let (config, _) = pod_dns(&pod(json!({"dnsConfig": dns_config})), &node);
        assert_eq!(config.servers, ["10.96.0.10", "1.1.1.1"]);
        assert_eq!(config.searches.last().unwrap(), "a.example");
        assert_eq!(config.searches.len(), 6);
        assert_eq!(config.options, ["ndots:2"]);
    }

    #[test]
    fn limits_cut_servers_and_search_paths() {
        let host = ResolvConf::default();
        let node = node(&host, &CLUSTER_DNS);
        let searches: Vec<String> = (0..40).map(|i| format!("s{i}.example")).collect();
        let dns_config = json!({"nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3"],
            "searches": searches});
        let (config, warnings) = pod_dns(&pod(json!({"dnsConfig": dns_config})), &node);
        assert_eq!(config.servers, ["10.96.0.10", "1.1.1.1", "2.2.2.2"]);
        assert_eq!(config.searches.len(), MAX_DNS_SEARCH_PATHS);
        assert_eq!(warnings.len(), 2);
        assert_eq!(
            warnings[0].message,
            "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.1.1.1 2.2.2.2"
        );
        assert!(warnings[1].message.starts_with(
            "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: prod.svc.cluster.local svc.cluster.local"
        ));
        // Long domains are dropped and the line is cut to 2048 characters.
        let long: Vec<String> = (0..12).map(|i| format!("{i}{}", "a".repeat(200))).collect();
        let too_long = "b".repeat(254);
        let mut all = long.clone();
        all.push(too_long);
        let (config, _) = pod_dns(
            &pod(json!({"dnsPolicy": "None", "dnsConfig": {"searches": all}})),
            &node,
        );
        assert_eq!(config.searches, long[..10]);
        assert!(config.searches.join(" ").len() <= MAX_DNS_SEARCH_LIST_CHARS);
    }
}
