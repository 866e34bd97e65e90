//! CEL for admission: ValidatingAdmissionPolicy evaluation and the `matchConditions` of
//! admission webhooks and policies, as Kubernetes (1.33) evaluates them.
//!
//! Built on `kube-cel` (the `cel` interpreter plus Kubernetes' CEL libraries: strings,
//! lists, sets, regex, url, ip/cidr, quantity, semver, format, math, encoders), with the
//! authorizer library, lazy policy variables, `type()`, a static output-type check, a
//! runtime cost limit (loop iterations and operand sizes, see [`PER_EXPRESSION_COST_LIMIT`])
//! and panic/stack containment added here. Inputs are JSON ([`serde_json::Value`]) exactly
//! as Kubernetes presents them to CEL.
//!
//! # Entry points
//!
//! - [`compile`] → [`Program`] (cheap to clone, `Send + Sync`), and [`ExpressionCache`]
//!   (bounded, thread-safe, source text → program) so expressions compile once.
//! - [`CompiledPolicy::new`] from a ValidatingAdmissionPolicy's `spec`:
//!   [`match_conditions`](CompiledPolicy::match_conditions) → [`MatchOutcome`],
//!   [`validate`](CompiledPolicy::validate) → [`Violation`]s,
//!   [`audit_annotations`](CompiledPolicy::audit_annotations) → [`AuditAnnotations`],
//!   [`evaluate`](CompiledPolicy::evaluate) (all three sharing one context),
//!   [`failure_policy`](CompiledPolicy::failure_policy).
//! - [`check_policy`]: compile errors with Kubernetes' field paths, for create/update
//!   validation of a policy.
//! - [`MatchConditions`] for webhooks, and [`check_match_conditions`].
//! - [`Input`]: the request's `object`, `oldObject`, `request`, `params`,
//!   `namespaceObject` and an [`Authorizer`] the caller implements (decisions for
//!   `authorizer...check(verb)`, given an [`AuthzCheck`]).
//! - [`denial_message`] and [`Violation::status_code`]: how the admission plugin turns a
//!   violation into the API error.
//!
//! # Modules
//!
//! `source` (size/nesting limits, error layout), `program` (compiling), `analysis` (AST
//! rewriting and references), `types` (output type checks), `cache`, `convert` (JSON to
//! CEL), `runtime` (evaluation context, variables, cost, containment), `authz`,
//! `matching`, `policy`, `webhook`.

mod analysis;
mod authz;
mod cache;
mod convert;
mod error;
mod matching;
mod policy;
mod program;
mod runtime;
mod source;
mod types;
mod webhook;

use serde_json::Value;

pub use analysis::{MAX_AST_DEPTH, References};
pub use authz::{
    Authorizer, AuthzCheck, AuthzDecision, AuthzTarget, ResourceAttributes, ServiceAccount,
};
pub use cache::{CacheStats, DEFAULT_CAPACITY, ExpressionCache};
pub use error::{CompileError, CompileErrorKind};
pub use matching::MatchOutcome;
pub use policy::{
    AuditAnnotationError, AuditAnnotations, CompiledPolicy, FailurePolicy,
    MAX_EVALUATED_MESSAGE_BYTES, PolicyEvaluation, Violation, ViolationKind, check_policy,
    denial_message,
};
pub use program::{Program, compile};
pub use runtime::{
    COST_LIMIT_EXCEEDED, MAX_STRING_BYTES, OUT_OF_BUDGET, PER_EXPRESSION_COST_LIMIT,
    RUNTIME_COST_BUDGET,
};
pub use source::{MAX_CODE_POINTS, MAX_NESTING};
pub use webhook::{MatchConditions, check_match_conditions};

/// What one admission request presents to CEL. `None` is CEL `null` (`object` on DELETE,
/// `oldObject` on CREATE, `params` without a `paramKind`, `namespaceObject` for
/// cluster-scoped requests).
#[derive(Clone, Copy, Default)]
pub struct Input<'a> {
    /// `object`: the object as admitted.
    pub object: Option<&'a Value>,
    /// `oldObject`: the existing object (UPDATE, DELETE).
    pub old_object: Option<&'a Value>,
    /// `request`: the admission.k8s.io/v1 AdmissionRequest as JSON (`kind`, `resource`,
    /// `subResource`, `requestKind`, `requestResource`, `requestSubResource`, `name`,
    /// `namespace`, `operation`, `userInfo`, `dryRun`, `options`).
    pub request: Option<&'a Value>,
    /// `params`: the binding's parameter object.
    pub params: Option<&'a Value>,
    /// `namespaceObject`: the request's Namespace.
    pub namespace_object: Option<&'a Value>,
    /// Decides `authorizer` checks; without one, expressions using `authorizer` fail.
    pub authorizer: Option<&'a dyn Authorizer>,
}

impl std::fmt::Debug for Input<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("object", &self.object.is_some())
            .field("old_object", &self.old_object.is_some())
            .field("request", &self.request.is_some())
            .field("params", &self.params.is_some())
            .field("namespace_object", &self.namespace_object.is_some())
            .field("authorizer", &self.authorizer.is_some())
            .finish()
    }
}
