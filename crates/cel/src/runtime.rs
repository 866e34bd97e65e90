//! The evaluator: one CEL context per admission evaluation, with the inputs bound, lazy
//! policy variables, the authorizer library, a cost budget and panic containment.
//!
//! - The function registry (the `cel` standard functions, kube-cel's Kubernetes library,
//!   the authorizer library and a few internal helpers) is built once in a process-wide
//!   base context; each evaluation is a child scope of it holding only its variables.
//! - Only the inputs the expressions read are converted from JSON (see [`Needs`]).
//! - `variables.<name>` is evaluated on first use and cached for the rest of the
//!   evaluation, errors included, as Kubernetes' lazy variable map does. Before a variable
//!   is evaluated, the variables it statically refers to are evaluated first (lowest index
//!   first), so evaluations never nest more than one level and the stack stays bounded.
//! - Cost: each comprehension iteration costs one unit (`analysis` wraps every loop
//!   condition), and the operands of size-dependent operations cost one unit per 64 bytes
//!   of string or bytes and per 8 list or map entries, charged before the operation runs
//!   (`analysis` wraps them in `@kyb.measure`); `lists.range(n)` costs `n`. An expression
//!   that exceeds [`PER_EXPRESSION_COST_LIMIT`] fails with Kubernetes' text
//!   `operation cancelled: actual cost limit exceeded`, and when a phase (match conditions,
//!   validations with their messages, audit annotations) has spent
//!   [`RUNTIME_COST_BUDGET`], evaluation of that phase stops.
//! - The `cel` crate has a few panicking paths; every evaluation runs under
//!   `catch_unwind` and a panic becomes an evaluation error.
//! - Deep expressions run on a helper thread with a large stack (a stack overflow cannot
//!   be caught); shallow ones run inline.

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::common::types::{CelBytes, CelList, CelMap, CelString};
use kube_cel::cel::common::value::Val;
use kube_cel::cel::context::VariableResolver;
use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value as CelValue};

use crate::Input;
use crate::analysis::{
    HAS_VARIABLE_FN, MEASURE_FN, REQUEST_RESOURCE, TICK_FN, TYPE_NAMES, VARIABLE_FN,
};
use crate::authz::{self, AuthzCheck, AuthzDecision, AuthzValue};
use crate::convert;
use crate::error::CompileError;
use crate::program::Program;

/// Cost units one expression may spend: one per comprehension iteration, per element
/// created by `lists.range`, per 64 bytes produced by `replace`, and per 64 bytes of
/// string/bytes or 8 list elements/map entries in the operands of size-dependent
/// operations (`+`, `==`, `in`, comparisons, string and list functions). Not Kubernetes'
/// cost units: this interpreter copies values where cel-go does not.
pub const PER_EXPRESSION_COST_LIMIT: u64 = 250_000;
/// Cost units one phase of a policy evaluation may spend in total.
pub const RUNTIME_COST_BUDGET: u64 = 2_500_000;
/// Longest string `replace` may produce.
pub const MAX_STRING_BYTES: usize = 8 << 20;

/// Kubernetes' (cel-go's) text for an expression cancelled by the cost limit.
pub const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";
/// Kubernetes' text when a phase runs out of its cost budget.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

const STATE_VAR: &str = "@kyb.state";
const AUTHORIZE_VAR: &str = "@kyb.authorize";
/// Stack for evaluations too deep to run inline.
const DEEP_EVALUATION_STACK: usize = 64 << 20;

type Function = Box<dyn Fn(&mut FunctionContext) -> ResolveResult + Send + Sync>;

fn function(f: fn(&mut FunctionContext) -> ResolveResult) -> Function {
    Box::new(f)
}

static BASE: LazyLock<Context<'static>> = LazyLock::new(|| {
    let mut ctx = Context::default();
    ctx.register_all();
    ctx.add_function(VARIABLE_FN, function(variable_fn));
    ctx.add_function(HAS_VARIABLE_FN, function(has_variable_fn));
    ctx.add_function(TICK_FN, function(tick_fn));
    for method in authz::METHODS {
        ctx.add_function(method, function(authz_fn));
    }
    ctx.add_function(MEASURE_FN, function(measure_fn));
    ctx.add_function("lists.range", function(range_fn));
    ctx.add_function("replace", function(replace_fn));
    ctx.add_function("size", function(size_fn));
    ctx.add_function("type", function(type_fn));
    for name in TYPE_NAMES {
        ctx.add_variable_from_value(*name, CelValue::Opaque(Arc::new(CelType(name.to_string()))));
    }
    ctx
});

