//! Authorization: may this user do this? Members of `system:masters` may do anything (as
//! in Kubernetes, before any authorizer is asked); everything else is RBAC's decision
//! (the bootstrap policy lets everyone read the health and version endpoints, and
//! authenticated users discovery). A refusal is `403 Forbidden` in Kubernetes' words.

use super::authn::User;
use super::rbac::Rbac;
use crate::request::ResourceRequest;
use kyb_api::Status;

/// What a request does, as authorizers see it.
pub enum Attributes<'a> {
    Resource(&'a ResourceRequest),
    NonResource { verb: &'static str, path: &'a str },
}

pub fn authorize(rbac: &Rbac, user: &User, attributes: &Attributes<'_>) -> Result<(), Status> {
    if user.in_group("system:masters") {
        return Ok(());
    }
    let asked = match attributes {
        Attributes::NonResource { verb, path } => {
            kyb_rbac::Attributes::non_resource(&user.name, &user.groups, verb, path)
        }
        Attributes::Resource(request) => {
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
    };
    let decision = rbac.authorize(&asked);
    if decision.is_allowed() {
        return Ok(());
    }
    let mut status = Status::forbidden(asked.forbidden_message(decision.reason()));
    if let Attributes::Resource(request) = attributes {
        let mut details = serde_json::Map::new();
        if let Some(name) = &request.name {
            details.insert("name".into(), name.clone().into());
        }
        details.insert("group".into(), request.group.clone().into());
        details.insert("kind".into(), request.resource.clone().into());
        status.details = Some(serde_json::Value::Object(details));
    }
    Err(status)
}
