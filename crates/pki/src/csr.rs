//! Certificate signing requests: PEM decoding as Go's `encoding/pem` does it, reading a
//! PKCS#10 request (subject, requested names, signature) with the messages Kubernetes'
//! validation gives, checking `status.certificate` content, and signing a request with a
//! CA as kube-controller-manager's `csrsigning` does (the subject and names from the
//! request, the key usages from `spec.usages`, the lifetime from the signer's duration
//! capped by `expirationSeconds` and by the CA's own expiry).

use crate::Error;
use base64::Engine as _;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber, SubjectPublicKeyInfo,
};
use std::net::IpAddr;
use std::path::Path;
use time::{Duration, OffsetDateTime};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

/// One PEM block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The type after `BEGIN` (`CERTIFICATE REQUEST`).
    pub kind: String,
    /// Whether the block has `Key: value` headers.
    pub has_headers: bool,
    pub bytes: Vec<u8>,
}

/// The first PEM block in `data` and what follows it, skipping text before it, as Go's
/// `pem.Decode` does; `None` when there is no well-formed block.
pub fn decode_pem(data: &[u8]) -> Option<(Block, &[u8])> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let mut rest = data;
    loop {
        let start = find(rest, BEGIN)?;
        // A BEGIN line starts the data or a line.
        if start > 0 && rest[start - 1] != b'\n' {
            rest = &rest[start + BEGIN.len()..];
            continue;
        }
        let after = &rest[start + BEGIN.len()..];
        let line_end = find(after, b"\n").unwrap_or(after.len());
        let line = trim(&after[..line_end]);
        let Some(kind) = line.strip_suffix(b"-----") else {
            rest = after;
            continue;
        };
        let kind = String::from_utf8_lossy(kind).into_owned();
        let body = after.get(line_end + 1..).unwrap_or_default();
        let end_marker = format!("-----END {kind}-----");
        let Some(end) = find(body, end_marker.as_bytes()) else {
            rest = after;
            continue;
        };
        let (mut has_headers, mut text) = (false, Vec::new());
        for line in body[..end].split(|b| *b == b'\n') {
            let line = trim(line);
            if line.contains(&b':') {
                has_headers = true;
            } else {
                text.extend(line.iter().filter(|b| !b.is_ascii_whitespace()));
            }
        }
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&text) else {
            rest = after;
            continue;
        };
        let tail = &body[end + end_marker.len()..];
        let tail = tail.strip_prefix(b"\r").unwrap_or(tail);
        let tail = tail.strip_prefix(b"\n").unwrap_or(tail);
        return Some((
            Block {
                kind,
                has_headers,
                bytes,
            },
            tail,
        ));
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn trim(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &line[..end]
}

/// What a certificate signing request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub email_addresses: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub uris: Vec<String>,
    /// The DER SubjectPublicKeyInfo.
    public_key: Vec<u8>,
    /// Organizational units, countries, localities, provinces (kept in issued subjects).
    other_subject: Vec<(DnType, String)>,
}

impl Request {
    /// A request for a subject alone, no names (what tests of signer rules start from).
    pub fn new(common_name: &str, organizations: &[&str]) -> Request {
        Request {
            common_name: common_name.to_string(),
            organizations: organizations.iter().map(|o| o.to_string()).collect(),
            ..Request::default()
        }
    }
}