/// A CEL type as a value (`type(x)`, `int`, `string`, ...), compared by name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CelType(String);

impl Opaque for CelType {
    fn runtime_type_name(&self) -> &str {
        "type"
    }
}

/// Functions known to exist (a bounded set: the registry's names).
static KNOWN_FUNCTIONS: LazyLock<Mutex<HashSet<String>>> =
    LazyLock::new(|| Mutex::new(HashSet::new()));

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether the base context has a function of that name (the registry has no lookup of
/// its own: a call without arguments reports `UndeclaredReference` exactly when the name
/// is unknown).
pub fn function_exists(name: &str) -> bool {
    if lock(&KNOWN_FUNCTIONS).contains(name) {
        return true;
    }
    let probe = IdedExpr {
        id: 0,
        expr: Expr::Call(CallExpr {
            func_name: name.to_owned(),
            target: None,
            args: Vec::new(),
        }),
    };
    let result = catch_unwind(AssertUnwindSafe(|| BASE.resolve(&probe)));
    let exists =
        !matches!(&result, Ok(Err(ExecutionError::UndeclaredReference(n))) if n.as_str() == name);
    if exists {
        lock(&KNOWN_FUNCTIONS).insert(name.to_owned());
    }
    exists
}

/// Kubernetes-style text of a CEL runtime error.
pub fn describe(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::UndeclaredReference(name) => {
            format!("undeclared reference to '{name}'")
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(index) => match index {
            CelValue::Int(i) => format!("index out of range: {i}"),
            CelValue::UInt(i) => format!("index out of range: {i}"),
            _ => "index out of range".to_owned(),
        },
        ExecutionError::UnsupportedKeyType(_)
        | ExecutionError::UnsupportedMapIndex(_)
        | ExecutionError::UnsupportedListIndex(_)
        | ExecutionError::UnsupportedIndex(..) => "unsupported index type".to_owned(),
        _ => "no such overload".to_owned(),
    }
}

/// A policy variable: its name, compiled program and the variables it depends on.
#[derive(Debug)]
pub(crate) struct VariableDef {
    pub name: String,
    pub program: Result<Program, CompileError>,
    /// Every variable it depends on, directly or not, in ascending index order.
    pub closure: Vec<usize>,
}

/// A policy's variables.
#[derive(Debug, Default)]
pub(crate) struct VariableTable {
    pub vars: Vec<VariableDef>,
}

impl VariableTable {
    fn index(&self, name: &str) -> Option<usize> {
        self.vars.iter().position(|v| v.name == name)
    }
}

/// Which root variables an evaluation binds, and how deep its expressions are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    pub object: bool,
    pub old_object: bool,
    pub request: bool,
    pub params: bool,
    pub namespace_object: bool,
    pub authorizer: bool,
    /// Deepest expression plus deepest variable it may evaluate.
    pub depth: usize,
}

impl Needs {
    /// Adds what a program reads (not the variables it refers to).
    pub fn add_program(&mut self, program: &Program) {
        let refs = program.references();
        self.object |= refs.uses("object");
        self.old_object |= refs.uses("oldObject");
        self.request |= refs.uses("request") || refs.uses("authorizer");
        self.params |= refs.uses("params");
        self.namespace_object |= refs.uses("namespaceObject");
        self.authorizer |= refs.uses("authorizer");
        self.depth = self.depth.max(refs.depth);
    }

    pub fn merge(&mut self, other: &Needs) {
        self.object |= other.object;
        self.old_object |= other.old_object;
        self.request |= other.request;
        self.params |= other.params;
        self.namespace_object |= other.namespace_object;
        self.authorizer |= other.authorizer;
        self.depth = self.depth.max(other.depth);
    }
}

