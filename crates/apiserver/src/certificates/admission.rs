//! The admission plugins of CertificateSigningRequests, as Kubernetes has them:
//! CertificateApproval (approving or denying through `/approval` needs `approve` on the
//! request's signer), CertificateSigning (setting `status.certificate` through `/status`
//! needs `sign` on it) and CertificateSubjectRestriction (no `system:masters` in a
//! `kubernetes.io/kube-apiserver-client` request). A signer is authorized by its name, or
//! by `<domain>/*`, as the `signers` resource of certificates.k8s.io.

use super::validation;
use crate::admission::{Attributes, Context, Operation, Plugin, forbidden};
use crate::auth::User;
use crate::engine::Engine;
use async_trait::async_trait;
use kyb_api::Status;
use kyb_apimachinery::json;
use serde_json::Value;

const GROUP: &str = "certificates.k8s.io";
const PLURAL: &str = "certificatesigningrequests";
/// The signer whose requests may not ask for `system:masters`.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

/// May `user` do `verb` on `signer` (or on every signer of its domain)?
/// Kubernetes' `IsAuthorizedForSignerName`.
fn authorized_for_signer(engine: &Engine, user: &User, verb: &str, signer: &str) -> bool {
    let allowed = |name: &str| {
        let asked =
            kyb_rbac::Attributes::resource(&user.name, &user.groups, verb, GROUP, "signers", "")
                .with_name(name);
        engine.authorizer.decide(&asked).is_allowed()
    };
    if allowed(signer) {
        return true;
    }
    match signer.split_once('/') {
        Some((domain, _)) => allowed(&format!("{domain}/*")),
        None => false,
    }
}

fn signer_of(object: &Value) -> &str {
    json::str_at(object, &["spec", "signerName"])
}

/// CertificateApproval.
pub struct CertificateApproval;

#[async_trait]
impl Plugin for CertificateApproval {
    fn name(&self) -> &'static str {
        "CertificateApproval"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.is(GROUP, PLURAL)
            && attributes.subresource == "approval"
            && attributes.operation == Operation::Update
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        // The new object's signer: the one the approval would apply to.
        let signer = object.map(signer_of).unwrap_or_default();
        if authorized_for_signer(context.engine, attributes.user, "approve", signer) {
            return Ok(());
        }
        Err(forbidden(
            attributes,
            format!("user not permitted to approve requests with signerName {signer:?}"),
        ))
    }
}

/// CertificateSigning.
pub struct CertificateSigning;

#[async_trait]
impl Plugin for CertificateSigning {
    fn name(&self) -> &'static str {
        "CertificateSigning"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.is(GROUP, PLURAL)
            && attributes.subresource == "status"
            && attributes.operation == Operation::Update
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let (Some(new), Some(old)) = (object, attributes.old_object) else {
            return Ok(());
        };
        let certificate = |o: &Value| validation::bytes(o, &["status", "certificate"]);
        if certificate(new) == certificate(old) {
            return Ok(());
        }
        let signer = signer_of(old);
        if authorized_for_signer(context.engine, attributes.user, "sign", signer) {
            return Ok(());
        }
        Err(forbidden(
            attributes,
            format!("user not permitted to sign requests with signerName {signer:?}"),
        ))
    }
}

/// CertificateSubjectRestriction.
pub struct CertificateSubjectRestriction;

#[async_trait]
impl Plugin for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        "CertificateSubjectRestriction"
    }

    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.is_main(GROUP, PLURAL) && attributes.operation == Operation::Create
    }

    async fn validate(
        &self,
        _context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let Some(csr) = object else { return Ok(()) };
        if signer_of(csr) != KUBE_APISERVER_CLIENT {
            return Ok(());
        }
        let request = validation::bytes(csr, &["spec", "request"]);
        let parsed = kyb_pki::csr::parse_request(&request, false)
            .map_err(|e| forbidden(attributes, format!("failed to parse CSR: {e}")))?;
        if parsed.organizations.iter().any(|o| o == "system:masters") {
            return Err(forbidden(
                attributes,
                "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
            ));
        }
        Ok(())
    }
}
