//! `kyb server` (every control-plane component in one process) and `kyb apiserver` (the
//! API server alone): open the store, start the API server on it, and run the components
//! under a supervisor (`kyb_component`):
//!
//! 1. the API server — essential: if it fails, everything stops and `kyb` exits with the
//!    error. It is ready once its default objects exist and the admin's and components'
//!    kubeconfigs are written (then `export KUBECONFIG=…` and "kyb server ready" are
//!    printed, in that order);
//! 2. with `kyb server`, the scheduler, then the controller manager, then (as root,
//!    unless `--disable-agent`) the node agent, each a client of the API with its own
//!    kubeconfig, restarted with backoff when it fails.
//!
//! `/readyz` and `/livez` report each as `component/<name>`. SIGTERM or SIGINT stops them
//! in reverse order — the controller manager, the scheduler, then the API server — after
//! which the audit log is flushed and the store shuts down cleanly.

use crate::cli::ServerArgs;
use anyhow::Context as _;
use kyb_apiserver::audit::Auditor;
use kyb_apiserver::auth::{Authenticator, ServiceAccountTokens, TokenFile};
use kyb_apiserver::{ApiServer, Config, Security};
use kyb_component::{Context, Health, Supervisor};
use kyb_pki::{Credentials, Pki};
use kyb_storage::{
    DEFAULT_COMPACTION_INTERVAL, EmbeddedOptions, EmbeddedStore, EtcdStore, Store, run_compactor,
};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Runs the API server; with `in_process`, also the components `kyb server` runs
/// in-process (the scheduler and the controller manager), each as its own client of the API.
pub async fn run(
    args: ServerArgs,
    data_dir: Option<PathBuf>,
    in_process: bool,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let data_dir = data_dir.map_or_else(default_data_dir, Ok)?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating the data dir {}", data_dir.display()))?;
    if in_process {
        log_node();
    }

    let mut embedded = None;
    let store: Arc<dyn Store> = if args.etcd_endpoints.is_empty() {
        let dir = data_dir.join("db");
        let store = EmbeddedStore::open(&dir, &EmbeddedOptions::default())
            .with_context(|| format!("opening the embedded store in {}", dir.display()))?;
        let store = Arc::new(store);
        embedded = Some(store.clone());
        store
    } else {
        let store = EtcdStore::connect(&args.etcd_endpoints)
            .await
            .context("opening the etcd store")?;
        Arc::new(store)
    };
    let store = match &args.encryption_provider_config {
        Some(path) => {
            let config = kyb_encryption::from_file(path)
                .with_context(|| format!("loading {}", path.display()))?;
            kyb_encryption::wrap(store, config)
        }
        None => store,
    };
    let compactor = tokio::spawn(run_compactor(store.clone(), DEFAULT_COMPACTION_INTERVAL));

    let health = Health::new();
    let mut config = Config {
        bind_address: args.bind_address,
        port: args.port,
        max_requests_in_flight: args.max_requests_inflight.max(1),
        request_timeout: args.request_timeout,
        connection_limits: kyb_apiserver::ConnectionLimits {
            read_header_timeout: args.read_header_timeout,
            idle_timeout: args.idle_connection_timeout,
            max_connections_per_client: args.max_connections_per_client,
            ..Default::default()
        },
        max_mutating_requests_in_flight: args.max_mutating_requests_inflight.max(1),
        priority_and_fairness: args.enable_priority_and_fairness,
        health: health.clone(),
        service_cidr: args.service_cluster_ip_range,
        ..Config::default()
    };
    let pki_dir = data_dir.join("pki");
    let pki = Pki::load_or_create(&pki_dir, &kyb_apiserver::serving_names(&config))
        .with_context(|| format!("preparing certificates in {}", pki_dir.display()))?;
    let admin = pki
        .client("admin", "kubernetes-admin", &["system:masters"])
        .context("issuing the admin certificate")?;
    let components = crate::identities::issue(&pki, &crate::identities::node_name())?;
    config.kubelet = crate::identities::kubelet_client(&pki, &args.kubelet_client)?;
    let tokens = match &args.token_auth_file {
        Some(path) => TokenFile::load(path).map_err(anyhow::Error::msg)?,
        None => TokenFile::default(),
    };
    let security = Security {
        tls: kyb_pki::tls::server_config(pki.serving(), pki.ca_pem()).context("configuring TLS")?,
        authenticator: Authenticator {
            tokens,
            service_accounts: Some(
                ServiceAccountTokens::new(
                    kyb_pki::jwt::Signer::from_pem(pki.service_account_key_pem())
                        .context("loading the service-account signing key")?,
                )
                .with_issuers(
                    args.service_account_issuer.clone(),
                    args.service_account_jwks_uri.clone(),
                ),
            ),
        },
        admission: kyb_apiserver::admission::Chain::default_plugins(),
        auditor: auditor(&args)?,
        ca_pem: pki.ca_pem().to_string(),
    };
    let apiserver = ApiServer::start(store.clone(), config, security)
        .await
        .context("starting the API server")?;
    let publish = Publish {
        kubeconfig: data_dir.join("kubeconfig.yaml"),
        data_dir: data_dir.clone(),
        ca_pem: pki.ca_pem().to_string(),
        admin,
        components,
        bind_address: args.bind_address,
        backend: store.backend(),
        started,
    };

    let mut supervisor = Supervisor::new(health);
    supervisor.essential(kyb_component::once("apiserver", move |ctx| {
        serve(apiserver, publish, ctx)
    }));
    if in_process {
        let identity = crate::identities::election_identity(&data_dir)?;
        supervisor.restartable(crate::scheduler::in_process(
            crate::identities::kubeconfig(&data_dir, "scheduler"),
            identity.clone(),
        ));
        // Certificate signing requests are signed with the cluster CA unless told otherwise.
        let mut controllers = args.controllers.clone();
        if controllers.cluster_signing_cert_file.is_none() {
            controllers.cluster_signing_cert_file = Some(pki.dir().join("ca.crt"));
            controllers.cluster_signing_key_file = Some(pki.dir().join("ca.key"));
        }
        supervisor.restartable(crate::controller_manager::in_process(
            crate::identities::kubeconfig(&data_dir, "controller-manager"),
            identity,
            controllers,
            args.controller_manager_metrics_address,
            pki.ca_pem().to_string(),
        ));
        if args.disable_agent {
            tracing::info!("node agent disabled (--disable-agent): control plane only");
        } else if !kyb_node_sys::privileges::is_root() {
            tracing::warn!(
                "running the control plane only: the node agent needs root (it runs \
                 containers, mounts volumes and configures the network); start kyb server \
                 as root for a working node, or pass --disable-agent to silence this"
            );
        } else {
            supervisor.restartable(crate::kubelet::in_process(
                crate::identities::kubeconfig(&data_dir, "kubelet"),
                args.node.clone(),
                data_dir.clone(),
                (args.kubelet_address, args.kubelet_port),
            ));
        }
    }
    let outcome = supervisor.run(shutdown_signal()).await;

    compactor.abort();
    if let Some(store) = embedded {
        store.shutdown().await;
    }
    Ok(outcome?)
}