/// Why an expression produced no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EvalFailure {
    /// A CEL error, in Kubernetes' words (`no such key: foo`).
    Error(String),
    /// The phase's cost budget is spent.
    OutOfBudget,
}

enum Slot {
    Pending,
    Running,
    Done(Result<CelValue, String>),
}

/// Per-evaluation state shared with the internal functions (as an opaque CEL value).
pub(crate) struct EvalState {
    variables: Option<Arc<VariableTable>>,
    slots: Vec<Mutex<Slot>>,
    /// An authorization check on its way from `check()` to the resolver.
    pending: Mutex<Option<AuthzCheck>>,
    /// Cost spent by the running top-level expression.
    cost: AtomicU64,
    /// Cost spent by the phase's finished expressions.
    total: AtomicU64,
    /// Inputs that could not be converted, with the error to report when read.
    unavailable: Vec<(&'static str, String)>,
    /// The latest error of a measured operand. Library functions that take their
    /// receiver as an argument (`string(x)`, `int(x)`) replace an error of `x` with
    /// `MissingArgumentOrTarget`; this restores the real one (`no such key: x`).
    operand_error: Mutex<Option<ExecutionError>>,
}

impl fmt::Debug for EvalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EvalState")
    }
}

impl PartialEq for EvalState {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for EvalState {}

impl Opaque for EvalState {
    fn runtime_type_name(&self) -> &str {
        "kyb.EvalState"
    }
}

impl EvalState {
    fn charge(&self, units: u64) -> Result<(), ExecutionError> {
        let cost = self
            .cost
            .fetch_add(units, Ordering::Relaxed)
            .saturating_add(units);
        let total = self.total.load(Ordering::Relaxed).saturating_add(cost);
        if cost > PER_EXPRESSION_COST_LIMIT || total > RUNTIME_COST_BUDGET {
            Err(ExecutionError::function_error(TICK_FN, COST_LIMIT_EXCEEDED))
        } else {
            Ok(())
        }
    }

    /// Units the running expression may still spend.
    fn remaining(&self) -> u64 {
        let cost = self.cost.load(Ordering::Relaxed);
        let total = self.total.load(Ordering::Relaxed).saturating_add(cost);
        PER_EXPRESSION_COST_LIMIT
            .saturating_sub(cost)
            .min(RUNTIME_COST_BUDGET.saturating_sub(total))
    }

    /// Evaluates a program in `ctx`, containing panics and refusing unavailable inputs.
    fn run(&self, ctx: &Context<'_>, program: &Program) -> Result<CelValue, String> {
        let refs = program.references();
        for (name, message) in &self.unavailable {
            if refs.uses(name) {
                return Err(message.clone());
            }
        }
        *lock(&self.operand_error) = None;
        match catch_unwind(AssertUnwindSafe(|| ctx.resolve(program.expr()))) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(ExecutionError::MissingArgumentOrTarget)) => {
                match lock(&self.operand_error).take() {
                    Some(cause) => Err(describe(&cause)),
                    None => Err(describe(&ExecutionError::MissingArgumentOrTarget)),
                }
            }
            Ok(Err(error)) => Err(describe(&error)),
            Err(_) => Err("internal error: the CEL interpreter failed".to_owned()),
        }
    }

    fn variable(&self, root: &Context<'_>, name: &str) -> ResolveResult {
        let table = self
            .variables
            .as_ref()
            .ok_or_else(|| ExecutionError::no_such_key(name))?;
        let index = table
            .index(name)
            .ok_or_else(|| ExecutionError::no_such_key(name))?;
        for &dependency in &table.vars[index].closure {
            self.ensure(root, table, dependency);
        }
        self.ensure(root, table, index);
        match &*lock(&self.slots[index]) {
            Slot::Done(Ok(value)) => Ok(value.clone()),
            Slot::Done(Err(message)) => Err(ExecutionError::function_error(VARIABLE_FN, message)),
            Slot::Pending | Slot::Running => Err(ExecutionError::function_error(
                VARIABLE_FN,
                format!("composited variable \"{name}\" fails to evaluate: it refers to itself"),
            )),
        }
    }

    fn ensure(&self, root: &Context<'_>, table: &VariableTable, index: usize) {
        let (Some(slot), Some(def)) = (self.slots.get(index), table.vars.get(index)) else {
            return;
        };
        {
            let mut slot = lock(slot);
            if !matches!(*slot, Slot::Pending) {
                return;
            }
            *slot = Slot::Running;
        }
        let result = match &def.program {
            Err(error) => Err(format!(
                "composited variable \"{}\" fails to compile: {}",
                def.name,
                error.detail()
            )),
            Ok(program) => self.run(root, program).map_err(|message| {
                format!(
                    "composited variable \"{}\" fails to evaluate: {message}",
                    def.name
                )
            }),
        };
        *lock(slot) = Slot::Done(result);
    }
}

