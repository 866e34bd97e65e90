//! What a certificate says: the user (common name) and groups (organizations) of a
//! client certificate, as Kubernetes' x509 authenticator reads them, and expiry.

use x509_parser::prelude::{FromDer, X509Certificate};

/// The user a verified client certificate authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub groups: Vec<String>,
}

/// The identity in a DER certificate: CN is the user, each O a group. `None` when the
/// certificate cannot be parsed or has no common name.
pub fn identity(der: &[u8]) -> Option<Identity> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let user = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(Identity { user, groups })
}

/// When a PEM certificate expires.
pub(crate) fn not_after(pem: &str) -> Option<time::OffsetDateTime> {
    let der = crate::tls::pem_certificates(pem).ok()?.into_iter().next()?;
    let (_, cert) = X509Certificate::from_der(&der).ok()?;
    Some(cert.validity().not_after.to_datetime())
}
