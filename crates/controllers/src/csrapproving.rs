//! The CSR approving controller (kube-controller-manager's `csrapproving`,
//! `certificatesigningrequest-approving-controller`): approves kubelets' client
//! certificate requests (`kubernetes.io/kube-apiserver-client-kubelet`, CN
//! `system:node:<name>`, O `system:nodes`, client usages) when a SubjectAccessReview says
//! the requestor may `create` `certificatesigningrequests/selfnodeclient` (a node renewing
//! its own certificate) or `certificatesigningrequests/nodeclient`, with the
//! `AutoApproved` reason. Kybernetes also approves a node's own serving certificate
//! request (`kubernetes.io/kubelet-serving`, made by `system:node:<name>` for itself) when
//! every name it asks for is the node's — its name, or an address in its status — which
//! Kubernetes leaves to an external approver; the kubelet's API serves with it. Anything
//! else is left to people.

use crate::context::Context;
use crate::csrsigning::{self, ACCOUNT, KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING};
use anyhow::Context as _;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use kyb_pki::csr::Request;
use kyb_runtime::controller::{Action, Reconciler};
use kyb_runtime::informer::{Informer, ObjectKey};
use std::sync::Arc;

pub const NAME: &str = "certificatesigningrequest-approving-controller";

/// One kind of request the controller approves: the permission the requestor needs and
/// the approval's message.
#[derive(Debug, PartialEq, Eq)]
pub struct Recognized {
    pub subresource: &'static str,
    pub message: &'static str,
}

const SELF_NODE_CLIENT: Recognized = Recognized {
    subresource: "selfnodeclient",
    message: "Auto approving self kubelet client certificate after SubjectAccessReview.",
};
const NODE_CLIENT: Recognized = Recognized {
    subresource: "nodeclient",
    message: "Auto approving kubelet client certificate after SubjectAccessReview.",
};

fn is_node_client(csr: &CertificateSigningRequest, request: &Request) -> bool {
    csr.spec.signer_name == KUBE_APISERVER_CLIENT_KUBELET
        && csrsigning::validate_kubelet_client(
            request,
            &csr.spec.usages.clone().unwrap_or_default(),
        )
        .is_ok()
}

/// The kinds `csr` is, in the order they are tried (a node's own request first); empty
/// when it is already decided or issued, or not a node client request.
pub fn recognize(csr: &CertificateSigningRequest, request: &Request) -> Vec<Recognized> {
    let decided =
        csrsigning::has_condition(csr, "Approved") || csrsigning::has_condition(csr, "Denied");
    if decided || csrsigning::is_issued(csr) || !is_node_client(csr, request) {
        return Vec::new();
    }
    let mut found = Vec::new();
    if csr.spec.username.as_deref() == Some(request.common_name.as_str()) {
        found.push(SELF_NODE_CLIENT);
    }
    found.push(NODE_CLIENT);
    found
}

/// The approval message of a node's own serving certificate.
pub const SELF_NODE_SERVING_MESSAGE: &str =
    "Auto approving self kubelet serving certificate: its names are the node's own.";

/// Whether `csr` is a node's request for a serving certificate of its own names: signer
/// `kubernetes.io/kubelet-serving`, a valid kubelet serving request made by the node it
/// names, every DNS name the node's name or one of its address entries, every IP one of
/// its addresses. Not when already decided or issued.
pub fn is_own_serving_request(
    csr: &CertificateSigningRequest,
    request: &Request,
    node: Option<&Node>,
) -> bool {
    let decided =
        csrsigning::has_condition(csr, "Approved") || csrsigning::has_condition(csr, "Denied");
    if decided
        || csrsigning::is_issued(csr)
        || csr.spec.signer_name != KUBELET_SERVING
        || csrsigning::validate_kubelet_serving(
            request,
            &csr.spec.usages.clone().unwrap_or_default(),
        )
        .is_err()
        || csr.spec.username.as_deref() != Some(request.common_name.as_str())
    {
        return false;
    }
    let Some(node) = node else { return false };
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let addresses: Vec<&str> = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|a| a.address.as_str())
        .collect();
    request
        .dns_names
        .iter()
        .all(|dns| dns == name || addresses.contains(&dns.as_str()))
        && request
            .ip_addresses
            .iter()
            .all(|ip| addresses.contains(&ip.to_string().as_str()))
}

