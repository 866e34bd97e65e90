//! The PodSecurity admission plugin's decision for one create or update request: pods are
//! checked against the namespace's enforce, audit and warn levels; workload resources with a
//! pod template against audit and warn only; namespaces have their labels validated (see
//! [`crate::namespace`]). Exemptions by username, runtime class and namespace come from the
//! admission configuration; Kubernetes exempts nothing by default.

use std::collections::BTreeMap;

use kyb_api::Status;
use kyb_apimachinery::gofmt;
use serde_json::{Map, Value};

use crate::checks::{CheckFailure, check_pod, forbidden_reason, violation_warning};
use crate::labels::{LABEL_PREFIX, LabelError, NamespacePolicy, aggregate, effective_policy};
use crate::level::{Level, LevelVersion};
use crate::namespace;
use crate::pod::{PodView, null};
use crate::update::is_significant_pod_update;
use crate::workload::{ResourceClass, classify, pod_template};

pub use kyb_api::Operation;

/// Requests the plugin lets through unchecked (the `exemptions` of the admission
/// configuration). Empty by default: Kubernetes exempts no namespace, user or runtime class
/// unless configured to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// Authenticated usernames whose pod and workload writes are not checked.
    pub usernames: Vec<String>,
    /// Pods and templates with one of these `spec.runtimeClassName`s are not checked.
    pub runtime_classes: Vec<String>,
    /// Namespaces whose pods and workloads are not checked.
    pub namespaces: Vec<String>,
}

impl Exemptions {
    pub fn exempts_namespace(&self, namespace: &str) -> bool {
        !namespace.is_empty() && self.namespaces.iter().any(|n| n == namespace)
    }

    pub fn exempts_user(&self, username: &str) -> bool {
        !username.is_empty() && self.usernames.iter().any(|u| u == username)
    }

    pub fn exempts_runtime_class(&self, runtime_class: &str) -> bool {
        !runtime_class.is_empty() && self.runtime_classes.iter().any(|r| r == runtime_class)
    }
}

/// One request, as the API server's admission chain sees it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub operation: Operation,
    /// API group of the resource (`""` for the core group).
    pub group: &'a str,
    /// Resource (plural), e.g. `pods`, `deployments`, `namespaces`.
    pub resource: &'a str,
    /// Subresource, e.g. `status`, `ephemeralcontainers`; `None` (or empty) for the object.
    pub subresource: Option<&'a str>,
    /// Kind of the object, e.g. `Namespace` (used in the 422 of namespace label errors).
    pub kind: &'a str,
    /// Name of the object (after `generateName` has produced one).
    pub name: &'a str,
    /// Namespace of the request, as Kubernetes' request info has it: the object's namespace
    /// for namespaced resources; for `namespaces`, the namespace's name when the URL names
    /// it (updates), empty on create.
    pub namespace: &'a str,
    /// Labels of the namespace the pod or workload is in (`None`: no labels). Not used for
    /// `namespaces` requests, whose labels come from the objects.
    pub namespace_labels: Option<&'a Map<String, Value>>,
    /// Set when the namespace of a pod or workload could not be read: pods are then refused
    /// with a 500, workloads allowed with an audit annotation, as Kubernetes does.
    pub namespace_lookup_error: Option<&'a str>,
    /// The new object (create, update).
    pub object: Option<&'a Value>,
    /// The current object (update).
    pub old_object: Option<&'a Value>,
    /// The authenticated user's name.
    pub username: &'a str,
    /// The user's groups (PodSecurity does not exempt by group; kept for completeness).
    pub groups: &'a [String],
    pub exemptions: &'a Exemptions,
    /// The policy for unlabeled namespaces (the admission configuration's `defaults`);
    /// `privileged:latest` for every mode by default.
    pub defaults: NamespacePolicy,
}

/// Why a request is refused, with the status Kubernetes answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// 403 `Forbidden`: a pod violates the enforce level.
    Forbidden,
    /// 422 `Invalid`: a namespace's Pod Security labels are invalid.
    Invalid(Vec<LabelError>),
    /// 400 `BadRequest`: the object could not be read.
    BadRequest,
    /// 500 `InternalError`: the pod's namespace could not be read.
    InternalError,
}

impl Denial {
    /// The HTTP status code of the refusal.
    pub fn code(&self) -> u16 {
        match self {
            Denial::Forbidden => 403,
            Denial::Invalid(_) => 422,
            Denial::BadRequest => 400,
            Denial::InternalError => 500,
        }
    }
}

/// The plugin's decision for one request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Decision {
    pub allowed: bool,
    /// Why the request is refused (`None` when allowed).
    pub denial: Option<Denial>,
    /// The refusal's text. For [`Denial::Forbidden`], what follows `pods "<name>" is
    /// forbidden: ` (`violates PodSecurity "restricted:latest": ...`); for
    /// [`Denial::Invalid`], what follows `Namespace "<name>" is invalid: `; for
    /// [`Denial::BadRequest`], the whole message; for [`Denial::InternalError`], what
    /// follows `Internal error occurred: `. [`Decision::status`] builds the whole `Status`.
    pub message: Option<String>,
    /// Warnings for the client (`Warning:` headers), in order.
    pub warnings: Vec<String>,
    /// Audit annotations with their full keys (`pod-security.kubernetes.io/enforce-policy`,
    /// `.../audit-violations`, `.../exempt`, `.../error`), sorted by key.
    pub audit_annotations: Vec<(String, String)>,
    /// For a namespace update that sets or tightens the enforce level: the new level, which
    /// the namespace's existing pods must be checked against. The caller lists the pods and
    /// appends [`crate::check_namespace_pods`]'s warnings to `warnings`.
    pub check_existing_pods: Option<LevelVersion>,
}

