//! The generic REST engine: one set of handlers for every resource of the registry.
//!
//! A request is resolved to its registry entry (a [`Resource`]: definition and strategy,
//! from the snapshot the request sees) and its resource cache, then dispatched by verb:
//! reads (`get`, `list`) and `watch` are served from the watch cache; writes (`create`,
//! `update`, `patch`, `delete`, `deletecollection`) go to storage with compare-and-swap,
//! after the generic strategy (`strategy`) and the kind's own (the entry's) have defaulted,
//! prepared and validated the object. Subresources (`status`, `scale`, `binding`,
//! `eviction`) reuse the same paths.

mod binding;
mod body;
mod component_status;
mod delete;
mod managed;
mod metrics;
mod options;
mod patch;
mod present;
mod read;
mod review;
mod service;
pub(crate) mod service_ips;
mod strategy;
mod subresource;
mod token;
mod watch;
mod write;

pub use body::{Kind as BodyKind, normalize as normalize_body, parse_bytes as parse_body};
pub use service::first_ip as first_service_ip;

use crate::auth::User;
use crate::cache::ResourceCache;
use crate::engine::Engine;
use crate::negotiation::{self, Endpoint, Format, Output};
use crate::response::{self, Response};
use bytes::Bytes;
use http::HeaderMap;
use kyb_api::registry::Subresource;
use kyb_api::{Resource, Status};
use kyb_serving::Query;
use kyb_serving::{ResourceRequest, Verb};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything a handler needs about one request.
pub struct Call<'a> {
    pub engine: &'a Arc<Engine>,
    /// Who asks (after impersonation).
    pub user: Arc<User>,
    /// The resource as requested (its version decides the representation), with its
    /// strategy.
    pub def: Arc<Resource>,
    pub cache: Arc<ResourceCache>,
    pub verb: Verb,
    pub subresource: Option<Subresource>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub query: Query,
    /// The representation the client negotiated, and its serialization.
    pub output: Output,
    pub format: Format,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Warnings for the client gathered on the way (admission), sent as `Warning` headers.
    pub warnings: Mutex<Vec<String>>,
    /// Annotations for the audit record (admission plugins' findings).
    pub annotations: Mutex<Vec<(String, String)>>,
    /// Guards that must live as long as the request (quota charges in flight).
    pub held: Mutex<Vec<Box<dyn std::any::Any + Send>>>,
}

impl<'a> Call<'a> {
    /// The cache's storage form of the resource.
    pub fn storage(&self) -> &Arc<Resource> {
        &self.cache.def
    }

    /// Whether the resource is requested in the version it is stored in.
    pub fn in_storage_version(&self) -> bool {
        self.def.same_version(self.storage())
    }

    pub fn key(&self, name: &str) -> String {
        self.def.key(self.namespace.as_deref(), name)
    }

    /// The name from the path (every single-object verb has one).
    pub fn name(&self) -> Result<&str, Status> {
        self.name
            .as_deref()
            .ok_or_else(Status::method_not_supported)
    }

    pub fn not_found(&self, name: &str) -> Status {
        Status::not_found(&self.def.group, &self.def.plural, name)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Adds a warning for the client.
    pub fn warn(&self, warning: impl Into<String>) {
        if let Ok(mut warnings) = self.warnings.lock() {
            warnings.push(warning.into());
        }
    }

    /// Adds an annotation to the request's audit record.
    pub fn annotate(&self, key: String, value: String) {
        if let Ok(mut annotations) = self.annotations.lock() {
            annotations.push((key, value));
        }
    }

    /// Keeps `guard` alive until the request ends.
    pub fn hold(&self, guard: Box<dyn std::any::Any + Send>) {
        if let Ok(mut held) = self.held.lock() {
            held.push(guard);
        }
    }

    /// The same request for another object (collection deletes run one delete per item).
    pub fn for_object(&self, namespace: Option<String>, name: &str) -> Call<'a> {
        Call {
            engine: self.engine,
            user: self.user.clone(),
            def: self.def.clone(),
            cache: self.cache.clone(),
            verb: self.verb,
            subresource: self.subresource,
            namespace,
            name: Some(name.to_string()),
            query: self.query.clone(),
            output: self.output,
            format: self.format,
            headers: self.headers.clone(),
            body: Bytes::new(),
            warnings: Mutex::new(Vec::new()),
            annotations: Mutex::new(Vec::new()),
            held: Mutex::new(Vec::new()),
        }
    }
}

