//! The core `bindings` resource (`POST /api/v1/namespaces/{ns}/bindings`): the older
//! form of `pods/{name}/binding`, naming the pod in the Binding's `metadata.name`. It binds
//! exactly as the subresource does (same checks, same 409 for a bound pod, same admission),
//! through the same code.

use super::{Call, body, subresource};
use crate::response::Response;
use kyb_api::Status;
use kyb_api::registry::Subresource;
use kyb_apimachinery::meta;
use std::sync::Mutex;

/// Creates a Binding: binds the pod it names.
pub async fn create(call: &Call<'_>) -> Result<Response, Status> {
    if call.verb != kyb_serving::Verb::Create || call.name.is_some() {
        return Err(Status::method_not_allowed(format!(
            "{} is not supported on {}",
            call.verb.as_str(),
            call.def.plural
        )));
    }
    let (binding, _) = body::decode_object(call, body::Kind::Builtin("", "v1", "Binding"))?;
    let name = meta::name(&binding).unwrap_or_default().to_string();
    if name.is_empty() {
        return Err(Status::invalid(
            "",
            "Binding",
            "",
            &[kyb_api::status::Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: name or generateName is required".into(),
                field: "metadata.name".into(),
            }],
        ));
    }
    let snapshot = call.engine.registry.snapshot();
    let pods = snapshot
        .find_stored("", "pods")
        .ok_or_else(|| Status::internal("pods are not registered"))?
        .clone();
    let cache = call
        .engine
        .cache
        .resource(&pods)
        .ok_or_else(|| Status::internal("no cache for pods"))?;
    let pod_call = Call {
        engine: call.engine,
        user: call.user.clone(),
        def: pods,
        cache,
        verb: call.verb,
        subresource: Some(Subresource::Binding),
        namespace: call.namespace.clone(),
        name: Some(name.clone()),
        query: call.query.clone(),
        output: call.output,
        format: call.format,
        headers: call.headers.clone(),
        body: call.body.clone(),
        warnings: Mutex::new(Vec::new()),
        annotations: Mutex::new(Vec::new()),
        held: Mutex::new(Vec::new()),
    };
    let result = subresource::binding(&pod_call, &name).await;
    for warning in pod_call.warnings.into_inner().unwrap_or_default() {
        call.warn(warning);
    }
    for (key, value) in pod_call.annotations.into_inner().unwrap_or_default() {
        call.annotate(key, value);
    }
    result
}
