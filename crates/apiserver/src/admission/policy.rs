//! ValidatingAdmissionPolicy: CEL validations (`kyb-cel`) of ValidatingAdmissionPolicies,
//! applied to the requests their `matchConstraints` select through each
//! ValidatingAdmissionPolicyBinding (its own `matchResources`, `paramRef` and
//! `validationActions`).
//!
//! For each binding of a matching policy: the parameters are found (by name or selector,
//! in the binding's namespace or the request's; `parameterNotFoundAction` decides when
//! there are none), the policy is evaluated once per parameter object, and each failed
//! validation is acted on: `Deny` refuses the request, `Warn` sends a warning, `Audit`
//! records it in the audit annotations. Expressions that fail to evaluate follow the
//! policy's `failurePolicy`. Compiled expressions are cached and shared.

use super::rules::{self, Rule};
use super::{Attributes, Context, Plugin};
use crate::auth::User;
use async_trait::async_trait;
use kyb_api::Status;
use kyb_api::registry::ResourceDef;
use kyb_apimachinery::labels::Selector;
use kyb_apimachinery::meta;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Which requests a policy (or a binding's `matchResources`) selects.
struct Match {
    /// A binding's `matchResources` without rules leaves resources to the policy.
    any_resource: bool,
    rules: Vec<Rule>,
    exclude: Vec<Rule>,
    namespace_selector: Selector,
    object_selector: Selector,
    equivalent: bool,
}

impl Match {
    fn from_json(value: &Value, binding: bool) -> Option<Match> {
        let rules = |field: &str| {
            value[field]
                .as_array()
                .map(|r| r.iter().map(Rule::from_json).collect())
                .unwrap_or_default()
        };
        let resource_rules: Vec<Rule> = rules("resourceRules");
        Some(Match {
            any_resource: binding && resource_rules.is_empty(),
            rules: resource_rules,
            exclude: rules("excludeResourceRules"),
            namespace_selector: rules::selector(value.get("namespaceSelector")).ok()?,
            object_selector: rules::selector(value.get("objectSelector")).ok()?,
            equivalent: value["matchPolicy"].as_str() != Some("Exact"),
        })
    }

    /// The version of the requested resource this selects (`None`: not selected).
    fn version_for(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        namespace: &dyn Fn(&str) -> Option<Value>,
    ) -> Option<&'static ResourceDef> {
        let name =
            kyb_apimachinery::meta::name(object.or(attributes.old_object).unwrap_or(&Value::Null))
                .unwrap_or(attributes.name);
        let covers = |list: &[Rule], def: &ResourceDef| {
            list.iter().any(|rule| {
                rule.matches(
                    attributes.operation,
                    def.group,
                    def.version,
                    def.plural,
                    attributes.subresource,
                    def.namespaced,
                ) && rule.names(name)
            })
        };
        let resource = attributes.resource;
        let def = if self.any_resource || covers(&self.rules, resource) {
            resource
        } else if self.equivalent {
            kyb_api::registry::BUILTIN.iter().find(|def| {
                def.group == resource.group
                    && def.plural == resource.plural
                    && !std::ptr::eq(*def, resource)
                    && covers(&self.rules, def)
            })?
        } else {
            return None;
        };
        if covers(&self.exclude, resource) {
            return None;
        }
        if !self.namespace_selector.is_empty()
            && let Some(labels) = rules::namespace_labels(attributes, object, namespace)
            && !self.namespace_selector.matches(Some(&labels))
        {
            return None;
        }
        if !rules::object_matches(&self.object_selector, object, attributes.old_object) {
            return None;
        }
        Some(def)
    }
}

struct Policy {
    name: String,
    compiled: kyb_cel::CompiledPolicy,
    constraints: Option<Match>,
    /// The resource of `spec.paramKind`.
    param: Option<&'static ResourceDef>,
    /// A paramKind that names no known resource: every binding fails to configure.
    bad_param: Option<String>,
}

struct Binding {
    name: String,
    policy: String,
    resources: Option<Match>,
    param_ref: Option<Value>,
    deny: bool,
    warn: bool,
    audit: bool,
}

#[derive(Default)]
struct Snapshot {
    policies: HashMap<String, Arc<Policy>>,
    bindings: Vec<Arc<Binding>>,
}

/// The ValidatingAdmissionPolicy plugin.
#[derive(Default)]
pub struct ValidatingAdmissionPolicy {
    cel: kyb_cel::ExpressionCache,
    state: Mutex<((u64, u64), Arc<Snapshot>)>,
}