/// Audit annotation keys (without the `pod-security.kubernetes.io/` prefix).
pub(crate) const ENFORCE_POLICY_ANNOTATION: &str = "enforce-policy";
pub(crate) const AUDIT_VIOLATIONS_ANNOTATION: &str = "audit-violations";
pub(crate) const EXEMPT_ANNOTATION: &str = "exempt";
pub(crate) const ERROR_ANNOTATION: &str = "error";

impl Decision {
    pub(crate) fn allow() -> Self {
        Decision {
            allowed: true,
            ..Decision::default()
        }
    }

    fn annotated(annotations: BTreeMap<&'static str, String>) -> Self {
        let mut decision = Decision::allow();
        decision.set_annotations(annotations);
        decision
    }

    pub(crate) fn exempt(reason: &str) -> Self {
        Decision::annotated(BTreeMap::from([(EXEMPT_ANNOTATION, reason.to_string())]))
    }

    pub(crate) fn deny(denial: Denial, message: String) -> Self {
        Decision {
            allowed: false,
            denial: Some(denial),
            message: Some(message),
            ..Decision::default()
        }
    }

    /// A request whose object cannot be read: 400 with Kubernetes' message, recorded in the
    /// `error` audit annotation too.
    pub(crate) fn bad_request(message: &str) -> Self {
        let mut decision = Decision::deny(Denial::BadRequest, message.to_string());
        decision.set_annotations(BTreeMap::from([(ERROR_ANNOTATION, message.to_string())]));
        decision
    }

    fn set_annotations(&mut self, annotations: BTreeMap<&'static str, String>) {
        self.audit_annotations = annotations
            .into_iter()
            .map(|(k, v)| (format!("{LABEL_PREFIX}{k}"), v))
            .collect();
    }

    /// The `Status` Kubernetes answers for a refused request (`None` when allowed):
    /// `pods "p" is forbidden: violates PodSecurity ...` (403, details name/kind=resource),
    /// `Namespace "n" is invalid: metadata.labels[...]: Invalid value: ...` (422, with
    /// causes), a 400, or a 500.
    pub fn status(&self, request: &Request<'_>) -> Option<Status> {
        let denial = self.denial.as_ref()?;
        let message = self.message.as_deref().unwrap_or("");
        Some(match denial {
            Denial::Forbidden => {
                let qualified = if request.group.is_empty() {
                    request.resource.to_string()
                } else {
                    format!("{}.{}", request.resource, request.group)
                };
                let text = if request.name.is_empty() {
                    format!("{qualified} is forbidden: {message}")
                } else {
                    format!(
                        "{qualified} {} is forbidden: {message}",
                        gofmt::quote(request.name)
                    )
                };
                Status::forbidden(text).with_details(request.group, request.resource, request.name)
            }
            Denial::Invalid(errors) => {
                let causes: Vec<kyb_api::status::Cause> = errors
                    .iter()
                    .map(|e| kyb_api::status::Cause {
                        reason: LabelError::CAUSE_REASON.to_string(),
                        message: e.body(),
                        field: e.field(),
                    })
                    .collect();
                let kind = if request.kind.is_empty() {
                    "Namespace"
                } else {
                    request.kind
                };
                Status::invalid(request.group, kind, request.name, &causes)
            }
            Denial::BadRequest => Status::bad_request(message),
            Denial::InternalError => {
                Status::internal(format!("Internal error occurred: {message}"))
            }
        })
    }
}

/// Pod subresources the plugin never evaluates. Every other pod subresource
/// (`ephemeralcontainers`, `resize`, ...) carries a pod and is evaluated like an update.
const IGNORED_POD_SUBRESOURCES: &[&str] = &[
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// The PodSecurity plugin's decision for one request (Kubernetes' `Validate`). Only creates
/// and updates of namespaces, pods and workload resources are looked at; everything else
/// is allowed untouched.
pub fn admit(request: &Request<'_>) -> Decision {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Decision::allow();
    }
    match classify(request.group, request.resource) {
        ResourceClass::Namespace => namespace::admit_namespace(request),
        ResourceClass::Pod => admit_pod(request),
        ResourceClass::Workload => admit_workload(request),
        ResourceClass::Other => Decision::allow(),
    }
}

fn subresource<'a>(request: &Request<'a>) -> &'a str {
    request.subresource.unwrap_or("")
}