/// The PEM `CERTIFICATE REQUEST` in `pem`, parsed (Kubernetes' `certificates.ParseCSR`);
/// with `verify`, its signature checked too (`CheckSignature`). Errors are worded as Go's.
pub fn parse_request(pem: &[u8], verify: bool) -> Result<Request, String> {
    let block = match decode_pem(pem) {
        Some((block, _)) if block.kind == "CERTIFICATE REQUEST" => block,
        _ => return Err("PEM block type must be CERTIFICATE REQUEST".to_string()),
    };
    let (_, csr) = X509CertificationRequest::from_der(&block.bytes)
        .map_err(|_| "x509: malformed certificate request".to_string())?;
    let info = &csr.certification_request_info;
    if verify && csr.verify_signature().is_err() {
        let ec = info.subject_pki.algorithm.algorithm.to_id_string() == "1.2.840.10045.2.1";
        return Err(if ec {
            "x509: ECDSA verification failure".to_string()
        } else {
            "crypto/rsa: verification error".to_string()
        });
    }
    let text = |a: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        a.as_str().map(str::to_string).unwrap_or_default()
    };
    let subject = &info.subject;
    let mut request = Request {
        common_name: subject
            .iter_common_name()
            .next()
            .map(text)
            .unwrap_or_default(),
        organizations: subject.iter_organization().map(text).collect(),
        public_key: info.subject_pki.raw.to_vec(),
        ..Request::default()
    };
    for (dn, values) in [
        (
            DnType::OrganizationalUnitName,
            subject
                .iter_organizational_unit()
                .map(text)
                .collect::<Vec<_>>(),
        ),
        (
            DnType::CountryName,
            subject.iter_country().map(text).collect(),
        ),
        (
            DnType::LocalityName,
            subject.iter_locality().map(text).collect(),
        ),
        (
            DnType::StateOrProvinceName,
            subject.iter_state_or_province().map(text).collect(),
        ),
    ] {
        request
            .other_subject
            .extend(values.into_iter().map(|v| (dn.clone(), v)));
    }
    for extension in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(names) = extension else {
            continue;
        };
        for name in &names.general_names {
            match name {
                GeneralName::DNSName(dns) => request.dns_names.push(dns.to_string()),
                GeneralName::RFC822Name(email) => request.email_addresses.push(email.to_string()),
                GeneralName::URI(uri) => request.uris.push(uri.to_string()),
                GeneralName::IPAddress(bytes) => {
                    if let Ok(v4) = <[u8; 4]>::try_from(*bytes) {
                        request.ip_addresses.push(IpAddr::from(v4));
                    } else if let Ok(v6) = <[u8; 16]>::try_from(*bytes) {
                        request.ip_addresses.push(IpAddr::from(v6));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(request)
}

/// Checks `status.certificate` content as Kubernetes' validation does: only `CERTIFICATE`
/// blocks without headers, each a parseable certificate, at least one. Empty is fine.
pub fn validate_certificates(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let (mut rest, mut blocks) = (pem, 0);
    while let Some((block, tail)) = decode_pem(rest) {
        if block.kind != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.kind
            ));
        }
        if block.has_headers {
            return Err("no PEM block headers are permitted".to_string());
        }
        X509Certificate::from_der(&block.bytes)
            .map_err(|_| "x509: malformed certificate".to_string())?;
        blocks += 1;
        rest = tail;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".to_string());
    }
    Ok(())
}

/// When the first certificate of a PEM bundle expires (`None` if none parses).
pub fn certificate_not_after(pem: &[u8]) -> Option<OffsetDateTime> {
    let (block, _) = decode_pem(pem)?;
    let (_, cert) = X509Certificate::from_der(&block.bytes).ok()?;
    Some(cert.validity().not_after.to_datetime())
}

/// How far back an issued certificate's validity starts, for clocks a little behind.
const BACKDATE: Duration = Duration::minutes(5);
/// Lifetimes shorter than this are not backdated (5 minutes would be a large share).
const SHORT: Duration = Duration::hours(8);

