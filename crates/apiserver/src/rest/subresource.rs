//! Subresources: `status` (the status alone), `scale` (replicas through an
//! autoscaling/v1 Scale), `binding` (assigning a pod to a node), `eviction` (a delete that
//! respects PodDisruptionBudgets), `finalize` (a namespace's spec.finalizers) and
//! `approval` (a CertificateSigningRequest's Approved/Denied conditions).

use super::patch;
use super::write::{self, guaranteed_update};
use super::{Call, body, delete, managed, present, read, strategy};
use crate::admission;
use crate::cache::shallow;
use crate::negotiation::{self, BodyFormat};
use crate::response::{self, Response};
use http::StatusCode;
use kyb_api::registry::{ScalePaths, SelectorForm, Subresource};
use kyb_api::{Resource, Status};
use kyb_apimachinery::meta;
use kyb_serving::Verb;
use serde_json::{Value, json};

pub async fn serve(call: &Call<'_>, sub: Subresource) -> Result<Response, Status> {
    let name = call.name()?.to_string();
    match (sub, call.verb) {
        (Subresource::Status, Verb::Get) => read::get(call).await,
        (Subresource::Status, Verb::Update) => status_update(call, &name).await,
        (Subresource::Status, Verb::Patch) if patch::format(call)? == BodyFormat::ApplyPatch => {
            patch::apply(call, &name, Some("status")).await
        }
        (Subresource::Status, Verb::Patch) => {
            let (updated, warnings) =
                patch::patch_object(call, &name, Some("status"), |def, new, current| {
                    *new = strategy::prepare_status_update(def, new, current)?;
                    Ok(())
                })
                .await?;
            Ok(response::with_warnings(
                present::stored_value(call, &updated, StatusCode::OK)?,
                &warnings,
            ))
        }
        (Subresource::Approval, Verb::Get) => read::get(call).await,
        (Subresource::Approval, Verb::Update) => approval_update(call, &name).await,
        (Subresource::Approval, Verb::Patch)
            if negotiation::body_format(call.header("content-type"))? != BodyFormat::ApplyPatch =>
        {
            let (updated, warnings) =
                patch::patch_object(call, &name, Some("approval"), |def, new, current| {
                    *new = strategy::prepare_approval_update(def, new, current)?;
                    Ok(())
                })
                .await?;
            Ok(response::with_warnings(
                present::stored_value(call, &updated, StatusCode::OK)?,
                &warnings,
            ))
        }
        (Subresource::Scale, Verb::Get) => {
            let object = read::read_object(call, &name).await?;
            let value = object.value().map_err(Status::internal)?;
            Ok(present::value_response(
                call,
                &scale_of(call.storage(), &value)?,
                StatusCode::OK,
            ))
        }
        (Subresource::Scale, Verb::Update | Verb::Patch) => scale_update(call, &name).await,
        (Subresource::Binding, Verb::Create) => binding(call, &name).await,
        (Subresource::Eviction, Verb::Create) => eviction(call, &name).await,
        (Subresource::Finalize, Verb::Update) => finalize(call, &name).await,
        (Subresource::Token, Verb::Create) => super::token::create(call, &name).await,
        _ => Err(Status::method_not_supported()),
    }
}

async fn status_update(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    replace_part(call, name, "status", strategy::prepare_status_update).await
}

/// A CertificateSigningRequest's `/approval` update: only its conditions change.
async fn approval_update(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    replace_part(call, name, "approval", strategy::prepare_approval_update).await
}

/// An update (PUT) of the part of an object the subresource `sub` owns, the rest kept
/// from the stored object by `prepare`.
async fn replace_part(
    call: &Call<'_>,
    name: &str,
    sub: &str,
    prepare: fn(&Resource, &Value, &Value) -> Result<Value, Status>,
) -> Result<Response, Status> {
    let (object, warnings) = body::decode_object(call, body::Kind::Of(&call.def))?;
    let object = write::check_identity(call, object, name)?;
    let object = write::to_storage(call, object)?;
    let precondition = meta::resource_version(&object).map(str::to_string);
    let def = call.storage();
    let (updated, _) = guaranteed_update(call, name, precondition.as_deref(), |current| {
        let mut new = prepare(def, &object, current)?;
        managed::record(call, Some(current), &mut new, Some(sub))?;
        Ok(new)
    })
    .await?;
    Ok(response::with_warnings(
        present::stored_value(call, &updated, StatusCode::OK)?,
        &warnings,
    ))
}

