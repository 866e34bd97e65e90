//! The kubelet's serving certificate and its TLS configuration. The certificate comes from
//! the cluster CA directly (`kyb server`'s in-process agent), from `--tls-cert-file` and
//! `--tls-private-key-file`, or through the CSR API as kubelet's `serverTLSBootstrap` gets
//! it (`kubernetes.io/kubelet-serving`, CN `system:node:<name>`, O `system:nodes`, the
//! node's names and addresses), renewed at 80% of its life. Until a requested certificate
//! is issued (or when none ever is) the server presents a self-signed one, as kubelet does
//! without a CA. Rotation swaps the certificate under running listeners.

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use kube::api::{Api, ObjectMeta, PostParams};
use kyb_pki::{Credentials, Sans};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The signer of kubelets' serving certificates.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";

/// Issues a serving certificate for the given names from a CA the caller holds.
pub type Issuer = Arc<dyn Fn(&Sans) -> anyhow::Result<Credentials> + Send + Sync>;

/// Where the serving certificate comes from.
#[derive(Clone)]
pub enum ServingCertificate {
    /// Issued for the node's names and addresses by a CA in the same process.
    Issued(Issuer),
    /// `--tls-cert-file` and `--tls-private-key-file` (PEM).
    Files { cert: PathBuf, key: PathBuf },
    /// Requested through the CSR API; self-signed until one is issued.
    Bootstrap,
}

impl std::fmt::Debug for ServingCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServingCertificate::Issued(_) => f.write_str("Issued"),
            ServingCertificate::Files { cert, key } => f
                .debug_struct("Files")
                .field("cert", cert)
                .field("key", key)
                .finish(),
            ServingCertificate::Bootstrap => f.write_str("Bootstrap"),
        }
    }
}

/// The certificate presented now; replaced when rotated.
#[derive(Debug)]
pub struct CurrentCertificate {
    key: RwLock<Arc<CertifiedKey>>,
}

impl CurrentCertificate {
    fn new(credentials: &Credentials) -> anyhow::Result<Arc<CurrentCertificate>> {
        Ok(Arc::new(CurrentCertificate {
            key: RwLock::new(certified_key(credentials)?),
        }))
    }

    fn set(&self, credentials: &Credentials) -> anyhow::Result<()> {
        let key = certified_key(credentials)?;
        *self
            .key
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = key;
        Ok(())
    }
}

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.key
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        )
    }
}

fn certified_key(credentials: &Credentials) -> anyhow::Result<Arc<CertifiedKey>> {
    let certs = kyb_pki::tls::pem_certificates(&credentials.cert_pem)
        .context("reading the serving certificate")?;
    anyhow::ensure!(
        !certs.is_empty(),
        "no certificate in the serving certificate's PEM"
    );
    let key = PrivateKeyDer::from_pem_slice(credentials.key_pem.as_bytes())
        .context("reading the serving certificate's private key")?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .context("loading the serving certificate's private key")?;
    Ok(Arc::new(CertifiedKey::new(certs, signing)))
}

