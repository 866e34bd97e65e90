//! Authorization: may this user do this? The authorizers are asked in Kubernetes' order:
//! members of `system:masters` may do anything; then the Node authorizer (kubelets), then
//! RBAC (the bootstrap policy lets everyone read the health and
//! version endpoints, and authenticated users discovery). The first to allow wins; a
//! refusal is `403 Forbidden` in Kubernetes' words.
//!
//! The same [`Authorizer`] answers requests, impersonation checks, access reviews
//! (`kubectl auth can-i`) and the escalation checks of RBAC writes.

use super::node::NodeAuthorizer;
use super::rbac::Rbac;
use kyb_api::Status;
use kyb_rbac::Decision;
use kyb_serving::ResourceRequest;
use kyb_serving::User;
use std::sync::Arc;

/// What a request does, as authorizers see it.
pub enum Attributes<'a> {
    Resource {
        request: &'a ResourceRequest,
        /// The raw `fieldSelector` of lists and watches (kubelets list their own pods).
        field_selector: &'a str,
    },
    NonResource {
        verb: &'static str,
        path: &'a str,
    },
}

/// The chain of authorizers.
pub struct Authorizer {
    pub nodes: Arc<NodeAuthorizer>,
    pub rbac: Arc<Rbac>,
}

impl Authorizer {
    /// The chain's decision on one request.
    pub fn decide(&self, asked: &kyb_rbac::Attributes<'_>) -> Decision {
        self.decide_with_selector(asked, "")
    }

    /// The chain's decision, with the request's field selector (which the Node authorizer
    /// reads).
    pub fn decide_with_selector(
        &self,
        asked: &kyb_rbac::Attributes<'_>,
        field_selector: &str,
    ) -> Decision {
        if asked.groups.iter().any(|g| g == "system:masters") {
            return Decision::Allow(String::new());
        }
        let node_reason = match self.nodes.decide(asked, field_selector) {
            kyb_admission::Decision::Allow => return Decision::Allow(String::new()),
            kyb_admission::Decision::NoOpinion(reason) => reason,
        };
        match self.rbac.authorize(asked) {
            Decision::NoOpinion(rbac_reason) if !node_reason.is_empty() => {
                // Kubernetes joins the reasons of the authorizers that had one.
                let reasons: Vec<&str> = [node_reason.as_str(), rbac_reason.as_str()]
                    .into_iter()
                    .filter(|r| !r.is_empty())
                    .collect();
                Decision::NoOpinion(reasons.join("\n"))
            }
            decision => decision,
        }
    }

    /// Allows `attributes` for `user` (with the reason, for the audit record), or gives
    /// the 403.
    pub fn authorize(&self, user: &User, attributes: &Attributes<'_>) -> Result<String, Status> {
        let (asked, field_selector) = match attributes {
            Attributes::NonResource { verb, path } => (
                kyb_rbac::Attributes::non_resource(&user.name, &user.groups, verb, path),
                "",
            ),
            Attributes::Resource {
                request,
                field_selector,
            } => (resource_attributes(user, request), *field_selector),
        };
        let decision = self.decide_with_selector(&asked, field_selector);
        if decision.is_allowed() {
            return Ok(decision.reason().to_string());
        }
        let mut status = Status::forbidden(asked.forbidden_message(decision.reason()));
        if let Attributes::Resource { request, .. } = attributes {
            let mut details = serde_json::Map::new();
            if let Some(name) = &request.name {
                details.insert("name".into(), name.clone().into());
            }
            if !request.group.is_empty() {
                details.insert("group".into(), request.group.clone().into());
            }
            details.insert("kind".into(), request.resource.clone().into());
            status.details = Some(serde_json::Value::Object(details));
        }
        Err(status)
    }
}

/// The authorization attributes of a resource request.
pub fn resource_attributes<'a>(
    user: &'a User,
    request: &'a ResourceRequest,
) -> kyb_rbac::Attributes<'a> {
    let mut asked = kyb_rbac::Attributes::resource(
        &user.name,
        &user.groups,
        request.verb.as_str(),
        &request.group,
        &request.resource,
        request.namespace.as_deref().unwrap_or_default(),
    );
    if let Some(name) = &request.name {
        asked = asked.with_name(name);
    }
    if let Some(subresource) = &request.subresource {
        asked = asked.with_subresource(subresource);
    }
    asked
}

impl kyb_serving::filters::Authorize for Authorizer {
    async fn authorize(
        &self,
        user: &User,
        request: &kyb_serving::RequestInfo,
    ) -> Result<String, Status> {
        let attributes = match &request.target {
            kyb_serving::Target::Resource(resource) => Attributes::Resource {
                request: resource,
                field_selector: request.query.value("fieldSelector").unwrap_or_default(),
            },
            kyb_serving::Target::NonResource => Attributes::NonResource {
                verb: kyb_serving::request_info::non_resource_verb(&request.method),
                path: &request.path,
            },
        };
        Authorizer::authorize(self, user, &attributes)
    }
}
