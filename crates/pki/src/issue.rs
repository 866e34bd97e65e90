//! Issuing certificates from the cluster CA, and deciding when a stored one can be reused.

use crate::{Credentials, Error, files};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use std::net::IpAddr;
use std::path::Path;
use time::{Duration, OffsetDateTime};

/// How long the CA is valid.
const CA_VALIDITY: Duration = Duration::days(3650);
/// How long serving and client certificates are valid.
const LEAF_VALIDITY: Duration = Duration::days(365);
/// Certificates expiring sooner than this are reissued when loaded.
const RENEW_BEFORE: Duration = Duration::days(90);

/// The names a serving certificate must cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sans {
    pub dns: Vec<String>,
    pub ips: Vec<IpAddr>,
}

impl Sans {
    /// One name per line, sorted: what is stored beside the certificate to compare with.
    fn fingerprint(&self) -> String {
        let mut names: Vec<String> = self
            .dns
            .iter()
            .map(|d| format!("DNS:{d}"))
            .chain(self.ips.iter().map(|ip| format!("IP:{ip}")))
            .collect();
        names.sort();
        names.dedup();
        names.join("\n") + "\n"
    }
}

/// The cluster CA: its certificate (PEM) and what signs with it.
pub(crate) struct Authority {
    pub(crate) cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    pub(crate) fn load_or_create(dir: &Path) -> Result<Authority, Error> {
        let (cert_path, key_path) = (dir.join("ca.crt"), dir.join("ca.key"));
        if let (Some(cert_pem), Some(key_pem)) = (files::read(&cert_path)?, files::read(&key_path)?)
        {
            let key = KeyPair::from_pem(&key_pem).map_err(|e| Error::certificate("ca.key", e))?;
            let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)
                .map_err(|e| Error::certificate("ca.crt", e))?;
            return Ok(Authority { cert_pem, issuer });
        }
        let key = KeyPair::generate().map_err(|e| Error::certificate("CA key", e))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name("kybernetes-ca", &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + CA_VALIDITY;
        let cert = params
            .self_signed(&key)
            .map_err(|e| Error::certificate("CA", e))?;
        let cert_pem = cert.pem();
        // The key first: a certificate without its key is useless, the reverse is redone.
        files::write_private(&key_path, &key.serialize_pem())?;
        files::write_private(&cert_path, &cert_pem)?;
        let issuer = Issuer::new(params, key);
        Ok(Authority { cert_pem, issuer })
    }

