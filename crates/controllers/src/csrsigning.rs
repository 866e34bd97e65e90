//! The CSR signing controller (kube-controller-manager's `csrsigning`,
//! `certificatesigningrequest-signing-controller`): signs approved, not yet failed or
//! issued CertificateSigningRequests of the signers it serves —
//! `kubernetes.io/kube-apiserver-client`, `kubernetes.io/kube-apiserver-client-kubelet`
//! and `kubernetes.io/kubelet-serving` — with the cluster CA
//! (`--cluster-signing-cert-file`/`--cluster-signing-key-file`), for
//! `--cluster-signing-duration` or the shorter `spec.expirationSeconds` (at least ten
//! minutes). A request that breaks its signer's rules (subject, names, usages) gets a
//! `Failed` condition (`SignerValidationFailure`) instead of a certificate.

use crate::context::Context;
use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use kyb_pki::csr::{Request, Signer};
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Informer, ObjectKey};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "certificatesigningrequest-signing-controller";
/// The service account the certificate controllers act as.
pub const ACCOUNT: &str = "certificate-controller";

pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";

/// Whether a condition of `kind` is true.
pub fn has_condition(csr: &CertificateSigningRequest, kind: &str) -> bool {
    conditions(csr).any(|c| c.type_ == kind && c.status == "True")
}

fn conditions(
    csr: &CertificateSigningRequest,
) -> impl Iterator<Item = &CertificateSigningRequestCondition> {
    csr.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
}

/// Whether the request is approved and not denied.
pub fn is_approved(csr: &CertificateSigningRequest) -> bool {
    let (mut approved, mut denied) = (false, false);
    for condition in conditions(csr) {
        approved |= condition.type_ == "Approved";
        denied |= condition.type_ == "Denied";
    }
    approved && !denied
}

/// Whether a certificate was issued.
pub fn is_issued(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty())
}

fn same_set(usages: &[String], expected: &[&str]) -> bool {
    let mut have: Vec<&str> = usages.iter().map(String::as_str).collect();
    have.sort_unstable();
    have.dedup();
    let mut want = expected.to_vec();
    want.sort_unstable();
    have == want
}

fn only_system_nodes(request: &Request) -> Result<(), String> {
    if request.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".to_string());
    }
    Ok(())
}

fn node_common_name(request: &Request) -> Result<(), String> {
    if !request.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".to_string());
    }
    Ok(())
}

/// A kubelet's client certificate request (`ValidateKubeletClientCSR`).
pub fn validate_kubelet_client(request: &Request, usages: &[String]) -> Result<(), String> {
    only_system_nodes(request)?;
    if !request.dns_names.is_empty() {
        return Err("DNS subjectAltNames are not allowed".to_string());
    }
    if !request.email_addresses.is_empty() {
        return Err("Email subjectAltNames are not allowed".to_string());
    }
    if !request.ip_addresses.is_empty() {
        return Err("IP subjectAltNames are not allowed".to_string());
    }
    if !request.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".to_string());
    }
    node_common_name(request)?;
    let full = ["client auth", "digital signature", "key encipherment"];
    if !same_set(usages, &full) && !same_set(usages, &["client auth", "digital signature"]) {
        return Err(format!("usages did not match [{}]", full.join(" ")));
    }
    Ok(())
}

/// A kubelet's serving certificate request (`ValidateKubeletServingCSR`).
pub fn validate_kubelet_serving(request: &Request, usages: &[String]) -> Result<(), String> {
    only_system_nodes(request)?;
    if request.dns_names.is_empty() && request.ip_addresses.is_empty() {
        return Err("DNS or IP subjectAltName is required".to_string());
    }
    if !request.email_addresses.is_empty() {
        return Err("Email subjectAltNames are not allowed".to_string());
    }
    if !request.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".to_string());
    }
    let full = ["digital signature", "key encipherment", "server auth"];
    if !same_set(usages, &full) && !same_set(usages, &["digital signature", "server auth"]) {
        return Err(format!("usages did not match [{}]", full.join(" ")));
    }
    node_common_name(request)
}

