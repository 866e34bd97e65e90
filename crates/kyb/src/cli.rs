//! The command line. The `kyb server` flags are a contract that tests, scripts and users
//! rely on: `kyb server --data-dir DIR --bind-address IP --port N [--etcd-endpoints URL,…]`.

use clap::{Args, Parser, Subcommand};
use kyb_controllers::options::parse_duration;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "kyb",
    version,
    about = "Kybernetes: a Kubernetes-compatible orchestrator"
)]
pub struct Cli {
    /// Where state lives [default: /var/lib/kyb as root, $XDG_DATA_HOME/kyb otherwise].
    #[arg(long, global = true, env = "KYB_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Log filter (error, warn, info, debug, trace, or per-module directives); RUST_LOG
    /// takes precedence when set.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every control-plane and node component in one process.
    Server(ServerArgs),
    /// Run the API server alone.
    Apiserver(ServerArgs),
    /// Run the scheduler alone, as a client of an API server.
    Scheduler(SchedulerArgs),
    /// Run the controller manager alone, as a client of an API server.
    ControllerManager(ControllerManagerArgs),
    /// Run the node agent alone, as a client of an API server (needs root).
    Kubelet(KubeletArgs),
    /// Print the version.
    Version,
    /// Build the project's images and import images into the node's containerd.
    Image(crate::image::ImageArgs),
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address the API server listens on.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub bind_address: IpAddr,

    /// Port the API server listens on.
    #[arg(long, default_value_t = 6443, value_name = "N")]
    pub port: u16,

    /// Read-only requests served at once (watches excluded); with priority and fairness
    /// on, this plus --max-mutating-requests-inflight is the server's concurrency limit,
    /// shared among the priority levels.
    #[arg(long, default_value_t = 400, value_name = "N")]
    pub max_requests_inflight: usize,

    /// How long a request that is not a watch or a stream may take before it is answered
    /// 504 Timeout (kube-apiserver's flag; a request's `?timeout=` may shorten it).
    #[arg(long, default_value = "1m0s", value_parser = parse_duration, value_name = "DURATION")]
    pub request_timeout: Duration,

    /// Connections one client address may have open at once; more are closed on accept
    /// (0: no cap).
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_connections_per_client: usize,

    /// How long a connection gets for its TLS handshake and each request's headers
    /// (kube-apiserver's fixed 32s; set for tests).
    #[arg(long, default_value = "32s", value_parser = parse_duration, value_name = "DURATION", hide = true)]
    pub read_header_timeout: Duration,

    /// How long a connection with no request in progress stays open (kube-apiserver's
    /// fixed 90s; set for tests).
    #[arg(long, default_value = "90s", value_parser = parse_duration, value_name = "DURATION", hide = true)]
    pub idle_connection_timeout: Duration,

    /// The issuer (`iss`) of service-account tokens, published at
    /// /.well-known/openid-configuration; tokens of any issuer given are accepted, the
    /// first is the one issued.
    #[arg(long, value_name = "URL")]
    pub service_account_issuer: Vec<String>,

    /// The `jwks_uri` published in the discovery document (default: the issuer's
    /// /openid/v1/jwks).
    #[arg(long, value_name = "URL")]
    pub service_account_jwks_uri: Option<String>,
    /// Mutating requests served at once (see --max-requests-inflight).
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_mutating_requests_inflight: usize,

    /// API Priority and Fairness: requests classified by FlowSchemas and queued fairly per
    /// priority level; false falls back to the max-in-flight limits.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub enable_priority_and_fairness: bool,

    /// Keep cluster state in this etcd cluster instead of the embedded store.
    #[arg(long, value_delimiter = ',', value_name = "URL,…")]
    pub etcd_endpoints: Vec<String>,

    /// Bearer tokens accepted for users: CSV lines `token,user,uid[,"group1,group2"]`.
    #[arg(long, value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// An EncryptionConfiguration (apiserver.config.k8s.io/v1): resources encrypted at rest.
    #[arg(long, value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,

    /// An audit Policy (audit.k8s.io/v1): what requests the audit log records.
    #[arg(long, value_name = "FILE")]
    pub audit_policy_file: Option<PathBuf>,

    /// Where audit events go, as JSON lines (`-` for stdout); needs --audit-policy-file.
    #[arg(long, value_name = "FILE")]
    pub audit_log_path: Option<PathBuf>,

    /// Days to keep rotated audit logs (0: no limit).
    #[arg(long, default_value_t = 0, value_name = "DAYS")]
    pub audit_log_maxage: u32,

    /// Rotated audit logs to keep (0: all).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub audit_log_maxbackup: u32,

    /// Size in MiB at which the audit log is rotated (0: 100).
    #[arg(long, default_value_t = 0, value_name = "MIB")]
    pub audit_log_maxsize: u64,

