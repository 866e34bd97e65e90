//! A pod's sandbox as a CRI `PodSandboxConfig` (`generatePodSandboxConfig`): metadata,
//! host name, log directory, DNS, port mappings, labels and annotations, and the Linux
//! settings — cgroup parent, security context, sysctls, resources and overhead.

use super::dns::{NodeDns, parse_resolv_conf, pod_dns};
use super::hosts::{kernel_hostname, pod_hostname_and_domain};
use super::labels::{sandbox_annotations, sandbox_labels};
use super::resources::{overhead_resources, sandbox_resources};
use super::security::sandbox_security_context;
use super::{ConfigError, PodContext, Warning};
use k8s_cri::v1::{
    LinuxPodSandboxConfig, PodSandboxConfig, PodSandboxMetadata, PortMapping, Protocol,
};
use k8s_openapi::api::core::v1::Pod;
use std::collections::{HashMap, HashSet};

/// The sandbox's configuration for its `attempt`-th creation, with the warnings (events)
/// to record on the pod. Reads the node's resolv.conf (`ctx.resolv_conf`, unless empty).
pub fn sandbox_config(
    ctx: &PodContext<'_>,
    attempt: u32,
) -> Result<(PodSandboxConfig, Vec<Warning>), ConfigError> {
    let pod = ctx.pod;
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();

    let host = if ctx.resolv_conf.as_os_str().is_empty() {
        None
    } else {
        let text = std::fs::read_to_string(ctx.resolv_conf).map_err(|e| {
            ConfigError::sandbox(format!("open {}: {e}", ctx.resolv_conf.display()))
        })?;
        Some(parse_resolv_conf(&text).map_err(|e| {
            ConfigError::sandbox(format!(
                "Encountered error while parsing resolv conf file. Error: {e}"
            ))
        })?)
    };
    let (dns_config, warnings) = pod_dns(
        pod,
        &NodeDns {
            cluster_dns: ctx.cluster_dns,
            cluster_domain: ctx.cluster_domain,
            host: host.as_ref(),
            node_ips: ctx.host_ips,
        },
    );

    let hostname = if spec.and_then(|s| s.host_network).unwrap_or(false) {
        String::new()
    } else {
        let (hostname, domain) = pod_hostname_and_domain(pod, ctx.cluster_domain)?;
        let fqdn = spec.and_then(|s| s.set_hostname_as_fqdn).unwrap_or(false);
        kernel_hostname(&hostname, &domain, fqdn)?
    };

    let security_context = sandbox_security_context(pod).map_err(ConfigError::sandbox)?;
    let sysctls: HashMap<String, String> = spec
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.sysctls.as_ref())
        .into_iter()
        .flatten()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect();

    let config = PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            attempt,
        }),
        hostname,
        log_directory: ctx.pod_log_dir.to_string_lossy().into_owned(),
        dns_config: Some(dns_config),
        port_mappings: port_mappings(pod),
        labels: sandbox_labels(pod),
        annotations: sandbox_annotations(pod),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: ctx.cgroup_parent.to_string(),
            security_context: Some(security_context),
            sysctls,
            overhead: overhead_resources(pod),
            resources: Some(sandbox_resources(pod)),
        }),
        windows: None,
    };
    Ok((config, warnings))
}

