//! `get` and `list`, served from the watch cache (or, for exact past revisions and later
//! pages of a paginated list, from storage at the list's revision).

use super::{Call, present};
use crate::cache::object::{CachedObject, Filter};
use crate::response::Response;
use base64::Engine;
use http::StatusCode;
use kyb_api::{Status, fields};
use kyb_apimachinery::labels;
use kyb_storage::{ListRequest, Revision};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How long a read waits for the cache to reach a requested revision.
const TOO_LARGE_WAIT: Duration = Duration::from_secs(3);

pub async fn get(call: &Call<'_>) -> Result<Response, Status> {
    let name = call.name()?;
    let object = read_object(call, name).await?;
    present::cached(call, &object, StatusCode::OK)
}

/// The current state of one object (consistent unless `resourceVersion` says otherwise).
pub async fn read_object(call: &Call<'_>, name: &str) -> Result<Arc<CachedObject>, Status> {
    let key = call.key(name);
    match call.query.get("resourceVersion") {
        None | Some("") => {
            if !call.engine.fresh().await {
                return read_from_storage(call, &key, None)
                    .await?
                    .ok_or_else(|| call.not_found(name));
            }
        }
        Some("0") => {}
        Some(rv) => {
            let revision = parse_revision(rv)?;
            wait_for(call, revision).await?;
        }
    }
    call.cache.get(&key).ok_or_else(|| call.not_found(name))
}

async fn read_from_storage(
    call: &Call<'_>,
    key: &str,
    revision: Option<Revision>,
) -> Result<Option<Arc<CachedObject>>, Status> {
    let response = call
        .engine
        .store
        .get(key.as_bytes(), revision)
        .await
        .map_err(crate::engine::storage_error)?;
    response
        .kv
        .map(|kv| {
            CachedObject::from_stored(call.storage(), &kv.key, &kv.value, kv.mod_revision)
                .map(Arc::new)
                .map_err(Status::internal)
        })
        .transpose()
}

pub fn parse_revision(rv: &str) -> Result<Revision, Status> {
    rv.parse()
        .map_err(|_| Status::bad_request(format!("invalid resource version {rv:?}")))
}

/// Waits until the cache has reached a revision a client has seen.
pub async fn wait_for(call: &Call<'_>, revision: Revision) -> Result<(), Status> {
    if call.engine.cache.wait_for(revision, TOO_LARGE_WAIT).await {
        Ok(())
    } else {
        Err(Status::timeout(format!(
            "Too large resource version: {revision}, current: {}",
            call.engine.cache.revision()
        )))
    }
}

/// The list/watch filter of a request.
pub fn filter(call: &Call<'_>) -> Result<Filter, Status> {
    let labels = labels::Selector::parse(call.query.get("labelSelector").unwrap_or_default())
        .map_err(Status::bad_request)?;
    let fields = fields::Selector::parse(call.query.get("fieldSelector").unwrap_or_default())
        .map_err(Status::bad_request)?;
    let selectable = call.def.strategy.selectable_fields();
    fields
        .check_supported(selectable)
        .map_err(Status::bad_request)?;
    let mut fields = fields;
    // Cached objects carry the storage version's fields: labels of another version are
    // renamed to those.
    for requirement in &mut fields.requirements {
        if let Some(field) = selectable.iter().find(|f| f.label == requirement.field) {
            requirement.field = field.storage_label().to_string();
        }
    }
    let mut filter = Filter {
        namespace: call.namespace.clone(),
        labels,
        fields,
    };
    // `metadata.namespace=x` on an all-namespaces request narrows it like the path would.
    if filter.namespace.is_none()
        && call.def.namespaced
        && let Some(ns) = filter.fields.exact("metadata.namespace")
    {
        filter.namespace = Some(ns.to_string());
    }
    Ok(filter)
}

/// The storage prefix a list reads.
fn list_prefix(call: &Call<'_>, filter: &Filter) -> String {
    call.def.list_prefix(filter.namespace.as_deref())
}