/// Finds the evaluation's state in a (possibly nested) context.
fn with_state<R>(
    ctx: &Context<'_>,
    f: impl FnOnce(&EvalState) -> Result<R, ExecutionError>,
) -> Result<R, ExecutionError> {
    let value = ctx
        .get_variable(STATE_VAR)
        .ok_or_else(|| ExecutionError::undeclared_reference(STATE_VAR))?;
    match CelValue::try_from(value.as_ref())? {
        CelValue::Opaque(o) => match o.downcast_ref::<EvalState>() {
            Some(state) => f(state),
            None => Err(ExecutionError::undeclared_reference(STATE_VAR)),
        },
        _ => Err(ExecutionError::undeclared_reference(STATE_VAR)),
    }
}

/// The evaluation's own scope: the outermost child of the base context. Variables are
/// evaluated there, not in a comprehension's scope that might shadow a root name.
fn activation<'c>(mut ctx: &'c Context<'c>) -> &'c Context<'c> {
    while let Context::Child { parent, .. } = ctx {
        if matches!(parent, Context::Root { .. }) {
            break;
        }
        ctx = parent;
    }
    ctx
}

fn string_literal(ftx: &FunctionContext) -> Result<String, ExecutionError> {
    match ftx.args.first().map(|a| &a.expr) {
        Some(Expr::Literal(LiteralValue::String(s))) => Ok(s.inner().to_owned()),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn variable_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let name = string_literal(ftx)?;
    let root = activation(ftx.ptx);
    with_state(ftx.ptx, |state| state.variable(root, &name))
}

fn has_variable_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let name = string_literal(ftx)?;
    with_state(ftx.ptx, |state| {
        Ok(CelValue::Bool(
            state
                .variables
                .as_ref()
                .is_some_and(|t| t.index(&name).is_some()),
        ))
    })
}

/// Bytes of string or bytes per cost unit.
const BYTES_PER_UNIT: u64 = 64;
/// Weight of one list element or map entry, in the same "bytes" (8 per unit).
const ENTRY_WEIGHT: u64 = BYTES_PER_UNIT / 8;

/// The weight of a value: its string and bytes lengths plus [`ENTRY_WEIGHT`] per list
/// element or map entry, nested. Stops counting past `cap` (the answer is then `> cap`),
/// so measuring is never more work than the budget allows.
fn weight(value: &dyn Val, cap: u64) -> u64 {
    let mut total: u64 = 0;
    let mut pending: Vec<&dyn Val> = vec![value];
    while let Some(v) = pending.pop() {
        if let Some(s) = v.downcast_ref::<CelString>() {
            total = total.saturating_add(s.inner().len() as u64);
        } else if let Some(b) = v.downcast_ref::<CelBytes>() {
            total = total.saturating_add(b.inner().len() as u64);
        } else if let Some(list) = v.downcast_ref::<CelList>() {
            let items = list.inner();
            total = total.saturating_add((items.len() as u64).saturating_mul(ENTRY_WEIGHT));
            pending.extend(items.iter().map(|i| i.as_ref()));
        } else if let Some(map) = v.downcast_ref::<CelMap>() {
            let entries = map.inner();
            total = total.saturating_add((entries.len() as u64).saturating_mul(ENTRY_WEIGHT));
            for (key, value) in entries {
                pending.push(key.inner());
                pending.push(value.as_ref());
            }
        }
        if total > cap {
            break;
        }
    }
    total
}

