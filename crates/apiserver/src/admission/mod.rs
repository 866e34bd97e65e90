//! Admission control: the chain every write passes through after authorization and before
//! storage. Mutating plugins run first, in order, and may change the object; the object is
//! then prepared and validated by its kind's strategy; then validating plugins run, in
//! order, and may only refuse. Any refusal stops the write: nothing is stored.
//!
//! The chain is Kubernetes' default one, in its order, after the RBAC storage's escalation
//! check (which Kubernetes runs in the REST layer just before admission):
//! NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction,
//! TaintNodesByCondition, PodSecurity, Priority, DefaultTolerationSeconds,
//! DefaultStorageClass, CertificateApproval, CertificateSigning,
//! CertificateSubjectRestriction, MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
//! ValidatingAdmissionWebhook, ResourceQuota.
//!
//! Where the REST engine calls it: [`mutate`] and [`validate`] for creates (after
//! defaulting; validation after the object is prepared and validated), inside the
//! compare-and-swap loop of updates (so a retried update is admitted against the object it
//! actually replaces), before deletes, and for the CREATE-like subresources (binding,
//! eviction, token) with their own request objects.

mod kube;
mod limit_ranger;
mod namespace;
mod pod_security;
mod policy;
mod rbac;
mod resource_quota;
mod rules;
mod webhook;

use crate::auth::User;
use crate::engine::Engine;
use crate::rest::Call;
use async_trait::async_trait;
use kyb_api::{Resource, ResourceDef, Status};
use serde_json::Value;
use std::sync::Arc;

pub use kyb_api::Operation;

/// One admission request: who does what to which object.
pub struct Attributes<'a> {
    pub operation: Operation,
    /// The resource as requested (its group, version and plural).
    pub resource: &'a Arc<Resource>,
    /// `""` for the main resource.
    pub subresource: &'a str,
    /// The group, version and kind of `object` (a subresource's own kind for scale,
    /// binding, eviction and token requests).
    pub kind: (&'a str, &'a str, &'a str),
    /// `""` for cluster-scoped resources.
    pub namespace: &'a str,
    /// `""` when a create has no name yet (generateName).
    pub name: &'a str,
    pub user: &'a User,
    pub dry_run: bool,
    /// The object before the write (updates and deletes).
    pub old_object: Option<&'a Value>,
    /// The options of the write (CreateOptions, UpdateOptions, DeleteOptions) as JSON.
    pub options: Value,
}

impl Attributes<'_> {
    /// Whether this is the main resource (or one of its subresources) of `group`/`plural`.
    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.resource.group == group && self.resource.plural == plural
    }

    pub fn is_main(&self, group: &str, plural: &str) -> bool {
        self.is(group, plural) && self.subresource.is_empty()
    }
}

/// What plugins may use besides the request: the server (its cache and configuration) and
/// the call (warnings for the client).
pub struct Context<'a> {
    pub engine: &'a Arc<Engine>,
    pub call: &'a Call<'a>,
}

impl Context<'_> {
    /// Adds a warning the client will see.
    pub fn warn(&self, warning: impl Into<String>) {
        self.call.warn(warning);
    }
}

/// An admission plugin. Each says cheaply whether it cares about a request; the chain asks
/// no more of those that do not.
#[async_trait]
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// Whether the plugin takes part in this request at all.
    fn handles(&self, attributes: &Attributes<'_>) -> bool;

    /// The mutating phase: may change `object` (absent for deletes and connects).
    async fn admit(
        &self,
        _context: &Context<'_>,
        _attributes: &Attributes<'_>,
        _object: Option<&mut Value>,
    ) -> Result<(), Status> {
        Ok(())
    }

    /// The validating phase: may only refuse.
    async fn validate(
        &self,
        _context: &Context<'_>,
        _attributes: &Attributes<'_>,
        _object: Option<&Value>,
    ) -> Result<(), Status> {
        Ok(())
    }
}