    /// The IPv4 range of Services' cluster IPs: the default ServiceCIDR `kubernetes`.
    #[arg(long, default_value = "10.43.0.0/16", value_parser = parse_service_cidr, value_name = "CIDR")]
    pub service_cluster_ip_range: (std::net::Ipv4Addr, u8),

    /// Where the in-process controller manager serves /metrics (off unless given).
    #[arg(long, value_name = "IP:PORT")]
    pub controller_manager_metrics_address: Option<SocketAddr>,

    #[command(flatten)]
    pub controllers: ControllerArgs,

    #[command(flatten)]
    pub kubelet_client: KubeletClientArgs,

    /// Run the control plane only, without the node agent (`kyb server`; the agent also
    /// stays off when the server does not run as root).
    #[arg(long)]
    pub disable_agent: bool,

    /// The node agent's API (kubelet's `--address`): the address it listens on.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub kubelet_address: IpAddr,

    /// The node agent's API (kubelet's `--port`): the port it listens on.
    #[arg(long, default_value_t = 10250, value_name = "N")]
    pub kubelet_port: u16,

    #[command(flatten)]
    pub node: NodeArgs,
}

/// What the controllers do (kube-controller-manager's flags of the same names).
#[derive(Clone, Debug, Args)]
pub struct ControllerArgs {
    /// Controllers to run: `*` for the default set, names to add, `-name` to leave out.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "*",
        value_name = "NAME,…"
    )]
    pub controllers: Vec<String>,

    /// How long a node may go without renewing its Lease before it is marked unhealthy.
    #[arg(long, default_value = "40s", value_parser = parse_duration, value_name = "DURATION")]
    pub node_monitor_grace_period: Duration,

    /// How often node health is checked.
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub node_monitor_period: Duration,

    /// The cluster's pod network, from which each node gets a pod CIDR.
    #[arg(long, default_value = "10.42.0.0/16", value_name = "CIDR")]
    pub cluster_cidr: String,

    /// The prefix length of each node's pod CIDR.
    #[arg(long, default_value_t = 24, value_name = "BITS")]
    pub node_cidr_mask_size: u8,

    /// Give nodes pod CIDRs from --cluster-cidr.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allocate_node_cidrs: bool,

    /// Workers per controller.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub concurrent_syncs: usize,

    /// How often each HorizontalPodAutoscaler is evaluated.
    #[arg(long, default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub horizontal_pod_autoscaler_sync_period: Duration,

    /// The relative difference between usage and target under which an HPA does not scale.
    #[arg(long, default_value_t = 0.1, value_name = "RATIO")]
    pub horizontal_pod_autoscaler_tolerance: f64,

    /// How long after a pod starts its CPU samples may be skipped as not yet representative.
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
    pub horizontal_pod_autoscaler_cpu_initialization_period: Duration,

    /// How long after a pod starts a not-ready pod is taken as still initializing.
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub horizontal_pod_autoscaler_initial_readiness_delay: Duration,

    /// How far back an HPA looks for higher recommendations before it scales down.
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
    pub horizontal_pod_autoscaler_downscale_stabilization: Duration,
    /// How often the PersistentVolume binder re-examines every volume and claim.
    #[arg(long, default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub pvclaimbinder_sync_period: Duration,
    /// How often every ResourceQuota's usage is recalculated in full.
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
    pub resource_quota_sync_period: Duration,
    /// The CA certificate (PEM) that signs certificate signing requests for the
    /// kubernetes.io signers (`kyb server`: the cluster CA).
    #[arg(long, value_name = "FILE")]
    pub cluster_signing_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --cluster-signing-cert-file.
    #[arg(long, value_name = "FILE")]
    pub cluster_signing_key_file: Option<PathBuf>,
    /// The longest lifetime of a signed certificate (a request may ask for less).
    #[arg(long, default_value = "8760h", value_parser = parse_duration, value_name = "DURATION")]
    pub cluster_signing_duration: Duration,
}

#[derive(Debug, Args)]
pub struct ControllerManagerArgs {
    /// How to reach the API server (and as whom).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// Compete for the kube-system/kube-controller-manager lease so only one manager acts.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub leader_elect: bool,

    /// How long a leader's lease lasts without renewal before another may take it.
    #[arg(long, default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew before it gives up leading.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_renew_deadline: Duration,

    /// How often candidates try to acquire or renew the lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_retry_period: Duration,

    /// Where /metrics and /healthz are served (`off` for nowhere).
    #[arg(long, default_value = "127.0.0.1:10257", value_name = "IP:PORT")]
    pub metrics_bind_address: String,

