//! CertificateSigningRequest validation with Kubernetes' rules and messages
//! (`pkg/apis/certificates/validation`): the request a valid PEM `CERTIFICATE REQUEST`, the
//! usages known and not repeated, the signer name a domain and a path, `expirationSeconds`
//! of at least 600, the conditions' types and statuses, `status.certificate` PEM
//! `CERTIFICATE` blocks; and on updates what each path (main, `/status`, `/approval`) may
//! change. Bad data already stored is tolerated as Kubernetes tolerates it.

use kyb_apimachinery::field::{ErrorKind, FieldError, Path};
use kyb_apimachinery::{base64, json, names};
use serde_json::Value;

/// The signer of requests made through the legacy API (`v1beta1`); refused in `v1`.
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// Every key usage a request may ask for, sorted (as the "supported values" list is).
pub const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// What the write path lets change.
#[derive(Clone, Copy, Default)]
pub struct Allowed {
    /// `/approval`: Approved and Denied conditions.
    pub approval: bool,
    /// `/status`: the certificate.
    pub certificate: bool,
}

/// The bytes of a `[]byte` field (base64 in JSON).
pub fn bytes(csr: &Value, path: &[&str]) -> Vec<u8> {
    base64::decode(json::str_at(csr, path)).unwrap_or_default()
}

fn strings(csr: &Value, path: &[&str]) -> Vec<String> {
    json::at(csr, path)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|i| i.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn conditions(csr: &Value) -> Vec<&Value> {
    json::at(csr, &["status", "conditions"])
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default()
}

fn of_type<'a>(csr: &'a Value, kind: &str) -> Vec<&'a Value> {
    conditions(csr)
        .into_iter()
        .filter(|c| json::str_at(c, &["type"]) == kind)
        .collect()
}