/// Serves a resource request; also gives the audit annotations gathered on the way.
pub async fn serve(
    engine: &Arc<Engine>,
    user: Arc<User>,
    request: ResourceRequest,
    query: Query,
    headers: HeaderMap,
    body: Bytes,
) -> (Response, Vec<(String, String)>) {
    // Failures are written in the format negotiated without transformations.
    let error_format = negotiation::error_format(
        headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let call = match resolve(engine, user, request, query, headers, body).await {
        Ok(call) => call,
        Err(status) => return (response::error_in(error_format, &status), Vec::new()),
    };
    let result = dispatch(&call).await;
    let warnings = call.warnings.into_inner().unwrap_or_default();
    let annotations = call.annotations.into_inner().unwrap_or_default();
    let response = match result {
        Ok(response) => response::with_warnings(response, &warnings),
        Err(status) => {
            response::with_warnings(response::error_in(error_format, &status), &warnings)
        }
    };
    (response, annotations)
}

/// How long a request for a resource just added waits for the watch cache to load it.
const NEW_RESOURCE_WAIT: Duration = Duration::from_secs(3);

async fn resolve(
    engine: &Arc<Engine>,
    user: Arc<User>,
    request: ResourceRequest,
    query: Query,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Call<'_>, Status> {
    let snapshot = engine.registry.snapshot();
    let def = snapshot
        .find(&request.group, &request.version, &request.resource)
        .ok_or_else(Status::not_found_path)?
        .clone();
    let subresource = match &request.subresource {
        None => None,
        Some(name) => Some(
            Subresource::from_name(name)
                .filter(|s| def.has_subresource(*s))
                .ok_or_else(Status::not_found_path)?,
        ),
    };
    // Scope: namespaced resources are addressed in a namespace (except lists and watches
    // across all namespaces); cluster-scoped ones never are.
    if def.namespaced
        && request.namespace.is_none()
        && !matches!(request.verb, Verb::List | Verb::Watch)
    {
        return Err(Status::not_found_path());
    }
    if !def.namespaced && request.namespace.is_some() {
        return Err(Status::not_found_path());
    }
    let cache = cache_of(engine, &def, snapshot.generation()).await?;
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let endpoint = Endpoint {
        // Built-in kinds have a protobuf form; custom and untyped ones only their metadata.
        protobuf: kyb_protobuf::is_known(&def.api_version(), &def.kind),
        // Every stored resource (and its status) has a Table, and so do the readable
        // `componentstatuses`; the create-only reviews, tokens, bindings, evictions and
        // scales have none (406, as in Kubernetes).
        table: (!def.is_virtual() || def.has_verb("list"))
            && matches!(subresource, None | Some(Subresource::Status)),
        metadata: true,
        discovery: false,
        watch: request.verb == Verb::Watch,
    };
    let negotiated = negotiation::negotiate(accept, &endpoint)?;
    Ok(Call {
        engine,
        user,
        def,
        cache,
        verb: request.verb,
        subresource,
        namespace: request.namespace,
        name: request.name,
        query,
        output: negotiated.output,
        format: negotiated.format,
        headers,
        body,
        warnings: Mutex::new(Vec::new()),
        annotations: Mutex::new(Vec::new()),
        held: Mutex::new(Vec::new()),
    })
}

/// The resource cache of `def` (an entry of the registry at `generation`), once the watch
/// cache has caught up with that generation.
async fn cache_of(
    engine: &Arc<Engine>,
    def: &Resource,
    generation: u64,
) -> Result<Arc<ResourceCache>, Status> {
    if let Some(cache) = engine.cache.resource(def) {
        return Ok(cache);
    }
    // Just added: served once loaded (as a custom resource is once established).
    if !engine
        .cache
        .wait_for_registry(generation, NEW_RESOURCE_WAIT)
        .await
    {
        return Err(Status::service_unavailable(format!(
            "{} is not ready yet",
            def.group_resource()
        )));
    }
    engine
        .cache
        .resource(def)
        .ok_or_else(Status::not_found_path)
}

async fn dispatch(call: &Call<'_>) -> Result<Response, Status> {
    if call.def.is_virtual() {
        if call.def.group == crate::metrics_api::GROUP {
            return metrics::serve(call).await;
        }
        if call.def.group.is_empty() && call.subresource.is_none() {
            match call.def.plural.as_ref() {
                "componentstatuses" => return component_status::serve(call).await,
                "bindings" => return binding::create(call).await,
                _ => {}
            }
        }
        return match (call.verb, call.subresource) {
            (Verb::Create, None) => review::create(call).await,
            _ => Err(Status::method_not_supported()),
        };
    }
    match (call.verb, call.subresource) {
        (Verb::Get, None) => read::get(call).await,
        (Verb::List, None) => read::list(call).await,
        (Verb::Watch, None) => watch::watch(call).await,
        (Verb::Create, None) => write::create(call).await,
        (Verb::Update, None) => write::update(call).await,
        (Verb::Patch, None) => patch::patch(call).await,
        (Verb::Delete, None) => delete::delete(call).await,
        (Verb::DeleteCollection, None) => delete::delete_collection(call).await,
        (_, Some(sub)) => subresource::serve(call, sub).await,
    }
}

/// A request made by the server itself, as `system:apiserver` (bootstrap objects, the
/// status keepers, quota admission's usage records). It goes through the same strategy,
/// validation and admission as a client's.
pub fn internal_call<'a>(
    engine: &'a Arc<Engine>,
    def: &Arc<Resource>,
    verb: Verb,
    namespace: Option<&str>,
    subresource: Option<Subresource>,
) -> Result<Call<'a>, Status> {
    let cache = engine
        .cache
        .resource(def)
        .ok_or_else(|| Status::internal(format!("no cache for {}", def.group_resource())))?;
    Ok(Call {
        engine,
        user: engine.identity.clone(),
        def: def.clone(),
        cache,
        verb,
        subresource,
        namespace: namespace.map(str::to_string),
        name: None,
        query: Query::default(),
        output: Output::Json,
        format: Format::Json,
        headers: HeaderMap::new(),
        body: Bytes::new(),
        warnings: Mutex::new(Vec::new()),
        annotations: Mutex::new(Vec::new()),
        held: Mutex::new(Vec::new()),
    })
}