impl ValidatingAdmissionPolicy {
    fn snapshot(&self, context: &Context<'_>) -> Arc<Snapshot> {
        let cache = &context.engine.cache;
        const GROUP: &str = "admissionregistration.k8s.io";
        let revision = |plural: &str| {
            kyb_api::registry::find_stored(GROUP, plural)
                .and_then(|def| cache.resource(def))
                .map_or(0, |r| r.last_applied())
        };
        let revisions = (
            revision("validatingadmissionpolicies"),
            revision("validatingadmissionpolicybindings"),
        );
        if let Ok(state) = self.state.lock()
            && state.0 == revisions
            && revisions != (0, 0)
        {
            return state.1.clone();
        }
        let mut snapshot = Snapshot::default();
        for policy in cache.objects(GROUP, "validatingadmissionpolicies", None) {
            let name = meta::name(&policy).unwrap_or_default().to_string();
            let spec = &policy["spec"];
            let (param, bad_param) = match spec.get("paramKind").filter(|p| p.is_object()) {
                None => (None, None),
                Some(kind) => {
                    let (group, version) =
                        split_api_version(kind["apiVersion"].as_str().unwrap_or_default());
                    let kind_name = kind["kind"].as_str().unwrap_or_default();
                    match kyb_api::registry::find_kind(group, version, kind_name) {
                        Some(def) => (Some(def), None),
                        None => (
                            None,
                            Some(format!(
                                "{}, Kind={kind_name}",
                                kind["apiVersion"].as_str().unwrap_or_default()
                            )),
                        ),
                    }
                }
            };
            snapshot.policies.insert(
                name.clone(),
                Arc::new(Policy {
                    compiled: kyb_cel::CompiledPolicy::new(spec, &self.cel),
                    constraints: spec
                        .get("matchConstraints")
                        .and_then(|m| Match::from_json(m, false)),
                    name,
                    param,
                    bad_param,
                }),
            );
        }
        for binding in cache.objects(GROUP, "validatingadmissionpolicybindings", None) {
            let spec = &binding["spec"];
            let actions: Vec<&str> = spec["validationActions"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            snapshot.bindings.push(Arc::new(Binding {
                name: meta::name(&binding).unwrap_or_default().to_string(),
                policy: spec["policyName"].as_str().unwrap_or_default().to_string(),
                resources: spec
                    .get("matchResources")
                    .filter(|m| m.is_object())
                    .and_then(|m| Match::from_json(m, true)),
                param_ref: spec.get("paramRef").filter(|p| p.is_object()).cloned(),
                deny: actions.contains(&"Deny"),
                warn: actions.contains(&"Warn"),
                audit: actions.contains(&"Audit"),
            }));
        }
        let snapshot = Arc::new(snapshot);
        if let Ok(mut state) = self.state.lock() {
            *state = (revisions, snapshot.clone());
        }
        snapshot
    }
}

fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// CEL's `authorizer`, answered by the server's authorizer chain for the request's user.
struct CelAuthorizer<'a> {
    context: &'a Context<'a>,
    user: &'a User,
}

impl kyb_cel::Authorizer for CelAuthorizer<'_> {
    fn check(&self, check: &kyb_cel::AuthzCheck) -> kyb_cel::AuthzDecision {
        let (name, groups) = match &check.service_account {
            Some(account) => (account.username(), account.groups()),
            None => (self.user.name.clone(), self.user.groups.clone()),
        };
        let asked = match &check.target {
            kyb_cel::AuthzTarget::NonResource { path } => {
                kyb_rbac::Attributes::non_resource(&name, &groups, &check.verb, path)
            }
            kyb_cel::AuthzTarget::Resource(r) => kyb_rbac::Attributes::resource(
                &name,
                &groups,
                &check.verb,
                &r.group,
                &r.resource,
                &r.namespace,
            )
            .with_name(&r.name)
            .with_subresource(&r.subresource),
        };
        let decision = self.context.engine.authorizer.decide(&asked);
        if decision.is_allowed() {
            kyb_cel::AuthzDecision::allow(decision.reason())
        } else {
            kyb_cel::AuthzDecision::deny(decision.reason())
        }
    }
}

/// What a binding's evaluation produced that is not a refusal.
#[derive(Default)]
struct Outcome {
    warnings: Vec<String>,
    audit_failures: Vec<Value>,
}