pub async fn list(call: &Call<'_>) -> Result<Response, Status> {
    let filter = filter(call)?;
    let limit = match call.query.number("limit")? {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => 0,
    };
    let prefix = list_prefix(call, &filter);
    let resource_version = call.query.get("resourceVersion").filter(|v| !v.is_empty());
    super::options::validate_list(&call.query, false)?;
    let exact = call.query.value("resourceVersionMatch") == Some("Exact");
    if let Some(token) = call.query.value("continue") {
        if resource_version.is_some() {
            return Err(Status::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (revision, start) = decode_continue(token, &prefix)?;
        return list_from_storage(call, &filter, &prefix, Some(start), limit, revision).await;
    }
    let revision = match resource_version {
        None => {
            if !call.engine.fresh().await {
                let current = call
                    .engine
                    .store
                    .current_revision()
                    .await
                    .map_err(crate::engine::storage_error)?;
                return list_from_storage(call, &filter, &prefix, None, limit, current).await;
            }
            None
        }
        Some("0") => None,
        Some(rv) => Some(parse_revision(rv)?),
    };
    if let (true, Some(revision)) = (exact, revision) {
        return list_from_storage(call, &filter, &prefix, None, limit, revision).await;
    }
    if let Some(revision) = revision {
        wait_for(call, revision).await?;
    }
    let page = call
        .cache
        .list(&prefix, &filter, limit, call.engine.cache.revision());
    let next = page
        .next
        .as_deref()
        .map(|key| encode_continue(page.revision, key, &prefix));
    present::list(call, &page.items, page.revision, next)
}

/// Reads a page of a list from storage at `revision`: later pages of a paginated list, and
/// exact-revision lists.
async fn list_from_storage(
    call: &Call<'_>,
    filter: &Filter,
    prefix: &str,
    start: Option<String>,
    limit: usize,
    revision: Revision,
) -> Result<Response, Status> {
    let mut request = ListRequest::prefix(prefix.as_bytes().to_vec()).at_revision(revision);
    let expired = if start.is_some() {
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
    } else {
        "The resourceVersion for the provided list is too old."
    };
    request.start = start.map(String::into_bytes);
    request.limit = if limit == 0 { 0 } else { limit.max(100) };
    let mut items = Vec::new();
    let mut next = None;
    'pages: loop {
        let page = call
            .engine
            .store
            .list(&request)
            .await
            .map_err(|e| match e {
                kyb_storage::Error::Compacted { .. } => Status::expired(expired),
                other => crate::engine::storage_error(other),
            })?;
        for kv in &page.kvs {
            let object =
                CachedObject::from_stored(call.storage(), &kv.key, &kv.value, kv.mod_revision)
                    .map_err(Status::internal)?;
            if !filter.matches(call.storage(), &object) {
                continue;
            }
            if limit > 0 && items.len() == limit {
                next = Some(object.key.to_string());
                break 'pages;
            }
            items.push(Arc::new(object));
        }
        match request.next_page(&page) {
            Some(following) => request = following,
            None => break,
        }
    }
    let token = next.map(|key| encode_continue(revision, &key, prefix));
    present::list(call, &items, revision, token)
}

/// Kubernetes' continue token: base64 of `{"v":"meta.k8s.io/v1","rv":R,"start":"<key>"}`,
/// the key relative to the list's prefix.
fn encode_continue(revision: Revision, key: &str, prefix: &str) -> String {
    let start = key.strip_prefix(prefix).unwrap_or(key);
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str, prefix: &str) -> Result<(Revision, String), Status> {
    let invalid = || Status::bad_request(format!("continue key is not valid: {token:?}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if value.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(invalid());
    }
    let revision = value
        .get("rv")
        .and_then(Value::as_u64)
        .filter(|r| *r > 0)
        .ok_or_else(invalid)?;
    let start = value
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(invalid)?;
    if start.contains("..") || start.starts_with('/') {
        return Err(invalid());
    }
    Ok((revision, format!("{prefix}{start}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let prefix = "/registry/pods/";
        let token = encode_continue(42, "/registry/pods/ns/web", prefix);
        assert_eq!(
            decode_continue(&token, prefix).ok(),
            Some((42, "/registry/pods/ns/web".to_string()))
        );
        assert!(decode_continue("garbage", prefix).is_err());
        let sneaky = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}"#);
        assert!(decode_continue(&sneaky, prefix).is_err());
    }
}
