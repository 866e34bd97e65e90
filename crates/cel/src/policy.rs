//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): compiling a policy's
//! `spec` once and evaluating it per request, with Kubernetes' decisions and messages.
//!
//! - `matchConditions` decide whether the policy applies ([`MatchOutcome`]);
//! - each failed `validations` entry is a [`Violation`]: its message is the
//!   `messageExpression`'s result when that is a non-empty single-line string of at most
//!   5 KiB, else `message`, else `failed expression: <expression>`; its reason is the
//!   validation's `reason` (default `Invalid`); an expression that errors, or whose value
//!   is not a boolean, is a violation of kind [`ViolationKind::Error`] (the failure policy
//!   decides those);
//! - `auditAnnotations` give key/value pairs (null or empty values are omitted);
//! - `variables` are shared by all of the above within one evaluation, each evaluated at
//!   most once.
//!
//! An expression that does not compile is kept as an error: evaluating it reports
//! `compilation error: ...` (Kubernetes then applies the failure policy), and
//! [`check_policy`] lists such errors with their field paths for create/update validation.

use std::sync::Arc;

use kube_cel::cel::Value as CelValue;
use serde_json::Value;

use crate::Input;
use crate::cache::ExpressionCache;
use crate::convert;
use crate::error::CompileError;
use crate::matching::{self, Condition, MatchOutcome};
use crate::program::{Env, Program};
use crate::runtime::{
    self, EvalFailure, Evaluator, Needs, OUT_OF_BUDGET, VariableDef, VariableTable,
};
use crate::types::Ty;

/// Longest `messageExpression` result used as a message (Kubernetes'
/// `MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_EVALUATED_MESSAGE_BYTES: usize = 5 * 1024;

/// `spec.failurePolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Errors deny the request (the default).
    #[default]
    Fail,
    /// Errors are ignored.
    Ignore,
}

/// Whether a violation is a failed check or an evaluation error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViolationKind {
    /// The validation evaluated to `false`.
    Failed,
    /// The validation could not be evaluated (compile error, runtime error, non-boolean
    /// result, cost budget): subject to the failure policy.
    Error,
}

/// A validation that did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The message, as Kubernetes builds it.
    pub message: String,
    /// `Unauthorized`, `Forbidden`, `Invalid` or `RequestEntityTooLarge` (`Invalid` unless
    /// the validation says otherwise, and always for errors).
    pub reason: String,
    /// Failed check or evaluation error.
    pub kind: ViolationKind,
}

impl Violation {
    fn error(message: String) -> Self {
        Violation {
            message,
            reason: "Invalid".to_owned(),
            kind: ViolationKind::Error,
        }
    }

    /// The HTTP status of a denial with this reason, as the admission plugin maps it:
    /// 401 `Unauthorized`, 403 `Forbidden`, 413 `RequestEntityTooLarge`, otherwise 422.
    pub fn status_code(&self) -> u16 {
        match self.reason.as_str() {
            "Unauthorized" => 401,
            "Forbidden" => 403,
            "RequestEntityTooLarge" => 413,
            _ => 422,
        }
    }
}

/// The message of a request denied by a policy:
/// `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>`.
pub fn denial_message(policy: &str, binding: Option<&str>, message: &str) -> String {
    match binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {message}"
        ),
        None => format!("ValidatingAdmissionPolicy '{policy}' denied request: {message}"),
    }
}

/// An audit annotation that could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditAnnotationError {
    /// The annotation's `key` (empty when the whole phase ran out of budget).
    pub key: String,
    /// What went wrong.
    pub message: String,
}

/// Evaluated `auditAnnotations`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditAnnotations {
    /// `(key, value)` in spec order; null and empty values are omitted. Kubernetes
    /// publishes each as `<policy name>/<key>`.
    pub values: Vec<(String, String)>,
    /// Annotations that failed (subject to the failure policy: with `Ignore` they are
    /// dropped, with `Fail` they are errors).
    pub errors: Vec<AuditAnnotationError>,
}

/// Everything one request's evaluation of a policy produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyEvaluation {
    /// The match conditions' outcome; when not matched, nothing else was evaluated.
    pub matched: MatchOutcome,
    /// Failed validations.
    pub violations: Vec<Violation>,
    /// Audit annotations.
    pub audit_annotations: AuditAnnotations,
}

#[derive(Debug)]
struct Validation {
    source: String,
    program: Result<Program, CompileError>,
    message: String,
    message_expression: Option<Result<Program, CompileError>>,
    reason: String,
}

#[derive(Debug)]
struct Audit {
    key: String,
    source: String,
    program: Result<Program, CompileError>,
}

