//! `kyb server` (all components in one process) and `kyb apiserver` (the API server alone):
//! open the store, start the API server on it, write the admin kubeconfig once it is
//! ready, and shut down cleanly on SIGTERM/SIGINT.

use crate::cli::ServerArgs;
use anyhow::Context;
use kyb_apiserver::audit::Auditor;
use kyb_apiserver::auth::{Authenticator, ServiceAccountTokens, TokenFile};
use kyb_apiserver::{ApiServer, Config, Security};
use kyb_pki::Pki;
use kyb_storage::{
    DEFAULT_COMPACTION_INTERVAL, EmbeddedOptions, EmbeddedStore, EtcdStore, Store, run_compactor,
};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Runs the API server; with `in_process`, also the components `kyb server` runs
/// in-process (the scheduler), each as its own client of the API.
pub async fn run(
    args: ServerArgs,
    data_dir: Option<PathBuf>,
    in_process: bool,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let data_dir = data_dir.map_or_else(default_data_dir, Ok)?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating the data dir {}", data_dir.display()))?;

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

    let config = Config {
        bind_address: args.bind_address,
        port: args.port,
        max_requests_in_flight: args.max_requests_inflight.max(1),
        ..Config::default()
    };
    let pki_dir = data_dir.join("pki");
    let pki = Pki::load_or_create(&pki_dir, &kyb_apiserver::serving_names(&config))
        .with_context(|| format!("preparing certificates in {}", pki_dir.display()))?;
    let admin = pki
        .client("admin", "kubernetes-admin", &["system:masters"])
        .context("issuing the admin certificate")?;
    let components = crate::identities::issue(&pki, &crate::identities::node_name())?;
    let tokens = match &args.token_auth_file {
        Some(path) => TokenFile::load(path).map_err(anyhow::Error::msg)?,
        None => TokenFile::default(),
    };
    let security = Security {
        tls: kyb_pki::tls::server_config(pki.serving(), pki.ca_pem()).context("configuring TLS")?,
        authenticator: Authenticator {
            tokens,
            service_accounts: Some(ServiceAccountTokens::new(
                kyb_pki::jwt::Signer::from_pem(pki.service_account_key_pem())
                    .context("loading the service-account signing key")?,
            )),
        },
        admission: kyb_apiserver::admission::Chain::default_plugins(),
        auditor: auditor(&args)?,
        ca_pem: pki.ca_pem().to_string(),
    };
    let apiserver = ApiServer::start(store.clone(), config, security)
        .await
        .context("starting the API server")?;
    let kubeconfig = data_dir.join("kubeconfig.yaml");
    let backend = store.backend();
    let ready = |address: SocketAddr| {
        let url = format!("https://{}", client_address(args.bind_address, address));
        let contents = kyb_pki::kubeconfig::render(
            &url,
            pki.ca_pem(),
            "admin",
            &kyb_pki::kubeconfig::User::Certificate(&admin),
        );
        let written = kyb_pki::kubeconfig::write(&kubeconfig, &contents)
            .map_err(anyhow::Error::from)
            .and_then(|()| {
                crate::identities::write_kubeconfigs(&components, &data_dir, &url, pki.ca_pem())
            });
        match written {
            Ok(dir) => {
                if in_process {
                    let kubeconfig = dir.join("scheduler.kubeconfig");
                    tokio::spawn(async move {
                        if let Err(error) = crate::scheduler::start_in_process(&kubeconfig).await {
                            tracing::error!(error = %format!("{error:#}"), "cannot start the scheduler");
                        }
                    });
                    let kubeconfig = dir.join("controller-manager.kubeconfig");
                    let controllers = args.controllers.clone();
                    let metrics = args.controller_manager_metrics_address;
                    let ca = pki.ca_pem().to_string();
                    tokio::spawn(async move {
                        if let Err(error) = crate::controller_manager::start_in_process(
                            &kubeconfig,
                            &controllers,
                            metrics,
                            &ca,
                        )
                        .await
                        {
                            tracing::error!(error = %format!("{error:#}"), "cannot start the controller manager");
                        }
                    });
                }
                // Printed before the readiness line, which scripts and tests wait for.
                println!("export KUBECONFIG={}", kubeconfig.display());
                tracing::info!(
                    address = %address,
                    store = backend,
                    kubeconfig = %kubeconfig.display(),
                    took = ?started.elapsed(),
                    "kyb server ready"
                );
            }
            Err(error) => {
                tracing::error!(error = %format!("{error:#}"), path = %kubeconfig.display(), "cannot write the kubeconfigs")
            }
        }
    };
    apiserver.serve(ready, shutdown_signal()).await;

    tracing::info!("shutting down");
    compactor.abort();
    if let Some(store) = embedded {
        store.shutdown().await;
    }
    Ok(())
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
fn default_data_dir() -> anyhow::Result<PathBuf> {
    // /proc/self belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    if root {
        return Ok(PathBuf::from("/var/lib/kyb"));
    }
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("kyb"));
    }
    let home =
        std::env::var_os("HOME").context("neither --data-dir, XDG_DATA_HOME nor HOME is set")?;
    Ok(Path::new(&home).join(".local/share/kyb"))
}

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
