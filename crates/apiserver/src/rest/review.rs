//! Reviews: objects that are created, answered on the spot and never stored.
//!
//! - `authorization.k8s.io/v1`: SubjectAccessReview (may this user …?),
//!   LocalSubjectAccessReview (the same, in one namespace), SelfSubjectAccessReview (may I
//!   …? — `kubectl auth can-i`), SelfSubjectRulesReview (what may I do here? — `kubectl auth
//!   can-i --list`), all answered by the same authorizer chain requests go through;
//! - `authentication.k8s.io/v1`: SelfSubjectReview (who am I? — `kubectl auth whoami`) and
//!   TokenReview (whom does this token stand for?).

use super::{Call, body};
use crate::auth::User;
use crate::response::Response;
use http::StatusCode;
use kyb_api::Status;
use kyb_api::status::Cause;
use serde_json::{Value, json};

pub async fn create(call: &Call<'_>) -> Result<Response, Status> {
    let (mut review, warnings) = body::decode_request(call, body::Kind::Of(&call.def))?;
    for warning in warnings {
        call.warn(warning);
    }
    let status = match call.def.kind.as_ref() {
        "SelfSubjectAccessReview" => access(call, &review, &call.user)?,
        "SubjectAccessReview" => {
            let user = subject(call, &review)?;
            access(call, &review, &user)?
        }
        "LocalSubjectAccessReview" => {
            local_namespace(call, &review)?;
            let user = subject(call, &review)?;
            access(call, &review, &user)?
        }
        "SelfSubjectRulesReview" => rules(call, &review),
        "SelfSubjectReview" => json!({"userInfo": call.user.to_json()}),
        "TokenReview" => token(call, &review)?,
        other => {
            return Err(Status::internal(format!("{other} has no review handler")));
        }
    };
    if let Some(fields) = review.as_object_mut() {
        fields.insert("apiVersion".into(), call.def.api_version().into());
        fields.insert("kind".into(), call.def.kind.as_ref().into());
        fields.insert("status".into(), status);
    }
    kyb_apimachinery::meta::metadata_mut(&mut review)
        .insert("creationTimestamp".into(), Value::Null);
    Ok(super::present::value_response(
        call,
        &review,
        StatusCode::CREATED,
    ))
}

/// 422 for a review that is not well formed.
fn invalid(call: &Call<'_>, field: &str, value: &str, detail: &str) -> Status {
    Status::invalid(
        &call.def.group,
        &call.def.kind,
        "",
        &[Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: {detail}",
                kyb_apimachinery::gofmt::quote(value)
            ),
            field: field.into(),
        }],
    )
}

/// The user a (Local)SubjectAccessReview asks about.
fn subject(call: &Call<'_>, review: &Value) -> Result<User, Status> {
    let spec = &review["spec"];
    let strings = |field: &str| -> Vec<String> {
        spec[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let name = spec["user"].as_str().unwrap_or_default().to_string();
    let groups = strings("groups");
    if name.is_empty() && groups.is_empty() {
        return Err(invalid(
            call,
            "spec.user",
            "",
            "at least one of user or group must be specified",
        ));
    }
    let extra = spec["extra"]
        .as_object()
        .map(|extra| {
            extra
                .iter()
                .map(|(k, v)| {
                    let values = v
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), values)
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(User {
        name,
        uid: spec["uid"].as_str().unwrap_or_default().to_string(),
        groups,
        extra,
    })
}

/// A LocalSubjectAccessReview is about its own namespace only.
fn local_namespace(call: &Call<'_>, review: &Value) -> Result<(), Status> {
    let namespace = call.namespace.as_deref().unwrap_or_default();
    let asked = review
        .pointer("/spec/resourceAttributes/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if review.pointer("/spec/resourceAttributes").is_some() && asked != namespace {
        return Err(invalid(
            call,
            "spec.resourceAttributes.namespace",
            asked,
            "must match metadata.namespace",
        ));
    }
    if review.pointer("/spec/nonResourceAttributes").is_some() {
        return Err(invalid(
            call,
            "spec.nonResourceAttributes",
            "",
            "disallowed on this kind of request",
        ));
    }
    Ok(())
}

/// The authorizer's answer for `user` on the review's attributes.
fn access(call: &Call<'_>, review: &Value, user: &User) -> Result<Value, Status> {
    let spec = &review["spec"];
    let resource = spec.get("resourceAttributes").filter(|v| v.is_object());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    let text = |v: Option<&Value>, field: &str| {
        v.and_then(|v| v[field].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let asked_owned: [String; 6] = match (resource, non_resource) {
        (Some(_), None) => [
            text(resource, "verb"),
            text(resource, "group"),
            text(resource, "resource"),
            text(resource, "namespace"),
            text(resource, "subresource"),
            text(resource, "name"),
        ],
        (None, Some(_)) => [
            text(non_resource, "verb"),
            text(non_resource, "path"),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ],
        _ => {
            return Err(invalid(
                call,
                "spec.resourceAttributes",
                "",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
    };
    let [verb, second, third, namespace, subresource, name] = &asked_owned;
    let asked = if resource.is_some() {
        kyb_rbac::Attributes::resource(&user.name, &user.groups, verb, second, third, namespace)
            .with_name(name)
            .with_subresource(subresource)
    } else {
        kyb_rbac::Attributes::non_resource(&user.name, &user.groups, verb, second)
    };
    let decision = call.engine.authorizer.decide(&asked);
    let mut status = json!({"allowed": decision.is_allowed()});
    if matches!(decision, kyb_rbac::Decision::Deny(_)) {
        status["denied"] = true.into();
    }
    if !decision.reason().is_empty() {
        status["reason"] = decision.reason().into();
    }
    Ok(status)
}

/// What the caller may do in the review's namespace.
fn rules(call: &Call<'_>, review: &Value) -> Value {
    let namespace = review
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rules =
        call.engine
            .authorizer
            .rbac
            .rules_for(&call.user.name, &call.user.groups, namespace);
    let mut status = json!({
        "resourceRules": rules.resource_rules.iter().map(kyb_rbac::ResourceRule::to_json).collect::<Vec<_>>(),
        "nonResourceRules": rules.non_resource_rules.iter().map(kyb_rbac::NonResourceRule::to_json).collect::<Vec<_>>(),
        "incomplete": rules.incomplete,
    });
    if let Some(error) = rules.evaluation_error {
        status["evaluationError"] = error.into();
    }
    status
}

/// Whom a token stands for.
fn token(call: &Call<'_>, review: &Value) -> Result<Value, Status> {
    let token = review
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if token.is_empty() {
        return Err(invalid(call, "spec.token", "", "token must not be empty"));
    }
    let audiences: Vec<String> = review
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(
        match call
            .engine
            .authenticator
            .review_token(token, &audiences, &call.engine.cache)
        {
            Ok((user, audiences)) => json!({
                "authenticated": true,
                "user": user.to_json(),
                "audiences": audiences,
            }),
            Err(error) => json!({"user": {}, "error": error}),
        },
    )
}