/// The port mappings of the pod's containers' ports (`MakePortMappings`): every port,
/// with or without a `hostPort`, skipping a port whose name (or, unnamed, whose family,
/// protocol, host IP and ports) repeats within its container.
pub fn port_mappings(pod: &Pod) -> Vec<PortMapping> {
    let mut mappings = Vec::new();
    for container in pod.spec.iter().flat_map(|s| &s.containers) {
        let mut names = HashSet::new();
        for port in container.ports.iter().flatten() {
            let protocol = port.protocol.as_deref().unwrap_or("TCP");
            let host_ip = port.host_ip.clone().unwrap_or_default();
            let host_port = port.host_port.unwrap_or(0);
            let name = match port.name.as_deref().filter(|n| !n.is_empty()) {
                Some(name) => name.to_string(),
                None => {
                    let family = if host_ip.is_empty() {
                        "any"
                    } else if host_ip.contains(':') {
                        "v6"
                    } else {
                        "v4"
                    };
                    format!(
                        "{family}-{protocol}-{host_ip}:{}:{host_port}",
                        port.container_port
                    )
                }
            };
            if !names.insert(name) {
                tracing::info!(container = %container.name, "port name conflicted, it is defined more than once");
                continue;
            }
            let protocol = match protocol {
                "UDP" => Protocol::Udp,
                "SCTP" => Protocol::Sctp,
                _ => Protocol::Tcp,
            };
            mappings.push(PortMapping {
                protocol: protocol as i32,
                container_port: port.container_port,
                host_port,
                host_ip,
            });
        }
    }
    mappings
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::context_for;
    use super::super::tests::labelled_pod as pod;
    use super::*;

    use serde_json::json;

    #[test]
    fn a_sandbox_config() {
        let p = pod(json!({
            "hostname": "h", "subdomain": "s", "setHostnameAsFQDN": true,
            "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"}]},
            "containers": [{"name": "c", "ports": [
                {"containerPort": 80, "hostPort": 8080},
                {"containerPort": 53, "protocol": "UDP"},
                {"containerPort": 80, "hostPort": 8080}]}]}));
        let ctx = context_for(&p);
        let (config, warnings) = sandbox_config(&ctx, 2).unwrap();
        assert!(warnings.is_empty());
        let meta = config.metadata.unwrap();
        assert_eq!(
            (
                meta.name.as_str(),
                meta.namespace.as_str(),
                meta.uid.as_str(),
                meta.attempt
            ),
            ("web", "prod", "u1", 2)
        );
        assert_eq!(config.hostname, "h.s.prod.svc.cluster.local");
        assert_eq!(config.log_directory, "/var/log/pods/prod_web_u1");
        let dns = config.dns_config.unwrap();
        assert_eq!(dns.servers, ["10.96.0.10"]);
        assert_eq!(dns.searches[0], "prod.svc.cluster.local");
        assert_eq!(config.labels["app"], "web");
        assert_eq!(config.labels["io.kubernetes.pod.uid"], "u1");
        assert_eq!(config.annotations["note"], "a \"quoted\"\nline");
        assert_eq!(config.port_mappings.len(), 2);
        assert_eq!(config.port_mappings[0].host_port, 8080);
        assert_eq!(config.port_mappings[1].protocol, Protocol::Udp as i32);
        let linux = config.linux.unwrap();
        assert_eq!(linux.cgroup_parent, "/kubepods/besteffort/podu1");
        assert_eq!(linux.sysctls["net.ipv4.tcp_syncookies"], "1");
        assert_eq!(linux.resources.unwrap().cpu_shares, 2);
        assert!(linux.overhead.is_none());
    }

    #[test]
    fn host_network_sandboxes_have_no_hostname() {
        let p = pod(json!({"hostNetwork": true, "containers": [{"name": "c"}]}));
        let (config, _) = sandbox_config(&context_for(&p), 0).unwrap();
        assert_eq!(config.hostname, "");
        // ClusterFirst on the host network: the node's resolv.conf.
        assert_eq!(config.dns_config.unwrap().servers, ["10.0.0.2"]);
    }

    #[test]
    fn errors_name_the_problem() {
        let p = pod(json!({"containers": [{"name": "c"}]}));
        let mut ctx = context_for(&p);
        let missing = std::path::Path::new("/nonexistent/resolv.conf");
        ctx.resolv_conf = missing;
        let err = sandbox_config(&ctx, 0).unwrap_err();
        assert_eq!(err.reason, "CreatePodSandboxError");
        assert!(
            err.message.starts_with("open /nonexistent/resolv.conf: "),
            "{}",
            err.message
        );
        // No resolv.conf at all is allowed.
        ctx.resolv_conf = std::path::Path::new("");
        assert!(sandbox_config(&ctx, 0).is_ok());
    }
}
