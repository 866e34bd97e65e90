//! CertificateSigningRequests.

use super::{AGE, NAME, Printer, name, owned, string};
use crate::duration::human_duration;
use crate::fields::{text, text_or};
use crate::timestamp::age;
use jiff::Timestamp;
use kyb_apimachinery::json::{items, opt_int, str_at};
use serde_json::Value;

pub(crate) static CERTIFICATE_SIGNING_REQUEST: Printer = Printer {
    columns: &[
        NAME,
        AGE,
        string("SignerName", "The signer asked to sign the certificate."),
        string("Requestor", "The user who created the request."),
        string("RequestedDuration", "The certificate lifetime asked for."),
        string(
            "Condition",
            "Approved, Denied or Pending, plus Failed and Issued when they apply.",
        ),
    ],
    cells: csr_cells,
};

/// The request's state: the decision (Denied over Approved over Pending), then `,Failed`
/// and `,Issued` as they apply.
fn condition(csr: &Value) -> String {
    let conditions = items(csr, &["status", "conditions"]);
    let has = |t: &str| conditions.iter().any(|c| str_at(c, &["type"]) == t);
    let mut out = String::from(if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    });
    if has("Failed") {
        out.push_str(",Failed");
    }
    if !str_at(csr, &["status", "certificate"]).is_empty() {
        out.push_str(",Issued");
    }
    out
}

fn csr_cells(csr: &Value, now: Timestamp) -> Vec<Value> {
    let requested = match opt_int(csr, &["spec", "expirationSeconds"]) {
        Some(seconds) => human_duration(seconds.saturating_mul(1_000_000_000)),
        None => "<none>".to_owned(),
    };
    vec![
        name(csr),
        age(csr, now),
        text_or(str_at(csr, &["spec", "signerName"]), "<none>"),
        text(str_at(csr, &["spec", "username"])),
        owned(requested),
        owned(condition(csr)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::testing::{ago, now, row};
    use serde_json::json;

    #[test]
    fn csr_rows() {
        let c = json!({
            "metadata": {"name": "csr-abc", "creationTimestamp": ago(90)},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                     "username": "system:node:node-1", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}
        });
        assert_eq!(
            row(csr_cells(&c, now())),
            json!([
                "csr-abc",
                "90s",
                "kubernetes.io/kube-apiserver-client-kubelet",
                "system:node:node-1",
                "24h",
                "Approved,Issued"
            ])
        );
        assert_eq!(
            row(csr_cells(&json!({}), now())),
            json!(["", "<unknown>", "<none>", "", "<none>", "Pending"])
        );
    }

    #[test]
    fn denial_wins_over_approval() {
        let c = json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]}});
        assert_eq!(condition(&c), "Denied,Failed");
    }
}
