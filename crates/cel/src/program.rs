//! Compiling an expression: limits, parsing, rewriting ([`compile`]), and checking a
//! compiled program against the variables an API field declares.
//!
//! Parsing recurses deeply (far more so in debug builds), so it runs on a short-lived
//! thread with a large stack after [`crate::source::prescan`] has bounded the input. The
//! result, a [`Program`], does not depend on which variables a field declares; that check
//! ([`Program::check`]) is separate so one cached program serves every field that uses the
//! same text.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use kube_cel::cel::common::ast::IdedExpr;
use kube_cel::cel::parser::Parser;

use crate::analysis::{self, References, TYPE_NAMES};
use crate::error::{CompileError, CompileErrorKind};
use crate::source;
use crate::types::{self, Ty, TypeEnv};

/// Stack of the compiling thread; enough for the limits `source::prescan` enforces.
const COMPILE_STACK: usize = 128 << 20;

/// A compiled CEL expression. Cheap to clone (shared), `Send + Sync`.
#[derive(Clone)]
pub struct Program {
    inner: Arc<Inner>,
}

struct Inner {
    source: String,
    expr: IdedExpr,
    references: References,
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Program").field(&self.inner.source).finish()
    }
}

impl Program {
    /// The expression's source text.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// What the expression refers to.
    pub fn references(&self) -> &References {
        &self.inner.references
    }

    /// Whether both handles share one compiled program.
    pub fn shares(&self, other: &Program) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn expr(&self) -> &IdedExpr {
        &self.inner.expr
    }

    /// Checks the program against the variables a field declares and the types it
    /// accepts, returning its inferred type.
    pub(crate) fn check(&self, env: &Env<'_>, allowed: &[Ty]) -> Result<Ty, CompileError> {
        let source = self.source();
        for identifier in &self.inner.references.identifiers {
            let declared = match identifier.as_str() {
                "object" | "oldObject" | "request" | "namespaceObject" => true,
                name if TYPE_NAMES.contains(&name) => true,
                "params" => env.params,
                "authorizer" => env.authorizer,
                _ => false,
            };
            if !declared {
                return Err(undeclared(
                    source,
                    identifier,
                    "undeclared reference to",
                    false,
                ));
            }
        }
        for name in &self.inner.references.variables {
            match env.variables {
                None => {
                    return Err(undeclared(
                        source,
                        "variables",
                        "undeclared reference to",
                        false,
                    ));
                }
                Some(vars) if !vars.iter().any(|(n, _)| n == name) => {
                    return Err(undeclared(source, name, "undefined field", true));
                }
                Some(_) => {}
            }
        }
        let ty = types::infer(&self.inner.expr, env);
        types::check_output(&ty, allowed)
            .map_err(|detail| CompileError::new(CompileErrorKind::ReturnType, detail))?;
        Ok(ty)
    }
}

fn undeclared(source: &str, name: &str, what: &str, after_dot: bool) -> CompileError {
    let (line, col) = source::locate(source, name, after_dot);
    let message = if after_dot {
        format!("{what} '{name}'")
    } else {
        format!("{what} '{name}' (in container '')")
    };
    CompileError::new(
        CompileErrorKind::Undeclared,
        format!(
            "compilation failed: {}",
            source::format_error(source, line, col, &message)
        ),
    )
}

/// What an API field declares for its expressions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Env<'a> {
    /// `params` (the policy has a `paramKind`).
    pub params: bool,
    /// `authorizer` and `authorizer.requestResource`.
    pub authorizer: bool,
    /// `variables.<name>` visible here, with their types; `None` when the field has no
    /// `variables` at all (webhook match conditions).
    pub variables: Option<&'a [(String, Ty)]>,
}

impl TypeEnv for Env<'_> {
    fn variable(&self, name: &str) -> Ty {
        self.variables
            .and_then(|vars| vars.iter().find(|(n, _)| n == name))
            .map_or(Ty::Unknown, |(_, t)| t.clone())
    }
}