    fn issue(&self, what: &str, mut params: CertificateParams) -> Result<Credentials, Error> {
        let key = KeyPair::generate().map_err(|e| Error::certificate(what, e))?;
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + LEAF_VALIDITY;
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| Error::certificate(what, e))?;
        Ok(Credentials {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

fn name(common_name: &str, organizations: &[&str]) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    for organization in organizations {
        name.push(DnType::OrganizationName, *organization);
    }
    name.push(DnType::CommonName, common_name);
    name
}

/// Stored credentials `<file>.crt`/`<file>.key`, if both exist, were issued by this CA's
/// key, and are not close to expiry; `extra` is a sidecar file that must hold `expected`.
fn reusable(
    dir: &Path,
    file: &str,
    sidecar: &str,
    expected: &str,
) -> Result<Option<Credentials>, Error> {
    let cert = files::read(&dir.join(format!("{file}.crt")))?;
    let key = files::read(&dir.join(format!("{file}.key")))?;
    let recorded = files::read(&dir.join(format!("{file}.{sidecar}")))?;
    let (Some(cert_pem), Some(key_pem), Some(recorded)) = (cert, key, recorded) else {
        return Ok(None);
    };
    if recorded != expected {
        return Ok(None);
    }
    match crate::identity::not_after(&cert_pem) {
        Some(expiry) if expiry - OffsetDateTime::now_utc() > RENEW_BEFORE => {
            Ok(Some(Credentials { cert_pem, key_pem }))
        }
        _ => Ok(None),
    }
}

fn store(
    dir: &Path,
    file: &str,
    sidecar: &str,
    recorded: &str,
    credentials: &Credentials,
) -> Result<(), Error> {
    files::write_private(&dir.join(format!("{file}.key")), &credentials.key_pem)?;
    files::write_private(&dir.join(format!("{file}.crt")), &credentials.cert_pem)?;
    files::write_private(&dir.join(format!("{file}.{sidecar}")), recorded)
}

/// The serving certificate (`server.crt`), reissued when it does not cover `sans`.
pub(crate) fn serving(dir: &Path, ca: &Authority, sans: &Sans) -> Result<Credentials, Error> {
    serving_named(dir, ca, "server", ("kube-apiserver", &[]), sans)
}

/// A serving certificate for `subject` (common name, organizations) stored as
/// `<file>.crt`, reissued when it does not cover `sans`.
pub(crate) fn serving_named(
    dir: &Path,
    ca: &Authority,
    file: &str,
    subject: (&str, &[&str]),
    sans: &Sans,
) -> Result<Credentials, Error> {
    // The API server's record holds the names alone (as it always has); others' the
    // subject too.
    let expected = if file == "server" {
        sans.fingerprint()
    } else {
        format!(
            "{}/{}\n{}",
            subject.0,
            subject.1.join(","),
            sans.fingerprint()
        )
    };
    if let Some(credentials) = reusable(dir, file, "sans", &expected)? {
        return Ok(credentials);
    }
    let params = serving_params(subject, sans)?;
    let credentials = ca.issue(file, params)?;
    store(dir, file, "sans", &expected, &credentials)?;
    Ok(credentials)
}

/// A serving certificate's parameters: `subject`, `sans`, server usages.
pub(crate) fn serving_params(
    subject: (&str, &[&str]),
    sans: &Sans,
) -> Result<CertificateParams, Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name = name(subject.0, subject.1);
    for dns in &sans.dns {
        let dns = dns
            .clone()
            .try_into()
            .map_err(|e| Error::certificate(format!("name {dns:?}"), e))?;
        params.subject_alt_names.push(SanType::DnsName(dns));
    }
    for ip in &sans.ips {
        params.subject_alt_names.push(SanType::IpAddress(*ip));
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    Ok(params)
}

/// A self-signed serving certificate for `common_name` and `sans` (what a kubelet serves
/// when no CA issued it one), valid for a year.
pub fn self_signed(common_name: &str, sans: &Sans) -> Result<Credentials, Error> {
    let mut params = serving_params((common_name, &[]), sans)?;
    let key = KeyPair::generate().map_err(|e| Error::certificate("self-signed key", e))?;
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + LEAF_VALIDITY;
    let cert = params
        .self_signed(&key)
        .map_err(|e| Error::certificate("self-signed", e))?;
    Ok(Credentials {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A PKCS#10 certificate signing request (PEM) for a serving certificate of `subject`
/// covering `sans`, and its new private key (PEM).
pub fn serving_request(subject: (&str, &[&str]), sans: &Sans) -> Result<Credentials, Error> {
    let params = serving_params(subject, sans)?;
    let key = KeyPair::generate().map_err(|e| Error::certificate("request key", e))?;
    let request = params
        .serialize_request(&key)
        .map_err(|e| Error::certificate("request", e))?;
    let pem = request
        .pem()
        .map_err(|e| Error::certificate("request PEM", e))?;
    Ok(Credentials {
        cert_pem: pem,
        key_pem: key.serialize_pem(),
    })
}

/// A client certificate for `user` in `groups` (`<file>.crt`), reused while it names them.
pub(crate) fn client(
    dir: &Path,
    ca: &Authority,
    file: &str,
    user: &str,
    groups: &[&str],
) -> Result<Credentials, Error> {
    if file.is_empty() || file.contains(['/', '.']) {
        return Err(Error::certificate(
            format!("file {file:?}"),
            "not a plain file name",
        ));
    }
    let expected = format!("{user}\n{}\n", groups.join("\n"));
    if let Some(credentials) = reusable(dir, file, "subject", &expected)? {
        return Ok(credentials);
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = name(user, groups);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let credentials = ca.issue(file, params)?;
    store(dir, file, "subject", &expected, &credentials)?;
    Ok(credentials)
}

/// A signing key (`<file>.key`, PKCS#8 PEM, ECDSA P-256), created once.
pub(crate) fn signing_key(dir: &Path, file: &str) -> Result<String, Error> {
    let path = dir.join(format!("{file}.key"));
    if let Some(pem) = files::read(&path)? {
        return Ok(pem);
    }
    let key = KeyPair::generate().map_err(|e| Error::certificate(file, e))?;
    let pem = key.serialize_pem();
    files::write_private(&path, &pem)?;
    Ok(pem)
}