/// A CA that signs requests: kube-controller-manager's `--cluster-signing-cert-file` and
/// `--cluster-signing-key-file`.
pub struct Signer {
    issuer: Issuer<'static, KeyPair>,
    not_after: OffsetDateTime,
    ca_pem: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The CA in PEM files (a certificate and its private key).
    pub fn from_files(cert: &Path, key: &Path) -> Result<Signer, Error> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| Error::Io {
                action: "reading",
                path: path.to_path_buf(),
                source,
            })
        };
        Signer::from_pem(&read(cert)?, &read(key)?)
    }

    /// The CA from its certificate and key, PEM.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Signer, Error> {
        let key = KeyPair::from_pem(key_pem).map_err(|e| Error::certificate("signing key", e))?;
        let not_after = certificate_not_after(cert_pem.as_bytes())
            .ok_or_else(|| Error::certificate("signing certificate", "no certificate"))?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)
            .map_err(|e| Error::certificate("signing certificate", e))?;
        Ok(Signer {
            issuer,
            not_after,
            ca_pem: cert_pem.to_string(),
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Signs the request in `request_pem` for `usages` (Kubernetes' key usage names),
    /// valid for `ttl` from `now` (less the backdating), never past the CA's expiry.
    /// Returns the certificate, PEM.
    pub fn sign(
        &self,
        request_pem: &[u8],
        usages: &[String],
        ttl: std::time::Duration,
        now: std::time::SystemTime,
    ) -> Result<String, Error> {
        let now = OffsetDateTime::from(now);
        let request =
            parse_request(request_pem, true).map_err(|e| Error::certificate("request", e))?;
        let public_key = SubjectPublicKeyInfo::from_der(&request.public_key)
            .map_err(|e| Error::certificate("request's public key", e))?;
        let mut params = CertificateParams::default();
        let mut subject = DistinguishedName::new();
        // rcgen keeps one value per attribute type: a second organization goes in under
        // the same OID written as a custom type; more are not carried over.
        let org_types = [
            DnType::OrganizationName,
            DnType::CustomDnType(vec![2, 5, 4, 10]),
        ];
        for (organization, dn) in request.organizations.iter().zip(org_types) {
            subject.push(dn, organization.as_str());
        }
        for (dn, value) in &request.other_subject {
            subject.push(dn.clone(), value.as_str());
        }
        if !request.common_name.is_empty() {
            subject.push(DnType::CommonName, request.common_name.as_str());
        }
        params.distinguished_name = subject;
        for dns in &request.dns_names {
            let name = dns
                .clone()
                .try_into()
                .map_err(|e| Error::certificate(format!("name {dns:?}"), e))?;
            params.subject_alt_names.push(SanType::DnsName(name));
        }
        for ip in &request.ip_addresses {
            params.subject_alt_names.push(SanType::IpAddress(*ip));
        }
        for email in &request.email_addresses {
            let name = email
                .clone()
                .try_into()
                .map_err(|e| Error::certificate(format!("email {email:?}"), e))?;
            params.subject_alt_names.push(SanType::Rfc822Name(name));
        }
        for uri in &request.uris {
            let name = uri
                .clone()
                .try_into()
                .map_err(|e| Error::certificate(format!("URI {uri:?}"), e))?;
            params.subject_alt_names.push(SanType::URI(name));
        }
        let (key_usages, extended) = key_usages(usages)?;
        params.key_usages = key_usages;
        params.extended_key_usages = extended;
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        let ttl = Duration::try_from(ttl).unwrap_or(Duration::days(365));
        let backdate = if ttl < SHORT {
            Duration::ZERO
        } else {
            BACKDATE
        };
        params.not_before = now - backdate;
        params.not_after = (now + ttl - backdate).min(self.not_after);
        params.serial_number = Some(serial()?);
        let cert = params
            .signed_by(&public_key, &self.issuer)
            .map_err(|e| Error::certificate("signing", e))?;
        Ok(cert.pem())
    }
}

/// A random positive 128-bit serial number.
fn serial() -> Result<SerialNumber, Error> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::certificate("serial number", "no randomness"))?;
    bytes[0] &= 0x7f;
    bytes[0] |= 0x01;
    Ok(SerialNumber::from(bytes.to_vec()))
}