/// What the API server's readiness publishes: the admin's and the components' kubeconfigs,
/// and the lines scripts and tests wait for.
struct Publish {
    kubeconfig: PathBuf,
    data_dir: PathBuf,
    ca_pem: String,
    admin: Credentials,
    components: Vec<crate::identities::Component>,
    bind_address: IpAddr,
    backend: &'static str,
    started: Instant,
}

impl Publish {
    fn publish(&self, address: SocketAddr) -> anyhow::Result<()> {
        let url = format!("https://{}", client_address(self.bind_address, address));
        let contents = kyb_pki::kubeconfig::render(
            &url,
            &self.ca_pem,
            "admin",
            &kyb_pki::kubeconfig::User::Certificate(&self.admin),
        );
        kyb_pki::kubeconfig::write(&self.kubeconfig, &contents)
            .with_context(|| format!("writing {}", self.kubeconfig.display()))?;
        crate::identities::write_kubeconfigs(&self.components, &self.data_dir, &url, &self.ca_pem)?;
        // Printed before the readiness line, which scripts and tests wait for.
        println!("export KUBECONFIG={}", self.kubeconfig.display());
        tracing::info!(
            address = %address,
            store = self.backend,
            kubeconfig = %self.kubeconfig.display(),
            took = ?self.started.elapsed(),
            "kyb server ready"
        );
        Ok(())
    }
}

