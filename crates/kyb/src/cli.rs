//! The command line. The `kyb server` flags are a contract that tests, scripts and users
//! rely on: `kyb server --data-dir DIR --bind-address IP --port N [--etcd-endpoints URL,…]`.

use clap::{Args, Parser, Subcommand};
use std::net::IpAddr;
use std::path::PathBuf;

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
    /// Print the version.
    Version,
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address the API server listens on.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub bind_address: IpAddr,

    /// Port the API server listens on.
    #[arg(long, default_value_t = 6443, value_name = "N")]
    pub port: u16,

    /// Requests served at once (watches excluded); more get 429 Too Many Requests.
    #[arg(long, default_value_t = 600, value_name = "N")]
    pub max_requests_inflight: usize,

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
    }
}