/// `@kyb.measure(x)`: charges the size of `x` (see [`weight`]) before the operation that
/// receives it runs.
fn measure_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let [arg] = ftx.args else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let value = match CelValue::resolve_val(arg, ftx.ptx) {
        Ok(value) => value,
        Err(error) => {
            // Best effort: without state there is nothing to restore later.
            let _ = with_state(ftx.ptx, |state| {
                *lock(&state.operand_error) = Some(error.clone());
                Ok(())
            });
            return Err(error);
        }
    };
    with_state(ftx.ptx, |state| {
        let cap = state
            .remaining()
            .saturating_add(1)
            .saturating_mul(BYTES_PER_UNIT);
        state.charge(weight(value.as_ref(), cap) / BYTES_PER_UNIT)
    })?;
    CelValue::try_from(value.as_ref())
}

/// `type(x)`: the type of a value, comparable with `int`, `string`, `list`, ...
fn type_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let [arg] = ftx.args else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let value = CelValue::resolve(arg, ftx.ptx)?;
    let name = match &value {
        CelValue::Opaque(o) if o.runtime_type_name() == "type" => "type".to_owned(),
        other => convert::type_name(other),
    };
    Ok(CelValue::Opaque(Arc::new(CelType(name))))
}

fn tick_fn(ftx: &mut FunctionContext) -> ResolveResult {
    with_state(ftx.ptx, |state| state.charge(1))?;
    let condition = ftx.args.first().ok_or(ExecutionError::NoSuchOverload)?;
    CelValue::resolve(condition, ftx.ptx)
}

fn authz_fn(ftx: &mut FunctionContext) -> ResolveResult {
    authz::call(ftx, &|ftx, check| {
        with_state(ftx.ptx, |state| {
            *lock(&state.pending) = Some(check);
            Ok(())
        })?;
        let decision = ftx
            .ptx
            .get_variable(AUTHORIZE_VAR)
            .ok_or_else(|| ExecutionError::function_error("check", "no authorizer is available"))?;
        CelValue::try_from(decision.as_ref())
    })
}

/// `lists.range(n)`, charging `n` and refusing sizes beyond the cost limit.
fn range_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let [arg] = ftx.args else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let CelValue::Int(n) = CelValue::resolve(arg, ftx.ptx)? else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let Ok(count) = u64::try_from(n) else {
        return Err(ExecutionError::function_error(
            "lists.range",
            "range argument must be non-negative",
        ));
    };
    with_state(ftx.ptx, |state| state.charge(count))?;
    Ok(CelValue::List(Arc::new(
        (0..n).map(CelValue::Int).collect(),
    )))
}

/// `<string>.replace(from, to[, n])` as cel-go's strings library (a negative `n` replaces
/// all), refusing results larger than [`MAX_STRING_BYTES`].
fn replace_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let mut args = Vec::with_capacity(4);
    if let Some(this) = &ftx.this {
        args.push(this.clone());
    }
    for arg in ftx.args {
        args.push(CelValue::resolve(arg, ftx.ptx)?);
    }
    let (text, from, to, limit) = match args.as_slice() {
        [
            CelValue::String(t),
            CelValue::String(f),
            CelValue::String(r),
        ] => (t, f, r, -1),
        [
            CelValue::String(t),
            CelValue::String(f),
            CelValue::String(r),
            CelValue::Int(n),
        ] => (t, f, r, *n),
        _ => return Err(ExecutionError::NoSuchOverload),
    };
    let available = if from.is_empty() {
        text.chars().count() + 1
    } else {
        text.matches(from.as_str()).count()
    };
    let count = usize::try_from(limit).map_or(available, |n| n.min(available));
    let size = text
        .len()
        .saturating_sub(count.saturating_mul(from.len()))
        .saturating_add(count.saturating_mul(to.len()));
    if size > MAX_STRING_BYTES {
        return Err(ExecutionError::function_error(
            "replace",
            COST_LIMIT_EXCEEDED,
        ));
    }
    with_state(ftx.ptx, |state| state.charge((size / 64) as u64))?;
    Ok(CelValue::String(Arc::new(text.replacen(
        from.as_str(),
        to,
        count,
    ))))
}