/// The API server as a component: serves until cancelled, ready once its default objects
/// exist and the kubeconfigs are written (failing if they cannot be); the audit log is
/// flushed before it returns.
async fn serve(apiserver: ApiServer, publish: Publish, ctx: Context) -> anyhow::Result<()> {
    // Cancelled with the component, or when the kubeconfigs cannot be written.
    let stop = ctx.token().child_token();
    let mut failed = None;
    let ready = |address: SocketAddr| match publish.publish(address) {
        Ok(()) => ctx.ready(),
        Err(error) => {
            failed = Some(error.context("writing the kubeconfigs"));
            stop.cancel();
        }
    };
    apiserver.serve(ready, stop.cancelled()).await;
    failed.map_or(Ok(()), Err)
}

/// Logs what the node's components will find on this machine.
fn log_node() {
    match kyb_node_sys::cgroup::version() {
        Ok(version) => tracing::info!(
            cgroup = %version,
            driver = %kyb_node_sys::cgroup::driver(),
            root = kyb_node_sys::privileges::is_root(),
            "node"
        ),
        Err(error) => tracing::warn!(%error, "node: no cgroup file system"),
    }
}

/// The audit policy and log of `--audit-policy-file` and `--audit-log-path`, if given.
fn auditor(args: &ServerArgs) -> anyhow::Result<Option<Arc<Auditor>>> {
    let (Some(policy), Some(path)) = (&args.audit_policy_file, &args.audit_log_path) else {
        if args.audit_log_path.is_some() {
            anyhow::bail!("--audit-log-path needs --audit-policy-file");
        }
        return Ok(None);
    };
    let policy = kyb_audit::Policy::load(policy)
        .with_context(|| format!("loading the audit policy {}", policy.display()))?;
    for warning in policy.warnings() {
        tracing::warn!(%warning, "audit policy");
    }
    let config = kyb_audit::AuditLogConfig::from_flags(
        path,
        args.audit_log_maxage,
        args.audit_log_maxbackup,
        args.audit_log_maxsize,
    );
    let log = kyb_audit::AuditLog::open(config)
        .with_context(|| format!("opening the audit log {}", path.display()))?;
    Ok(Some(Arc::new(Auditor { policy, log })))
}

/// Where a client on this machine reaches the server: loopback when bound to all addresses.
fn client_address(bind: IpAddr, actual: SocketAddr) -> SocketAddr {
    if bind.is_unspecified() {
        SocketAddr::new(IpAddr::from([127, 0, 0, 1]), actual.port())
    } else {
        actual
    }
}

/// `/var/lib/kyb` for root, `$XDG_DATA_HOME/kyb` (or `~/.local/share/kyb`) for anyone else.
pub fn default_data_dir() -> anyhow::Result<PathBuf> {
    if kyb_node_sys::privileges::is_root() {
        return Ok(PathBuf::from("/var/lib/kyb"));
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("kyb"));
    }
    let home =
        std::env::var_os("HOME").context("neither --data-dir, XDG_DATA_HOME nor HOME is set")?;
    Ok(Path::new(&home).join(".local/share/kyb"))
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => terminate,
        Err(error) => {
            tracing::error!(%error, "cannot listen for SIGTERM");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
}
