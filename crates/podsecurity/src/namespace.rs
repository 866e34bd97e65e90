//! Namespace writes: Pod Security labels must be valid, an exempt namespace given a policy
//! gets a warning that it will be ignored, and setting or tightening the enforce level
//! checks the namespace's existing pods against it, as warnings (never a refusal).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use kyb_apimachinery::gofmt;
use serde_json::{Map, Value};

use crate::admission::{Decision, Denial, Exemptions, Operation, Request};
use crate::checks::{check_pod, failure_reasons};
use crate::labels::{
    AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL,
    NamespacePolicy, WARN_LEVEL_LABEL, WARN_VERSION_LABEL, aggregate, effective_policy,
};
use crate::level::{Level, LevelVersion};
use crate::pod::{PodView, null};

/// The warning when the namespace's pods could not be listed.
pub const FAILED_TO_LIST_PODS: &str =
    "failed to list pods while checking new PodSecurity enforce level";

/// How much of a namespace is checked when its enforce level changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodCheckLimits {
    /// At most this many pods are evaluated (Kubernetes: 3000).
    pub max_pods: usize,
    /// Evaluation stops once this much time has passed (Kubernetes: 1 s, or half the time
    /// left before the request's deadline when that is less).
    pub timeout: Duration,
}

impl Default for PodCheckLimits {
    fn default() -> Self {
        PodCheckLimits {
            max_pods: 3000,
            timeout: Duration::from_secs(1),
        }
    }
}

fn labels_of(namespace: &Value) -> Option<&Map<String, Value>> {
    namespace.get("metadata")?.get("labels")?.as_object()
}

