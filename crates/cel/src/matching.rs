//! `matchConditions`: named boolean expressions that decide whether a policy or webhook
//! applies to a request, evaluated as Kubernetes' matcher does.
//!
//! Every condition is evaluated in order. The first one that is `false` decides
//! [`MatchOutcome::NotMatched`] (even when another condition failed); otherwise any errors
//! (compile errors, runtime errors, non-boolean results) give [`MatchOutcome::Error`],
//! whose message joins them as Kubernetes' error aggregate does (`[a, b]` for several);
//! otherwise the request matches. The caller applies the failure policy to an error.

use kube_cel::cel::Value as CelValue;
use serde_json::Value;

use crate::cache::ExpressionCache;
use crate::convert;
use crate::error::CompileError;
use crate::program::Program;
use crate::runtime::{EvalFailure, Evaluator, OUT_OF_BUDGET};

/// The result of evaluating match conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchOutcome {
    /// Every condition is true (or there are none).
    Matched,
    /// The named condition is false: skip the policy or webhook.
    NotMatched {
        /// The condition's `name`.
        name: String,
    },
    /// No condition is false but at least one could not be evaluated to a boolean; the
    /// failure policy decides.
    Error {
        /// The first failing condition's `name`.
        name: String,
        /// What went wrong, as Kubernetes words it.
        message: String,
    },
}

impl MatchOutcome {
    /// Whether the request matched.
    pub fn is_matched(&self) -> bool {
        matches!(self, MatchOutcome::Matched)
    }
}

/// One compiled condition.
#[derive(Debug, Clone)]
pub(crate) struct Condition {
    pub name: String,
    pub source: String,
    pub program: Result<Program, CompileError>,
}

/// The `(name, expression)` pairs of a `matchConditions` list, compiled. Entries that are
/// not objects are skipped (structural validation reports them).
pub(crate) fn compile_conditions(list: Option<&Value>, cache: &ExpressionCache) -> Vec<Condition> {
    let Some(items) = list.and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| {
            let text = |key: &str| {
                item.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let source = text("expression");
            Condition {
                name: text("name"),
                program: cache.compile(&source),
                source,
            }
        })
        .collect()
}

/// The message for a runtime error of an expression.
pub(crate) fn runtime_error(source: &str, message: &str) -> String {
    format!("expression '{source}' resulted in error: {message}")
}

/// The message for an expression whose value is not a boolean.
pub(crate) fn not_bool(source: &str, value: &CelValue) -> String {
    runtime_error(
        source,
        &format!(
            "must evaluate to bool but got {}",
            convert::type_name(value)
        ),
    )
}

/// Evaluates conditions in an evaluation context.
pub(crate) fn evaluate(conditions: &[Condition], evaluator: &Evaluator<'_>) -> MatchOutcome {
    let mut errors: Vec<(&str, String)> = Vec::new();
    for condition in conditions {
        let program = match &condition.program {
            Ok(program) => program,
            Err(e) => {
                errors.push((
                    &condition.name,
                    format!("compilation error: {}", e.detail()),
                ));
                continue;
            }
        };
        match evaluator.eval(program) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => {
                return MatchOutcome::NotMatched {
                    name: condition.name.clone(),
                };
            }
            Ok(other) => errors.push((&condition.name, not_bool(&condition.source, &other))),
            Err(EvalFailure::Error(message)) => {
                errors.push((&condition.name, runtime_error(&condition.source, &message)));
            }
            Err(EvalFailure::OutOfBudget) => {
                return MatchOutcome::Error {
                    name: condition.name.clone(),
                    message: OUT_OF_BUDGET.to_owned(),
                };
            }
        }
    }
    match errors.as_slice() {
        [] => MatchOutcome::Matched,
        [(name, message)] => MatchOutcome::Error {
            name: (*name).to_owned(),
            message: message.clone(),
        },
        [(name, _), ..] => {
            let messages: Vec<&str> = errors.iter().map(|(_, m)| m.as_str()).collect();
            MatchOutcome::Error {
                name: (*name).to_owned(),
                message: format!("[{}]", messages.join(", ")),
            }
        }
    }
}