/// `size()`: code points for strings (CEL's definition), elements for lists and maps,
/// bytes for bytes.
fn size_fn(ftx: &mut FunctionContext) -> ResolveResult {
    let size = match (&ftx.this, ftx.args) {
        (Some(this), []) => match this {
            CelValue::String(s) => s.chars().count(),
            CelValue::Bytes(b) => b.len(),
            CelValue::List(l) => l.len(),
            CelValue::Map(m) => m.map.len(),
            _ => return Err(ExecutionError::NoSuchOverload),
        },
        // `size(x)`: read the interpreter's value in place (no copy).
        (None, [arg]) => {
            let value = CelValue::resolve_val(arg, ftx.ptx)?;
            let v = value.as_ref();
            if let Some(s) = v.downcast_ref::<CelString>() {
                s.inner().chars().count()
            } else if let Some(b) = v.downcast_ref::<CelBytes>() {
                b.inner().len()
            } else if let Some(l) = v.downcast_ref::<CelList>() {
                l.inner().len()
            } else if let Some(m) = v.downcast_ref::<CelMap>() {
                m.inner().len()
            } else {
                return Err(ExecutionError::NoSuchOverload);
            }
        }
        _ => return Err(ExecutionError::NoSuchOverload),
    };
    Ok(CelValue::Int(i64::try_from(size).unwrap_or(i64::MAX)))
}

/// Hands `check()` calls to the caller's authorizer. It is the only way to reach a
/// borrowed (non-`'static`) authorizer from a registered function.
struct AuthorizeResolver<'a> {
    authorizer: Option<&'a dyn authz::Authorizer>,
    state: Arc<EvalState>,
}

impl VariableResolver for AuthorizeResolver<'_> {
    fn resolve(&self, variable: &str) -> Option<CelValue> {
        if variable != AUTHORIZE_VAR {
            return None;
        }
        let authorizer = self.authorizer?;
        let check = lock(&self.state.pending).take()?;
        let decision =
            catch_unwind(AssertUnwindSafe(|| authorizer.check(&check))).unwrap_or_else(|_| {
                AuthzDecision {
                    allowed: false,
                    reason: String::new(),
                    error: Some("authorizer failed".to_owned()),
                }
            });
        Some(CelValue::Opaque(Arc::new(AuthzValue::Decision(decision))))
    }
}

/// One evaluation's context.
pub(crate) struct Evaluator<'r> {
    ctx: Context<'r>,
    state: Arc<EvalState>,
}

impl Evaluator<'_> {
    /// Evaluates a top-level expression, charging its cost to the phase.
    pub fn eval(&self, program: &Program) -> Result<CelValue, EvalFailure> {
        if self.state.total.load(Ordering::Relaxed) > RUNTIME_COST_BUDGET {
            return Err(EvalFailure::OutOfBudget);
        }
        self.state.cost.store(0, Ordering::Relaxed);
        let result = self.state.run(&self.ctx, program);
        // A refused charge is not spent: an expression costs at most its limit.
        let spent = self
            .state
            .cost
            .swap(0, Ordering::Relaxed)
            .min(PER_EXPRESSION_COST_LIMIT.saturating_add(1));
        let total = self
            .state
            .total
            .fetch_add(spent, Ordering::Relaxed)
            .saturating_add(spent);
        if total > RUNTIME_COST_BUDGET {
            return Err(EvalFailure::OutOfBudget);
        }
        result.map_err(EvalFailure::Error)
    }

    /// Starts a new phase with a full budget.
    pub fn new_phase(&self) {
        self.state.total.store(0, Ordering::Relaxed);
    }
}

/// Stack depth (expression levels) safe to evaluate on the caller's thread.
fn inline_depth_limit() -> usize {
    if cfg!(debug_assertions) { 16 } else { 160 }
}

