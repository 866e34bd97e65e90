//! `/openapi/v2` and `/openapi/v3`: the documents from `kyb-openapi`, built lazily from the
//! resource registry and cached, with the hash-addressed caching kubectl relies on. When
//! the registry changes, the next request gets documents of the new registry (new
//! hashes and ETags, so clients that cached the old ones fetch again).

use crate::response::{self, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use kyb_api::Status;
use kyb_api::registry::{Registry, Snapshot};
use kyb_openapi::{Document, Documents, ResourceSpec};
use kyb_serving::Query;
use std::sync::{Arc, Mutex};

/// The documents of a registry snapshot.
pub fn documents(snapshot: &Snapshot) -> Documents {
    let specs = snapshot
        .resources()
        .iter()
        .map(|def| ResourceSpec::of(def))
        .collect();
    Documents::new(specs).with_server_version(crate::KUBERNETES_VERSION.2)
}

/// The documents of the registry as it is, replaced when it changes.
pub struct Published {
    registry: Arc<Registry>,
    /// The generation the documents describe, and the documents (generated on demand).
    current: Mutex<Option<(u64, Arc<Documents>)>>,
}

impl Published {
    pub fn new(registry: Arc<Registry>) -> Published {
        Published {
            registry,
            current: Mutex::new(None),
        }
    }

    /// The documents of the current registry.
    pub fn documents(&self) -> Arc<Documents> {
        let snapshot = self.registry.snapshot();
        let mut current = match self.current.lock() {
            Ok(current) => current,
            Err(poisoned) => poisoned.into_inner(),
        };
        match &*current {
            Some((generation, documents)) if *generation == snapshot.generation() => {
                documents.clone()
            }
            _ => {
                let documents = Arc::new(documents(&snapshot));
                *current = Some((snapshot.generation(), documents.clone()));
                documents
            }
        }
    }
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
