//! A pod's host name and domain, and the `/etc/hosts` file the agent writes for each pod
//! and mounts into its containers (`k8s-managed-etc-hosts`), as Kubernetes' kubelet does.

use super::ConfigError;
use k8s_openapi::api::core::v1::{HostAlias, Pod};
use kyb_apimachinery::names::dns1123_label_errors;

/// The longest host name (the kernel's 64-byte field with its terminating NUL).
const HOSTNAME_MAX_LEN: usize = 63;
/// The longest FQDN used as a host name.
const FQDN_MAX_LEN: usize = 64;

/// The header of a managed hosts file.
pub const MANAGED_HOSTS_HEADER: &str = "# Kubernetes-managed hosts file.\n";
/// The header of a host-network pod's hosts file (the node's, copied).
pub const MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK: &str =
    "# Kubernetes-managed hosts file (host network).\n";

/// The pod's host name (`spec.hostname`, else its name, cut to 63 characters) and domain
/// (`<subdomain>.<namespace>.svc.<cluster domain>` when `spec.subdomain` is set, else
/// empty).
pub fn pod_hostname_and_domain(
    pod: &Pod,
    cluster_domain: &str,
) -> Result<(String, String), ConfigError> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let mut hostname = name.to_string();
    if let Some(requested) = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
    {
        let errors = dns1123_label_errors(requested);
        if !errors.is_empty() {
            return Err(ConfigError::sandbox(format!(
                "pod Hostname {requested:?} is not a valid DNS label: {}",
                errors.join(";")
            )));
        }
        hostname = requested.to_string();
    }
    if hostname.len() > HOSTNAME_MAX_LEN {
        let original = hostname.clone();
        hostname.truncate(HOSTNAME_MAX_LEN);
        tracing::warn!(pod = name, truncated = %hostname, "hostname for pod was too long, truncated it");
        let trimmed = hostname.trim_end_matches(['-', '.']).len();
        hostname.truncate(trimmed);
        if hostname.is_empty() {
            return Err(ConfigError::sandbox(format!(
                "hostname for pod {name:?} was invalid: {original:?}"
            )));
        }
    }
    let mut domain = String::new();
    if let Some(subdomain) = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
    {
        let errors = dns1123_label_errors(subdomain);
        if !errors.is_empty() {
            return Err(ConfigError::sandbox(format!(
                "pod Subdomain {subdomain:?} is not a valid DNS label: {}",
                errors.join(";")
            )));
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        domain = format!("{subdomain}.{namespace}.svc.{cluster_domain}");
    }
    Ok((hostname, domain))
}

/// The host name the sandbox's kernel gets: the FQDN when `setHostnameAsFQDN` and the pod
/// has a domain (at most 64 characters), else the short name.
pub fn kernel_hostname(
    hostname: &str,
    domain: &str,
    set_hostname_as_fqdn: bool,
) -> Result<String, ConfigError> {
    if domain.is_empty() || !set_hostname_as_fqdn {
        return Ok(hostname.to_string());
    }
    let fqdn = format!("{hostname}.{domain}");
    if fqdn.len() > FQDN_MAX_LEN {
        return Err(ConfigError::sandbox(format!(
            "failed to construct FQDN from pod hostname and cluster domain, FQDN {fqdn} is too long ({FQDN_MAX_LEN} characters is the max, {} characters requested)",
            fqdn.len()
        )));
    }
    Ok(fqdn)
}

