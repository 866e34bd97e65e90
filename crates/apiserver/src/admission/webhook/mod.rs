//! Admission webhooks: MutatingWebhookConfiguration and ValidatingWebhookConfiguration.
//!
//! For each write, the webhooks whose rules, namespace and object selectors and match
//! conditions select it are sent an `admission.k8s.io/v1` AdmissionReview over HTTPS.
//! Mutating webhooks run one after another (configurations by name, webhooks in order);
//! their JSONPatch responses are applied and the result decoded, defaulted and validated
//! again like any object; webhooks with `reinvocationPolicy: IfNeeded` are called once
//! more when a later webhook changed the object. Validating webhooks run concurrently and
//! may only refuse. A webhook that cannot be reached follows its `failurePolicy`; a dry run
//! only calls webhooks without side effects; warnings go to the client and audit
//! annotations to the audit record.

mod client;

use super::rules::{self, Rule};
use super::{Attributes, Context, Plugin};
use crate::cache::WatchCache;
use async_trait::async_trait;
use bytes::Bytes;
use client::{Endpoint, TlsConfigs};
use kyb_api::Status;
use kyb_api::registry::ResourceDef;
use kyb_apimachinery::labels::Selector;
use kyb_apimachinery::meta;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One webhook of a configuration, ready to match and call.
struct Hook {
    name: String,
    endpoint: Endpoint,
    ca_bundle: String,
    rules: Vec<Rule>,
    fail_open: bool,
    equivalent: bool,
    namespace_selector: Selector,
    object_selector: Selector,
    side_effect_free: bool,
    timeout: Duration,
    review_version: &'static str,
    reinvoke: bool,
    match_conditions: Option<kyb_cel::MatchConditions>,
}

