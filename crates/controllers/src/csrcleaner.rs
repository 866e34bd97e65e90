//! The CSR cleaner (kube-controller-manager's `csrcleaner`,
//! `certificatesigningrequest-cleaner-controller`): deletes CertificateSigningRequests
//! once they have served their purpose, with Kubernetes' periods — issued ones an hour
//! after approval, denied and failed ones an hour after that condition, pending ones
//! (no condition) after 24 hours, and issued ones whose certificate has expired. Each
//! request is requeued for the moment it becomes due.

use crate::context::Context;
use crate::csrsigning::{ACCOUNT, is_issued};
use anyhow::Context as _;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, DeleteParams, Preconditions};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Informer, ObjectKey};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "certificatesigningrequest-cleaner-controller";

/// How long an issued request is kept after approval.
const APPROVED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a denied request is kept.
const DENIED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a failed request is kept.
const FAILED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a request nobody decided on is kept.
const PENDING_EXPIRATION: Duration = Duration::from_secs(24 * 3600);

/// When `csr` is due for deletion, if ever (`None` for an approved request not yet
/// issued: the signer still has to act).
pub fn due(csr: &CertificateSigningRequest) -> Option<jiff::Timestamp> {
    let after = |time: Option<jiff::Timestamp>, period: Duration| {
        time.map(|t| t + jiff::SignedDuration::try_from(period).unwrap_or_default())
    };
    let conditions: Vec<_> = csr
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .collect();
    let mut candidates = Vec::new();
    if conditions.is_empty() {
        candidates.push(after(
            csr.metadata.creation_timestamp.as_ref().map(|t| t.0),
            PENDING_EXPIRATION,
        ));
    }
    for condition in &conditions {
        let updated = condition.last_update_time.as_ref().map(|t| t.0);
        match condition.type_.as_str() {
            "Denied" => candidates.push(after(updated, DENIED_EXPIRATION)),
            "Failed" => candidates.push(after(updated, FAILED_EXPIRATION)),
            "Approved" if is_issued(csr) => candidates.push(after(updated, APPROVED_EXPIRATION)),
            _ => {}
        }
    }
    if is_issued(csr) {
        let pem = csr
            .status
            .as_ref()
            .and_then(|s| s.certificate.as_ref())
            .map(|c| c.0.as_slice())
            .unwrap_or_default();
        let expiry = kyb_pki::csr::certificate_not_after(pem)
            .and_then(|t| jiff::Timestamp::from_second(t.unix_timestamp()).ok());
        candidates.push(expiry);
    }
    candidates.into_iter().flatten().min()
}

pub struct CleanerReconciler {
    requests: Arc<Informer<CertificateSigningRequest>>,
    client: kube::Client,
    ctx: Arc<Context>,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let requests = ctx.informers.get::<CertificateSigningRequest>();
    let client = ctx.client_for(ACCOUNT).await?;
    let reconciler = Arc::new(CleanerReconciler {
        requests: requests.clone(),
        client,
        ctx: ctx.clone(),
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    requests.on_change(move |change| {
        let csr = change.object();
        if csr.metadata.deletion_timestamp.is_none() {
            queue.add(ObjectKey::of(csr.as_ref()));
        }
    });
    requests.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Reconciler for CleanerReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(csr) = self.requests.get_key(key) else {
            return Ok(Action::Done);
        };
        let Some(due) = due(&csr) else {
            return Ok(Action::Done);
        };
        let now = self.ctx.now();
        if due > now {
            let left = Duration::try_from(due.duration_since(now)).unwrap_or(Duration::ZERO);
            return Ok(Action::RequeueAfter(left));
        }
        tracing::debug!(csr = %key, "deleting a certificate signing request past its time");
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: csr.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&key.name, &params).await {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(Action::Done),
            Err(e) => Err(e).with_context(|| format!("deleting {key}")),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn csr(conditions: serde_json::Value, certificate: Option<&str>) -> CertificateSigningRequest {
        serde_json::from_value(json!({
            "metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"request": "", "signerName": "example.com/s"},
            "status": {"conditions": conditions, "certificate": certificate},
        }))
        .unwrap()
    }

    fn at(text: &str) -> Option<jiff::Timestamp> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn each_outcome_has_its_period() {
        assert_eq!(due(&csr(json!([]), None)), at("2026-01-02T00:00:00Z"));
        let denied =
            json!([{"type": "Denied", "status": "True", "lastUpdateTime": "2026-01-01T05:00:00Z"}]);
        assert_eq!(due(&csr(denied, None)), at("2026-01-01T06:00:00Z"));
        let failed = json!([{"type": "Approved", "status": "True", "lastUpdateTime": "2026-01-01T05:00:00Z"}, {"type": "Failed", "status": "True", "lastUpdateTime": "2026-01-01T07:00:00Z"}]);
        assert_eq!(due(&csr(failed, None)), at("2026-01-01T08:00:00Z"));
        let approved = json!([{"type": "Approved", "status": "True", "lastUpdateTime": "2026-01-01T05:00:00Z"}]);
        assert_eq!(due(&csr(approved.clone(), None)), None);
        // Issued: an hour after approval (the certificate here does not parse).
        assert_eq!(
            due(&csr(approved, Some("TFMwdA=="))),
            at("2026-01-01T06:00:00Z")
        );
    }
}