/// The server's TLS: the current certificate; client certificates verified against
/// `client_ca_pem` when one is configured (optional, since tokens are accepted too);
/// HTTP/1.1 first (upgrades for exec, attach and port-forward need it), HTTP/2 offered.
pub fn tls_config(
    current: Arc<CurrentCertificate>,
    client_ca_pem: Option<&str>,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match client_ca_pem {
        Some(pem) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(
                Arc::new(kyb_pki::tls::roots(pem).context("reading the client CA")?),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .context("the client CA")?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(current);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The names the certificate covers: the node's name and its addresses.
pub fn sans(node_name: &str, addresses: &[std::net::IpAddr]) -> Sans {
    Sans {
        dns: vec![node_name.to_string()],
        ips: addresses.to_vec(),
    }
}

/// The certificate to start with, and for [`ServingCertificate::Bootstrap`] the task that
/// requests (and later renews) one through the CSR API.
pub async fn start(
    source: &ServingCertificate,
    node_name: &str,
    sans: Sans,
    client: kube::Client,
    cancel: CancellationToken,
) -> anyhow::Result<Arc<CurrentCertificate>> {
    match source {
        ServingCertificate::Issued(issue) => {
            CurrentCertificate::new(&issue(&sans).context("issuing the serving certificate")?)
        }
        ServingCertificate::Files { cert, key } => {
            let cert_pem = tokio::fs::read_to_string(cert)
                .await
                .with_context(|| format!("reading --tls-cert-file {}", cert.display()))?;
            let key_pem = tokio::fs::read_to_string(key)
                .await
                .with_context(|| format!("reading --tls-private-key-file {}", key.display()))?;
            CurrentCertificate::new(&Credentials { cert_pem, key_pem })
        }
        ServingCertificate::Bootstrap => {
            let self_signed = kyb_pki::self_signed(
                &format!("{node_name}@{}", jiff::Timestamp::now().as_second()),
                &sans,
            )
            .context("creating a self-signed serving certificate")?;
            let current = CurrentCertificate::new(&self_signed)?;
            tokio::spawn(rotate(
                current.clone(),
                client,
                node_name.to_string(),
                sans,
                cancel,
            ));
            Ok(current)
        }
    }
}

/// How long a requested certificate may take to be approved and issued before the
/// request is given up (and made again later).
const ISSUE_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// Requests a serving certificate, installs it, and renews it at 80% of its life.
async fn rotate(
    current: Arc<CurrentCertificate>,
    client: kube::Client,
    node_name: String,
    sans: Sans,
    cancel: CancellationToken,
) {
    let mut retry = Duration::from_secs(5);
    loop {
        let outcome = tokio::select! {
            outcome = request(&client, &node_name, &sans) => outcome,
            () = cancel.cancelled() => return,
        };
        let wait = match outcome.and_then(|credentials| {
            current.set(&credentials)?;
            Ok(credentials)
        }) {
            Ok(credentials) => {
                retry = Duration::from_secs(5);
                let lifetime = renewal_delay(&credentials.cert_pem);
                tracing::info!(node = %node_name, renew_in = ?lifetime, "serving certificate issued");
                lifetime
            }
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "requesting a serving certificate; serving a self-signed one meanwhile");
                retry = (retry * 2).min(Duration::from_secs(300));
                retry
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = cancel.cancelled() => return,
        }
    }
}

/// 80% of the time left on the certificate.
fn renewal_delay(cert_pem: &str) -> Duration {
    let Some(not_after) = kyb_pki::csr::certificate_not_after(cert_pem.as_bytes()) else {
        return Duration::from_secs(3600);
    };
    let left = (not_after.unix_timestamp() - jiff::Timestamp::now().as_second()).max(60) as u64;
    Duration::from_secs(left * 4 / 5)
}

/// One CSR: created, then watched (polled) until it is issued, denied or failed.
async fn request(
    client: &kube::Client,
    node_name: &str,
    sans: &Sans,
) -> anyhow::Result<Credentials> {
    let subject = format!("system:node:{node_name}");
    let pair = kyb_pki::serving_request((&subject, &["system:nodes"]), sans)
        .context("creating the certificate request")?;
    let csr = CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some("csr-".to_string()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(pair.cert_pem.clone().into_bytes()),
            signer_name: KUBELET_SERVING_SIGNER.to_string(),
            usages: Some(vec!["digital signature".into(), "server auth".into()]),
            ..Default::default()
        },
        status: None,
    };
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    let created = api
        .create(&PostParams::default(), &csr)
        .await
        .context("creating the CertificateSigningRequest")?;
    let name = created.metadata.name.unwrap_or_default();
    tracing::info!(csr = %name, "requested a serving certificate");
    let deadline = tokio::time::Instant::now() + ISSUE_DEADLINE;
    while tokio::time::Instant::now() < deadline {
        let csr = api
            .get(&name)
            .await
            .with_context(|| format!("reading CSR {name}"))?;
        if let Some(status) = &csr.status {
            for condition in status.conditions.iter().flatten() {
                if matches!(condition.type_.as_str(), "Denied" | "Failed")
                    && condition.status == "True"
                {
                    anyhow::bail!(
                        "CSR {name} {}: {}",
                        condition.type_.to_lowercase(),
                        condition.message.clone().unwrap_or_default()
                    );
                }
            }
            if let Some(certificate) = status.certificate.as_ref().filter(|c| !c.0.is_empty()) {
                return Ok(Credentials {
                    cert_pem: String::from_utf8_lossy(&certificate.0).into_owned(),
                    key_pem: pair.key_pem,
                });
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    anyhow::bail!("CSR {name} was not issued within {ISSUE_DEADLINE:?}")
}