/// A ValidatingAdmissionPolicy's spec, compiled.
#[derive(Debug)]
pub struct CompiledPolicy {
    failure_policy: FailurePolicy,
    match_conditions: Vec<Condition>,
    variables: Arc<VariableTable>,
    validations: Vec<Validation>,
    audit_annotations: Vec<Audit>,
    compile_errors: Vec<(String, String)>,
    match_needs: Needs,
    validate_needs: Needs,
    audit_needs: Needs,
}

fn text<'a>(item: &'a Value, key: &str) -> &'a str {
    item.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn list<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Collects compile errors with their field paths (skipping empty expressions, which
/// structural validation reports as required).
struct Checker<'e> {
    errors: Vec<(String, String)>,
    env: Env<'e>,
}

impl Checker<'_> {
    fn check(
        &mut self,
        source: &str,
        compiled: Result<Program, CompileError>,
        env: Env<'_>,
        allowed: &[Ty],
        path: String,
    ) -> (Result<Program, CompileError>, Ty) {
        let checked = compiled.and_then(|p| p.check(&env, allowed).map(|ty| (p, ty)));
        match checked {
            Ok((program, ty)) => (Ok(program), ty),
            Err(error) => {
                if !source.trim().is_empty() {
                    self.errors.push((path, error.detail().to_owned()));
                }
                (Err(error), Ty::Dyn)
            }
        }
    }
}

impl CompiledPolicy {
    /// Compiles a policy's `spec` (never fails: broken expressions are kept as errors).
    pub fn new(spec: &Value, cache: &ExpressionCache) -> Self {
        let params = spec.get("paramKind").is_some_and(|p| !p.is_null());
        let failure_policy = match text(spec, "failurePolicy") {
            "Ignore" => FailurePolicy::Ignore,
            _ => FailurePolicy::Fail,
        };

        // Variables, each seeing only the ones before it.
        let mut types: Vec<(String, Ty)> = Vec::new();
        let mut vars: Vec<VariableDef> = Vec::new();
        let mut errors = Vec::new();
        for (i, item) in list(spec, "variables").iter().enumerate() {
            let name = text(item, "name").to_owned();
            let source = text(item, "expression");
            let mut checker = Checker {
                errors: Vec::new(),
                env: Env {
                    params,
                    authorizer: true,
                    variables: Some(&types),
                },
            };
            let env = checker.env;
            let (program, ty) = checker.check(
                source,
                cache.compile(source),
                env,
                &[],
                format!("spec.variables[{i}].expression"),
            );
            errors.append(&mut checker.errors);
            let mut closure: Vec<usize> = Vec::new();
            if let Ok(p) = &program {
                for dep in &p.references().variables {
                    if let Some(j) = vars.iter().position(|v| &v.name == dep) {
                        closure.push(j);
                        closure.extend_from_slice(&vars[j].closure);
                    }
                }
            }
            closure.sort_unstable();
            closure.dedup();
            types.push((name.clone(), ty));
            vars.push(VariableDef {
                name,
                program,
                closure,
            });
        }
        let variables = Arc::new(VariableTable { vars });

        let env = Env {
            params,
            authorizer: true,
            variables: Some(&types),
        };
        let message_env = Env {
            authorizer: false,
            ..env
        };
        let mut checker = Checker { errors, env };

        let mut match_conditions = matching::compile_conditions(spec.get("matchConditions"), cache);
        for (i, condition) in match_conditions.iter_mut().enumerate() {
            let compiled = std::mem::replace(&mut condition.program, Err(placeholder()));
            condition.program = checker
                .check(
                    &condition.source,
                    compiled,
                    checker.env,
                    &[Ty::Bool],
                    format!("spec.matchConditions[{i}].expression"),
                )
                .0;
        }

        let mut validations = Vec::new();
        for (i, item) in list(spec, "validations").iter().enumerate() {
            let source = text(item, "expression");
            let program = checker
                .check(
                    source,
                    cache.compile(source),
                    checker.env,
                    &[Ty::Bool],
                    format!("spec.validations[{i}].expression"),
                )
                .0;
            let message_expression = item
                .get("messageExpression")
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .map(|m| {
                    checker
                        .check(
                            m,
                            cache.compile(m),
                            message_env,
                            &[Ty::String],
                            format!("spec.validations[{i}].messageExpression"),
                        )
                        .0
                });
            let reason = match text(item, "reason") {
                "" => "Invalid",
                r => r,
            };
            validations.push(Validation {
                source: source.to_owned(),
                program,
                message: text(item, "message").trim().to_owned(),
                message_expression,
                reason: reason.to_owned(),
            });
        }

        let mut audit_annotations = Vec::new();
        for (i, item) in list(spec, "auditAnnotations").iter().enumerate() {
            let source = text(item, "valueExpression");
            let program = checker
                .check(
                    source,
                    cache.compile(source),
                    checker.env,
                    &[Ty::String, Ty::Null],
                    format!("spec.auditAnnotations[{i}].valueExpression"),
                )
                .0;
            audit_annotations.push(Audit {
                key: text(item, "key").to_owned(),
                source: source.to_owned(),
                program,
            });
        }

        let var_needs: Vec<Needs> = variables
            .vars
            .iter()
            .map(|v| {
                let mut needs = Needs::default();
                if let Ok(p) = &v.program {
                    needs.add_program(p);
                }
                needs
            })
            .collect();
        let phase = |programs: Vec<&Program>| needs_for(&programs, &variables, &var_needs);
        let match_needs = phase(
            match_conditions
                .iter()
                .filter_map(|c| c.program.as_ref().ok())
                .collect(),
        );
        let validate_needs = phase(
            validations
                .iter()
                .flat_map(|v| {
                    let message = v.message_expression.as_ref().and_then(|m| m.as_ref().ok());
                    v.program.as_ref().ok().into_iter().chain(message)
                })
                .collect(),
        );
        let audit_needs = phase(
            audit_annotations
                .iter()
                .filter_map(|a| a.program.as_ref().ok())
                .collect(),
        );

        CompiledPolicy {
            failure_policy,
            match_conditions,
            variables,
            validations,
            audit_annotations,
            compile_errors: checker.errors,
            match_needs,
            validate_needs,
            audit_needs,
        }
    }