/// A client certificate's usages for the API server: `client auth`, optionally
/// `digital signature` and `key encipherment`, nothing else.
pub fn validate_apiserver_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for usage in usages {
        match usage.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".to_string());
    }
    Ok(())
}

/// What the controller does with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not ours, not approved, failed or already issued.
    Ignore,
    /// Breaks its signer's rules: the `Failed` condition's message.
    Fail(String),
    /// Sign it, valid this long.
    Sign(Duration),
}

/// The lifetime of a certificate: the signer's, or the requested one when shorter, never
/// under ten minutes (twice the backdating).
pub fn lifetime(signer_ttl: Duration, expiration_seconds: Option<i32>) -> Duration {
    let Some(seconds) = expiration_seconds else {
        return signer_ttl;
    };
    let requested = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    requested.clamp(
        Duration::from_secs(600),
        signer_ttl.max(Duration::from_secs(600)),
    )
}

/// Kubernetes' signer decision for `csr`, given its parsed request.
pub fn decide(csr: &CertificateSigningRequest, request: &Request, ttl: Duration) -> Decision {
    if is_issued(csr) || !is_approved(csr) || has_condition(csr, "Failed") {
        return Decision::Ignore;
    }
    let usages = &csr.spec.usages.clone().unwrap_or_default();
    let verdict = match csr.spec.signer_name.as_str() {
        KUBE_APISERVER_CLIENT => validate_apiserver_client_usages(usages),
        KUBE_APISERVER_CLIENT_KUBELET => validate_kubelet_client(request, usages),
        KUBELET_SERVING => validate_kubelet_serving(request, usages),
        _ => return Decision::Ignore,
    };
    match verdict {
        Err(message) => Decision::Fail(message),
        Ok(()) => Decision::Sign(lifetime(ttl, csr.spec.expiration_seconds)),
    }
}