/// The autoscaling/v1 Scale of a scalable object, read where its strategy says.
pub(super) fn scale_of(def: &Resource, object: &Value) -> Result<Value, Status> {
    let paths = scale_paths(def)?;
    let metadata = meta::metadata(object);
    let field = |name: &str| {
        metadata
            .and_then(|m| m.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let selector = match &paths.label_selector {
        Some((path, form)) => match (object.pointer(path), form) {
            (Some(Value::Object(map)), SelectorForm::Map) => map
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(","),
            (Some(Value::String(text)), SelectorForm::Text) => text.clone(),
            (Some(selector), SelectorForm::LabelSelector) => selector_string(selector),
            _ => String::new(),
        },
        None => String::new(),
    };
    let mut scale_meta = json!({
        "name": field("name"),
        "uid": field("uid"),
        "resourceVersion": field("resourceVersion"),
        "creationTimestamp": field("creationTimestamp"),
    });
    if def.namespaced {
        scale_meta["namespace"] = field("namespace");
    }
    let replicas = |path: &str| object.pointer(path).and_then(Value::as_i64);
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas(&paths.spec_replicas).unwrap_or(1)},
        "status": {
            "replicas": replicas(&paths.status_replicas).unwrap_or(0),
            "selector": selector,
        },
    }))
}

fn scale_paths(def: &Resource) -> Result<&ScalePaths, Status> {
    def.strategy
        .scale()
        .ok_or_else(|| Status::internal(format!("{} has no scale paths", def.group_resource())))
}

/// Writes the desired replicas where the strategy keeps them (in an existing parent:
/// `spec`, for the built-in kinds).
pub(super) fn set_replicas(
    def: &Resource,
    object: &mut Value,
    replicas: i64,
) -> Result<(), Status> {
    let path = &scale_paths(def)?.spec_replicas;
    let (parent, field) = path.rsplit_once('/').unwrap_or(("", path));
    if let Some(parent) = object.pointer_mut(parent).and_then(Value::as_object_mut) {
        parent.insert(field.to_string(), replicas.into());
    }
    Ok(())
}