impl Hook {
    fn from_json(hook: &Value, cel: &kyb_cel::ExpressionCache) -> Option<Hook> {
        let name = hook["name"].as_str()?.to_string();
        let endpoint = Endpoint::from_client_config(&hook["clientConfig"])?;
        let versions: Vec<&str> = hook["admissionReviewVersions"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let review_version = if versions.contains(&"v1") {
            "v1"
        } else if versions.contains(&"v1beta1") {
            "v1beta1"
        } else {
            return None;
        };
        let has_conditions = hook["matchConditions"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        Some(Hook {
            name,
            endpoint,
            ca_bundle: hook["clientConfig"]["caBundle"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            rules: hook["rules"]
                .as_array()
                .map(|r| r.iter().map(Rule::from_json).collect())
                .unwrap_or_default(),
            fail_open: hook["failurePolicy"].as_str() == Some("Ignore"),
            equivalent: hook["matchPolicy"].as_str() != Some("Exact"),
            namespace_selector: rules::selector(hook.get("namespaceSelector")).ok()?,
            object_selector: rules::selector(hook.get("objectSelector")).ok()?,
            side_effect_free: matches!(hook["sideEffects"].as_str(), Some("None" | "NoneOnDryRun")),
            timeout: Duration::from_secs(
                hook["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30),
            ),
            review_version,
            reinvoke: hook["reinvocationPolicy"].as_str() == Some("IfNeeded"),
            match_conditions: has_conditions
                .then(|| kyb_cel::MatchConditions::new(&hook["matchConditions"], cel)),
        })
    }

    /// The version of the requested resource this webhook's rules select: the request's
    /// own, or (matchPolicy Equivalent) another version of the same resource.
    fn version_for(&self, attributes: &Attributes<'_>) -> Option<&'static ResourceDef> {
        let resource = attributes.resource;
        let matches = |def: &ResourceDef| {
            self.rules.iter().any(|rule| {
                rule.matches(
                    attributes.operation,
                    def.group,
                    def.version,
                    def.plural,
                    attributes.subresource,
                    def.namespaced,
                )
            })
        };
        if matches(resource) {
            return Some(resource);
        }
        if !self.equivalent {
            return None;
        }
        kyb_api::registry::BUILTIN.iter().find(|def| {
            def.group == resource.group
                && def.plural == resource.plural
                && !std::ptr::eq(*def, resource)
                && matches(def)
        })
    }
}

/// The webhooks of one kind of configuration, rebuilt when the configurations change.
struct Index {
    group_resource: (&'static str, &'static str),
    state: Mutex<(u64, Arc<Vec<Arc<Hook>>>)>,
}

impl Index {
    fn new(plural: &'static str) -> Index {
        Index {
            group_resource: ("admissionregistration.k8s.io", plural),
            state: Mutex::new((u64::MAX, Arc::new(Vec::new()))),
        }
    }

    /// The current webhooks, in the order they are called.
    fn hooks(&self, cache: &WatchCache, cel: &kyb_cel::ExpressionCache) -> Arc<Vec<Arc<Hook>>> {
        let (group, plural) = self.group_resource;
        let Some(resource) =
            kyb_api::registry::find_stored(group, plural).and_then(|def| cache.resource(def))
        else {
            return Arc::new(Vec::new());
        };
        let revision = resource.last_applied();
        if let Ok(state) = self.state.lock()
            && state.0 == revision
        {
            return state.1.clone();
        }
        // Configurations in name order (the cache lists by key), webhooks in their order.
        let mut hooks = Vec::new();
        for configuration in cache.objects(group, plural, None) {
            let name = meta::name(&configuration).unwrap_or_default().to_string();
            for hook in configuration["webhooks"].as_array().into_iter().flatten() {
                match Hook::from_json(hook, cel) {
                    Some(hook) => hooks.push(Arc::new(hook)),
                    None => tracing::warn!(configuration = %name, "skipping an unusable webhook"),
                }
            }
        }
        let hooks = Arc::new(hooks);
        if let Ok(mut state) = self.state.lock() {
            *state = (revision, hooks.clone());
        }
        hooks
    }
}

/// Both kinds of webhooks and what calling them needs.
pub struct Webhooks {
    mutating: Index,
    validating: Index,
    tls: TlsConfigs,
    cel: kyb_cel::ExpressionCache,
}

impl Default for Webhooks {
    fn default() -> Self {
        Webhooks {
            mutating: Index::new("mutatingwebhookconfigurations"),
            validating: Index::new("validatingwebhookconfigurations"),
            tls: TlsConfigs::default(),
            cel: kyb_cel::ExpressionCache::default(),
        }
    }
}

/// The MutatingAdmissionWebhook plugin.
pub struct MutatingWebhooks(pub Arc<Webhooks>);
/// The ValidatingAdmissionWebhook plugin.
pub struct ValidatingWebhooks(pub Arc<Webhooks>);

/// Whether any webhook's rules could select the request (cheap; selectors come later).
fn any_rule(hooks: &[Arc<Hook>], attributes: &Attributes<'_>) -> bool {
    hooks
        .iter()
        .any(|hook| hook.version_for(attributes).is_some())
}

/// What one call is about.
struct Invocation<'a> {
    attributes: &'a Attributes<'a>,
    /// The version of the resource the webhook asked for.
    def: &'static ResourceDef,
    object: Option<&'a Value>,
}

impl Webhooks {
    /// The webhooks of `index` selected by this request (rules, selectors, conditions),
    /// each with the resource version it is sent; errors of match conditions follow the
    /// webhook's failure policy.
    fn selected(
        &self,
        context: &Context<'_>,
        hooks: &[Arc<Hook>],
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<(Arc<Hook>, &'static ResourceDef)>, Status> {
        let cache = &context.engine.cache;
        let mut namespace_labels = None;
        let mut selected = Vec::new();
        for hook in hooks {
            let Some(def) = hook.version_for(attributes) else {
                continue;
            };
            if !hook.namespace_selector.is_empty() {
                let labels = namespace_labels.get_or_insert_with(|| {
                    rules::namespace_labels(attributes, object, |ns| {
                        cache.lookup("", "namespaces", None, ns)
                    })
                });
                if let Some(labels) = labels
                    && !hook.namespace_selector.matches(Some(labels))
                {
                    continue;
                }
            }
            if !rules::object_matches(&hook.object_selector, object, attributes.old_object) {
                continue;
            }
            if let Some(conditions) = &hook.match_conditions {
                let request = review_request(attributes, def, object, "");
                let input = kyb_cel::Input {
                    object,
                    old_object: attributes.old_object,
                    request: Some(&request["request"]),
                    ..kyb_cel::Input::default()
                };
                match conditions.evaluate(&input) {
                    kyb_cel::MatchOutcome::Matched => {}
                    kyb_cel::MatchOutcome::NotMatched { .. } => continue,
                    kyb_cel::MatchOutcome::Error { name, message } => {
                        if hook.fail_open {
                            continue;
                        }
                        return Err(Status::internal(format!(
                            "failed to evaluate match condition {name:?} of webhook {:?}: {message}",
                            hook.name
                        )));
                    }
                }
            }
            if attributes.dry_run && !hook.side_effect_free {
                return Err(Status::bad_request(format!(
                    "admission webhook {:?} does not support dry run",
                    hook.name
                )));
            }
            selected.push((hook.clone(), def));
        }
        Ok(selected)
    }

    /// Calls one webhook; `Ok(None)` when it failed and fails open.
    async fn call(
        &self,
        context: &Context<'_>,
        hook: &Hook,
        invocation: &Invocation<'_>,
        round: &str,
    ) -> Result<Option<Value>, Status> {
        let uid = crate::util::new_uid();
        let object = invocation
            .object
            .map(|o| to_version(context, invocation.def, o))
            .transpose()?;
        let old = invocation
            .attributes
            .old_object
            .map(|o| to_version(context, invocation.def, o))
            .transpose()?;
        let mut review =
            review_request(invocation.attributes, invocation.def, object.as_ref(), &uid);
        review["apiVersion"] = format!("admission.k8s.io/{}", hook.review_version).into();
        if let Some(old) = old {
            review["request"]["oldObject"] = old;
        }
        let body =
            Bytes::from(serde_json::to_vec(&review).map_err(|e| Status::internal(e.to_string()))?);
        let result = client::post(
            context.engine,
            &self.tls,
            &hook.endpoint,
            &hook.ca_bundle,
            hook.timeout,
            body,
        )
        .await
        .and_then(|answer| check_response(&answer, &uid, hook.review_version));
        match result {
            Ok(response) => Ok(Some(response)),
            Err(error) if hook.fail_open => {
                tracing::warn!(webhook = %hook.name, %error, "webhook failed; failing open");
                context.call.annotate(
                    format!("failed-open.{round}.webhook.admission.k8s.io/{}", hook.name),
                    hook.name.clone(),
                );
                Ok(None)
            }
            Err(error) => Err(Status::internal(format!(
                "Internal error occurred: failed calling webhook {:?}: failed to call webhook: Post {:?}: {error}",
                hook.name,
                hook.endpoint.display(hook.timeout)
            ))),
        }
    }
}

/// An object in the version a webhook asked for (objects travel in the storage version).
fn to_version(
    context: &Context<'_>,
    def: &'static ResourceDef,
    object: &Value,
) -> Result<Value, Status> {
    let storage = context.call.storage();
    if std::ptr::eq(storage, def) || def.storage_version == def.version {
        Ok(object.clone())
    } else {
        crate::convert::convert(storage, def, object.clone())
    }
}

/// The AdmissionReview for a call (`object`/`oldObject` given in the webhook's version).
fn review_request(
    attributes: &Attributes<'_>,
    def: &ResourceDef,
    object: Option<&Value>,
    uid: &str,
) -> Value {
    let request = super::request_json(attributes, def, object, uid);
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request})
}

/// The `response` of a webhook's AdmissionReview, checked.
fn check_response(answer: &Value, uid: &str, version: &str) -> Result<Value, String> {
    let expected = format!("admission.k8s.io/{version}");
    if answer["apiVersion"].as_str() != Some(expected.as_str())
        || answer["kind"].as_str() != Some("AdmissionReview")
    {
        return Err(format!(
            "expected webhook response of {expected}, Kind=AdmissionReview, got {}, Kind={}",
            answer["apiVersion"].as_str().unwrap_or_default(),
            answer["kind"].as_str().unwrap_or_default()
        ));
    }
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    Ok(response.clone())
}

/// The refusal of a webhook that denied a request.
fn denied(hook: &Hook, response: &Value) -> Status {
    let status = &response["status"];
    let message = status["message"].as_str().filter(|m| !m.is_empty());
    let reason = status["reason"].as_str().filter(|r| !r.is_empty());
    let denied_by = format!("admission webhook {:?} denied the request", hook.name);
    let text = match (message, reason) {
        (Some(message), _) => format!("{denied_by}: {message}"),
        (None, Some(reason)) => format!("{denied_by}: {reason}"),
        (None, None) => format!("{denied_by} without explanation"),
    };
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(403);
    let reason = match reason.unwrap_or(if code == 403 { "Forbidden" } else { "" }) {
        "Forbidden" => "Forbidden",
        "BadRequest" => "BadRequest",
        "Invalid" => "Invalid",
        "NotFound" => "NotFound",
        "Conflict" => "Conflict",
        "AlreadyExists" => "AlreadyExists",
        "Unauthorized" => "Unauthorized",
        "TooManyRequests" => "TooManyRequests",
        "RequestEntityTooLarge" => "RequestEntityTooLarge",
        _ => "",
    };
    Status::new(code, reason, text)
}

/// Passes a webhook's warnings and audit annotations on.
fn pass_on(context: &Context<'_>, hook: &Hook, response: &Value) {
    for warning in response["warnings"].as_array().into_iter().flatten() {
        if let Some(warning) = warning.as_str() {
            context.warn(warning.to_string());
        }
    }
    if let Some(annotations) = response["auditAnnotations"].as_object() {
        for (key, value) in annotations {
            if let Some(value) = value.as_str() {
                context
                    .call
                    .annotate(format!("{}/{key}", hook.name), value.to_string());
            }
        }
    }
}

#[async_trait]
impl Plugin for MutatingWebhooks {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    fn handles(&self, _attributes: &Attributes<'_>) -> bool {
        true
    }

    async fn admit(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<(), Status> {
        let webhooks = &self.0;
        let hooks = webhooks
            .mutating
            .hooks(&context.engine.cache, &webhooks.cel);
        if hooks.is_empty() || !any_rule(&hooks, attributes) {
            return Ok(());
        }
        let selected = webhooks.selected(context, &hooks, attributes, object.as_deref())?;
        // Which webhooks ran before the object last changed (candidates for reinvocation).
        let mut last_change = None;
        for (index, (hook, def)) in selected.iter().enumerate() {
            if mutate_once(
                webhooks,
                context,
                attributes,
                hook,
                def,
                object.as_deref_mut(),
                "round_0",
            )
            .await?
            {
                last_change = Some(index);
            }
        }
        if let Some(last) = last_change {
            for (hook, def) in selected.iter().take(last).filter(|(h, _)| h.reinvoke) {
                mutate_once(
                    webhooks,
                    context,
                    attributes,
                    hook,
                    def,
                    object.as_deref_mut(),
                    "round_1",
                )
                .await?;
            }
        }
        Ok(())
    }
}

/// One call of a mutating webhook; whether it changed the object.
async fn mutate_once(
    webhooks: &Webhooks,
    context: &Context<'_>,
    attributes: &Attributes<'_>,
    hook: &Hook,
    def: &'static ResourceDef,
    object: Option<&mut Value>,
    round: &str,
) -> Result<bool, Status> {
    let invocation = Invocation {
        attributes,
        def,
        object: object.as_deref(),
    };
    let Some(response) = webhooks.call(context, hook, &invocation, round).await? else {
        return Ok(false);
    };
    if response["allowed"].as_bool() != Some(true) {
        return Err(denied(hook, &response));
    }
    pass_on(context, hook, &response);
    let (Some(object), Some(patch)) = (object, response["patch"].as_str()) else {
        return Ok(false);
    };
    let failure = |why: String| {
        Status::internal(format!(
            "Internal error occurred: failed calling webhook {:?}: {why}",
            hook.name
        ))
    };
    if response["patchType"].as_str() != Some("JSONPatch") {
        return Err(failure(format!(
            "unsupported patch type {:?}",
            response["patchType"].as_str().unwrap_or_default()
        )));
    }
    use base64::Engine;
    let patch = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| failure(format!("the patch is not base64: {e}")))?;
    let patch: Value = serde_json::from_slice(&patch)
        .map_err(|e| failure(format!("the patch is not JSON: {e}")))?;
    let versioned = to_version(context, def, object)?;
    let patched = kyb_patch::json_patch::apply(versioned, &patch)
        .map_err(|e| failure(format!("applying the patch: {}", e.status_message())))?;
    // What came back is decoded through the kind's type and defaulted, like any body.
    let (group, version, kind) = (def.group, def.version, def.kind);
    let (normalized, _) = crate::rest::normalize_body(context.call, patched, group, version, kind)
        .map_err(|status| failure(status.message))?;
    let mut stored =
        if std::ptr::eq(context.call.storage(), def) || def.storage_version == def.version {
            normalized
        } else {
            crate::convert::convert(def, context.call.storage(), normalized)?
        };
    crate::validation::default_object(context.call.storage(), &mut stored);
    if *object == stored {
        return Ok(false);
    }
    *object = stored;
    Ok(true)
}

#[async_trait]
impl Plugin for ValidatingWebhooks {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    fn handles(&self, _attributes: &Attributes<'_>) -> bool {
        true
    }

    async fn validate(
        &self,
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), Status> {
        let webhooks = &self.0;
        let hooks = webhooks
            .validating
            .hooks(&context.engine.cache, &webhooks.cel);
        if hooks.is_empty() || !any_rule(&hooks, attributes) {
            return Ok(());
        }
        let selected = webhooks.selected(context, &hooks, attributes, object)?;
        // Every selected webhook is called at once; the first refusal (in order) wins.
        let calls = selected.iter().map(|(hook, def)| {
            let invocation = Invocation {
                attributes,
                def,
                object,
            };
            async move {
                let response = webhooks
                    .call(context, hook, &invocation, "validating")
                    .await;
                (hook, response)
            }
        });
        let results = crate::util::join_all(calls).await;
        for (hook, result) in results {
            let Some(response) = result? else { continue };
            pass_on(context, hook, &response);
            if response["allowed"].as_bool() != Some(true) {
                return Err(denied(hook, &response));
            }
        }
        Ok(())
    }
}