fn name_of(namespace: &Value) -> &str {
    namespace
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn admit_namespace(request: &Request<'_>) -> Decision {
    if !request.subresource.unwrap_or("").is_empty() {
        return Decision::allow();
    }
    let Some(namespace) = request.object else {
        return Decision::bad_request("failed to decode object");
    };
    if !namespace.is_object() {
        return Decision::bad_request("failed to decode namespace");
    }
    let labels = labels_of(namespace);
    let (new_policy, new_errors) = effective_policy(labels, &request.defaults);
    let exempt_warning = || {
        let mut decision = Decision::allow();
        if request.exemptions.exempts_namespace(request.namespace) {
            decision.warnings.extend(exempt_namespace_warning(
                name_of(namespace),
                &new_policy,
                labels,
                &request.defaults,
            ));
        }
        decision
    };
    match request.operation {
        Operation::Create => {
            if !new_errors.is_empty() {
                return invalid(new_errors);
            }
            exempt_warning()
        }
        Operation::Update => {
            // Kubernetes' message, two spaces included.
            let Some(old) = request.old_object else {
                return Decision::bad_request("failed to decode  old object");
            };
            if !old.is_object() {
                return Decision::bad_request("failed to decode  old namespace");
            }
            let (old_policy, old_errors) = effective_policy(labels_of(old), &request.defaults);
            // Labels that were already invalid in the same way do not block other updates.
            if !new_errors.is_empty() && (old_errors.is_empty() || new_errors != old_errors) {
                return invalid(new_errors);
            }
            let (new, old) = (new_policy.enforce, old_policy.enforce);
            if new == old
                || new.level == Level::Privileged
                || (new.version == old.version && new.level <= old.level)
            {
                return Decision::allow();
            }
            if request.exemptions.exempts_namespace(request.namespace) {
                return exempt_warning();
            }
            let mut decision = Decision::allow();
            decision.check_existing_pods = Some(new);
            decision
        }
        Operation::Delete | Operation::Connect => Decision::allow(),
    }
}

fn invalid(errors: Vec<crate::labels::LabelError>) -> Decision {
    let message = aggregate(&errors);
    Decision::deny(Denial::Invalid(errors), message)
}

/// The warning for an exempt namespace given a non-privileged policy different from the
/// defaults: `namespace "kube-system" is exempt from Pod Security, and the policy
/// (enforce=baseline:latest) will be ignored`, listing the non-privileged modes whose
/// labels are set.
pub fn exempt_namespace_warning(
    name: &str,
    policy: &NamespacePolicy,
    labels: Option<&Map<String, Value>>,
    defaults: &NamespacePolicy,
) -> Option<String> {
    if policy.fully_privileged() || policy.equivalent(defaults) {
        return None;
    }
    let has = |key: &str| labels.is_some_and(|l| l.contains_key(key));
    let modes = [
        (
            "enforce",
            policy.enforce,
            ENFORCE_LEVEL_LABEL,
            ENFORCE_VERSION_LABEL,
        ),
        (
            "audit",
            policy.audit,
            AUDIT_LEVEL_LABEL,
            AUDIT_VERSION_LABEL,
        ),
        ("warn", policy.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL),
    ];
    let parts: Vec<String> = modes
        .into_iter()
        .filter(|(_, lv, level, version)| {
            lv.level != Level::Privileged && (has(level) || has(version))
        })
        .map(|(mode, lv, _, _)| format!("{mode}={lv}"))
        .collect();
    Some(format!(
        "namespace {} is exempt from Pod Security, and the policy ({}) will be ignored",
        gofmt::quote(name),
        parts.join(", ")
    ))
}

/// The warnings for a namespace whose enforce level is set or tightened, from its existing
/// pods, with Kubernetes' default limits (see [`check_namespace_pods`]). Call it when
/// [`crate::admit`] returns [`Decision::check_existing_pods`]; `new_policy.enforce` is the
/// level checked.
pub fn check_namespace_update(
    namespace: &str,
    new_policy: &NamespacePolicy,
    existing_pods: &[Value],
    exemptions: &Exemptions,
) -> Vec<String> {
    check_namespace_pods(
        namespace,
        new_policy.enforce,
        existing_pods,
        exemptions,
        &PodCheckLimits::default(),
    )
}

/// Kubernetes' `EvaluatePodsInNamespace`: the existing pods of `namespace` against a new
/// enforce level, as warnings.
///
/// Pods with an exempt runtime class are skipped. One pod per controller is checked first
/// (pods without a controller always), then the other replicas, up to `limits.max_pods` and
/// within `limits.timeout`. The warnings are, in order: `new PodSecurity enforce level only
/// checked against the first N of M existing pods` when not all were checked; `existing
/// pods in namespace "x" violate the new PodSecurity enforce level "restricted:latest"`
/// when some do; then one line per distinct set of violated checks, sorted, naming the
/// first pod (by name) and how many others share it:
/// `web-1 (and 2 other pods): allowPrivilegeEscalation != false, runAsNonRoot != true`.
pub fn check_namespace_pods<'v, I>(
    namespace: &str,
    enforce: LevelVersion,
    pods: I,
    exemptions: &Exemptions,
    limits: &PodCheckLimits,
) -> Vec<String>
where
    I: IntoIterator<Item = &'v Value>,
{
    let deadline = Instant::now().checked_add(limits.timeout);
    let pods = prioritize(pods, exemptions);
    let total = pods.len();

    // warning -> (lexically first pod name, number of pods)
    let mut counts: HashMap<String, (&str, usize)> = HashMap::new();
    let mut checked = 0;
    for pod in pods.iter().take(limits.max_pods) {
        checked += 1;
        let spec = pod.get("spec").unwrap_or(null());
        let failures = check_pod(enforce, pod.get("metadata"), spec);
        if !failures.is_empty() {
            let name = pod_name(pod);
            counts
                .entry(failure_reasons(&failures))
                .and_modify(|(first, count)| {
                    if name < *first {
                        *first = name;
                    }
                    *count += 1;
                })
                .or_insert((name, 1));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }

    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !counts.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {} violate the new PodSecurity enforce level {}",
            gofmt::quote(namespace),
            gofmt::quote(&enforce.to_string())
        ));
    }
    let mut pod_warnings: Vec<String> = counts
        .into_iter()
        .map(|(warning, (name, count))| match count {
            1 => format!("{name}: {warning}"),
            2 => format!("{name} (and 1 other pod): {warning}"),
            n => format!("{name} (and {} other pods): {warning}", n - 1),
        })
        .collect();
    pod_warnings.sort();
    warnings.extend(pod_warnings);
    warnings
}

fn pod_name(pod: &Value) -> &str {
    pod.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The UID of the pod's controller (the first owner reference with `controller: true`).
fn controller_uid(pod: &Value) -> Option<&str> {
    pod.get("metadata")?
        .get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| r.get("uid").and_then(Value::as_str).unwrap_or(""))
}

/// Non-exempt pods, the first pod of each controller (and every pod without one) first, in
/// their given order, then the other replicas.
fn prioritize<'v, I>(pods: I, exemptions: &Exemptions) -> Vec<&'v Value>
where
    I: IntoIterator<Item = &'v Value>,
{
    let mut first = Vec::new();
    let mut replicas = Vec::new();
    let mut controllers = std::collections::HashSet::new();
    for pod in pods {
        let spec = pod.get("spec").unwrap_or(null());
        if exemptions.exempts_runtime_class(PodView::new(None, spec).runtime_class_name()) {
            continue;
        }
        match controller_uid(pod) {
            Some(uid) if !controllers.insert(uid) => replicas.push(pod),
            _ => first.push(pod),
        }
    }
    first.extend(replicas);
    first
}

#[cfg(test)]
mod tests;
