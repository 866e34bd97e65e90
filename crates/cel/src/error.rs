//! Typed errors: why an expression did not compile.
//!
//! Evaluation errors are not a Rust error type: Kubernetes reports them as text inside
//! admission decisions (`expression '...' resulted in error: no such key: foo`), so the
//! evaluator produces those texts directly (see `runtime::describe`).

/// An expression that does not compile. The message reads like Kubernetes' field error
/// detail, e.g. `compilation failed: ERROR: <input>:1:7: Syntax error: ...` or
/// `must evaluate to bool but got int`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct CompileError {
    kind: CompileErrorKind,
    detail: String,
}

/// What kind of compile error this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileErrorKind {
    /// The text is not a CEL expression (syntax error, recursion or size limit).
    Syntax,
    /// A reference to a variable, field or function the environment does not declare.
    Undeclared,
    /// The expression's type cannot be what the field requires (e.g. a validation that is
    /// an `int`).
    ReturnType,
    /// Something unexpected inside the CEL library (reported, never a panic).
    Internal,
}

impl CompileError {
    pub(crate) fn new(kind: CompileErrorKind, detail: impl Into<String>) -> Self {
        CompileError {
            kind,
            detail: detail.into(),
        }
    }

    /// The message Kubernetes would put in the field error's detail.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The kind of error.
    pub fn kind(&self) -> CompileErrorKind {
        self.kind
    }
}
