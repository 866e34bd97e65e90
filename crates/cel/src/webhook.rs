//! `matchConditions` of admission webhooks (Validating/MutatingWebhookConfiguration).
//!
//! Same evaluation as a policy's match conditions (see `matching`), with the variables
//! Kubernetes declares for webhooks: `object`, `oldObject`, `request`, `authorizer` (and
//! `namespaceObject`, declared but always null); no `params`, no `variables`.

use serde_json::Value;

use crate::Input;
use crate::cache::ExpressionCache;
use crate::error::CompileError;
use crate::matching::{self, Condition, MatchOutcome};
use crate::program::{Env, Program};
use crate::runtime::{self, Needs};
use crate::types::Ty;

const ENV: Env<'static> = Env {
    params: false,
    authorizer: true,
    variables: None,
};

/// A webhook's compiled `matchConditions`.
#[derive(Debug)]
pub struct MatchConditions {
    conditions: Vec<Condition>,
    needs: Needs,
}

fn check(condition: &mut Condition) -> Option<CompileError> {
    let compiled = std::mem::replace(
        &mut condition.program,
        Err(CompileError::new(
            crate::error::CompileErrorKind::Internal,
            "not compiled",
        )),
    );
    condition.program = compiled.and_then(|p| p.check(&ENV, &[Ty::Bool]).map(|_| p));
    condition.program.as_ref().err().cloned()
}

impl MatchConditions {
    /// Compiles a webhook's `matchConditions` list (`[{name, expression}]`); never fails.
    pub fn new(list: &Value, cache: &ExpressionCache) -> Self {
        let mut conditions = matching::compile_conditions(Some(list), cache);
        let mut needs = Needs::default();
        for condition in &mut conditions {
            check(condition);
            if let Ok(program) = &condition.program {
                needs.add_program(program);
            }
        }
        MatchConditions { conditions, needs }
    }

    /// Whether there are no conditions (the webhook always matches).
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// The compiled programs, in order (errors for conditions that do not compile).
    pub fn programs(&self) -> impl Iterator<Item = &Result<Program, CompileError>> {
        self.conditions.iter().map(|c| &c.program)
    }

    /// Evaluates the conditions for a request. `params` and `namespaceObject` of the
    /// input are not used.
    pub fn evaluate(&self, input: &Input<'_>) -> MatchOutcome {
        if self.conditions.is_empty() {
            return MatchOutcome::Matched;
        }
        let input = Input {
            params: None,
            namespace_object: None,
            ..*input
        };
        runtime::with_evaluator(&input, self.needs, None, |ev| {
            matching::evaluate(&self.conditions, ev)
        })
        .unwrap_or_else(|message| MatchOutcome::Error {
            name: String::new(),
            message,
        })
    }
}

