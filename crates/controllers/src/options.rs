//! kube-controller-manager's settings that change what controllers do, with Kubernetes'
//! defaults (the `kyb controller-manager` flags of the same names set them).

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Options {
    /// Which controllers run: names, `*` for the default set, `-name` to leave one out
    /// (`--controllers`).
    pub controllers: Vec<String>,
    /// How long a node may go without renewing its Lease before it is marked unhealthy
    /// (`--node-monitor-grace-period`).
    pub node_monitor_grace_period: Duration,
    /// How often node health is checked (`--node-monitor-period`).
    pub node_monitor_period: Duration,
    /// Nodes per second whose pods are evicted in a healthy zone
    /// (`--node-eviction-rate`).
    pub node_eviction_rate: f64,
    /// Nodes per second in a partially disrupted zone (`--secondary-node-eviction-rate`).
    pub secondary_node_eviction_rate: f64,
    /// Zones smaller than this are not rate-limited with the secondary rate
    /// (`--large-cluster-size-threshold`).
    pub large_cluster_size_threshold: u32,
    /// The share of unhealthy nodes at which a zone counts as partially disrupted
    /// (`--unhealthy-zone-threshold`).
    pub unhealthy_zone_threshold: f64,
    /// Whether node IPAM gives nodes pod CIDRs (`--allocate-node-cidrs`).
    pub allocate_node_cidrs: bool,
    /// The cluster's pod network (`--cluster-cidr`).
    pub cluster_cidr: String,
    /// The prefix length of each node's pod CIDR (`--node-cidr-mask-size`).
    pub node_cidr_mask_size: u8,
    /// The cluster CA published as `kube-root-ca.crt` in every namespace (PEM).
    pub root_ca_pem: Option<String>,
    /// Workers per controller (`--concurrent-*-syncs`; one value for all).
    pub workers: usize,
    /// How often HPAs are evaluated (`--horizontal-pod-autoscaler-sync-period`).
    pub hpa_sync_period: Duration,
    /// The relative difference between usage and target under which an HPA does not
    /// scale (`--horizontal-pod-autoscaler-tolerance`).
    pub hpa_tolerance: f64,
    /// How long after a pod starts its CPU samples may be skipped as not yet
    /// representative (`--horizontal-pod-autoscaler-cpu-initialization-period`).
    pub hpa_cpu_initialization_period: Duration,
    /// How long after a pod starts a not-ready pod is taken as still initializing
    /// (`--horizontal-pod-autoscaler-initial-readiness-delay`).
    pub hpa_initial_readiness_delay: Duration,
    /// How far back an HPA looks for higher recommendations before scaling down
    /// (`--horizontal-pod-autoscaler-downscale-stabilization`).
    pub hpa_downscale_stabilization: Duration,
    /// How often each controller re-reconciles everything it owns, level-driven, even
    /// without changes (`--min-resync-period`).
    pub resync_period: Duration,
    /// How often the PersistentVolume binder re-examines every volume and claim
    /// (`--pvclaimbinder-sync-period`).
    pub pvclaimbinder_sync_period: Duration,
    /// How often every ResourceQuota's usage is recalculated in full
    /// (`--resource-quota-sync-period`).
    pub resource_quota_sync_period: Duration,
    /// The CA certificate that signs certificate signing requests
    /// (`--cluster-signing-cert-file`); without it and the key nothing is signed.
    pub cluster_signing_cert_file: Option<std::path::PathBuf>,
    /// Its private key (`--cluster-signing-key-file`).
    pub cluster_signing_key_file: Option<std::path::PathBuf>,
    /// The longest lifetime of a signed certificate (`--cluster-signing-duration`).
    pub cluster_signing_duration: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            controllers: vec!["*".to_string()],
            node_monitor_grace_period: Duration::from_secs(40),
            node_monitor_period: Duration::from_secs(5),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            large_cluster_size_threshold: 50,
            unhealthy_zone_threshold: 0.55,
            allocate_node_cidrs: true,
            cluster_cidr: "10.42.0.0/16".to_string(),
            node_cidr_mask_size: 24,
            root_ca_pem: None,
            workers: 5,
            hpa_sync_period: Duration::from_secs(15),
            hpa_tolerance: 0.1,
            hpa_cpu_initialization_period: Duration::from_secs(300),
            hpa_initial_readiness_delay: Duration::from_secs(30),
            hpa_downscale_stabilization: Duration::from_secs(300),
            resync_period: Duration::from_secs(12 * 3600),
            pvclaimbinder_sync_period: Duration::from_secs(15),
            resource_quota_sync_period: Duration::from_secs(5 * 60),
            cluster_signing_cert_file: None,
            cluster_signing_key_file: None,
            cluster_signing_duration: Duration::from_secs(8760 * 3600),
        }
    }
}

impl Options {
    /// Whether the controller `name` (or one of its `aliases`) is enabled by the
    /// `controllers` list.
    pub fn enabled(&self, name: &str, aliases: &[&str], on_by_default: bool) -> bool {
        let named = |entry: &str| entry == name || aliases.contains(&entry);
        if self
            .controllers
            .iter()
            .any(|c| c.strip_prefix('-').is_some_and(named))
        {
            return false;
        }
        if self.controllers.iter().any(|c| named(c)) {
            return true;
        }
        on_by_default && self.controllers.iter().any(|c| c == "*")
    }

    /// Whether any controller is enabled at all (`--controllers=none` enables none).
    pub fn any_enabled(&self) -> bool {
        crate::controllers::all()
            .iter()
            .any(|c| self.enabled(c.name, c.aliases, c.on_by_default))
    }
}

/// A duration flag: a Go duration (`40s`, `5m`, `1h30m`, `500ms`) or a bare number of
/// seconds; `kyb_apimachinery::duration` is the one parser.
pub use kyb_apimachinery::duration::parse_flag as parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controllers_list() {
        let o = |list: &[&str]| Options {
            controllers: list.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        };
        assert!(o(&["*"]).enabled("job-controller", &["job"], true));
        assert!(!o(&["*"]).enabled("bootstrap-signer-controller", &[], false));
        assert!(!o(&["*", "-job"]).enabled("job-controller", &["job"], true));
        assert!(!o(&["*", "-job-controller"]).enabled("job-controller", &["job"], true));
        assert!(o(&["job"]).enabled("job-controller", &["job"], true));
        assert!(!o(&["cronjob"]).enabled("job-controller", &["job"], true));
        assert!(o(&["*", "bootstrap-signer-controller"]).enabled(
            "bootstrap-signer-controller",
            &[],
            false
        ));
    }
}