/// A `metav1.LabelSelector` in the query syntax.
fn selector_string(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in expressions {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => parts.push(format!("{key} in ({})", values.join(","))),
                Some("NotIn") => parts.push(format!("{key} notin ({})", values.join(","))),
                Some("Exists") => parts.push(key.to_string()),
                Some("DoesNotExist") => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

async fn scale_update(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    let def = call.storage();
    let format = match call.verb {
        Verb::Patch => negotiation::patch_format(call.header("content-type"), true)?,
        _ => BodyFormat::Json,
    };
    let patch_body = if call.verb == Verb::Patch {
        if format == BodyFormat::ApplyPatch {
            return Err(negotiation::unsupported_patch(true));
        }
        Some(body::parse_bytes(&call.body, format)?)
    } else {
        None
    };
    let put_body = match &patch_body {
        None => {
            Some(body::decode_object(call, body::Kind::Builtin("autoscaling", "v1", "Scale"))?.0)
        }
        Some(_) => None,
    };
    let precondition = put_body
        .as_ref()
        .or(patch_body.as_ref())
        .and_then(|b| b.pointer("/metadata/resourceVersion"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let (updated, _) = guaranteed_update(call, name, precondition.as_deref(), |current| {
        let scale = match (&put_body, &patch_body) {
            (Some(scale), _) => scale.clone(),
            (None, Some(patch)) => {
                let current_scale = scale_of(def, current)?;
                // A Scale has no lists: a strategic merge patch is a merge patch here.
                match format {
                    BodyFormat::JsonPatch => kyb_patch::json_patch::apply(current_scale, patch),
                    _ => kyb_patch::merge_patch::apply(&current_scale, patch),
                }
                .map_err(super::patch::patch_error)?
            }
            (None, None) => return Err(Status::bad_request("no scale given")),
        };
        // `replicas` is a plain int32: absent means 0.
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            return Err(Status::invalid(
                "autoscaling",
                "Scale",
                name,
                &[kyb_api::status::Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: {replicas}: must be greater than or equal to 0"
                    ),
                    field: "spec.replicas".into(),
                }],
            ));
        }
        let mut new = current.clone();
        set_replicas(def, &mut new, replicas)?;
        meta::metadata_mut(&mut new).remove("resourceVersion");
        strategy::prepare_update(def, &mut new, current)?;
        managed::record(call, Some(current), &mut new, Some("scale"))?;
        Ok(new)
    })
    .await?;
    Ok(present::value_response(
        call,
        &scale_of(def, &updated)?,
        StatusCode::OK,
    ))
}

pub(super) async fn binding(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    let (mut binding, _) = body::decode_object(call, body::Kind::Builtin("", "v1", "Binding"))?;
    admit_create(call, name, ("", "v1", "Binding"), &mut binding).await?;
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            Status::invalid(
                "",
                "Binding",
                name,
                &[kyb_api::status::Cause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value".into(),
                    field: "target.name".into(),
                }],
            )
        })?
        .to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned();
    let bound = match annotations {
        None => bind_in_place(call, name, &node).await?,
        Some(_) => None,
    };
    if bound.is_none() {
        guaranteed_update(call, name, None, |current| {
            check_bindable(name, current)?;
            let mut pod = current.clone();
            if let Some(annotations) = &annotations {
                let metadata = meta::metadata_mut(&mut pod);
                let existing = metadata.entry("annotations").or_insert_with(|| json!({}));
                for (k, v) in annotations {
                    existing[k] = v.clone();
                }
            }
            pod["spec"]["nodeName"] = node.clone().into();
            set_condition(&mut pod, "PodScheduled", "True");
            // No managedFields entry: Kubernetes assigns the pod straight in storage
            // (`BindingREST.setPodHostAndAnnotations`), past the field manager, so a binding
            // leaves the pod's managedFields as they were.
            Ok(pod)
        })
        .await?;
    }
    Ok(present::value_response(
        call,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201
        }),
        StatusCode::CREATED,
    ))
}

/// A pod may be bound only once, and not while it is being deleted.
fn check_bindable(name: &str, pod: &Value) -> Result<(), Status> {
    if meta::deletion_timestamp(pod).is_some() {
        return Err(Status::conflict(
            "",
            "pods",
            name,
            &format!("pod {name} is being deleted, cannot be assigned to a host"),
        ));
    }
    if let Some(assigned) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Err(Status::conflict(
            "",
            "pods",
            name,
            &format!("pod {name} is already assigned to node {assigned:?}"),
        ));
    }
    Ok(())
}

/// Binds a pod (without annotations to merge) by editing its stored JSON rather than
/// parsing it: the scheduler binds every pod, and the pod is written back whole. The
/// outcome is the one [`guaranteed_update`] gives on the parsed pod. `None` (nothing
/// written) when the pod is not in the form the API server stores objects in: then the
/// caller binds the parsed pod.
async fn bind_in_place(call: &Call<'_>, name: &str, node: &str) -> Result<Option<()>, Status> {
    let key = call.key(name);
    let dry_run = super::options::dry_run(call)?;
    let current = read::read_object(call, name).await?;
    let (mut stored, mut revision) = (current.json.clone(), current.revision);
    drop(current);
    for _ in 0..64 {
        let Some(bound) = bound_pod(name, &stored, node)? else {
            return Ok(None);
        };
        if dry_run {
            return Ok(Some(()));
        }
        match call
            .engine
            .store
            .update(key.as_bytes(), bound.into(), revision)
            .await
        {
            Ok(_) => return Ok(Some(())),
            Err(kyb_storage::Error::Conflict {
                current: latest, ..
            }) => {
                stored = latest.value;
                revision = latest.mod_revision;
            }
            Err(kyb_storage::Error::NotFound { .. }) => return Err(call.not_found(name)),
            Err(other) => return Err(crate::engine::storage_error(other)),
        }
    }
    Err(write::too_many_conflicts())
}