/// The compile errors of a webhook's `matchConditions`, as `(field path, detail)`, with
/// paths `<field_prefix>[i].expression` (e.g. prefix `webhooks[0].matchConditions`).
pub fn check_match_conditions(list: &Value, field_prefix: &str) -> Vec<(String, String)> {
    let cache = ExpressionCache::new(64);
    let mut conditions = matching::compile_conditions(Some(list), &cache);
    let mut errors = Vec::new();
    for (i, condition) in conditions.iter_mut().enumerate() {
        if let Some(error) = check(condition)
            && !condition.source.trim().is_empty()
        {
            errors.push((
                format!("{field_prefix}[{i}].expression"),
                error.detail().to_owned(),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::authz::{Authorizer, AuthzCheck, AuthzDecision, AuthzTarget};
    use serde_json::json;

    struct AllowSecretsReaders;

    impl Authorizer for AllowSecretsReaders {
        fn check(&self, attributes: &AuthzCheck) -> AuthzDecision {
            match &attributes.target {
                AuthzTarget::Resource(r) if r.resource == "secrets" && attributes.verb == "get" => {
                    AuthzDecision::allow("")
                }
                _ => AuthzDecision::deny(""),
            }
        }
    }

    fn conditions(list: serde_json::Value) -> MatchConditions {
        MatchConditions::new(&list, &ExpressionCache::default())
    }

    #[test]
    fn webhook_conditions_match_skip_and_fail() {
        let c = conditions(json!([
            {"name": "exclude-leases", "expression": "!(request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases')"},
            {"name": "exclude-kubelet-requests", "expression": "!('system:nodes' in request.userInfo.groups)"},
            {"name": "labelled", "expression": "has(object.metadata.labels) && object.metadata.labels.inject == 'true'"},
        ]));
        assert!(!c.is_empty());
        assert!(c.programs().all(Result::is_ok));
        let pod = json!({"metadata": {"name": "p", "labels": {"inject": "true"}}});
        let request = json!({
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "operation": "CREATE"
        });
        let input = Input {
            object: Some(&pod),
            request: Some(&request),
            ..Input::default()
        };
        assert_eq!(c.evaluate(&input), MatchOutcome::Matched);

        let kubelet = json!({
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "userInfo": {"username": "system:node:n1", "groups": ["system:nodes"]}
        });
        assert_eq!(
            c.evaluate(&Input {
                request: Some(&kubelet),
                ..input
            }),
            MatchOutcome::NotMatched {
                name: "exclude-kubelet-requests".to_owned()
            }
        );

        // DELETE: object is null, so reading its metadata is an error.
        let MatchOutcome::Error { name, message } = c.evaluate(&Input {
            object: None,
            old_object: Some(&pod),
            ..input
        }) else {
            panic!("expected an error")
        };
        assert_eq!(name, "labelled");
        assert!(
            message.starts_with("expression 'has(object.metadata.labels) && object.metadata.labels.inject == 'true'' resulted in error: "),
            "{message}"
        );
        // No conditions: always matched.
        assert!(conditions(json!([])).evaluate(&input).is_matched());
    }

    #[test]
    fn webhook_conditions_may_use_the_authorizer_but_not_params() {
        let c = conditions(json!([
            {"name": "secret-readers", "expression": "authorizer.group('').resource('secrets').namespace(request.namespace).check('get').allowed()"},
        ]));
        let request =
            json!({"namespace": "ns", "operation": "CREATE", "userInfo": {"username": "alice"}});
        let authorizer = AllowSecretsReaders;
        let input = Input {
            request: Some(&request),
            authorizer: Some(&authorizer),
            ..Input::default()
        };
        assert_eq!(c.evaluate(&input), MatchOutcome::Matched);

        let list = json!([
            {"name": "ok", "expression": "request.operation == 'CREATE'"},
            {"name": "params", "expression": "params.enabled == true"},
            {"name": "variables", "expression": "variables.x == 1"},
            {"name": "syntax", "expression": "object.metadata.name =="},
            {"name": "not-bool", "expression": "request.name"},
        ]);
        let errors = check_match_conditions(&list, "webhooks[0].matchConditions");
        let paths: Vec<&str> = errors.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "webhooks[0].matchConditions[1].expression",
                "webhooks[0].matchConditions[2].expression",
                "webhooks[0].matchConditions[3].expression",
                "webhooks[0].matchConditions[4].expression",
            ]
        );
        assert_eq!(
            errors[0].1,
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.enabled == true\n | ^"
        );
        assert!(
            errors[1].1.contains("undeclared reference to 'variables'"),
            "{errors:?}"
        );
        assert!(
            errors[2]
                .1
                .starts_with("compilation failed: ERROR: <input>:1:"),
            "{errors:?}"
        );
        assert_eq!(errors[3].1, "must evaluate to bool but got string");

        // A condition that does not compile is an error at evaluation (failure policy).
        let MatchOutcome::Error { name, message } = conditions(list).evaluate(&input) else {
            panic!("expected an error")
        };
        assert_eq!(name, "params");
        assert!(
            message.starts_with("[compilation error: compilation failed: "),
            "{message}"
        );
    }
}