pub struct ApprovingReconciler {
    requests: Arc<Informer<CertificateSigningRequest>>,
    nodes: Arc<Informer<Node>>,
    client: kube::Client,
}

pub async fn run(ctx: Arc<Context>) -> anyhow::Result<()> {
    let requests = ctx.informers.get::<CertificateSigningRequest>();
    let client = ctx.client_for(ACCOUNT).await?;
    let nodes = ctx.informers.get::<Node>();
    let reconciler = Arc::new(ApprovingReconciler {
        requests: requests.clone(),
        nodes: nodes.clone(),
        client,
    });
    let controller = ctx.controller(NAME, reconciler);
    let queue = controller.queue();
    requests.on_change(move |change| {
        let csr = change.object();
        if (csr.spec.signer_name == KUBE_APISERVER_CLIENT_KUBELET
            || csr.spec.signer_name == KUBELET_SERVING)
            && !csrsigning::is_issued(csr)
            && !csrsigning::has_condition(csr, "Approved")
            && !csrsigning::has_condition(csr, "Denied")
        {
            queue.add(ObjectKey::of(csr.as_ref()));
        }
    });
    requests.wait_synced().await;
    nodes.wait_synced().await;
    controller.run(ctx.options.workers).await;
    Ok(())
}

impl ApprovingReconciler {
    /// Whether the requestor may create `certificatesigningrequests/<subresource>`.
    async fn authorized(
        &self,
        csr: &CertificateSigningRequest,
        subresource: &str,
    ) -> anyhow::Result<bool> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: csr.spec.username.clone(),
                uid: csr.spec.uid.clone(),
                groups: csr.spec.groups.clone(),
                extra: csr.spec.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    group: Some("certificates.k8s.io".into()),
                    resource: Some("certificatesigningrequests".into()),
                    verb: Some("create".into()),
                    subresource: Some(subresource.into()),
                    version: Some("*".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .context("creating a SubjectAccessReview")?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

impl Reconciler for ApprovingReconciler {
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<Action> {
        let Some(csr) = self.requests.get_key(key) else {
            return Ok(Action::Done);
        };
        let Ok(request) = kyb_pki::csr::parse_request(&csr.spec.request.0, false) else {
            return Ok(Action::Done);
        };
        if csr.spec.signer_name == KUBELET_SERVING {
            let node = request
                .common_name
                .strip_prefix("system:node:")
                .and_then(|name| self.nodes.get("", name));
            if is_own_serving_request(&csr, &request, node.as_deref()) {
                return self.approve(&csr, key, SELF_NODE_SERVING_MESSAGE).await;
            }
            // A node registering (or reporting its addresses) just after its request is
            // looked at again for a while.
            let young = csr
                .metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|created| {
                    jiff::Timestamp::now().duration_since(created.0)
                        < jiff::SignedDuration::from_mins(5)
                });
            let pending = !csrsigning::is_issued(&csr)
                && !csrsigning::has_condition(&csr, "Approved")
                && !csrsigning::has_condition(&csr, "Denied");
            return Ok(if young && pending {
                Action::RequeueAfter(std::time::Duration::from_secs(5))
            } else {
                Action::Done
            });
        }
        let tried = recognize(&csr, &request);
        for recognized in &tried {
            if !self.authorized(&csr, recognized.subresource).await? {
                continue;
            }
            return self.approve(&csr, key, recognized.message).await;
        }
        if !tried.is_empty() {
            let kinds: Vec<&str> = tried.iter().map(|r| r.subresource).collect();
            tracing::debug!(csr = %key, ?kinds, "recognized, but the subject access review was not approved");
        }
        Ok(Action::Done)
    }
}

impl ApprovingReconciler {
    /// Adds the `Approved` condition (reason `AutoApproved`, `message`).
    async fn approve(
        &self,
        csr: &CertificateSigningRequest,
        key: &ObjectKey,
        message: &str,
    ) -> anyhow::Result<Action> {
        let mut approved = csr.clone();
        approved
            .status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Vec::new)
            .push(CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("AutoApproved".into()),
                message: Some(message.into()),
                last_update_time: Some(Time(jiff::Timestamp::now())),
                ..Default::default()
            });
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        match api
            .replace_subresource("approval", &key.name, &PostParams::default(), &approved)
            .await
        {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
            Err(e) => Err(e).with_context(|| format!("approving {key}")),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn csr(user: &str, usages: &[&str], conditions: &[&str]) -> CertificateSigningRequest {
        serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"request": "", "signerName": KUBE_APISERVER_CLIENT_KUBELET, "usages": usages, "username": user},
            "status": {"conditions": conditions.iter().map(|t| json!({"type": t, "status": "True"})).collect::<Vec<_>>()},
        }))
        .unwrap()
    }

    fn request(cn: &str, orgs: &[&str]) -> Request {
        Request::new(cn, orgs)
    }

    #[test]
    fn node_client_requests_are_recognized() {
        let usages = ["digital signature", "key encipherment", "client auth"];
        let node = request("system:node:n1", &["system:nodes"]);
        assert_eq!(
            recognize(&csr("system:node:n1", &usages, &[]), &node),
            vec![SELF_NODE_CLIENT, NODE_CLIENT]
        );
        assert_eq!(
            recognize(&csr("system:bootstrap:abc", &usages, &[]), &node),
            vec![NODE_CLIENT]
        );
        assert!(recognize(&csr("system:bootstrap:abc", &usages, &["Denied"]), &node).is_empty());
        assert!(recognize(&csr("system:bootstrap:abc", &usages, &["Approved"]), &node).is_empty());
        assert!(recognize(&csr("x", &["client auth", "server auth"], &[]), &node).is_empty());
        assert!(
            recognize(
                &csr("x", &usages, &[]),
                &request("system:node:n1", &["other"])
            )
            .is_empty()
        );
        let mut other = csr("x", &usages, &[]);
        other.spec.signer_name = "kubernetes.io/kube-apiserver-client".into();
        assert!(recognize(&other, &node).is_empty());
    }

    #[test]
    fn a_nodes_own_serving_request_is_recognized() {
        let usages = ["digital signature", "server auth"];
        let mut own = csr("system:node:n1", &usages, &[]);
        own.spec.signer_name = KUBELET_SERVING.into();
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]},
        }))
        .unwrap();
        let mut names = request("system:node:n1", &["system:nodes"]);
        names.dns_names = vec!["n1".into()];
        names.ip_addresses = vec!["10.0.0.5".parse().unwrap()];
        assert!(is_own_serving_request(&own, &names, Some(&node)));
        assert!(!is_own_serving_request(&own, &names, None));
        let mut foreign = names.clone();
        foreign.ip_addresses.push("10.0.0.6".parse().unwrap());
        assert!(!is_own_serving_request(&own, &foreign, Some(&node)));
        let mut other_name = names.clone();
        other_name.dns_names = vec!["api.example.com".into()];
        assert!(!is_own_serving_request(&own, &other_name, Some(&node)));
        let by_other = {
            let mut c = own.clone();
            c.spec.username = Some("system:node:n2".into());
            c
        };
        assert!(!is_own_serving_request(&by_other, &names, Some(&node)));
        let mut decided = own.clone();
        decided.status = csr("x", &usages, &["Denied"]).status;
        assert!(!is_own_serving_request(&decided, &names, Some(&node)));
    }
}