/// Replaces an object's status, on the object at `precondition` (a resourceVersion) when
/// given (409 if it moved on), else on whatever is current.
pub async fn update_status(
    call: &Call<'_>,
    name: &str,
    precondition: Option<&str>,
    status: serde_json::Value,
) -> Result<serde_json::Value, Status> {
    let def = call.storage();
    let (updated, _) = write::guaranteed_update(call, name, precondition, |current| {
        let mut new = current.clone();
        new["status"] = status.clone();
        let mut new = strategy::prepare_status_update(def, &new, current)?;
        managed::record(call, Some(current), &mut new, Some("status"))?;
        Ok(new)
    })
    .await?;
    Ok(updated)
}

/// Creates an object from within the server (or, with `update`, brings an existing one's
/// content up to date), through the same strategy and validation as a client's request.
pub async fn ensure(
    engine: &Arc<Engine>,
    def: &Arc<Resource>,
    object: serde_json::Value,
    update: bool,
) -> Result<serde_json::Value, Status> {
    let namespace = kyb_apimachinery::meta::namespace(&object).map(str::to_string);
    let name = kyb_apimachinery::meta::name(&object)
        .unwrap_or_default()
        .to_string();
    let call = internal_call(engine, def, Verb::Create, namespace.as_deref(), None)?;
    let (object, _) = body::normalize(&call, object, body::Kind::Of(def))?;
    match write::create_object(&call, object.clone(), true).await {
        Err(status) if status.code == 409 && update => {
            let (updated, _) = write::guaranteed_update(&call, &name, None, |current| {
                let mut new = current.clone();
                if let (Some(target), Some(desired)) = (new.as_object_mut(), object.as_object()) {
                    for (field, value) in desired {
                        if !matches!(field.as_str(), "metadata" | "status") {
                            target.insert(field.clone(), value.clone());
                        }
                    }
                }
                kyb_apimachinery::meta::metadata_mut(&mut new).remove("resourceVersion");
                strategy::prepare_update(def, &mut new, current)?;
                Ok(new)
            })
            .await?;
            Ok(updated)
        }
        other => other,
    }
}

/// Deletes an object from within the server, through the same admission as a client's
/// delete (finalizers and grace periods apply).
pub async fn remove(
    engine: &Arc<Engine>,
    def: &Arc<Resource>,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), Status> {
    let mut call = internal_call(engine, def, Verb::Delete, namespace, None)?;
    call.name = Some(name.to_string());
    delete::delete_object(&call, name, &delete::DeleteOptions::default())
        .await
        .map(|_| ())
}

/// Changes an object from within the server: `change` edits a copy of its current state
/// (metadata included; the status only through [`update_status`]), which then goes through
/// the same strategy and admission as a client's update.
pub async fn modify(
    engine: &Arc<Engine>,
    def: &Arc<Resource>,
    namespace: Option<&str>,
    name: &str,
    change: impl Fn(&mut serde_json::Value),
) -> Result<serde_json::Value, Status> {
    let call = internal_call(engine, def, Verb::Update, namespace, None)?;
    let (updated, _) = write::guaranteed_update(&call, name, None, |current| {
        let mut new = current.clone();
        change(&mut new);
        kyb_apimachinery::meta::metadata_mut(&mut new).remove("resourceVersion");
        strategy::prepare_update(def, &mut new, current)?;
        Ok(new)
    })
    .await?;
    Ok(updated)
}
