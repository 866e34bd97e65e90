//! Why a plugin refuses a request, with the status Kubernetes answers, and how the full
//! message is built from the request's resource and name.

use kyb_api::Status;
use serde_json::Value;

/// A refusal by an admission plugin. `Display` gives the text the variant documents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Denial {
    /// 403 `Forbidden` (`admission.NewForbidden`). The text is what follows
    /// `<resource>[.<group>] "<name>" is forbidden: `; [`Denial::message`] builds the whole
    /// message.
    #[error("{0}")]
    Forbidden(String),
    /// 404 `NotFound`: an object the plugin looked up does not exist. The whole message is
    /// `<resource>[.<group>] "<name>" not found` with the resource as Kubernetes' listers
    /// spell it (singular: `pod "x" not found`, `node "x" not found`).
    #[error("{} \"{name}\" not found", qualified(.group, .resource))]
    NotFound {
        group: &'static str,
        resource: &'static str,
        name: String,
    },
    /// 400 `BadRequest`; the text is the whole message.
    #[error("{0}")]
    BadRequest(String),
    /// 500 with an empty reason: Kubernetes returns a plain Go error here (not a `Status`),
    /// which the API server reports as `InternalServerError` with `reason: ""` and this text
    /// as the whole message.
    #[error("{0}")]
    Internal(String),
}

impl Denial {
    pub(crate) fn forbidden(text: impl Into<String>) -> Self {
        Denial::Forbidden(text.into())
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            Denial::Forbidden(_) => 403,
            Denial::NotFound { .. } => 404,
            Denial::BadRequest(_) => 400,
            Denial::Internal(_) => 500,
        }
    }

    /// The `Status` reason (`Forbidden`, `NotFound`, `BadRequest`, or "" for
    /// [`Denial::Internal`]).
    pub fn reason(&self) -> &'static str {
        match self {
            Denial::Forbidden(_) => "Forbidden",
            Denial::NotFound { .. } => "NotFound",
            Denial::BadRequest(_) => "BadRequest",
            Denial::Internal(_) => "",
        }
    }

    /// The whole message for a request on `resource` in `group` (the request's resource,
    /// without subresource: `pods` for `pods/status`) naming `name` (see [`object_name`]):
    /// `pods "web" is forbidden: <text>` for [`Denial::Forbidden`], the text itself for the
    /// others.
    pub fn message(&self, group: &str, resource: &str, name: &str) -> String {
        match self {
            Denial::Forbidden(text) => forbidden_message(group, resource, name, text),
            other => other.to_string(),
        }
    }

    /// The `Status` Kubernetes answers, with `details` as `admission.NewForbidden` and the
    /// listers' `NewNotFound` set them.
    pub fn status(&self, group: &str, resource: &str, name: &str) -> Status {
        match self {
            Denial::Forbidden(_) => Status::forbidden(self.message(group, resource, name))
                .with_details(group, resource, name),
            Denial::NotFound {
                group,
                resource,
                name,
            } => Status::new(404, "NotFound", self.to_string()).with_details(group, resource, name),
            Denial::BadRequest(text) => Status::bad_request(text.clone()),
            Denial::Internal(text) => Status::new(500, "", text.clone()),
        }
    }
}

/// `<resource>[.<group>] "<name>" is forbidden: <text>` (`forbidden: <text>` without a
/// resource), as `apierrors.NewForbidden` words it.
pub fn forbidden_message(group: &str, resource: &str, name: &str, text: &str) -> String {
    if resource.is_empty() && group.is_empty() {
        return format!("forbidden: {text}");
    }
    format!(
        "{} {} is forbidden: {text}",
        qualified(group, resource),
        kyb_apimachinery::gofmt::quote(name)
    )
}

/// The name admission messages use for a request (`admission.NewForbidden`): the request's
/// name when it has one; otherwise the object's `metadata.name`, else its
/// `metadata.generateName`, else `Unknown` (`Unknown/errorGettingName` for an object without
/// metadata).
pub fn object_name<'a>(request_name: &'a str, object: Option<&'a Value>) -> &'a str {
    if !request_name.is_empty() {
        return request_name;
    }
    let Some(object) = object else {
        return "Unknown";
    };
    let Some(metadata) = object.get("metadata").and_then(Value::as_object) else {
        return "Unknown/errorGettingName";
    };
    let field = |key: &str| {
        metadata
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    field("name")
        .or_else(|| field("generateName"))
        .unwrap_or("Unknown")
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn forbidden_messages_carry_the_resource_prefix() {
        let d = Denial::forbidden("a mirror pod may not reference secrets");
        assert_eq!(
            d.message("", "pods", "web"),
            r#"pods "web" is forbidden: a mirror pod may not reference secrets"#
        );
        assert_eq!(
            d.message("coordination.k8s.io", "leases", "n1"),
            r#"leases.coordination.k8s.io "n1" is forbidden: a mirror pod may not reference secrets"#
        );
        let status = d.status("", "pods", "web");
        assert_eq!(status.code, 403);
        assert_eq!(status.reason, "Forbidden");
        assert_eq!(
            status.to_json()["details"],
            json!({"name": "web", "kind": "pods"})
        );
    }

    #[test]
    fn other_denials_are_whole_messages() {
        let nf = Denial::NotFound {
            group: "storage.k8s.io",
            resource: "csidriver",
            name: "d".into(),
        };
        assert_eq!(
            nf.message("", "pods", "x"),
            r#"csidriver.storage.k8s.io "d" not found"#
        );
        assert_eq!(nf.code(), 404);
        let internal = Denial::Internal("boom".into());
        assert_eq!(internal.status("", "pods", "x").reason, "");
        assert_eq!(internal.code(), 500);
        assert_eq!(Denial::BadRequest("b".into()).message("", "pods", "x"), "b");
    }

    #[test]
    fn names_fall_back_like_kubernetes() {
        let obj = json!({"metadata": {"generateName": "web-"}});
        assert_eq!(object_name("", Some(&obj)), "web-");
        assert_eq!(object_name("given", Some(&obj)), "given");
        assert_eq!(object_name("", None), "Unknown");
        assert_eq!(object_name("", Some(&json!(3))), "Unknown/errorGettingName");
        assert_eq!(object_name("", Some(&json!({"metadata": {}}))), "Unknown");
    }
}
