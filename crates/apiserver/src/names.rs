//! The names the API server's serving certificate must cover: loopback, this host's
//! addresses and name, the `kubernetes` service's DNS names and ClusterIP.

use crate::server::Config;
use kyb_pki::Sans;
use std::net::{IpAddr, Ipv4Addr};

/// The serving certificate's names for a server run with `config`.
pub fn serving_names(config: &Config) -> Sans {
    let mut ips: Vec<IpAddr> = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    if !config.bind_address.is_unspecified() {
        ips.push(config.bind_address);
    }
    ips.push(IpAddr::V4(crate::server::advertise_address(config)));
    ips.push(IpAddr::V4(crate::rest::first_service_ip(
        config.service_cidr,
    )));
    ips.extend(local_ipv4().into_iter().map(IpAddr::V4));
    ips.sort();
    ips.dedup();
    let mut dns: Vec<String> = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    if let Some(host) = hostname().filter(|h| h.parse::<IpAddr>().is_err()) {
        dns.push(host);
    }
    dns.sort();
    dns.dedup();
    Sans { dns, ips }
}

/// This host's IPv4 addresses, from the kernel's local routing table
/// (`/proc/net/fib_trie`: an address line followed by `/32 host LOCAL`).
fn local_ipv4() -> Vec<Ipv4Addr> {
    let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut previous: Option<Ipv4Addr> = None;
    for line in trie.lines() {
        let line = line.trim();
        if let Some(ip) = previous.filter(|ip| line.contains("/32 host LOCAL") && !ip.is_loopback())
        {
            found.push(ip);
        }
        previous = line.strip_prefix("|-- ").and_then(|ip| ip.parse().ok());
    }
    found.sort();
    found.dedup();
    found
}

fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_loopback_and_the_kubernetes_service() {
        let names = serving_names(&Config::default());
        assert!(names.ips.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert!(names.ips.contains(&IpAddr::V4(Ipv4Addr::new(10, 43, 0, 1))));
        assert!(
            names
                .dns
                .iter()
                .any(|d| d == "kubernetes.default.svc.cluster.local")
        );
    }
}
