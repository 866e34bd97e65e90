//! NodeRestriction for CertificateSigningRequests: a node may ask the kubelet signers
//! (`kubernetes.io/kubelet-serving`, `kubernetes.io/kube-apiserver-client-kubelet`) only for
//! certificates whose subject CN is `system:node:<its name>`. Includes the little PEM, base64
//! and DER reading needed to find a PKCS#10 request's subject common name.

use super::{NodeRequest, object};
use crate::denial::Denial;
use kyb_api::Operation;
use kyb_apimachinery::json;

/// The signer of kubelet serving certificates.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The signer of kubelet client certificates.
pub const KUBE_APISERVER_CLIENT_KUBELET_SIGNER: &str =
    "kubernetes.io/kube-apiserver-client-kubelet";

pub(super) fn admit_csr(node: &str, request: &NodeRequest<'_>) -> Result<(), Denial> {
    if request.operation != Operation::Create {
        return Ok(());
    }
    let csr = object(request.object)?;
    let signer = json::str_at(csr, &["spec", "signerName"]);
    if signer != KUBELET_SERVING_SIGNER && signer != KUBE_APISERVER_CLIENT_KUBELET_SIGNER {
        return Ok(());
    }
    let common_name = json::opt_str(csr, &["spec", "request"])
        .ok_or(CsrError::NotPem)
        .and_then(|encoded| kyb_apimachinery::base64::decode(encoded).map_err(|_| CsrError::NotPem))
        .and_then(|pem| request_common_name(&pem));
    let common_name = match common_name {
        Ok(cn) => cn,
        Err(error) => return Err(Denial::Forbidden(format!("unable to parse csr: {error}"))),
    };
    if common_name != format!("system:node:{node}") {
        return Err(Denial::Forbidden(format!(
            "can only create a node CSR with CN=system:node:{node}"
        )));
    }
    Ok(())
}

/// Why a CSR could not be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CsrError {
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    NotPem,
    #[error("x509: malformed certificate request")]
    Malformed,
}

/// The subject common name of a PEM-encoded PKCS#10 certificate request ("" when it has
/// none; the last CN attribute when it has several, as Go reads it).
pub fn request_common_name(pem: &[u8]) -> Result<String, CsrError> {
    let der = pem_block(pem, "CERTIFICATE REQUEST").ok_or(CsrError::NotPem)?;
    subject_common_name(&der).ok_or(CsrError::Malformed)
}

/// The bytes of the first PEM block, if it has type `label`.
fn pem_block(pem: &[u8], label: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + "-----BEGIN ".len()..];
    let (kind, rest) = rest.split_once("-----")?;
    if kind != label {
        return None;
    }
    let end = rest.find(&format!("-----END {kind}-----"))?;
    let body: String = rest[..end]
        .lines()
        .filter(|line| !line.contains(':'))
        .collect();
    kyb_apimachinery::base64::decode_pem_body(&body).ok()
}