    /// Requests per second to the API server, sustained.
    #[arg(long, default_value_t = 1000.0, value_name = "QPS")]
    pub kube_api_qps: f64,

    /// Requests to the API server allowed in a burst.
    #[arg(long, default_value_t = 2000, value_name = "N")]
    pub kube_api_burst: u32,

    /// The cluster CA to publish as `kube-root-ca.crt` [default: the kubeconfig's CA].
    #[arg(long, value_name = "FILE")]
    pub root_ca_file: Option<PathBuf>,

    #[command(flatten)]
    pub controllers: ControllerArgs,
}

#[derive(Debug, Args)]
pub struct SchedulerArgs {
    /// How to reach the API server (and as whom).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): profiles, plugins,
    /// leader election.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Compete for the kube-system/kube-scheduler lease so only one scheduler schedules
    /// (overrides the configuration's `leaderElection.leaderElect`).
    #[arg(long, value_name = "BOOL")]
    pub leader_elect: Option<bool>,
}

/// An IPv4 network for `--service-cluster-ip-range`: `a.b.c.d/n`, no host bits, at least
/// four addresses.
fn parse_service_cidr(text: &str) -> Result<(std::net::Ipv4Addr, u8), String> {
    let invalid = || format!("{text:?} is not an IPv4 CIDR such as 10.43.0.0/16");
    let (ip, bits) = text.split_once('/').ok_or_else(invalid)?;
    let ip: std::net::Ipv4Addr = ip.parse().map_err(|_| invalid())?;
    let bits: u8 = bits.parse().ok().filter(|b| *b <= 30).ok_or_else(invalid)?;
    let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
    if u32::from(ip) & !mask != 0 {
        return Err(format!("{text:?} has bits set beyond the prefix length"));
    }
    Ok((ip, bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_contract_parses() {
        let cli = Cli::try_parse_from([
            "kyb",
            "server",
            "--data-dir",
            "/tmp/d",
            "--bind-address",
            "127.0.0.1",
            "--port",
            "7443",
            "--etcd-endpoints",
            "http://127.0.0.1:2379,http://127.0.0.1:2380",
        ])
        .expect("parses");
        assert_eq!(cli.data_dir, Some(PathBuf::from("/tmp/d")));
        let Command::Server(args) = cli.command else {
            panic!("not the server command")
        };
        assert_eq!(args.port, 7443);
        assert_eq!(args.bind_address.to_string(), "127.0.0.1");
        assert_eq!(args.etcd_endpoints.len(), 2);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("40s"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("3x").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn server_defaults() {
        let cli = Cli::try_parse_from(["kyb", "server"]).expect("parses");
        let Command::Server(args) = cli.command else {
            panic!("not the server command")
        };
        assert_eq!(
            (args.bind_address.to_string().as_str(), args.port),
            ("0.0.0.0", 6443)
        );
        assert!(args.etcd_endpoints.is_empty());
        assert_eq!(
            args.service_cluster_ip_range,
            (std::net::Ipv4Addr::new(10, 43, 0, 0), 16)
        );
    }

    #[test]
    fn service_ranges_are_networks() {
        assert_eq!(
            parse_service_cidr("10.96.0.0/29"),
            Ok((std::net::Ipv4Addr::new(10, 96, 0, 0), 29))
        );
        assert!(parse_service_cidr("10.96.0.1/24").is_err());
        assert!(parse_service_cidr("10.96.0.0/31").is_err());
        assert!(parse_service_cidr("fd00::/64").is_err());
    }
}

#[derive(Debug, Args)]
pub struct KubeletArgs {
    /// The kubeconfig the agent talks to the API server with (its identity is
    /// `system:node:<name>` in `system:nodes`).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// The address the agent's API (logs, exec, port-forward, metrics) listens on.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub address: IpAddr,

    /// The port the agent's API listens on.
    #[arg(long, default_value_t = 10250, value_name = "N")]
    pub port: u16,

    #[command(flatten)]
    pub node: NodeArgs,
}

/// The node agent's flags, shared by `kyb kubelet` and `kyb server`.
#[derive(Debug, Args, Clone)]
pub struct NodeArgs {
    /// An existing CRI runtime (`unix:///run/containerd/containerd.sock`) instead of the
    /// containerd the agent starts under the data dir.
    #[arg(long, value_name = "ENDPOINT")]
    pub container_runtime_endpoint: Option<String>,

    /// The Node's name [default: the host name].
    #[arg(long, value_name = "NAME")]
    pub hostname_override: Option<String>,

    /// The node's address (its InternalIP).
    #[arg(long, value_name = "IP")]
    pub node_ip: Option<IpAddr>,

    /// A directory of static pod manifests (YAML or JSON, one pod per file), run by the
    /// agent without the API server and mirrored into it.
    #[arg(long, value_name = "DIR")]
    pub pod_manifest_path: Option<PathBuf>,

    /// Labels the Node registers with (`key=value,…`).
    #[arg(long, value_name = "LABELS")]
    pub node_labels: Option<String>,

    /// Taints the Node registers with (`key=value:Effect,…`).
    #[arg(long, value_name = "TAINTS")]
    pub register_with_taints: Option<String>,

    /// The most pods the node runs.
    #[arg(long, default_value_t = 110, value_name = "N")]
    pub max_pods: i64,

    /// Resources kept for the system (`cpu=100m,memory=100Mi,…`), out of allocatable.
    #[arg(long, value_name = "RESOURCES")]
    pub system_reserved: Option<String>,

    /// Resources kept for Kubernetes' own daemons, out of allocatable.
    #[arg(long, value_name = "RESOURCES")]
    pub kube_reserved: Option<String>,

    /// Hard eviction thresholds (`memory.available<100Mi,nodefs.available<10%,…`;
    /// kubelet's defaults otherwise).
    #[arg(long, value_name = "THRESHOLDS")]
    pub eviction_hard: Option<String>,

    /// The agent API's serving certificate (PEM) [default: `kyb server`: issued by the
    /// cluster CA; `kyb kubelet`: requested through the CSR API, self-signed meanwhile].
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert-file.
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// The CA (PEM) whose client certificates the agent's API accepts [default: `kyb
    /// server`: the cluster CA; `kyb kubelet`: none, bearer tokens only].
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// A container's log file is rotated once it reaches this size.
    #[arg(long, default_value = "10Mi", value_name = "QUANTITY")]
    pub container_log_max_size: String,

    /// The most log files a container keeps, the current one included (at least 2).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub container_log_max_files: i64,
}

/// How the API server reaches kubelets (kube-apiserver's flags of the same names). Without
/// a certificate, `kyb` issues `kube-apiserver-kubelet-client` from the cluster CA; without
/// a CA, kubelets' certificates are verified against the cluster CA.
#[derive(Clone, Debug, Args)]
pub struct KubeletClientArgs {
    /// The client certificate (PEM) the API server presents to kubelets.
    #[arg(long, value_name = "FILE", requires = "kubelet_client_key")]
    pub kubelet_client_certificate: Option<PathBuf>,

    /// The key of --kubelet-client-certificate.
    #[arg(long, value_name = "FILE", requires = "kubelet_client_certificate")]
    pub kubelet_client_key: Option<PathBuf>,

    /// The CA (PEM) kubelets' serving certificates are verified against.
    #[arg(long, value_name = "FILE")]
    pub kubelet_certificate_authority: Option<PathBuf>,

    /// The Node address types tried, in order, to reach a kubelet.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP",
        value_parser = clap::builder::PossibleValuesParser::new(kyb_apiserver::kubelet::NODE_ADDRESS_TYPES),
        value_name = "TYPE,…"
    )]
    pub kubelet_preferred_address_types: Vec<String>,
}

#[cfg(test)]
mod kubelet_client_tests {
    use super::*;

    fn server(flags: &[&str]) -> Result<ServerArgs, clap::Error> {
        let mut args = vec!["kyb", "server"];
        args.extend_from_slice(flags);
        match Cli::try_parse_from(args)?.command {
            Command::Server(args) => Ok(args),
            _ => Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand)),
        }
    }

    #[test]
    fn kubelet_client_flags_parse_as_kube_apiserver_s() -> Result<(), clap::Error> {
        let defaults = server(&[])?.kubelet_client;
        assert_eq!(
            defaults.kubelet_preferred_address_types,
            [
                "InternalIP",
                "Hostname",
                "InternalDNS",
                "ExternalDNS",
                "ExternalIP"
            ]
        );
        assert!(defaults.kubelet_client_certificate.is_none());
        let given = server(&[
            "--kubelet-client-certificate",
            "/c.crt",
            "--kubelet-client-key",
            "/c.key",
            "--kubelet-certificate-authority",
            "/ca.crt",
            "--kubelet-preferred-address-types",
            "Hostname,InternalIP",
        ])?
        .kubelet_client;
        assert_eq!(
            given.kubelet_preferred_address_types,
            ["Hostname", "InternalIP"]
        );
        assert_eq!(given.kubelet_client_key, Some(PathBuf::from("/c.key")));
        // A certificate needs its key; address types are Kubernetes' own.
        assert!(server(&["--kubelet-client-certificate", "/c.crt"]).is_err());
        assert!(
            server(&[
                "--kubelet-preferred-address-types",
                "InternalIP,LegacyHostIP"
            ])
            .is_err()
        );
        Ok(())
    }
}