    /// `spec.failurePolicy` (default `Fail`).
    pub fn failure_policy(&self) -> FailurePolicy {
        self.failure_policy
    }

    /// Every expression that does not compile, as `(field path, detail)`.
    pub fn compile_errors(&self) -> &[(String, String)] {
        &self.compile_errors
    }

    /// Evaluates the match conditions.
    pub fn match_conditions(&self, input: &Input<'_>) -> MatchOutcome {
        if self.match_conditions.is_empty() {
            return MatchOutcome::Matched;
        }
        self.run(input, self.match_needs, |ev| {
            matching::evaluate(&self.match_conditions, ev)
        })
        .unwrap_or_else(|message| MatchOutcome::Error {
            name: String::new(),
            message,
        })
    }

    /// Evaluates the validations (not the match conditions) and returns those that did
    /// not pass.
    pub fn validate(&self, input: &Input<'_>) -> Vec<Violation> {
        if self.validations.is_empty() {
            return Vec::new();
        }
        self.run(input, self.validate_needs, |ev| self.eval_validations(ev))
            .unwrap_or_else(|message| vec![Violation::error(message)])
    }

    /// Evaluates the audit annotations.
    pub fn audit_annotations(&self, input: &Input<'_>) -> AuditAnnotations {
        if self.audit_annotations.is_empty() {
            return AuditAnnotations::default();
        }
        self.run(input, self.audit_needs, |ev| self.eval_audit(ev))
            .unwrap_or_else(|message| AuditAnnotations {
                values: Vec::new(),
                errors: vec![AuditAnnotationError {
                    key: String::new(),
                    message,
                }],
            })
    }

    /// Match conditions, then (when matched) validations and audit annotations, in one
    /// evaluation context: inputs are converted once and each variable is evaluated at
    /// most once for all of them.
    pub fn evaluate(&self, input: &Input<'_>) -> PolicyEvaluation {
        let mut needs = self.match_needs;
        needs.merge(&self.validate_needs);
        needs.merge(&self.audit_needs);
        self.run(input, needs, |ev| {
            let matched = matching::evaluate(&self.match_conditions, ev);
            if !matched.is_matched() {
                return PolicyEvaluation {
                    matched,
                    violations: Vec::new(),
                    audit_annotations: AuditAnnotations::default(),
                };
            }
            ev.new_phase();
            let violations = self.eval_validations(ev);
            ev.new_phase();
            let audit_annotations = self.eval_audit(ev);
            PolicyEvaluation {
                matched,
                violations,
                audit_annotations,
            }
        })
        .unwrap_or_else(|message| PolicyEvaluation {
            matched: MatchOutcome::Error {
                name: String::new(),
                message,
            },
            violations: Vec::new(),
            audit_annotations: AuditAnnotations::default(),
        })
    }

