//! `/openapi/v2` and `/openapi/v3`: the documents from `kyb-openapi`, built lazily from the
//! resource registry and cached, with the hash-addressed caching kubectl relies on.

use crate::response::{self, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use kyb_api::Status;
use kyb_api::registry::BUILTIN;
use kyb_openapi::{Document, Documents, ResourceSpec};
use kyb_serving::Query;

/// The documents for the built-in resources.
pub fn documents() -> Documents {
    let specs = BUILTIN
        .iter()
        .map(|def| ResourceSpec {
            group: def.group.into(),
            version: def.version.into(),
            kind: def.kind.into(),
            plural: def.plural.into(),
            namespaced: def.namespaced,
            verbs: def.verbs.iter().map(|v| v.to_string()).collect(),
            subresources: def
                .subresources
                .iter()
                .map(|s| s.name().to_string())
                .collect(),
        })
        .collect();
    Documents::new(specs).with_server_version(crate::KUBERNETES_VERSION.2)
}

/// Serves a document. Documents are built on first request (about 100 ms for a group,
/// in release builds), not at start-up: they take tens of MiB while being built, which an
/// idle server should not hold.
pub fn serve(documents: &Documents, path: &str, query: &Query, headers: &HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let json_acceptable = accept.is_empty()
        || accept.split(',').any(|a| {
            let essence = a.split(';').next().unwrap_or_default().trim();
            matches!(essence, "application/json" | "*/*" | "application/*")
        });
    if !json_acceptable {
        return response::error(&Status::not_acceptable(
            "only application/json is served for OpenAPI documents",
        ));
    }
    match path.strip_prefix("/openapi/") {
        Some("v2") => document(documents.v2(), headers, None),
        Some("v3") => document(documents.v3_index(), headers, None),
        Some(rest) => match rest
            .strip_prefix("v3/")
            .and_then(|p| documents.v3(p).map(|d| (p, d)))
        {
            Some((group_version, doc)) => match query.value("hash") {
                Some(hash) if hash != doc.hash() => {
                    // A stale hash: send the client to the current document.
                    let mut response = response::text(StatusCode::MOVED_PERMANENTLY, "");
                    if let Ok(location) = HeaderValue::from_str(&format!(
                        "/openapi/v3/{group_version}?hash={}",
                        doc.hash()
                    )) {
                        response.headers_mut().insert(header::LOCATION, location);
                    }
                    response
                }
                Some(_) => document(doc, headers, Some("public, immutable")),
                None => document(doc, headers, None),
            },
            None => response::error(&Status::not_found_path()),
        },
        None => response::error(&Status::not_found_path()),
    }
}

fn document(doc: &Document, headers: &HeaderMap, cache_control: Option<&'static str>) -> Response {
    let etag = doc.etag();
    let mut response = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == etag)
    {
        response::text(StatusCode::NOT_MODIFIED, "")
    } else {
        response::json_bytes(StatusCode::OK, doc.bytes())
    };
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    if let Some(cache_control) = cache_control {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        );
    }
    response
}