/// Go's `%#v` of a byte slice: `[]byte{0x2d, 0x2d}`.
fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("{b:#x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

/// The rules a new object must follow; `old` relaxes them for data already stored.
pub fn validate(csr: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = Path::new("spec");
    let mut errs = Vec::new();
    let request = bytes(csr, &["spec", "request"]);
    if let Err(message) = kyb_pki::csr::parse_request(&request, true) {
        // The value is Go's rendering of the bytes, as Kubernetes' message shows it.
        errs.push(FieldError::new(
            ErrorKind::Invalid,
            &spec.child("request"),
            None,
            format!("{}: {message}", go_bytes(&request)),
        ));
    }
    let usages = strings(csr, &["spec", "usages"]);
    if usages.is_empty() {
        errs.push(FieldError::required(&spec.child("usages"), ""));
    }
    let old_usages = old
        .map(|o| strings(o, &["spec", "usages"]))
        .unwrap_or_default();
    if !old_usages.iter().any(|u| !USAGES.contains(&u.as_str())) {
        for (i, usage) in usages.iter().enumerate() {
            if !USAGES.contains(&usage.as_str()) {
                errs.push(FieldError::not_supported(
                    &spec.child("usages").index(i),
                    usage.as_str(),
                    USAGES,
                ));
            }
        }
    }
    if !has_duplicates(&old_usages) {
        let mut seen = Vec::new();
        for (i, usage) in usages.iter().enumerate() {
            if seen.contains(&usage) {
                errs.push(FieldError::duplicate(
                    &spec.child("usages").index(i),
                    usage.as_str(),
                ));
            }
            seen.push(usage);
        }
    }
    let signer = json::str_at(csr, &["spec", "signerName"]);
    let old_legacy =
        old.is_some_and(|o| json::str_at(o, &["spec", "signerName"]) == LEGACY_UNKNOWN);
    if signer == LEGACY_UNKNOWN && !old_legacy {
        errs.push(FieldError::invalid(
            &spec.child("signerName"),
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name(&spec.child("signerName"), signer));
    }
    if let Some(seconds) = json::opt_int(csr, &["spec", "expirationSeconds"])
        && seconds < 600
    {
        errs.push(FieldError::invalid(
            &spec.child("expirationSeconds"),
            seconds,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs.extend(validate_conditions(csr, old));
    let certificate = bytes(csr, &["status", "certificate"]);
    let arbitrary = old.is_some_and(|o| {
        let before = bytes(o, &["status", "certificate"]);
        before == certificate || kyb_pki::csr::validate_certificates(&before).is_err()
    });
    if !arbitrary && let Err(message) = kyb_pki::csr::validate_certificates(&certificate) {
        errs.push(FieldError::invalid(
            &Path::new("status").child("certificate"),
            "<certificate data>",
            message,
        ));
    }
    errs
}

fn has_duplicates<T: PartialEq>(items: &[T]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, item)| items[..i].contains(item))
}

fn validate_conditions(csr: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let path = Path::new("status").child("conditions");
    let old_conditions = old.map(conditions).unwrap_or_default();
    let old_types: Vec<&str> = old_conditions
        .iter()
        .map(|c| json::str_at(c, &["type"]))
        .collect();
    let allow_both = old_types.contains(&"Approved") && old_types.contains(&"Denied");
    let allow_duplicates = has_duplicates(&old_types);
    let allow_empty = old_types.contains(&"");
    let mut errs = Vec::new();
    let (mut approved, mut denied, mut seen) = (false, false, Vec::new());
    for (i, condition) in conditions(csr).into_iter().enumerate() {
        let kind = json::str_at(condition, &["type"]);
        let status = json::str_at(condition, &["status"]);
        if !allow_empty && kind.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("type"), ""));
        }
        let allowed: &[&str] = if matches!(kind, "Approved" | "Denied" | "Failed") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errs.push(FieldError::required(&path.index(i).child("status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(FieldError::not_supported(
                &path.index(i).child("status"),
                status,
                allowed,
            ));
        }
        if !allow_both {
            let exclusive = match kind {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                errs.push(FieldError::invalid(
                    &path.index(i).child("type"),
                    kind,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !allow_duplicates {
            if seen.contains(&kind) {
                errs.push(FieldError::duplicate(&path.index(i).child("type"), kind));
            }
            seen.push(kind);
        }
    }
    errs
}

/// A signer name: `<domain>/<path>`, the domain DNS labels with at least one dot, the
/// path DNS subdomains separated by dots, at most 571 characters.
pub fn validate_signer_name(path: &Path, signer: &str) -> Vec<FieldError> {
    if signer.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, name] = segments[..] else {
        return vec![FieldError::invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut errs = Vec::new();
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        let found = names::dns1123_label_errors(label);
        if !found.is_empty() {
            for err in found {
                errs.push(FieldError::invalid(
                    path,
                    domain,
                    format!("validating label {label:?}: {err}"),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for label in name.split('.') {
        let found = names::dns1123_subdomain_errors(label);
        if !found.is_empty() {
            for err in found {
                errs.push(FieldError::invalid(
                    path,
                    name,
                    format!("validating label {label:?}: {err}"),
                ));
            }
            break;
        }
    }
    if signer.len() > 253 + 253 + 63 + 1 + 1 {
        errs.push(FieldError::too_long(path, 571));
    }
    errs
}

/// An update through `path`: the object's rules, plus what may change there.
pub fn validate_update(new: &Value, old: &Value, path: Allowed) -> Vec<FieldError> {
    let mut errs = validate(new, Some(old));
    let conditions_path = Path::new("status").child("conditions");
    for kind in ["Approved", "Denied", "Failed"] {
        if of_type(new, kind).len() < of_type(old, kind).len() {
            errs.push(FieldError::forbidden(
                &conditions_path,
                format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    if !path.approval {
        for kind in ["Approved", "Denied"] {
            let (before, after) = (of_type(old, kind), of_type(new, kind));
            if after.len() > before.len() {
                errs.push(FieldError::forbidden(
                    &conditions_path,
                    format!("updates may not add a condition of type {kind:?}"),
                ));
            } else if after.len() == before.len() && after != before {
                errs.push(FieldError::forbidden(
                    &conditions_path,
                    format!("updates may not modify a condition of type {kind:?}"),
                ));
            }
        }
    }
    let (before, after) = (
        bytes(old, &["status", "certificate"]),
        bytes(new, &["status", "certificate"]),
    );
    if before != after {
        let certificate = Path::new("status").child("certificate");
        if !path.certificate {
            errs.push(FieldError::forbidden(
                &certificate,
                "updates may not set certificate content",
            ));
        } else if !before.is_empty() {
            errs.push(FieldError::forbidden(
                &certificate,
                "updates may not modify existing certificate content",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn signer_names_are_a_domain_and_a_path() {
        let path = Path::new("spec").child("signerName");
        assert!(validate_signer_name(&path, "example.com/my-signer").is_empty());
        assert!(validate_signer_name(&path, "kubernetes.io/unknown-thing").is_empty());
        assert_eq!(
            messages(&validate_signer_name(&path, "")),
            vec!["spec.signerName: Required value"]
        );
        assert_eq!(
            messages(&validate_signer_name(&path, "nodomain")),
            vec![
                "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ]
        );
        assert_eq!(
            messages(&validate_signer_name(&path, "example/x")),
            vec![
                "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"
            ]
        );
        let upper = messages(&validate_signer_name(&path, "Example.com/x"));
        assert_eq!(upper.len(), 1);
        assert!(upper[0].starts_with("spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label"), "{upper:?}");
    }

    #[test]
    fn conditions_and_usages_follow_kubernetes_rules() {
        let csr = json!({
            "spec": {"signerName": "example.com/s", "usages": ["client auth", "bogus", "client auth"], "expirationSeconds": 599},
            "status": {"conditions": [
                {"type": "Approved", "status": "True"},
                {"type": "Denied", "status": "False"},
            ]}
        });
        let found = messages(&validate(&csr, None));
        assert!(
            found.iter().any(|m| m.starts_with(
                "spec.request: Invalid value: []byte{}: PEM block type must be CERTIFICATE REQUEST"
            )),
            "{found:?}"
        );
        assert!(found.iter().any(|m| m.starts_with("spec.usages[1]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\"")), "{found:?}");
        assert!(
            found.contains(&"spec.usages[2]: Duplicate value: \"client auth\"".to_string()),
            "{found:?}"
        );
        assert!(found.contains(&"spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)".to_string()), "{found:?}");
        assert!(found.contains(&"status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"".to_string()), "{found:?}");
        assert!(found.contains(&"status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive".to_string()), "{found:?}");
    }

    #[test]
    fn updates_keep_approval_and_certificates() {
        let old = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        let removed = json!({"status": {}});
        let found = messages(&validate_update(
            &removed,
            &old,
            Allowed {
                approval: true,
                certificate: false,
            },
        ));
        assert!(found.contains(&"status.conditions: Forbidden: updates may not remove a condition of type \"Approved\"".to_string()), "{found:?}");
        let denied = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}, {"type": "Denied", "status": "True"}]}});
        let found = messages(&validate_update(
            &denied,
            &old,
            Allowed {
                approval: false,
                certificate: true,
            },
        ));
        assert!(
            found.contains(
                &"status.conditions: Forbidden: updates may not add a condition of type \"Denied\""
                    .to_string()
            ),
            "{found:?}"
        );
        let with_cert = json!({"status": {"certificate": "LS0t"}});
        let found = messages(&validate_update(&with_cert, &json!({}), Allowed::default()));
        assert!(
            found.contains(
                &"status.certificate: Forbidden: updates may not set certificate content"
                    .to_string()
            ),
            "{found:?}"
        );
    }
}