/// The ordered chain of plugins.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl Chain {
    /// Kubernetes' default plugins, in order.
    pub fn default_plugins() -> Chain {
        let webhooks = Arc::new(webhook::Webhooks::default());
        Chain {
            plugins: vec![
                Arc::new(rbac::RbacEscalation),
                Arc::new(namespace::NamespaceLifecycle),
                Arc::new(limit_ranger::LimitRanger),
                Arc::new(kube::ServiceAccount),
                Arc::new(kube::NodeRestriction),
                Arc::new(kube::TaintNodesByCondition),
                Arc::new(pod_security::PodSecurity::default()),
                Arc::new(kube::Priority),
                Arc::new(kube::DefaultTolerationSeconds),
                Arc::new(kube::DefaultStorageClass),
                Arc::new(kube::RuntimeClass),
                Arc::new(crate::certificates::admission::CertificateApproval),
                Arc::new(crate::certificates::admission::CertificateSigning),
                Arc::new(crate::certificates::admission::CertificateSubjectRestriction),
                Arc::new(webhook::MutatingWebhooks(webhooks.clone())),
                Arc::new(policy::ValidatingAdmissionPolicy::default()),
                Arc::new(webhook::ValidatingWebhooks(webhooks)),
                Arc::new(resource_quota::ResourceQuota::default()),
            ],
        }
    }

    /// Adds a plugin at the end (tests, configuration).
    pub fn push(&mut self, plugin: Arc<dyn Plugin>) {
        self.plugins.push(plugin);
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }
}

/// The request attributes of a call.
pub fn attributes<'a>(
    call: &'a Call<'a>,
    operation: Operation,
    kind: (&'a str, &'a str, &'a str),
    name: &'a str,
    old_object: Option<&'a Value>,
) -> Attributes<'a> {
    let dry_run = call.query.dry_run().unwrap_or(false);
    let options_kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => "",
    };
    let mut options = serde_json::json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"});
    if dry_run {
        options["dryRun"] = serde_json::json!(["All"]);
    }
    if let Some(manager) = call.query.value("fieldManager") {
        options["fieldManager"] = manager.into();
    }
    Attributes {
        operation,
        resource: &call.def,
        subresource: call.subresource.map(|s| s.name()).unwrap_or_default(),
        kind,
        namespace: call.namespace.as_deref().unwrap_or_default(),
        name,
        user: &call.user,
        dry_run,
        old_object,
        options,
    }
}

/// The mutating phase of the chain for a call.
pub async fn mutate(
    call: &Call<'_>,
    attributes: &Attributes<'_>,
    mut object: Option<&mut Value>,
) -> Result<(), Status> {
    let context = Context {
        engine: call.engine,
        call,
    };
    for plugin in &call.engine.admission.plugins {
        if plugin.handles(attributes) {
            plugin
                .admit(&context, attributes, object.as_deref_mut())
                .await?;
        }
    }
    Ok(())
}

/// The validating phase of the chain for a call.
pub async fn validate(
    call: &Call<'_>,
    attributes: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<(), Status> {
    let context = Context {
        engine: call.engine,
        call,
    };
    for plugin in &call.engine.admission.plugins {
        if plugin.handles(attributes) {
            plugin.validate(&context, attributes, object).await?;
        }
    }
    Ok(())
}

/// `<resource> "<name>" is forbidden: <why>`, as admission refusals read.
pub fn forbidden(attributes: &Attributes<'_>, why: impl std::fmt::Display) -> Status {
    let resource = attributes.resource.group_resource();
    let message = if attributes.name.is_empty() {
        format!("{resource} is forbidden: {why}")
    } else {
        format!(
            "{resource} {} is forbidden: {why}",
            kyb_apimachinery::gofmt::quote(attributes.name)
        )
    };
    Status::forbidden(message).with_details(
        &attributes.resource.group,
        &attributes.resource.plural,
        attributes.name,
    )
}

/// The `admission.k8s.io/v1` AdmissionRequest of a request, as webhooks receive it and as
/// CEL sees `request`: the resource and kind in `def`'s version (what the webhook or
/// policy matched), the requested ones as asked, the user, the objects.
pub fn request_json(
    attributes: &Attributes<'_>,
    def: &ResourceDef,
    object: Option<&Value>,
    uid: &str,
) -> Value {
    let (group, version, kind) = attributes.kind;
    let matched_kind = if attributes.subresource.is_empty() || attributes.subresource == "status" {
        serde_json::json!({"group": def.group, "version": def.version, "kind": def.kind})
    } else {
        serde_json::json!({"group": group, "version": version, "kind": kind})
    };
    let requested = attributes.resource;
    let mut request = serde_json::json!({
        "uid": uid,
        "kind": matched_kind,
        "resource": {"group": def.group, "version": def.version, "resource": def.plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": requested.group, "version": requested.version, "resource": requested.plural},
        "name": attributes.name,
        "operation": attributes.operation.as_str(),
        "userInfo": attributes.user.to_json(),
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": attributes.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": attributes.dry_run,
        "options": attributes.options,
    });
    if !attributes.namespace.is_empty() {
        request["namespace"] = attributes.namespace.into();
    }
    if !attributes.subresource.is_empty() {
        request["subResource"] = attributes.subresource.into();
        request["requestSubResource"] = attributes.subresource.into();
    }
    request
}
