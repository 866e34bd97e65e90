//! The cluster's public-key infrastructure, kept in one directory (`<data-dir>/pki`):
//! a cluster CA, the API server's serving certificate, client certificates (the admin's
//! and one per component identity), and the service-account token signing key.
//!
//! Everything is created on first use and reused afterwards; certificates close to
//! expiry, and a serving certificate missing a name it must now cover, are reissued
//! from the same CA. Keys are ECDSA P-256, written with mode 0600.
//!
//! Also here: TLS configurations for servers and clients ([`tls`]), the user a client
//! certificate names ([`identity`]), kubeconfig files ([`kubeconfig`]), and ES256 JSON Web
//! Tokens signed by the service-account key ([`jwt`]), and certificate signing requests:
//! reading them and signing them with a CA ([`csr`]).

pub mod csr;
mod files;
pub mod identity;
mod issue;
pub mod jwt;
pub mod kubeconfig;
pub mod tls;

pub use identity::{Identity, identity};
pub use issue::{Sans, self_signed, serving_request};

use std::path::{Path, PathBuf};

/// What went wrong with the PKI directory or a certificate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("certificate {what}: {message}")]
    Certificate { what: String, message: String },
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

impl Error {
    fn certificate(what: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::Certificate {
            what: what.into(),
            message: message.to_string(),
        }
    }
}

/// A certificate and its private key, both PEM.
#[derive(Clone)]
pub struct Credentials {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

/// The cluster's CA and the certificates issued from it, backed by a directory.
pub struct Pki {
    dir: PathBuf,
    ca: issue::Authority,
    server: Credentials,
    service_account_key_pem: String,
}

impl Pki {
    /// Opens the PKI in `dir`, creating what is missing: the CA, a serving certificate
    /// for `sans`, and the service-account signing key.
    pub fn load_or_create(dir: &Path, sans: &Sans) -> Result<Pki, Error> {
        files::create_dir(dir)?;
        let ca = issue::Authority::load_or_create(dir)?;
        let server = issue::serving(dir, &ca, sans)?;
        let service_account_key_pem = issue::signing_key(dir, "service-account")?;
        Ok(Pki {
            dir: dir.to_path_buf(),
            ca,
            server,
            service_account_key_pem,
        })
    }

    /// The CA certificate, PEM: what clients trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca.cert_pem
    }

    /// The API server's certificate and key.
    pub fn serving(&self) -> &Credentials {
        &self.server
    }

    /// The client certificate of `user` in `groups`, stored as `<file>.crt`/`<file>.key`:
    /// reused while it names the same user and groups and is not close to expiry.
    pub fn client(&self, file: &str, user: &str, groups: &[&str]) -> Result<Credentials, Error> {
        issue::client(&self.dir, &self.ca, file, user, groups)
    }

    /// The PKCS#8 PEM of the key that signs service-account tokens (ES256).
    pub fn service_account_key_pem(&self) -> &str {
        &self.service_account_key_pem
    }

    /// The directory holding everything.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The cluster CA alone, for issuing client certificates (what an administrator does
/// for a new user), leaving the serving certificate and keys as they are.
pub struct ClientIssuer {
    dir: PathBuf,
    ca: issue::Authority,
}

impl ClientIssuer {
    /// Opens the CA in `dir` (created if missing).
    pub fn open(dir: &Path) -> Result<ClientIssuer, Error> {
        files::create_dir(dir)?;
        Ok(ClientIssuer {
            dir: dir.to_path_buf(),
            ca: issue::Authority::load_or_create(dir)?,
        })
    }

    /// The client certificate of `user` in `groups`, stored as `<file>.crt`/`<file>.key`.
    pub fn client(&self, file: &str, user: &str, groups: &[&str]) -> Result<Credentials, Error> {
        issue::client(&self.dir, &self.ca, file, user, groups)
    }

    pub fn ca_pem(&self) -> &str {
        &self.ca.cert_pem
    }

    /// A serving certificate for `common_name` in `organizations` covering `sans` (a
    /// kubelet's: `system:node:<name>` in `system:nodes`), stored as `<file>.crt`/`<file>.key`
    /// and reused while it covers them and is not close to expiry.
    pub fn serving(
        &self,
        file: &str,
        common_name: &str,
        organizations: &[&str],
        sans: &Sans,
    ) -> Result<Credentials, Error> {
        issue::serving_named(
            &self.dir,
            &self.ca,
            file,
            (common_name, organizations),
            sans,
        )
    }
}