fn admit_pod(request: &Request<'_>) -> Decision {
    if IGNORED_POD_SUBRESOURCES.contains(&subresource(request)) {
        return Decision::allow();
    }
    if request.exemptions.exempts_namespace(request.namespace) {
        return Decision::exempt("namespace");
    }
    if request.exemptions.exempts_user(request.username) {
        return Decision::exempt("user");
    }
    if let Some(error) = request.namespace_lookup_error {
        let message = format!(
            "failed to lookup namespace {}",
            gofmt::quote(request.namespace)
        );
        let mut decision = Decision::deny(Denial::InternalError, message.clone());
        decision.set_annotations(BTreeMap::from([(
            ERROR_ANNOTATION,
            format!("Internal error occurred: {message}: {error}"),
        )]));
        return decision;
    }
    let (policy, errors) = effective_policy(request.namespace_labels, &request.defaults);
    if errors.is_empty() && policy.fully_privileged() {
        return Decision::annotated(BTreeMap::from([(
            ENFORCE_POLICY_ANNOTATION,
            LevelVersion::PRIVILEGED_LATEST.to_string(),
        )]));
    }
    let Some(pod) = request.object else {
        return Decision::bad_request("failed to decode object");
    };
    if !pod.is_object() {
        return Decision::bad_request("failed to decode pod");
    }
    if request.operation == Operation::Update {
        let Some(old_pod) = request.old_object else {
            return Decision::bad_request("failed to decode old object");
        };
        if !old_pod.is_object() {
            return Decision::bad_request("failed to decode old pod");
        }
        if !is_significant_pod_update(pod, old_pod) {
            return Decision::allow();
        }
    }
    evaluate(
        &policy,
        &errors,
        pod.get("metadata"),
        pod.get("spec").unwrap_or(null()),
        request.exemptions,
        true,
    )
}

fn admit_workload(request: &Request<'_>) -> Decision {
    if !subresource(request).is_empty() {
        return Decision::allow();
    }
    if request.exemptions.exempts_namespace(request.namespace) {
        return Decision::exempt("namespace");
    }
    if request.exemptions.exempts_user(request.username) {
        return Decision::exempt("user");
    }
    if let Some(error) = request.namespace_lookup_error {
        return Decision::annotated(BTreeMap::from([(
            ERROR_ANNOTATION,
            format!(
                "failed to lookup namespace {}: {error}",
                gofmt::quote(request.namespace)
            ),
        )]));
    }
    let (policy, errors) = effective_policy(request.namespace_labels, &request.defaults);
    if errors.is_empty()
        && policy.warn.level == Level::Privileged
        && policy.audit.level == Level::Privileged
    {
        return Decision::allow();
    }
    let Some(object) = request.object.filter(|o| o.is_object()) else {
        return Decision::annotated(BTreeMap::from([(
            ERROR_ANNOTATION,
            "failed to decode object".to_string(),
        )]));
    };
    let Some((metadata, spec)) = pod_template(request.group, request.resource, object) else {
        // No pod template (an optional one left out): nothing to check.
        return Decision::allow();
    };
    evaluate(&policy, &errors, metadata, spec, request.exemptions, false)
}

/// Kubernetes' `EvaluatePod`: the pod (or template) against the namespace's policy. The
/// enforce level is only applied to pods (`enforce`); no warning is added to a request
/// already refused.
fn evaluate(
    policy: &NamespacePolicy,
    policy_errors: &[LabelError],
    metadata: Option<&Value>,
    spec: &Value,
    exemptions: &Exemptions,
    enforce: bool,
) -> Decision {
    if exemptions.exempts_runtime_class(PodView::new(metadata, spec).runtime_class_name()) {
        return Decision::exempt("runtimeClass");
    }
    let mut annotations = BTreeMap::new();
    if !policy_errors.is_empty() {
        annotations.insert(
            ERROR_ANNOTATION,
            format!("Failed to parse policy: {}", aggregate(policy_errors)),
        );
    }
    // Each distinct level and version is evaluated once.
    let mut cache: Vec<(LevelVersion, Vec<CheckFailure>)> = Vec::with_capacity(3);
    let mut results = |lv: LevelVersion| -> Vec<CheckFailure> {
        if let Some((_, failures)) = cache.iter().find(|(cached, _)| *cached == lv) {
            return failures.clone();
        }
        let failures = check_pod(lv, metadata, spec);
        cache.push((lv, failures.clone()));
        failures
    };

    let mut decision = Decision::allow();
    if enforce {
        annotations.insert(ENFORCE_POLICY_ANNOTATION, policy.enforce.to_string());
        let failures = results(policy.enforce);
        if !failures.is_empty() {
            decision = Decision::deny(
                Denial::Forbidden,
                forbidden_reason(policy.enforce, &failures),
            );
        }
    }
    let failures = results(policy.audit);
    if !failures.is_empty() {
        annotations.insert(
            AUDIT_VIOLATIONS_ANNOTATION,
            violation_warning(policy.audit, &failures),
        );
    }
    if decision.allowed {
        let failures = results(policy.warn);
        if !failures.is_empty() {
            decision
                .warnings
                .push(violation_warning(policy.warn, &failures));
        }
    }
    decision.set_annotations(annotations);
    decision
}

#[cfg(test)]
mod tests;