/// The stored form of the pod in `json` (stored, or cached with its resourceVersion) bound
/// to `node`; `None` unless its top level, metadata and spec are objects with sorted,
/// unique keys and it has a status (see [`shallow`]).
fn bound_pod(name: &str, json: &[u8], node: &str) -> Result<Option<Vec<u8>>, Status> {
    let Some(bound) = (|| {
        let top = shallow::Entries::parse(json)?;
        let mut pod = shallow::Edit::of(&top)?;
        let mut metadata = shallow::Edit::of_raw(top.get("metadata")?)?;
        let mut spec = shallow::Edit::of_raw(top.get("spec")?)?;
        let status: Value = serde_json::from_str(top.get("status")?.get()).ok()?;
        // What the checks read, as the parsed pod would show it.
        let field = |object: &shallow::Edit<'_>, key: &str| -> Option<Option<Value>> {
            match object.get(key) {
                Some(raw) => serde_json::from_slice(raw).ok().map(Some),
                None => Some(None),
            }
        };
        let mut shown = json!({"metadata": {}, "spec": {}});
        if let Some(deletion) = field(&metadata, "deletionTimestamp")? {
            shown["metadata"]["deletionTimestamp"] = deletion;
        }
        if let Some(assigned) = field(&spec, "nodeName")? {
            shown["spec"]["nodeName"] = assigned;
        }
        let mut holder = json!({ "status": status });
        set_condition(&mut holder, "PodScheduled", "True");
        metadata.remove("resourceVersion");
        spec.set("nodeName", serde_json::to_vec(node).ok()?);
        pod.set("metadata", metadata.to_json());
        pod.set("spec", spec.to_json());
        pod.set("status", serde_json::to_vec(&holder["status"]).ok()?);
        Some((shown, pod.to_json()))
    })() else {
        return Ok(None);
    };
    let (shown, pod) = bound;
    check_bindable(name, &shown)?;
    Ok(Some(pod))
}

/// Admission of a subresource that is a create of its own kind (binding, eviction, token):
/// both phases, on the request object.
pub(super) async fn admit_create(
    call: &Call<'_>,
    name: &str,
    kind: (&str, &str, &str),
    object: &mut Value,
) -> Result<(), Status> {
    let attributes = admission::attributes(call, admission::Operation::Create, kind, name, None);
    admission::mutate(call, &attributes, Some(object)).await?;
    admission::validate(call, &attributes, Some(object)).await
}