/// Compiles a CEL expression (without a cache; see [`crate::ExpressionCache`]).
///
/// Fails on syntax errors, size and nesting limits, unknown functions and message
/// literals. Which variables the expression may use is checked later, per field.
pub fn compile(expression: &str) -> Result<Program, CompileError> {
    let source = expression.to_owned();
    let spawned = std::thread::Builder::new()
        .name("kyb-cel-compile".to_owned())
        .stack_size(COMPILE_STACK)
        .spawn(move || compile_here(source));
    match spawned {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            Err(CompileError::new(
                CompileErrorKind::Internal,
                "compilation failed: internal error in the CEL parser",
            ))
        }),
        Err(e) => Err(CompileError::new(
            CompileErrorKind::Internal,
            format!("compilation failed: cannot start the compiler thread: {e}"),
        )),
    }
}

fn compile_here(source: String) -> Result<Program, CompileError> {
    source::prescan(&source)?;
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(u16::MAX - 1)
            .parse(&source)
    }))
    .map_err(|_| {
        CompileError::new(
            CompileErrorKind::Internal,
            "compilation failed: internal error in the CEL parser",
        )
    })?;
    let mut expr = parsed.map_err(|errors| {
        let messages: Vec<String> = errors
            .errors
            .iter()
            .map(|e| {
                let line = usize::try_from(e.pos.0).unwrap_or(1).max(1);
                let col = usize::try_from(e.pos.1).unwrap_or(1).max(1);
                let message = match &e.source {
                    Some(cause) if e.msg == "UNKNOWN" => cause.to_string(),
                    _ => e.msg.clone(),
                };
                source::format_error(&source, line, col, &message)
            })
            .collect();
        CompileError::new(
            CompileErrorKind::Syntax,
            format!("compilation failed: {}", messages.join("\n")),
        )
    })?;
    let references = catch_unwind(AssertUnwindSafe(|| analysis::rewrite(&source, &mut expr)))
        .unwrap_or_else(|_| {
            Err(CompileError::new(
                CompileErrorKind::Internal,
                "compilation failed: internal error analysing the expression",
            ))
        })?;
    Ok(Program {
        inner: Arc::new(Inner {
            source,
            expr,
            references,
        }),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn programs_are_shareable() {
        assert_send_sync::<Program>();
    }

    #[test]
    fn syntax_errors_read_like_cel_go() {
        let err = compile("object.spec.replicas <= ").unwrap_err();
        assert_eq!(err.kind(), CompileErrorKind::Syntax);
        assert!(
            err.detail().starts_with(
                "compilation failed: ERROR: <input>:1:25: Syntax error: mismatched input '<EOF>' expecting"
            ),
            "{err}"
        );
        assert!(
            err.detail()
                .ends_with("\n | object.spec.replicas <= \n | ........................^"),
            "{err}"
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let src = format!("{}1{}", "(".repeat(300), ")".repeat(300));
        assert!(
            compile(&src)
                .unwrap_err()
                .detail()
                .contains("recursion limit exceeded")
        );
        let src = format!("{}1{}", "[".repeat(90), "]".repeat(90));
        assert!(compile(&src).is_ok());
        let src = vec!["1"; 150].join(" + ");
        // Parses (no nesting) but is deeper than the evaluator accepts.
        assert!(
            compile(&src)
                .unwrap_err()
                .detail()
                .contains("recursion limit exceeded")
        );
    }

    #[test]
    fn checks_declared_identifiers() {
        let p = compile("params.max > 1").unwrap();
        let env = Env {
            params: false,
            authorizer: true,
            variables: Some(&[]),
        };
        assert_eq!(
            p.check(&env, &[Ty::Bool]).unwrap_err().detail(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.max > 1\n | ^"
        );
        let env = Env {
            params: true,
            ..env
        };
        assert!(p.check(&env, &[Ty::Bool]).is_ok());
        let v = compile("variables.missing == 1").unwrap();
        assert_eq!(
            v.check(&env, &[Ty::Bool]).unwrap_err().detail(),
            "compilation failed: ERROR: <input>:1:10: undefined field 'missing'\n | variables.missing == 1\n | .........^"
        );
    }
}