/// One DER element: its tag, contents, and what follows it.
fn read_element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (length, &rest[count..])
    };
    if rest.len() < length {
        return None;
    }
    Some((tag, &rest[..length], &rest[length..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const INTEGER: u8 = 0x02;
const COMMON_NAME_OID: &[u8] = &[0x55, 0x04, 0x03];

/// CertificationRequest → certificationRequestInfo → subject → last CN value.
fn subject_common_name(der: &[u8]) -> Option<String> {
    let (SEQUENCE, request, _) = read_element(der)? else {
        return None;
    };
    let (SEQUENCE, info, _) = read_element(request)? else {
        return None;
    };
    let (INTEGER, _, rest) = read_element(info)? else {
        return None;
    };
    let (SEQUENCE, mut names, _) = read_element(rest)? else {
        return None;
    };
    let mut common_name = String::new();
    while !names.is_empty() {
        let (SET, mut set, next) = read_element(names)? else {
            return None;
        };
        names = next;
        while !set.is_empty() {
            let (SEQUENCE, pair, next) = read_element(set)? else {
                return None;
            };
            set = next;
            let (OID, oid, value) = read_element(pair)? else {
                return None;
            };
            if oid == COMMON_NAME_OID {
                let (tag, bytes, _) = read_element(value)?;
                common_name = decode_string(tag, bytes)?;
            }
        }
    }
    Some(common_name)
}

/// The text of an ASN.1 string (UTF8, Printable, IA5, T61, BMP, Universal).
fn decode_string(tag: u8, bytes: &[u8]) -> Option<String> {
    match tag {
        0x0c | 0x13 | 0x16 => String::from_utf8(bytes.to_vec()).ok(),
        0x14 => Some(bytes.iter().map(|b| char::from(*b)).collect()),
        0x1e => {
            if !bytes.len().is_multiple_of(2) {
                return None;
            }
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        0x1c => {
            if !bytes.len().is_multiple_of(4) {
                return None;
            }
            bytes
                .chunks_exact(4)
                .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
                .collect()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::{Value, json};

    use super::super::node_restriction;
    use super::super::test_support::*;
    use super::*;

    fn der(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        if content.len() < 0x80 {
            out.push(content.len() as u8);
        } else {
            out.push(0x82);
            out.extend_from_slice(&(content.len() as u16).to_be_bytes());
        }
        out.extend_from_slice(content);
        out
    }

    fn base64(bytes: &[u8]) -> String {
        kyb_apimachinery::base64::encode(bytes)
    }

    /// A syntactically valid CSR whose subject has O=system:nodes and the given CNs.
    fn csr_pem(common_names: &[&str]) -> String {
        let mut rdns = der(
            SET,
            &der(
                SEQUENCE,
                &[der(OID, &[0x55, 0x04, 0x0a]), der(0x0c, b"system:nodes")].concat(),
            ),
        );
        for cn in common_names {
            rdns.extend(der(
                SET,
                &der(
                    SEQUENCE,
                    &[der(OID, COMMON_NAME_OID), der(0x0c, cn.as_bytes())].concat(),
                ),
            ));
        }
        let info = der(
            SEQUENCE,
            &[
                der(INTEGER, &[0]),
                der(SEQUENCE, &rdns),
                der(SEQUENCE, &[0u8; 150]),
                der(0xa0, &[]),
            ]
            .concat(),
        );
        let request = der(
            SEQUENCE,
            &[
                info,
                der(SEQUENCE, &[der(OID, &[0x2a])].concat()),
                der(0x03, &[0, 1, 2]),
            ]
            .concat(),
        );
        let body = base64(&request);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            lines.join("\n")
        )
    }

    fn csr_object(signer: &str, pem: &str) -> Value {
        json!({"spec": {"signerName": signer, "request": base64(pem.as_bytes()), "usages": ["client auth"]}})
    }

    fn run(csr: &Value) -> Result<(), Denial> {
        let groups = groups();
        let mut r = request(
            &groups,
            Operation::Create,
            "certificatesigningrequests",
            "",
            "csr-1",
            Some(csr),
            None,
        );
        r.group = "certificates.k8s.io";
        r.namespace = "";
        node_restriction(&r, &Cache::default())
    }

    #[test]
    fn reads_the_common_name() {
        assert_eq!(
            request_common_name(csr_pem(&["system:node:n1"]).as_bytes()).unwrap(),
            "system:node:n1"
        );
        assert_eq!(
            request_common_name(csr_pem(&["a", "b"]).as_bytes()).unwrap(),
            "b"
        );
        assert_eq!(request_common_name(csr_pem(&[]).as_bytes()).unwrap(), "");
        assert_eq!(request_common_name(b"junk"), Err(CsrError::NotPem));
        assert_eq!(
            request_common_name(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
            Err(CsrError::NotPem)
        );
        assert_eq!(
            request_common_name(
                b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
            ),
            Err(CsrError::Malformed)
        );
        assert_eq!(
            kyb_apimachinery::base64::decode_pem_body("aGk=").unwrap(),
            b"hi"
        );
        assert!(kyb_apimachinery::base64::decode_pem_body("a*").is_err());
    }

    #[test]
    fn kubelet_signers_need_the_node_cn() {
        run(&csr_object(
            KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
            &csr_pem(&["system:node:n1"]),
        ))
        .unwrap();
        assert_eq!(
            run(&csr_object(
                KUBELET_SERVING_SIGNER,
                &csr_pem(&["system:node:n2"])
            ))
            .unwrap_err()
            .message("certificates.k8s.io", "certificatesigningrequests", "csr-1"),
            r#"certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: can only create a node CSR with CN=system:node:n1"#
        );
        // Other signers are not checked.
        run(&csr_object("example.com/signer", &csr_pem(&["anything"]))).unwrap();
        assert_eq!(
            run(&json!({"spec": {"signerName": KUBELET_SERVING_SIGNER, "request": "!!"}}))
                .unwrap_err(),
            Denial::forbidden("unable to parse csr: PEM block type must be CERTIFICATE REQUEST")
        );
    }

    #[test]
    fn hostile_der_never_panics() {
        let pem = csr_pem(&["system:node:n1"]);
        let der_bytes = pem_block(pem.as_bytes(), "CERTIFICATE REQUEST").unwrap();
        for cut in 0..der_bytes.len() {
            let _ = subject_common_name(&der_bytes[..cut]);
            let mut flipped = der_bytes.clone();
            flipped[cut] ^= 0xff;
            let _ = subject_common_name(&flipped);
        }
        assert!(read_element(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_none());
        assert!(read_element(&[0x30, 0x82, 0xff, 0xff]).is_none());
        assert!(decode_string(0x1e, &[0xd8, 0x00]).is_none());
    }
}