/// Sets a pod condition, keeping its transition time if the status does not change.
fn set_condition(pod: &mut Value, kind: &str, status: &str) {
    let now = crate::util::now();
    let Some(object) = pod.as_object_mut() else {
        return;
    };
    let pod_status = object.entry("status").or_insert_with(|| json!({}));
    if !pod_status.is_object() {
        *pod_status = json!({});
    }
    let conditions = pod_status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    let Some(Value::Array(conditions)) = conditions else {
        return;
    };
    match conditions.iter_mut().find(|c| c.get("type") == Some(&Value::from(kind))) {
        Some(condition) => {
            if condition.get("status") != Some(&Value::from(status)) {
                condition["status"] = status.into();
                condition["lastTransitionTime"] = now.into();
            }
        }
        None => conditions.push(json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": now})),
    }
}

/// Rounds of deciding again when the budget or the pod changed under an eviction.
const EVICTION_ATTEMPTS: usize = 20;

/// `pods/eviction`, as Kubernetes' eviction REST: a pod that is terminal, pending or
/// already being deleted is deleted without consulting budgets; otherwise the pod's one
/// PodDisruptionBudget (two or more: 500) must allow the disruption, which is recorded
/// first — `status.disruptionsAllowed` decremented and the pod added to
/// `status.disruptedPods`, in one compare-and-swap update of the budget's status, retried
/// on conflict against the budget as it then is — and only then is the pod deleted. So
/// concurrent evictions never take more than the budget allows. An unready pod may go
/// without touching the budget when the budget's `unhealthyPodEvictionPolicy` is
/// `AlwaysAllow`, or (`IfHealthyBudget`, the default) while the budget has its desired
/// healthy pods. A dry run records nothing.
async fn eviction(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    let (mut eviction, _) =
        body::decode_object(call, body::Kind::Builtin("policy", "v1", "Eviction"))?;
    admit_create(call, name, ("policy", "v1", "Eviction"), &mut eviction).await?;
    if meta::name(&eviction).is_some_and(|n| !n.is_empty() && n != name) {
        return Err(Status::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let mut options = eviction
        .get("deleteOptions")
        .map(delete::DeleteOptions::from_value)
        .unwrap_or_default();
    options.dry_run |= super::options::dry_run(call)?;
    // A conflict means the pod changed under the decision: decide again, unless the
    // eviction stated its own resource version.
    let retry = options.precondition_rv.is_none();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let pod = read::read_object(call, name).await?;
        let pod = pod.value().map_err(Status::internal)?;
        match evict(call, name, &options, &pod).await {
            Ok(()) => return Ok(eviction_success(call)),
            Err(status) if status.code == 409 && retry && attempt < EVICTION_ATTEMPTS => {}
            Err(status) => return Err(status),
        }
    }
}

/// One eviction decision on the pod as read, and the delete.
async fn evict(
    call: &Call<'_>,
    name: &str,
    options: &delete::DeleteOptions,
    pod: &Value,
) -> Result<(), Status> {
    if can_ignore_budgets(pod) {
        return delete_evicted(call, name, options, pod, true).await;
    }
    let mut budgets = disruption_budgets(call, pod)?;
    if budgets.len() > 1 {
        return Err(Status::new(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    let Some(mut budget) = budgets.pop() else {
        return delete_evicted(call, name, options, pod, false).await;
    };
    let ready = kyb_component_helpers::pod_readiness::is_ready_json(pod);
    let policy = budget
        .pointer("/spec/unhealthyPodEvictionPolicy")
        .and_then(Value::as_str);
    if !ready && policy == Some("AlwaysAllow") {
        return delete_evicted(call, name, options, pod, true).await;
    }
    let budget_name = meta::name(&budget).unwrap_or_default().to_string();
    let namespace = meta::namespace(pod).unwrap_or_default().to_string();
    let snapshot = call.engine.registry.snapshot();
    let Some(pdbs) = snapshot.find("policy", "v1", "poddisruptionbudgets") else {
        return Err(Status::internal("poddisruptionbudgets is not registered"));
    };
    let status_call = super::internal_call(
        call.engine,
        pdbs,
        Verb::Update,
        Some(&namespace),
        Some(Subresource::Status),
    )?;
    let mut unready_within_budget = false;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let number = |pointer: &str| budget.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
        let desired = number("/status/desiredHealthy");
        if !ready && number("/status/currentHealthy") >= desired && desired > 0 {
            unready_within_budget = true;
            break;
        }
        let status = decremented_budget_status(&budget, name, options.dry_run)?;
        if options.dry_run {
            break;
        }
        let precondition = meta::resource_version(&budget).map(str::to_string);
        match super::update_status(&status_call, &budget_name, precondition.as_deref(), status)
            .await
        {
            Ok(_) => break,
            Err(status) if status.code == 409 && attempt < EVICTION_ATTEMPTS => {
                // Another eviction (or the disruption controller) moved the budget first:
                // decide again on the budget as it now is.
                let fresh = read::read_object(&status_call, &budget_name).await?;
                budget = fresh.value().map_err(Status::internal)?;
            }
            Err(status) => return Err(status),
        }
    }
    delete_evicted(call, name, options, pod, unready_within_budget).await
}

fn eviction_success(call: &Call<'_>) -> Response {
    present::value_response(
        call,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201
        }),
        StatusCode::CREATED,
    )
}

/// A pod whose eviction needs no budget: finished, not started yet, or already going.
fn can_ignore_budgets(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed" | "Pending")
    ) || pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Deletes the evicted pod with the eviction's options. When the decision depended on
/// the pod's state (`guard`), the delete is conditional on the pod not having changed
/// since (its resource version), unless the eviction states its own preconditions.
async fn delete_evicted(
    call: &Call<'_>,
    name: &str,
    options: &delete::DeleteOptions,
    pod: &Value,
    guard: bool,
) -> Result<(), Status> {
    let mut options = options.clone();
    if guard && options.precondition_rv.is_none() {
        options.precondition_rv = meta::resource_version(pod).map(str::to_string);
    }
    delete::delete_object(call, name, &options).await?;
    Ok(())
}

/// The PodDisruptionBudgets of the pod's namespace whose selector matches it.
fn disruption_budgets(call: &Call<'_>, pod: &Value) -> Result<Vec<Value>, Status> {
    let snapshot = call.engine.registry.snapshot();
    let Some(pdbs) = snapshot.find("policy", "v1", "poddisruptionbudgets") else {
        return Ok(Vec::new());
    };
    let Some(cache) = call.engine.cache.resource(pdbs) else {
        return Ok(Vec::new());
    };
    let namespace = meta::namespace(pod).unwrap_or_default();
    let filter = crate::cache::object::Filter {
        namespace: Some(namespace.to_string()),
        ..Default::default()
    };
    let page = cache.list(&pdbs.list_prefix(Some(namespace)), &filter, 0, 0);
    let mut matching = Vec::new();
    for budget in &page.items {
        let Ok(budget) = budget.value() else { continue };
        let Some(selector) = budget.pointer("/spec/selector") else {
            continue;
        };
        let Ok(selector) = kyb_apimachinery::labels::Selector::from_label_selector(selector) else {
            continue;
        };
        // As in Kubernetes' eviction: a budget whose selector is empty matches nothing here.
        if !selector.is_empty() && selector.matches(meta::labels(pod)) {
            matching.push(budget);
        }
    }
    Ok(matching)
}

/// A budget's status after one more disruption of `pod` (Kubernetes' `checkAndDecrement`),
/// or the refusal: the budget's spec not yet processed (429), no disruptions left (429),
/// a negative allowance or too many unconfirmed disruptions (403). A dry run adds no
/// `disruptedPods` entry (and writes nothing).
fn decremented_budget_status(budget: &Value, pod: &str, dry_run: bool) -> Result<Value, Status> {
    /// Kubernetes' `MaxDisruptedPodSize`.
    const MAX_DISRUPTED_PODS: usize = 2000;
    let name = meta::name(budget).unwrap_or_default();
    let number = |pointer: &str| budget.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let refusal = |retry_after: u32, cause: String| {
        let mut status = Status::too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            retry_after,
        );
        let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]});
        if retry_after > 0 {
            details["retryAfterSeconds"] = retry_after.into();
        }
        status.details = Some(details);
        status
    };
    if number("/status/observedGeneration") < number("/metadata/generation") {
        return Err(refusal(
            10,
            format!("The disruption budget {name} is still being processed by the server."),
        ));
    }
    let allowed = number("/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(Status::forbidden(format!(
            "poddisruptionbudgets.policy \"{name}\" is forbidden: pdb disruptions allowed is negative"
        ))
        .with_details("policy", "poddisruptionbudgets", name));
    }
    let disrupted = budget
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(Status::forbidden(format!(
            "poddisruptionbudgets.policy \"{name}\" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        ))
        .with_details("policy", "poddisruptionbudgets", name));
    }
    if allowed == 0 {
        return Err(refusal(
            0,
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                number("/status/desiredHealthy"),
                number("/status/currentHealthy")
            ),
        ));
    }
    let mut status = budget.get("status").cloned().unwrap_or_else(|| json!({}));
    status["disruptionsAllowed"] = (allowed - 1).into();
    if allowed - 1 == 0 {
        set_disruption_allowed_false(&mut status);
    }
    if !dry_run {
        if !status.get("disruptedPods").is_some_and(Value::is_object) {
            status["disruptedPods"] = json!({});
        }
        status["disruptedPods"][pod] = crate::util::now().into();
    }
    Ok(status)
}