/// Builds the evaluation context for `input` and runs `f` in it, on a helper thread with
/// a large stack when the expressions are deep. Errors only if that thread cannot run.
pub(crate) fn with_evaluator<R: Send>(
    input: &Input<'_>,
    needs: Needs,
    variables: Option<Arc<VariableTable>>,
    f: impl FnOnce(&Evaluator<'_>) -> R + Send,
) -> Result<R, String> {
    let run = move || {
        let mut unavailable = Vec::new();
        let mut bindings: Vec<(&'static str, CelValue)> = Vec::new();
        let inputs = [
            ("object", needs.object, input.object),
            ("oldObject", needs.old_object, input.old_object),
            ("request", needs.request, input.request),
            ("params", needs.params, input.params),
            (
                "namespaceObject",
                needs.namespace_object,
                input.namespace_object,
            ),
        ];
        for (name, needed, value) in inputs {
            if !needed {
                continue;
            }
            match convert::optional_to_cel(value) {
                Ok(v) => bindings.push((name, v)),
                Err(convert::TooDeep) => unavailable.push((
                    name,
                    format!("{name} is nested deeper than {} levels", convert::MAX_DEPTH),
                )),
            }
        }
        if needs.authorizer && input.authorizer.is_some() {
            bindings.push(("authorizer", authz::authorizer_value()));
            bindings.push((
                REQUEST_RESOURCE,
                authz::request_resource_value(input.request),
            ));
        }
        let slots = variables.as_ref().map_or(0, |t| t.vars.len());
        let state = Arc::new(EvalState {
            variables,
            slots: (0..slots).map(|_| Mutex::new(Slot::Pending)).collect(),
            pending: Mutex::new(None),
            cost: AtomicU64::new(0),
            total: AtomicU64::new(0),
            unavailable,
            operand_error: Mutex::new(None),
        });
        let resolver = AuthorizeResolver {
            authorizer: input.authorizer,
            state: state.clone(),
        };
        let mut ctx: Context<'_> = BASE.new_inner_scope();
        ctx.set_variable_resolver(&resolver);
        ctx.add_variable_from_value(STATE_VAR, CelValue::Opaque(state.clone()));
        for (name, value) in bindings {
            ctx.add_variable_from_value(name, value);
        }
        let evaluator = Evaluator { ctx, state };
        f(&evaluator)
    };
    if needs.depth <= inline_depth_limit() {
        return Ok(run());
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("kyb-cel-eval".to_owned())
            .stack_size(DEEP_EVALUATION_STACK)
            .spawn_scoped(scope, run)
            .map_err(|e| format!("internal error: cannot start an evaluation thread: {e}"))?;
        handle
            .join()
            .map_err(|_| "internal error: the CEL evaluation failed".to_owned())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn knows_registered_functions() {
        assert!(function_exists("size"));
        assert!(function_exists("quantity"));
        assert!(function_exists("math.greatest"));
        assert!(function_exists("check"));
        assert!(!function_exists("frobnicate"));
        assert!(!function_exists("math.frobnicate"));
    }

    #[test]
    fn weights_count_bytes_and_entries() {
        let val = |v: CelValue| -> Box<dyn Val> { v.try_into().unwrap() };
        let text = |s: &str| CelValue::String(Arc::new(s.to_owned()));
        assert_eq!(weight(val(text("abcd")).as_ref(), u64::MAX), 4);
        assert_eq!(weight(val(CelValue::Int(7)).as_ref(), u64::MAX), 0);
        let list = CelValue::List(Arc::new(vec![CelValue::Int(1), text("ab")]));
        assert_eq!(weight(val(list).as_ref(), u64::MAX), 2 * ENTRY_WEIGHT + 2);
        let nested = CelValue::List(Arc::new(vec![CelValue::List(Arc::new(vec![text("xyz")]))]));
        assert_eq!(weight(val(nested).as_ref(), u64::MAX), 2 * ENTRY_WEIGHT + 3);
        // Counting stops once past the cap.
        let big = CelValue::List(Arc::new(
            (0..10_000).map(|_| text(&"x".repeat(100))).collect(),
        ));
        let w = weight(val(big).as_ref(), 100_000);
        assert!(w > 100_000 && w < 10_000 * (ENTRY_WEIGHT + 100), "{w}");
    }

    #[test]
    fn error_texts() {
        assert_eq!(
            describe(&ExecutionError::no_such_key("spec")),
            "no such key: spec"
        );
        assert_eq!(
            describe(&ExecutionError::NoSuchOverload),
            "no such overload"
        );
        assert_eq!(
            describe(&ExecutionError::DivisionByZero(CelValue::Int(1))),
            "division by zero"
        );
    }
}
