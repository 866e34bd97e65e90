//! Authorization: may this user do this? Members of `system:masters` may do anything (as
//! in Kubernetes, before any authorizer is asked); anyone may read the health and version
//! endpoints; every other request is refused with `403 Forbidden` and Kubernetes' wording
//! until role-based rules decide it.

use super::authn::User;
use crate::request::ResourceRequest;
use kyb_api::Status;

/// What a request does, as authorizers see it.
pub enum Attributes<'a> {
    Resource(&'a ResourceRequest),
    NonResource { verb: &'static str, path: &'a str },
}

/// Paths anyone may `get`, as the `system:public-info-viewer` role grants them.
const PUBLIC_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version"];

fn public(path: &str) -> bool {
    PUBLIC_PATHS.iter().any(|p| {
        path == *p
            || path
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

pub fn authorize(user: &User, attributes: &Attributes<'_>) -> Result<(), Status> {
    if user.in_group("system:masters") {
        return Ok(());
    }
    match attributes {
        Attributes::NonResource { verb: "get", path } if public(path) => Ok(()),
        Attributes::NonResource { verb, path } => Err(Status::forbidden(format!(
            "forbidden: User {:?} cannot {verb} path {path:?}",
            user.name
        ))),
        Attributes::Resource(request) => Err(forbidden(user, request)),
    }
}

/// Kubernetes' 403 for a resource request: `pods is forbidden: User "bob" cannot list
/// resource "pods" in API group "" in the namespace "default"`.
fn forbidden(user: &User, request: &ResourceRequest) -> Status {
    let resource = match &request.subresource {
        Some(sub) => format!("{}/{sub}", request.resource),
        None => request.resource.clone(),
    };
    let subject = match &request.name {
        Some(name) => format!("{resource} {name:?}"),
        None => resource.clone(),
    };
    let scope = match &request.namespace {
        Some(ns) => format!(" in the namespace {ns:?}"),
        None => " at the cluster scope".to_string(),
    };
    let mut status = Status::forbidden(format!(
        "{subject} is forbidden: User {:?} cannot {} resource {resource:?} in API group {:?}{scope}",
        user.name,
        request.verb.as_str(),
        request.group,
    ));
    let mut details = serde_json::Map::new();
    if let Some(name) = &request.name {
        details.insert("name".into(), name.clone().into());
    }
    details.insert("group".into(), request.group.clone().into());
    details.insert("kind".into(), request.resource.clone().into());
    status.details = Some(serde_json::Value::Object(details));
    status
}