/// The budget's `DisruptionAllowed` condition set to False (`InsufficientPods`), its
/// transition time kept if it was False already.
fn set_disruption_allowed_false(status: &mut Value) {
    let generation = status
        .get("observedGeneration")
        .cloned()
        .unwrap_or(json!(0));
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    let now = crate::util::now();
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionAllowed"))
    {
        Some(condition) => {
            if condition.get("status").and_then(Value::as_str) != Some("False") {
                condition["status"] = "False".into();
                condition["lastTransitionTime"] = now.into();
            }
            condition["reason"] = "InsufficientPods".into();
            condition["message"] = "".into();
            condition["observedGeneration"] = generation;
        }
        None => conditions.push(json!({
            "type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
            "message": "", "observedGeneration": generation, "lastTransitionTime": now,
        })),
    }
}

async fn finalize(call: &Call<'_>, name: &str) -> Result<Response, Status> {
    let (object, _) = body::decode_object(call, body::Kind::Of(&call.def))?;
    let object = write::check_identity(call, object, name)?;
    let finalizers = object.pointer("/spec/finalizers").cloned();
    let precondition = meta::resource_version(&object).map(str::to_string);
    let (updated, _) = guaranteed_update(call, name, precondition.as_deref(), |current| {
        let mut new = current.clone();
        if let Some(map) = new.as_object_mut() {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            match &finalizers {
                Some(finalizers) => spec["finalizers"] = finalizers.clone(),
                None => {
                    if let Some(spec) = spec.as_object_mut() {
                        spec.remove("finalizers");
                    }
                }
            }
        }
        crate::validation::validate_namespace_finalize(&new, current)?;
        Ok(new)
    })
    .await?;
    present::stored_value(call, &updated, StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binding as the parsed path does it, stored.
    fn bound_by_value(name: &str, pod: &Value, node: &str) -> Result<Vec<u8>, Status> {
        check_bindable(name, pod)?;
        let mut pod = pod.clone();
        pod["spec"]["nodeName"] = node.into();
        set_condition(&mut pod, "PodScheduled", "True");
        Ok(write::encode(&pod)?.to_vec())
    }

    /// The bytes with transition times blanked (the two paths may straddle a second).
    fn timeless(json: &[u8]) -> String {
        let text = String::from_utf8_lossy(json).into_owned();
        let marker = "\"lastTransitionTime\":\"";
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(marker) {
            let (head, tail) = rest.split_at(at + marker.len());
            out.push_str(head);
            out.push('…');
            rest = tail
                .split_once('"')
                .map(|(_, after)| after)
                .unwrap_or_default();
            out.push('"');
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn binding_in_place_writes_what_binding_the_parsed_pod_writes() {
        let pending = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "5",
                "labels": {"app": "x"}, "managedFields": [{"manager": "m", "operation": "Update"}]},
            "spec": {"containers": [{"name": "c", "image": "i"}], "schedulerName": "default-scheduler"},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}});
        let mut unschedulable = pending.clone();
        unschedulable["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "lastProbeTime": null, "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        let mut empty_node = pending.clone();
        empty_node["spec"]["nodeName"] = json!("");
        let mut odd_status = pending.clone();
        odd_status["status"] = json!("text");
        for pod in [&pending, &unschedulable, &empty_node, &odd_status] {
            let stored = serde_json::to_vec(pod).unwrap_or_default();
            let fast = bound_pod("p", &stored, "node-\"1\"").ok().flatten();
            let slow = bound_by_value("p", pod, "node-\"1\"").ok();
            assert_eq!(
                fast.as_deref().map(timeless),
                slow.as_deref().map(timeless),
                "{pod}"
            );
        }

        let mut assigned = pending.clone();
        assigned["spec"]["nodeName"] = json!("other");
        let mut deleting = pending.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        for pod in [&assigned, &deleting] {
            let stored = serde_json::to_vec(pod).unwrap_or_default();
            let fast = bound_pod("p", &stored, "n")
                .map(|_| ())
                .err()
                .map(|s| s.message);
            let slow = bound_by_value("p", pod, "n")
                .map(|_| ())
                .err()
                .map(|s| s.message);
            assert!(fast.is_some());
            assert_eq!(fast, slow);
        }

        // Not in the stored form, or without a status: left to the parsed path.
        let mut no_status = pending.clone();
        if let Some(fields) = no_status.as_object_mut() {
            fields.remove("status");
        }
        let unsorted = br#"{"spec":{},"metadata":{"name":"p"},"status":{}}"#.to_vec();
        for stored in [serde_json::to_vec(&no_status).unwrap_or_default(), unsorted] {
            assert!(matches!(bound_pod("p", &stored, "n"), Ok(None)));
        }
    }

    fn budget(status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": 2}, "status": status})
    }

    #[test]
    fn evictions_decrement_the_budget_or_are_refused() {
        let cause = |status: &Status| {
            status
                .details
                .as_ref()
                .and_then(|d| d.pointer("/causes/0/message"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let behind = budget(json!({"observedGeneration": 1, "disruptionsAllowed": 3}));
        let Err(refused) = decremented_budget_status(&behind, "p", false) else {
            panic!("an unprocessed budget allows nothing");
        };
        assert_eq!(refused.code, 429);
        assert_eq!(
            cause(&refused),
            "The disruption budget web is still being processed by the server."
        );

        let none = budget(json!({"observedGeneration": 2, "disruptionsAllowed": 0,
            "desiredHealthy": 3, "currentHealthy": 3}));
        let Err(refused) = decremented_budget_status(&none, "p", false) else {
            panic!("no disruption left");
        };
        assert_eq!(refused.code, 429);
        assert_eq!(
            refused.message,
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        assert_eq!(
            cause(&refused),
            "The disruption budget web needs 3 healthy pods and has 3 currently"
        );

        let negative = budget(json!({"observedGeneration": 2, "disruptionsAllowed": -1}));
        assert!(matches!(
            decremented_budget_status(&negative, "p", false),
            Err(Status { code: 403, .. })
        ));

        let one = budget(json!({"observedGeneration": 2, "disruptionsAllowed": 1,
            "disruptedPods": {"other": "2026-01-01T00:00:00Z"}}));
        let status = decremented_budget_status(&one, "p", false).unwrap_or_default();
        assert_eq!(status["disruptionsAllowed"], 0);
        assert!(status["disruptedPods"]["p"].is_string(), "{status}");
        assert!(status["disruptedPods"]["other"].is_string(), "{status}");
        assert_eq!(status["conditions"][0]["type"], "DisruptionAllowed");
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(status["conditions"][0]["reason"], "InsufficientPods");

        let dry = decremented_budget_status(&one, "p", true).unwrap_or_default();
        assert_eq!(dry["disruptionsAllowed"], 0);
        assert!(dry["disruptedPods"].get("p").is_none(), "{dry}");

        let two = budget(json!({"observedGeneration": 2, "disruptionsAllowed": 2}));
        let status = decremented_budget_status(&two, "p", false).unwrap_or_default();
        assert_eq!(status["disruptionsAllowed"], 1);
        assert!(status.get("conditions").is_none(), "{status}");
    }

    #[test]
    fn which_pods_skip_the_budget() {
        let pod = |phase: &str, deleting: bool, ready: &str| {
            json!({
                "metadata": {"name": "p", "deletionTimestamp": if deleting { json!("2026-01-01T00:00:00Z") } else { Value::Null }},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]},
            })
        };
        assert!(can_ignore_budgets(&pod("Succeeded", false, "False")));
        assert!(can_ignore_budgets(&pod("Failed", false, "False")));
        assert!(can_ignore_budgets(&pod("Pending", false, "False")));
        assert!(can_ignore_budgets(&pod("Running", true, "True")));
        assert!(!can_ignore_budgets(&pod("Running", false, "True")));
        assert!(kyb_component_helpers::pod_readiness::is_ready_json(&pod(
            "Running", false, "True"
        )));
        assert!(!kyb_component_helpers::pod_readiness::is_ready_json(&pod(
            "Running", false, "False"
        )));
    }
}
