//! `serviceaccounts/<name>/token`: the TokenRequest API. Issues a bound, expiring
//! service-account token (`kubectl create token`), optionally bound to a Pod, Secret or
//! Node that must exist (with the UID given, if any).

use super::{Call, body};
use crate::auth::{BoundObject, DEFAULT_EXPIRATION, MIN_EXPIRATION, TokenSpec};
use crate::response::Response;
use crate::util;
use http::StatusCode;
use kyb_api::Status;
use kyb_api::status::Cause;
use kyb_apimachinery::meta;
use serde_json::{Value, json};

/// The longest lifetime a token may ask for (2^32 seconds, as Kubernetes validates).
const MAX_EXPIRATION: i64 = 1 << 32;

pub async fn create(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    let Some(issuer) = call.engine.authenticator.service_accounts.as_ref() else {
        return Err(Status::service_unavailable(
            "service account tokens are not configured on this server",
        ));
    };
    let (mut request, warnings) = body::decode_request(
        call,
        body::Kind::Builtin("authentication.k8s.io", "v1", "TokenRequest"),
    )?;
    for warning in warnings {
        call.warn(warning);
    }
    super::subresource::admit_create(
        call,
        name,
        ("authentication.k8s.io", "v1", "TokenRequest"),
        &mut request,
    )
    .await?;
    let namespace = call.namespace.clone().unwrap_or_default();
    let account = call
        .engine
        .cache
        .lookup("", "serviceaccounts", Some(&namespace), name)
        .ok_or_else(|| call.not_found(name))?;
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let expiration = spec["expirationSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_EXPIRATION);
    let invalid = |field: &str, value: String, detail: &str| {
        Status::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            &[Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {value}: {detail}"),
                field: field.into(),
            }],
        )
    };
    if expiration < MIN_EXPIRATION {
        return Err(invalid(
            "spec.expirationSeconds",
            expiration.to_string(),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION {
        return Err(invalid(
            "spec.expirationSeconds",
            expiration.to_string(),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let mut audiences: Vec<String> = spec["audiences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = call.engine.authenticator.api_audiences();
    }
    let (bound, node) = match spec.get("boundObjectRef").filter(|r| r.is_object()) {
        None => (None, None),
        Some(reference) => bind(call, name, &namespace, reference)?,
    };
    let token_spec = TokenSpec {
        namespace: namespace.clone(),
        service_account: name.to_string(),
        service_account_uid: meta::uid(&account).unwrap_or_default().to_string(),
        audiences: audiences.clone(),
        expiration_seconds: expiration,
        bound: bound.clone(),
        node,
    };
    let now = util::unix_now();
    let token = issuer
        .issue(&token_spec, now)
        .map_err(|e| Status::internal(format!("signing the token: {e}")))?;
    request["spec"]["audiences"] = json!(audiences);
    request["spec"]["expirationSeconds"] = expiration.into();
    if let Some(bound) = &bound {
        request["spec"]["boundObjectRef"]["uid"] = bound.uid.clone().into();
    }
    request["status"] = json!({
        "token": token,
        "expirationTimestamp": util::timestamp_of(now + expiration),
    });
    request["apiVersion"] = "authentication.k8s.io/v1".into();
    request["kind"] = "TokenRequest".into();
    let metadata = meta::metadata_mut(&mut request);
    metadata.insert("name".into(), name.into());
    metadata.insert("namespace".into(), namespace.into());
    metadata.insert("creationTimestamp".into(), util::now().into());
    Ok(super::present::value_response(
        call,
        &request,
        StatusCode::CREATED,
    ))
}

/// A node's name and UID.
type NodeRef = (String, String);

/// The object a token is bound to, checked, and the node of a bound pod.
fn bind(
    call: &Call<'_>,
    account: &str,
    namespace: &str,
    reference: &Value,
) -> Result<(Option<BoundObject>, Option<NodeRef>), Status> {
    let kind = reference["kind"].as_str().unwrap_or_default();
    let name = reference["name"].as_str().unwrap_or_default();
    let (plural, scoped) = match kind {
        "Pod" => ("pods", Some(namespace)),
        "Secret" => ("secrets", Some(namespace)),
        "Node" => ("nodes", None),
        other => {
            return Err(Status::bad_request(format!(
                "cannot bind token to object of type {other}"
            )));
        }
    };
    let object = call
        .engine
        .cache
        .lookup("", plural, scoped, name)
        .ok_or_else(|| Status::not_found("", plural, name))?;
    let uid = meta::uid(&object).unwrap_or_default().to_string();
    if let Some(wanted) = reference["uid"].as_str().filter(|u| !u.is_empty())
        && wanted != uid
    {
        return Err(Status::conflict(
            "",
            plural,
            name,
            &format!(
                "the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    let mut node = None;
    if kind == "Pod" {
        let pod_account = object
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if pod_account != account {
            return Err(Status::bad_request(format!(
                "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
            )));
        }
        if let Some(node_name) = object.pointer("/spec/nodeName").and_then(Value::as_str) {
            let node_uid = call
                .engine
                .cache
                .lookup("", "nodes", None, node_name)
                .and_then(|n| meta::uid(&n).map(str::to_string))
                .unwrap_or_default();
            node = Some((node_name.to_string(), node_uid));
        }
    }
    Ok((
        Some(BoundObject {
            kind: kind.to_string(),
            name: name.to_string(),
            uid,
        }),
        node,
    ))
}