    fn run<R: Send>(
        &self,
        input: &Input<'_>,
        needs: Needs,
        f: impl FnOnce(&Evaluator<'_>) -> R + Send,
    ) -> Result<R, String> {
        runtime::with_evaluator(input, needs, Some(self.variables.clone()), f)
    }

    fn eval_validations(&self, ev: &Evaluator<'_>) -> Vec<Violation> {
        let mut violations = Vec::new();
        for validation in &self.validations {
            let program = match &validation.program {
                Ok(p) => p,
                Err(e) => {
                    violations.push(Violation::error(format!(
                        "compilation error: {}",
                        e.detail()
                    )));
                    continue;
                }
            };
            match ev.eval(program) {
                Ok(CelValue::Bool(true)) => {}
                Ok(CelValue::Bool(false)) => match self.message(validation, ev) {
                    Ok(message) => violations.push(Violation {
                        message,
                        reason: validation.reason.clone(),
                        kind: ViolationKind::Failed,
                    }),
                    Err(()) => violations.push(Violation::error(format!(
                        "failed messageExpression: {OUT_OF_BUDGET}"
                    ))),
                },
                Ok(other) => {
                    violations.push(Violation::error(matching::not_bool(
                        &validation.source,
                        &other,
                    )));
                }
                Err(EvalFailure::Error(message)) => violations.push(Violation::error(
                    matching::runtime_error(&validation.source, &message),
                )),
                Err(EvalFailure::OutOfBudget) => {
                    return vec![Violation::error(OUT_OF_BUDGET.to_owned())];
                }
            }
        }
        violations
    }

    /// The message of a failed validation; `Err` when the budget ran out.
    fn message(&self, validation: &Validation, ev: &Evaluator<'_>) -> Result<String, ()> {
        if let Some(Ok(program)) = &validation.message_expression {
            match ev.eval(program) {
                Ok(CelValue::String(s)) => {
                    let message = s.trim();
                    if !message.is_empty()
                        && message.len() <= MAX_EVALUATED_MESSAGE_BYTES
                        && !message.contains('\n')
                    {
                        return Ok(message.to_owned());
                    }
                }
                Err(EvalFailure::OutOfBudget) => return Err(()),
                // Errors and non-strings fall back to the static message.
                Ok(_) | Err(EvalFailure::Error(_)) => {}
            }
        }
        if !validation.message.is_empty() {
            return Ok(validation.message.clone());
        }
        Ok(format!("failed expression: {}", validation.source.trim()))
    }

    fn eval_audit(&self, ev: &Evaluator<'_>) -> AuditAnnotations {
        let mut out = AuditAnnotations::default();
        for audit in &self.audit_annotations {
            let program = match &audit.program {
                Ok(p) => p,
                Err(e) => {
                    out.errors.push(AuditAnnotationError {
                        key: audit.key.clone(),
                        message: format!("compilation error: {}", e.detail()),
                    });
                    continue;
                }
            };
            match ev.eval(program) {
                Ok(CelValue::String(s)) => {
                    let value = s.trim();
                    if !value.is_empty() {
                        out.values.push((audit.key.clone(), value.to_owned()));
                    }
                }
                Ok(CelValue::Null) => {}
                Ok(other) => out.errors.push(AuditAnnotationError {
                    key: audit.key.clone(),
                    message: format!(
                        "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                        audit.source,
                        convert::type_name(&other)
                    ),
                }),
                Err(EvalFailure::Error(message)) => out.errors.push(AuditAnnotationError {
                    key: audit.key.clone(),
                    message: matching::runtime_error(&audit.source, &message),
                }),
                Err(EvalFailure::OutOfBudget) => {
                    return AuditAnnotations {
                        values: Vec::new(),
                        errors: vec![AuditAnnotationError {
                            key: String::new(),
                            message: OUT_OF_BUDGET.to_owned(),
                        }],
                    };
                }
            }
        }
        out
    }
}

fn placeholder() -> CompileError {
    CompileError::new(crate::error::CompileErrorKind::Internal, "not compiled")
}

/// What evaluating `programs` needs, including the variables they refer to.
fn needs_for(programs: &[&Program], variables: &VariableTable, var_needs: &[Needs]) -> Needs {
    let mut needs = Needs::default();
    for program in programs {
        needs.add_program(program);
        let mut var_depth = 0;
        for name in &program.references().variables {
            let Some(index) = variables.vars.iter().position(|v| &v.name == name) else {
                continue;
            };
            for &i in variables.vars[index].closure.iter().chain([index].iter()) {
                if let Some(n) = var_needs.get(i) {
                    needs.merge(&Needs { depth: 0, ..*n });
                    var_depth = var_depth.max(n.depth);
                }
            }
        }
        needs.depth = needs
            .depth
            .max(program.references().depth.saturating_add(var_depth));
    }
    needs
}

/// The compile errors of every expression of a ValidatingAdmissionPolicy `spec`, as
/// `(field path, detail)` for create/update validation, e.g.
/// `("spec.validations[0].expression", "compilation failed: ERROR: <input>:1:7: ...")`.
pub fn check_policy(spec: &Value) -> Vec<(String, String)> {
    let cache = ExpressionCache::new(64);
    CompiledPolicy::new(spec, &cache).compile_errors().to_vec()
}

#[cfg(test)]
mod tests;