/// Kubernetes' key usage names as key usages and extended key usages
/// (`keyUsagesFromStrings`).
fn key_usages(
    usages: &[String],
) -> Result<(Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>), Error> {
    let (mut keys, mut extended) = (Vec::new(), Vec::new());
    for usage in usages {
        let key = match usage.as_str() {
            "signing" | "digital signature" => Some(KeyUsagePurpose::DigitalSignature),
            "content commitment" => Some(KeyUsagePurpose::ContentCommitment),
            "key encipherment" => Some(KeyUsagePurpose::KeyEncipherment),
            "key agreement" => Some(KeyUsagePurpose::KeyAgreement),
            "data encipherment" => Some(KeyUsagePurpose::DataEncipherment),
            "cert sign" => Some(KeyUsagePurpose::KeyCertSign),
            "crl sign" => Some(KeyUsagePurpose::CrlSign),
            "encipher only" => Some(KeyUsagePurpose::EncipherOnly),
            "decipher only" => Some(KeyUsagePurpose::DecipherOnly),
            _ => None,
        };
        if let Some(key) = key {
            if !keys.contains(&key) {
                keys.push(key);
            }
            continue;
        }
        let ext = match usage.as_str() {
            "any" => ExtendedKeyUsagePurpose::Any,
            "server auth" => ExtendedKeyUsagePurpose::ServerAuth,
            "client auth" => ExtendedKeyUsagePurpose::ClientAuth,
            "code signing" => ExtendedKeyUsagePurpose::CodeSigning,
            "email protection" | "s/mime" => ExtendedKeyUsagePurpose::EmailProtection,
            "timestamping" => ExtendedKeyUsagePurpose::TimeStamping,
            "ocsp signing" => ExtendedKeyUsagePurpose::OcspSigning,
            "ipsec end system" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 5]),
            "ipsec tunnel" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 6]),
            "ipsec user" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 7]),
            "microsoft sgc" => {
                ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 4, 1, 311, 10, 3, 3])
            }
            "netscape sgc" => ExtendedKeyUsagePurpose::Other(vec![2, 16, 840, 1, 113730, 4, 1]),
            other => {
                return Err(Error::certificate(
                    "usages",
                    format!("unrecognized usage {other:?}"),
                ));
            }
        };
        if !extended.contains(&ext) {
            extended.push(ext);
        }
    }
    Ok((keys, extended))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cn: &str, orgs: &[&str], dns: &[&str]) -> (String, KeyPair) {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("key: {e}"));
        let mut params =
            CertificateParams::new(dns.iter().map(|d| d.to_string()).collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("params: {e}"));
        let mut name = DistinguishedName::new();
        for org in orgs {
            name.push(DnType::OrganizationName, *org);
        }
        name.push(DnType::CommonName, cn);
        params.distinguished_name = name;
        let csr = params
            .serialize_request(&key)
            .and_then(|r| r.pem())
            .unwrap_or_else(|e| panic!("request: {e}"));
        (csr, key)
    }

    fn ca() -> Signer {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("key: {e}"));
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.not_after = OffsetDateTime::now_utc() + Duration::days(30);
        let cert = params
            .self_signed(&key)
            .unwrap_or_else(|e| panic!("CA: {e}"));
        Signer::from_pem(&cert.pem(), &key.serialize_pem()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn requests_are_read_and_checked_as_kubernetes_does() {
        let (pem, _) = request("alice", &["ops"], &["a.example.com"]);
        let parsed = parse_request(pem.as_bytes(), true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.common_name, "alice");
        assert_eq!(parsed.organizations, vec!["ops"]);
        assert_eq!(parsed.dns_names, vec!["a.example.com"]);
        assert_eq!(
            parse_request(b"not pem", true),
            Err("PEM block type must be CERTIFICATE REQUEST".to_string())
        );
        let cert = ca().ca_pem().to_string();
        assert_eq!(
            parse_request(cert.as_bytes(), true),
            Err("PEM block type must be CERTIFICATE REQUEST".to_string())
        );
        // A flipped bit in the signature.
        let (block, _) = decode_pem(pem.as_bytes()).unwrap_or_else(|| panic!("no block"));
        let mut der = block.bytes.clone();
        let last = der.len() - 3;
        der[last] ^= 0x01;
        let tampered = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            base64::engine::general_purpose::STANDARD.encode(&der)
        );
        assert_eq!(
            parse_request(tampered.as_bytes(), true),
            Err("x509: ECDSA verification failure".to_string())
        );
        assert!(parse_request(tampered.as_bytes(), false).is_ok());
    }

    #[test]
    fn signing_follows_the_request_and_the_usages() {
        let signer = ca();
        let (pem, _) = request("bob", &["team"], &["b.example.com"]);
        let now = OffsetDateTime::now_utc();
        let at = std::time::SystemTime::from(now);
        let cert = signer
            .sign(
                pem.as_bytes(),
                &["digital signature".into(), "client auth".into()],
                std::time::Duration::from_secs(3600),
                at,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(validate_certificates(cert.as_bytes()), Ok(()));
        let (block, _) = decode_pem(cert.as_bytes()).unwrap_or_else(|| panic!("no block"));
        let identity = crate::identity(&block.bytes).unwrap_or_else(|| panic!("no identity"));
        assert_eq!(identity.user, "bob");
        assert_eq!(identity.groups, vec!["team"]);
        let expiry = certificate_not_after(cert.as_bytes()).unwrap_or(now);
        // One hour is short: not backdated.
        assert!((expiry - (now + Duration::hours(1))).abs() < Duration::seconds(2));
        // Capped by the CA's own expiry (30 days).
        let long = signer
            .sign(
                pem.as_bytes(),
                &["client auth".into()],
                std::time::Duration::from_secs(365 * 86400),
                at,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let expiry = certificate_not_after(long.as_bytes()).unwrap_or(now);
        assert!(expiry <= now + Duration::days(30));
        assert!(
            signer
                .sign(
                    pem.as_bytes(),
                    &["bogus".into()],
                    std::time::Duration::from_secs(3600),
                    at
                )
                .is_err()
        );
    }

    #[test]
    fn certificate_content_is_checked() {
        let signer = ca();
        assert_eq!(validate_certificates(b""), Ok(()));
        assert_eq!(validate_certificates(signer.ca_pem().as_bytes()), Ok(()));
        assert_eq!(
            validate_certificates(b"junk"),
            Err("must contain at least one CERTIFICATE PEM block".to_string())
        );
        let (pem, _) = request("x", &[], &[]);
        assert_eq!(
            validate_certificates(pem.as_bytes()),
            Err(
                "only CERTIFICATE PEM blocks are allowed, found \"CERTIFICATE REQUEST\""
                    .to_string()
            )
        );
    }
}
