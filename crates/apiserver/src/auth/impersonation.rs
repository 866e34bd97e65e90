//! Impersonation: `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers make a request act as another user, when the real user
//! may `impersonate` each of them (`users`, `serviceaccounts`, `groups`, `uids`,
//! `userextras/<key>`), as `kubectl --as`/`--as-group` and `kubectl auth can-i --as` use it.

use super::authz::Authorizer;
use http::HeaderMap;
use kyb_api::Status;
use kyb_serving::User;
use kyb_serving::user::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED};
use std::collections::BTreeMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// The user a request acts as: `None` when it impersonates nobody, the impersonated user
/// when `user` may impersonate everything asked, else the refusal.
pub fn impersonate(
    authorizer: &Authorizer,
    user: &User,
    headers: &HeaderMap,
) -> Result<Option<User>, Status> {
    let values = |name: &str| -> Result<Vec<String>, Status> {
        headers
            .get_all(name)
            .iter()
            .map(|v| {
                v.to_str()
                    .map(str::to_string)
                    .map_err(|_| Status::bad_request(format!("invalid {name} header")))
            })
            .collect()
    };
    let names = values(USER)?;
    let groups = values(GROUP)?;
    let uids = values(UID)?;
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            let value = value
                .to_str()
                .map_err(|_| Status::bad_request(format!("invalid {name} header")))?;
            extra
                .entry(percent_decode(key))
                .or_default()
                .push(value.to_string());
        }
    }
    if names.is_empty() {
        if groups.is_empty() && uids.is_empty() && extra.is_empty() {
            return Ok(None);
        }
        return Err(Status::bad_request(format!(
            "requested {} without impersonating a user",
            requested(&groups, &uids, &extra)
        )));
    }
    if names.len() > 1 || uids.len() > 1 {
        return Err(Status::bad_request(
            "only one user and one uid may be impersonated",
        ));
    }
    let name = &names[0];
    let mut impersonated = User {
        name: name.clone(),
        uid: uids.first().cloned().unwrap_or_default(),
        groups: Vec::new(),
        extra: BTreeMap::new(),
    };
    // The user (or service account), then each group, uid and extra value.
    match name.strip_prefix(kyb_rbac::SERVICE_ACCOUNT_PREFIX) {
        Some(rest) => {
            let (namespace, account) = rest.split_once(':').unwrap_or((rest, ""));
            check(
                authorizer,
                user,
                "",
                "serviceaccounts",
                None,
                namespace,
                account,
            )?;
            if groups.is_empty() {
                impersonated.groups = vec![
                    "system:serviceaccounts".to_string(),
                    format!("system:serviceaccounts:{namespace}"),
                ];
            }
        }
        None => check(authorizer, user, "", "users", None, "", name)?,
    }
    for group in &groups {
        check(authorizer, user, "", "groups", None, "", group)?;
        impersonated.groups.push(group.clone());
    }
    for uid in &uids {
        check(
            authorizer,
            user,
            "authentication.k8s.io",
            "uids",
            None,
            "",
            uid,
        )?;
    }
    for (key, values) in &extra {
        for value in values {
            check(
                authorizer,
                user,
                "authentication.k8s.io",
                "userextras",
                Some(key),
                "",
                value,
            )?;
        }
    }
    impersonated.extra = extra;
    if impersonated.name == ANONYMOUS {
        if !impersonated.in_group(UNAUTHENTICATED) {
            impersonated.groups.push(UNAUTHENTICATED.to_string());
        }
    } else if !impersonated.in_group(AUTHENTICATED) {
        impersonated.groups.push(AUTHENTICATED.to_string());
    }
    Ok(Some(impersonated))
}

/// May `user` impersonate this subject?
fn check(
    authorizer: &Authorizer,
    user: &User,
    group: &str,
    resource: &str,
    subresource: Option<&str>,
    namespace: &str,
    name: &str,
) -> Result<(), Status> {
    let mut asked = kyb_rbac::Attributes::resource(
        &user.name,
        &user.groups,
        "impersonate",
        group,
        resource,
        namespace,
    )
    .with_name(name);
    if let Some(subresource) = subresource {
        asked = asked.with_subresource(subresource);
    }
    let decision = authorizer.decide(&asked);
    if decision.is_allowed() {
        return Ok(());
    }
    Err(
        Status::forbidden(asked.forbidden_message(decision.reason()))
            .with_details(group, resource, name),
    )
}

fn requested(groups: &[String], uids: &[String], extra: &BTreeMap<String, Vec<String>>) -> String {
    let mut parts = Vec::new();
    if !groups.is_empty() {
        parts.push(format!("groups {groups:?}"));
    }
    if !uids.is_empty() {
        parts.push(format!("uid {uids:?}"));
    }
    if !extra.is_empty() {
        parts.push(format!("extras {:?}", extra.keys().collect::<Vec<_>>()));
    }
    parts.join(", ")
}

/// Extra keys travel percent-encoded in header names.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_percent_decoded() {
        assert_eq!(percent_decode("scopes"), "scopes");
        assert_eq!(percent_decode("example.com%2fteam"), "example.com/team");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
    }
}