impl ValidatingAdmissionPolicy {
    /// The parameter objects a binding gives its policy (`None`: the binding does not apply
    /// for want of parameters, with `parameterNotFoundAction: Allow`).
    fn params(
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        policy: &Policy,
        binding: &Binding,
    ) -> Result<Option<Vec<Option<Value>>>, String> {
        if let Some(kind) = &policy.bad_param {
            return Err(format!(
                "failed to configure policy: failed to find resource referenced by paramKind: '{kind}'"
            ));
        }
        let Some(def) = policy.param else {
            return Ok(Some(vec![None]));
        };
        let Some(reference) = &binding.param_ref else {
            return Err(
                "failed to configure binding: paramRef is required when paramKind is set".into(),
            );
        };
        let namespace = match reference["namespace"].as_str().filter(|n| !n.is_empty()) {
            Some(ns) => Some(ns.to_string()),
            None if def.namespaced => {
                if attributes.namespace.is_empty() {
                    return Err("failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
                }
                Some(attributes.namespace.to_string())
            }
            None => None,
        };
        let cache = &context.engine.cache;
        let found: Vec<Value> = match reference["name"].as_str().filter(|n| !n.is_empty()) {
            Some(name) => cache
                .lookup(def.group, def.plural, namespace.as_deref(), name)
                .into_iter()
                .collect(),
            None => {
                let selector = rules::selector(reference.get("selector"))
                    .map_err(|e| format!("failed to configure binding: {e}"))?;
                cache
                    .objects(def.group, def.plural, namespace.as_deref())
                    .into_iter()
                    .filter(|o| selector.matches(meta::labels(o)))
                    .collect()
            }
        };
        if found.is_empty() {
            return match reference["parameterNotFoundAction"].as_str() {
                Some("Allow") => Ok(None),
                _ => Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into()),
            };
        }
        Ok(Some(found.into_iter().map(Some).collect()))
    }

    /// Evaluates one binding of a policy, selecting `def`; `Err` refuses the request.
    fn evaluate(
        context: &Context<'_>,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        (policy, binding, def): (&Policy, &Binding, &'static ResourceDef),
        outcome: &mut Outcome,
    ) -> Result<(), Status> {
        let fail_open = policy.compiled.failure_policy() == kyb_cel::FailurePolicy::Ignore;
        let refuse = |message: String, code: u16| {
            let reason = match code {
                401 => "Unauthorized",
                403 => "Forbidden",
                413 => "RequestEntityTooLarge",
                _ => "Invalid",
            };
            Status::new(
                code,
                reason,
                kyb_cel::denial_message(&policy.name, Some(&binding.name), &message),
            )
        };
        let params = match Self::params(context, attributes, policy, binding) {
            Ok(Some(params)) => params,
            Ok(None) => return Ok(()),
            Err(_) if fail_open => return Ok(()),
            Err(message) => return Err(refuse(message, 403)),
        };
        let cache = &context.engine.cache;
        let namespace_object = (!attributes.namespace.is_empty())
            .then(|| cache.lookup("", "namespaces", None, attributes.namespace))
            .flatten();
        let request = super::request_json(attributes, def, object, "");
        let authorizer = CelAuthorizer {
            context,
            user: attributes.user,
        };
        for param in &params {
            let input = kyb_cel::Input {
                object,
                old_object: attributes.old_object,
                request: Some(&request),
                params: param.as_ref(),
                namespace_object: namespace_object.as_ref(),
                authorizer: Some(&authorizer),
            };
            let evaluation = policy.compiled.evaluate(&input);
            match evaluation.matched {
                kyb_cel::MatchOutcome::Matched => {}
                kyb_cel::MatchOutcome::NotMatched { .. } => continue,
                kyb_cel::MatchOutcome::Error { message, .. } => {
                    if fail_open {
                        continue;
                    }
                    return Err(refuse(message, 403));
                }
            }
            for (key, value) in &evaluation.audit_annotations.values {
                context
                    .call
                    .annotate(format!("{}/{key}", policy.name), value.clone());
            }
            for (index, violation) in evaluation.violations.iter().enumerate() {
                if violation.kind == kyb_cel::ViolationKind::Error && fail_open {
                    continue;
                }
                if binding.deny {
                    return Err(refuse(violation.message.clone(), violation.status_code()));
                }
                if binding.warn {
                    outcome.warnings.push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        policy.name, binding.name, violation.message
                    ));
                }
                if binding.audit {
                    outcome.audit_failures.push(json!({
                        "message": violation.message,
                        "policy": policy.name,
                        "binding": binding.name,
                        "expressionIndex": index,
                        "validationActions": ["Audit"],
                    }));
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Plugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
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
        let snapshot = self.snapshot(context);
        if snapshot.bindings.is_empty() {
            return Ok(());
        }
        let cache = &context.engine.cache;
        let namespace = |ns: &str| cache.lookup("", "namespaces", None, ns);
        let mut outcome = Outcome::default();
        for binding in &snapshot.bindings {
            let Some(policy) = snapshot.policies.get(&binding.policy) else {
                continue;
            };
            let Some(def) = policy
                .constraints
                .as_ref()
                .and_then(|m| m.version_for(attributes, object, &namespace))
            else {
                continue;
            };
            if let Some(resources) = &binding.resources
                && resources
                    .version_for(attributes, object, &namespace)
                    .is_none()
            {
                continue;
            }
            Self::evaluate(
                context,
                attributes,
                object,
                (policy, binding, def),
                &mut outcome,
            )?;
        }
        for warning in outcome.warnings {
            context.warn(warning);
        }
        if !outcome.audit_failures.is_empty() {
            context.call.annotate(
                "validation.policy.admission.k8s.io/validation_failure".into(),
                Value::Array(outcome.audit_failures).to_string(),
            );
        }
        Ok(())
    }
}