/// The content of the pod's `/etc/hosts`: for a pod on the host network, the node's hosts
/// file (`node_hosts`) under its own header; otherwise the managed file — localhost
/// entries, the pod's IPs with its host name (and FQDN) — and in both cases the pod's
/// `hostAliases`.
pub fn hosts_file(
    pod: &Pod,
    pod_ips: &[String],
    cluster_domain: &str,
    node_hosts: &str,
) -> Result<String, ConfigError> {
    let spec = pod.spec.as_ref();
    let aliases = spec
        .and_then(|s| s.host_aliases.as_deref())
        .unwrap_or_default();
    let mut out = String::new();
    if spec.and_then(|s| s.host_network).unwrap_or(false) {
        out.push_str(MANAGED_HOSTS_HEADER_WITH_HOST_NETWORK);
        out.push_str(node_hosts);
    } else {
        let (hostname, domain) = pod_hostname_and_domain(pod, cluster_domain)?;
        out.push_str(MANAGED_HOSTS_HEADER);
        out.push_str("127.0.0.1\tlocalhost\n");
        out.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
        out.push_str("fe00::0\tip6-localnet\n");
        out.push_str("fe00::0\tip6-mcastprefix\n");
        out.push_str("fe00::1\tip6-allnodes\n");
        out.push_str("fe00::2\tip6-allrouters\n");
        for ip in pod_ips {
            if domain.is_empty() {
                out.push_str(&format!("{ip}\t{hostname}\n"));
            } else {
                out.push_str(&format!("{ip}\t{hostname}.{domain}\t{hostname}\n"));
            }
        }
    }
    out.push_str(&host_alias_entries(aliases));
    Ok(out)
}

fn host_alias_entries(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# Entries added by HostAliases.\n");
    for alias in aliases {
        out.push_str(&format!(
            "{}\t{}\n",
            alias.ip,
            alias.hostnames.as_deref().unwrap_or_default().join("\t")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::pod_from;
    use super::*;

    fn pod(spec: serde_json::Value) -> Pod {
        pod_from(
            json!({"name": "web-0", "namespace": "prod", "uid": "u1"}),
            spec,
        )
    }
    use serde_json::json;

    #[test]
    fn a_managed_hosts_file() {
        let text = hosts_file(
            &pod(json!({"hostAliases": [{"ip": "10.9.9.9", "hostnames": ["a", "b"]}]})),
            &["10.244.0.5".into()],
            "cluster.local",
            "",
        )
        .unwrap();
        assert_eq!(
            text,
            "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.244.0.5\tweb-0\n\n# Entries added by HostAliases.\n10.9.9.9\ta\tb\n"
        );
        let text = hosts_file(
            &pod(json!({"hostname": "db", "subdomain": "dbs"})),
            &["10.244.0.5".into(), "fd00::5".into()],
            "cluster.local",
            "",
        )
        .unwrap();
        assert!(text.ends_with(
            "10.244.0.5\tdb.dbs.prod.svc.cluster.local\tdb\nfd00::5\tdb.dbs.prod.svc.cluster.local\tdb\n"
        ));
    }

    #[test]
    fn a_host_network_pod_gets_the_nodes_file() {
        let text = hosts_file(
            &pod(json!({"hostNetwork": true})),
            &["10.0.0.1".into()],
            "cluster.local",
            "127.0.0.1 localhost\n",
        )
        .unwrap();
        assert_eq!(
            text,
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n"
        );
    }

    #[test]
    fn hostnames_are_checked_cut_and_made_fqdn() {
        let err = pod_hostname_and_domain(&pod(json!({"hostname": "Bad_Name"})), "cluster.local")
            .unwrap_err();
        assert!(
            err.message
                .starts_with("pod Hostname \"Bad_Name\" is not a valid DNS label: "),
            "{}",
            err.message
        );
        let mut long = pod(json!({}));
        long.metadata.name = Some(format!("{}-b", "a".repeat(62)));
        let (hostname, _) = pod_hostname_and_domain(&long, "cluster.local").unwrap();
        assert_eq!(hostname, "a".repeat(62));
        assert_eq!(
            kernel_hostname("db", "dbs.prod.svc.cluster.local", true).unwrap(),
            "db.dbs.prod.svc.cluster.local"
        );
        assert_eq!(
            kernel_hostname("db", "dbs.prod.svc.cluster.local", false).unwrap(),
            "db"
        );
        let err = kernel_hostname(&"a".repeat(40), "dbs.prod.svc.cluster.local", true).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "failed to construct FQDN from pod hostname and cluster domain, FQDN {}.dbs.prod.svc.cluster.local is too long (64 characters is the max, 67 characters requested)",
                "a".repeat(40)
            )
        );
    }
}