pub struct SigningReconciler {
    requests: Arc<Informer<CertificateSigningRequest>>,
    client: kube::Client,
    signer: Signer,
    ttl: Duration,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let (Some(cert), Some(key)) = (
        &ctx.options.cluster_signing_cert_file,
        &ctx.options.cluster_signing_key_file,
    ) else {
        tracing::info!(
            "no --cluster-signing-cert-file/--cluster-signing-key-file: certificate signing requests are not signed here"
        );
        return Ok(());
    };
    let signer = Signer::from_files(cert, key).context("loading the cluster signing CA")?;
    let requests = ctx.informers.get::<CertificateSigningRequest>();
    let client = ctx.client_for(ACCOUNT).await?;
    let reconciler = Arc::new(SigningReconciler {
        requests: requests.clone(),
        client,
        signer,
        ttl: ctx.options.cluster_signing_duration,
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    requests.on_change(move |change| {
        let csr = change.object();
        if !is_issued(csr) && is_approved(csr) {
            queue.add(ObjectKey::of(csr.as_ref()));
        }
    });
    requests.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl Reconciler for SigningReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(csr) = self.requests.get_key(key) else {
            return Ok(Action::Done);
        };
        let pem = &csr.spec.request.0;
        let request = match kyb_pki::csr::parse_request(pem, false) {
            Ok(request) => request,
            Err(error) => {
                tracing::warn!(csr = %key, %error, "unable to parse the request");
                return Ok(Action::Done);
            }
        };
        let mut updated = (*csr).clone();
        match decide(&csr, &request, self.ttl) {
            Decision::Ignore => return Ok(Action::Done),
            Decision::Fail(message) => {
                let status = updated.status.get_or_insert_with(Default::default);
                status.conditions.get_or_insert_with(Vec::new).push(
                    CertificateSigningRequestCondition {
                        type_: "Failed".into(),
                        status: "True".into(),
                        reason: Some("SignerValidationFailure".into()),
                        message: Some(message),
                        last_update_time: Some(Time(jiff::Timestamp::now())),
                        ..Default::default()
                    },
                );
            }
            Decision::Sign(ttl) => {
                let now = std::time::SystemTime::now();
                let usages = csr.spec.usages.clone().unwrap_or_default();
                let certificate = self
                    .signer
                    .sign(pem, &usages, ttl, now)
                    .with_context(|| format!("signing {key}"))?;
                updated
                    .status
                    .get_or_insert_with(Default::default)
                    .certificate = Some(ByteString(certificate.into_bytes()));
            }
        }
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        match api
            .replace_status(&key.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
            Err(e) => Err(e).with_context(|| format!("updating the status of {key}")),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn csr(signer: &str, usages: &[&str], conditions: &[&str]) -> CertificateSigningRequest {
        serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"request": "", "signerName": signer, "usages": usages, "expirationSeconds": 3600},
            "status": {"conditions": conditions.iter().map(|t| json!({"type": t, "status": "True"})).collect::<Vec<_>>()},
        }))
        .unwrap()
    }

    fn node(cn: &str, orgs: &[&str]) -> Request {
        Request::new(cn, orgs)
    }

    #[test]
    fn signs_only_what_each_signer_allows() {
        let year = Duration::from_secs(8760 * 3600);
        let user = node("alice", &["dev"]);
        assert_eq!(
            decide(
                &csr(KUBE_APISERVER_CLIENT, &["client auth"], &["Approved"]),
                &user,
                year
            ),
            Decision::Sign(Duration::from_secs(3600))
        );
        assert_eq!(
            decide(
                &csr(KUBE_APISERVER_CLIENT, &["client auth"], &[]),
                &user,
                year
            ),
            Decision::Ignore
        );
        assert_eq!(
            decide(
                &csr(
                    KUBE_APISERVER_CLIENT,
                    &["client auth"],
                    &["Approved", "Denied"]
                ),
                &user,
                year
            ),
            Decision::Ignore
        );
        assert_eq!(
            decide(
                &csr(KUBE_APISERVER_CLIENT, &["server auth"], &["Approved"]),
                &user,
                year
            ),
            Decision::Fail("invalid usage for client certificate: server auth".into())
        );
        assert_eq!(
            decide(
                &csr("example.com/other", &["client auth"], &["Approved"]),
                &user,
                year
            ),
            Decision::Ignore
        );
        let kubelet = csr(
            KUBE_APISERVER_CLIENT_KUBELET,
            &["digital signature", "client auth"],
            &["Approved"],
        );
        assert_eq!(
            decide(&kubelet, &node("system:node:n1", &["system:nodes"]), year),
            Decision::Sign(Duration::from_secs(3600))
        );
        assert_eq!(
            decide(&kubelet, &user, year),
            Decision::Fail("subject organization is not system:nodes".into())
        );
        assert_eq!(
            decide(&kubelet, &node("n1", &["system:nodes"]), year),
            Decision::Fail("subject common name does not begin with system:node:".into())
        );
        let serving = csr(
            KUBELET_SERVING,
            &["digital signature", "server auth"],
            &["Approved"],
        );
        assert_eq!(
            decide(&serving, &node("system:node:n1", &["system:nodes"]), year),
            Decision::Fail("DNS or IP subjectAltName is required".into())
        );
    }

    #[test]
    fn lifetimes_are_capped_both_ways() {
        let year = Duration::from_secs(8760 * 3600);
        assert_eq!(lifetime(year, None), year);
        assert_eq!(lifetime(year, Some(3600)), Duration::from_secs(3600));
        assert_eq!(lifetime(year, Some(100)), Duration::from_secs(600));
        assert_eq!(
            lifetime(Duration::from_secs(7200), Some(86400)),
            Duration::from_secs(7200)
        );
    }
}
