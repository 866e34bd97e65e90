//! Rewrites a parsed expression into the form the evaluator runs, and records what it
//! refers to.
//!
//! The `cel` interpreter is close to, but not exactly, what Kubernetes' cel-go does, so a
//! few constructs are rewritten once at compile time instead of patched at every
//! evaluation:
//!
//! - `variables.<name>` becomes a call to an internal function that evaluates the policy's
//!   variable lazily and at most once (`has(variables.<name>)` likewise);
//! - `authorizer.requestResource` becomes the identifier Kubernetes binds under that
//!   qualified name;
//! - every other field selection `a.b` becomes the index `a["b"]`: the interpreter's own
//!   selection quietly yields `false` on a non-map, where CEL requires an error (`no such
//!   overload`), and indexing also avoids copying the operand;
//! - every comprehension's loop condition is wrapped in a call that charges one unit of
//!   cost per iteration, so runaway `all()`/`map()` loops are cancelled;
//! - the operands of operators and library functions whose work grows with their inputs
//!   (`+`, `==`, `in`, comparisons, string and list functions) are wrapped in a call that
//!   charges their size before the operation runs, so concatenating or copying huge values
//!   in a loop is cancelled instead of exhausting memory (the interpreter copies values at
//!   every function call, and `map()`/`filter()` re-copy their accumulator per element);
//! - `a.?b` becomes `a[?"b"]`: the interpreter's optional selection fails on an absent key
//!   where CEL yields `optional.none()`.
//!
//! While rewriting, the free identifiers, variable names and function names are collected
//! ([`References`]) so a policy can check them against what its environment declares, and
//! only convert the JSON inputs an expression actually reads.

use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};

use crate::error::{CompileError, CompileErrorKind};
use crate::runtime;
use crate::source;
use crate::types::{self, Ty, TypeEnv};

/// Internal function: the value of a policy variable (argument: its name).
pub(crate) const VARIABLE_FN: &str = "@kyb.variable";
/// Internal function: whether a policy variable is declared (for `has(variables.x)`).
pub(crate) const HAS_VARIABLE_FN: &str = "@kyb.has_variable";
/// Internal function: charges one iteration, then yields its argument.
pub(crate) const TICK_FN: &str = "@kyb.tick";
/// Internal function: charges the size of its argument, then yields it.
pub(crate) const MEASURE_FN: &str = "@kyb.measure";
/// The identifier Kubernetes binds for `authorizer.requestResource`.
pub(crate) const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// CEL's type identifiers (`type(x) == int`), bound by the evaluator.
pub(crate) const TYPE_NAMES: &[&str] = &[
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Operators whose work grows with their operands.
const MEASURED_OPERATORS: &[&str] = &[
    operators::ADD,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::LESS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::GREATER_EQUALS,
    operators::IN,
];

/// Functions whose work does not grow with their arguments and that report their
/// arguments' errors themselves (conversions like `int(x)` are measured: measuring also
/// keeps the error of `x`, see `runtime`).
const UNMEASURED_FUNCTIONS: &[&str] = &[
    "size",
    "hasValue",
    "value",
    "or",
    "orValue",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "lists.range",
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

fn measured(call: &CallExpr, qualified: bool) -> bool {
    let name = call.func_name.as_str();
    if is_function_name(name) {
        let full = match (&call.target, qualified) {
            (Some(target), true) => match &target.expr {
                Expr::Ident(ns) => format!("{ns}.{name}"),
                _ => name.to_owned(),
            },
            _ => name.to_owned(),
        };
        !UNMEASURED_FUNCTIONS.contains(&full.as_str())
    } else {
        MEASURED_OPERATORS.contains(&name)
    }
}

/// Comparisons whose work is bounded by the smaller operand: with a literal on either
/// side, bounded by the source.
const COMPARISONS: &[&str] = &[
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::LESS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::GREATER_EQUALS,
];

/// Types whose values have a fixed size.
fn is_scalar(ty: &Ty) -> bool {
    matches!(
        ty,
        Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Null | Ty::Timestamp | Ty::Duration
    )
}

/// Types as far as known without the policy's variables.
struct NoVariables;

impl TypeEnv for NoVariables {
    fn variable(&self, _: &str) -> Ty {
        Ty::Unknown
    }
}

/// Wraps the size-dependent operands of a call in a call charging their size.
fn measure_operands(c: &mut CallExpr, qualified: bool) {
    if COMPARISONS.contains(&c.func_name.as_str())
        && c.args.iter().any(|a| matches!(a.expr, Expr::Literal(_)))
    {
        return;
    }
    if !qualified && let Some(target) = &mut c.target {
        measure(target);
    }
    c.args.iter_mut().for_each(measure);
}

/// Wraps `e` in a call charging its size, unless its size is bounded anyway (literals
/// by the source, scalars by their type).
fn measure(e: &mut IdedExpr) {
    if matches!(e.expr, Expr::Literal(_)) || is_scalar(&types::infer(e, &NoVariables)) {
        return;
    }
    let inner = std::mem::take(e);
    *e = call(inner.id, MEASURE_FN, vec![inner]);
}

/// Depth of an expression tree (after rewriting).
fn tree_depth(e: &IdedExpr) -> usize {
    let children = match &e.expr {
        Expr::Call(c) => c
            .target
            .iter()
            .map(|t| tree_depth(t))
            .chain(c.args.iter().map(tree_depth))
            .max()
            .unwrap_or(0),
        Expr::Select(s) => tree_depth(&s.operand),
        Expr::List(l) => l.elements.iter().map(tree_depth).max().unwrap_or(0),
        Expr::Map(m) => m
            .entries
            .iter()
            .map(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => tree_depth(&m.key).max(tree_depth(&m.value)),
                EntryExpr::StructField(f) => tree_depth(&f.value),
            })
            .max()
            .unwrap_or(0),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .map(tree_depth)
        .max()
        .unwrap_or(0),
        Expr::Struct(s) => s
            .entries
            .iter()
            .map(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => tree_depth(&m.key).max(tree_depth(&m.value)),
                EntryExpr::StructField(f) => tree_depth(&f.value),
            })
            .max()
            .unwrap_or(0),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => 0,
    };
    children + 1
}

/// Deepest expression tree accepted. Evaluation recurses once per level.
pub const MAX_AST_DEPTH: usize = 100;

/// What an expression refers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// Free identifiers (`object`, `request`, `params`, ...), each once.
    pub identifiers: Vec<String>,
    /// Names used as `variables.<name>`, each once.
    pub variables: Vec<String>,
    /// Depth of the rewritten expression tree.
    pub depth: usize,
}

impl References {
    /// Whether the expression reads the named root variable.
    pub fn uses(&self, identifier: &str) -> bool {
        self.identifiers.iter().any(|i| i == identifier)
    }

    fn add_identifier(&mut self, name: &str) {
        if !self.uses(name) {
            self.identifiers.push(name.to_owned());
        }
    }

    fn add_variable(&mut self, name: &str) {
        if !self.variables.iter().any(|v| v == name) {
            self.variables.push(name.to_owned());
        }
    }
}

/// Rewrites `expr` in place (see the module documentation) and returns its references.
pub fn rewrite(source: &str, expr: &mut IdedExpr) -> Result<References, CompileError> {
    let mut walker = Walker {
        source,
        scope: Vec::new(),
        refs: References::default(),
    };
    walker.walk(expr, 1)?;
    let mut refs = walker.refs;
    // The walk bounded the source's depth; this is what evaluation recurses through.
    refs.depth = tree_depth(expr);
    Ok(refs)
}

struct Walker<'s> {
    source: &'s str,
    /// Names bound by enclosing comprehensions.
    scope: Vec<String>,
    refs: References,
}

fn literal(id: u64, text: &str) -> IdedExpr {
    IdedExpr {
        id,
        expr: Expr::Literal(LiteralValue::String(text.into())),
    }
}

fn call(id: u64, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    IdedExpr {
        id,
        expr: Expr::Call(CallExpr {
            func_name: name.to_owned(),
            target: None,
            args,
        }),
    }
}

/// Whether a call is a user-visible function (operators and internal helpers are not).
fn is_function_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

impl Walker<'_> {
    fn bound(&self, name: &str) -> bool {
        self.scope.iter().any(|s| s == name)
    }

    fn undeclared(&self, name: &str) -> CompileError {
        let (line, col) = source::locate(self.source, name, false);
        CompileError::new(
            CompileErrorKind::Undeclared,
            format!(
                "compilation failed: {}",
                source::format_error(
                    self.source,
                    line,
                    col,
                    &format!("undeclared reference to '{name}' (in container '')")
                )
            ),
        )
    }

    fn walk(&mut self, e: &mut IdedExpr, depth: usize) -> Result<(), CompileError> {
        if depth > MAX_AST_DEPTH {
            let (line, col) = (1, 1);
            return Err(CompileError::new(
                CompileErrorKind::Syntax,
                format!(
                    "compilation failed: {}",
                    source::format_error(
                        self.source,
                        line,
                        col,
                        &format!("expression recursion limit exceeded: {MAX_AST_DEPTH}")
                    )
                ),
            ));
        }
        self.refs.depth = self.refs.depth.max(depth);
        let id = e.id;
        let replacement = match &mut e.expr {
            Expr::Select(select) => {
                let root = match &select.operand.expr {
                    Expr::Ident(name) if !self.bound(name) => Some(name.clone()),
                    _ => None,
                };
                match root.as_deref() {
                    Some("variables") => {
                        self.refs.add_variable(&select.field);
                        let name = if select.test {
                            HAS_VARIABLE_FN
                        } else {
                            VARIABLE_FN
                        };
                        Some(call(id, name, vec![literal(id, &select.field)]))
                    }
                    Some("authorizer") if !select.test && select.field == "requestResource" => {
                        self.refs.add_identifier("authorizer");
                        Some(IdedExpr {
                            id,
                            expr: Expr::Ident(REQUEST_RESOURCE.to_owned()),
                        })
                    }
                    _ => {
                        self.walk(&mut select.operand, depth + 1)?;
                        if select.test {
                            None
                        } else {
                            let operand = std::mem::take(&mut *select.operand);
                            let field = literal(id, &select.field);
                            Some(call(id, operators::INDEX, vec![operand, field]))
                        }
                    }
                }
            }
            Expr::Ident(name) => {
                if !self.bound(name) {
                    self.refs.add_identifier(name);
                }
                None
            }
            Expr::Call(call_expr) => {
                self.walk_call(call_expr, depth)?;
                None
            }
            Expr::Comprehension(c) => {
                self.walk(&mut c.iter_range, depth + 1)?;
                self.walk(&mut c.accu_init, depth + 1)?;
                let pushed = 2 + usize::from(c.iter_var2.is_some());
                self.scope.push(c.accu_var.clone());
                self.scope.push(c.iter_var.clone());
                if let Some(second) = &c.iter_var2 {
                    self.scope.push(second.clone());
                }
                let walked = self
                    .walk(&mut c.loop_cond, depth + 2)
                    .and_then(|()| self.walk(&mut c.loop_step, depth + 1))
                    .and_then(|()| self.walk(&mut c.result, depth + 1));
                self.scope.truncate(self.scope.len() - pushed);
                walked?;
                let condition = std::mem::take(&mut c.loop_cond);
                c.loop_cond = call(condition.id, TICK_FN, vec![condition]);
                None
            }
            Expr::List(list) => {
                for element in &mut list.elements {
                    self.walk(element, depth + 1)?;
                }
                None
            }
            Expr::Map(map) => {
                for entry in &mut map.entries {
                    match &mut entry.expr {
                        EntryExpr::MapEntry(m) => {
                            self.walk(&mut m.key, depth + 1)?;
                            self.walk(&mut m.value, depth + 1)?;
                        }
                        EntryExpr::StructField(f) => {
                            return Err(self.undeclared(&f.field));
                        }
                    }
                }
                None
            }
            Expr::Struct(s) => return Err(self.undeclared(&s.type_name)),
            Expr::Literal(_) => None,
            Expr::Unspecified => {
                return Err(CompileError::new(
                    CompileErrorKind::Internal,
                    "compilation failed: unexpected empty expression",
                ));
            }
        };
        if let Some(replacement) = replacement {
            e.expr = replacement.expr;
            // A rewritten selection is one level deeper (call + literal argument).
            self.refs.depth = self.refs.depth.max(depth + 1);
        }
        Ok(())
    }

    fn walk_call(&mut self, c: &mut CallExpr, depth: usize) -> Result<(), CompileError> {
        let mut qualified = false;
        if let Some(target) = &mut c.target {
            // The interpreter resolves `ns.f(...)` to the function `ns.f` when one exists,
            // without evaluating `ns` (math.greatest, sets.contains, optional.of, ...).
            if let Expr::Ident(ns) = &target.expr {
                let name = format!("{ns}.{}", c.func_name);
                if runtime::function_exists(&name) {
                    qualified = true;
                }
            }
            if !qualified {
                self.walk(target, depth + 1)?;
            }
        }
        if !qualified && is_function_name(&c.func_name) && !runtime::function_exists(&c.func_name) {
            return Err(self.undeclared(&c.func_name));
        }
        for arg in &mut c.args {
            self.walk(arg, depth + 1)?;
        }
        if c.func_name == operators::OPT_SELECT {
            c.func_name = operators::OPT_INDEX.to_owned();
        }
        if measured(c, qualified) {
            measure_operands(c, qualified);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kube_cel::cel::parser::Parser;

    fn rewritten(src: &str) -> (IdedExpr, References) {
        let mut e = Parser::new()
            .enable_optional_syntax(true)
            .parse(src)
            .unwrap();
        let refs = rewrite(src, &mut e).unwrap();
        (e, refs)
    }

    #[test]
    fn collects_free_identifiers_not_comprehension_variables() {
        let (_, refs) =
            rewritten("object.spec.items.all(i, i.x == params.max) && has(oldObject.a)");
        assert_eq!(refs.identifiers, ["object", "params", "oldObject"]);
        assert!(refs.variables.is_empty());
    }

    #[test]
    fn variables_become_internal_calls() {
        let (e, refs) = rewritten("variables.a + variables.b > 2 && has(variables.a)");
        assert_eq!(refs.variables, ["a", "b"]);
        assert!(refs.identifiers.is_empty());
        assert!(format!("{e:?}").contains(VARIABLE_FN));
        assert!(format!("{e:?}").contains(HAS_VARIABLE_FN));
    }

    #[test]
    fn selections_become_indexes() {
        let (e, _) = rewritten("object.metadata.name");
        let Expr::Call(c) = &e.expr else {
            panic!("{e:?}")
        };
        assert_eq!(c.func_name, operators::INDEX);
    }

    #[test]
    fn request_resource_is_a_qualified_identifier() {
        let (e, refs) = rewritten("authorizer.requestResource.check('get').allowed()");
        assert_eq!(refs.identifiers, ["authorizer"]);
        assert!(format!("{e:?}").contains(REQUEST_RESOURCE));
    }

    #[test]
    fn unknown_functions_and_structs_are_undeclared() {
        let mut e = Parser::new().parse("1 + frobnicate(2)").unwrap();
        let err = rewrite("1 + frobnicate(2)", &mut e).unwrap_err();
        assert_eq!(
            err.detail(),
            "compilation failed: ERROR: <input>:1:5: undeclared reference to 'frobnicate' (in container '')\n | 1 + frobnicate(2)\n | ....^"
        );
        let mut e = Parser::new().parse("Foo{a: 1}").unwrap();
        assert!(rewrite("Foo{a: 1}", &mut e).is_err());
    }

    #[test]
    fn qualified_functions_do_not_reference_their_namespace() {
        let (_, refs) = rewritten("math.greatest(1, 2) == 2 && sets.contains([1], [1])");
        assert!(refs.identifiers.is_empty(), "{:?}", refs.identifiers);
    }

    #[test]
    fn size_dependent_operands_are_measured() {
        let measured = |src: &str| {
            format!("{:?}", rewritten(src).0)
                .matches(MEASURE_FN)
                .count()
        };
        // Scalars and comparisons with a literal: bounded, not measured.
        assert_eq!(measured("object.spec.replicas <= 5"), 0);
        assert_eq!(measured("size(object.items) > 1 && object.a == 'x'"), 0);
        assert_eq!(measured("size(object.a) + size(object.b) > 2"), 0);
        // Concatenation, comparison of two unknowns, membership, library calls.
        assert_eq!(measured("object.a + object.b == 'ab'"), 2);
        assert_eq!(measured("object.a == object.b"), 2);
        assert_eq!(measured("'x' in object.items"), 1);
        assert_eq!(measured("object.name.lowerAscii().startsWith('a')"), 2);
        assert_eq!(measured("string(object.spec.replicas) != ''"), 1);
        // map() accumulates with `accumulator + [element]`: the accumulator is charged
        // per element (the interpreter copies it each time).
        assert_eq!(measured("object.items.map(i, i.n).size() > 0"), 2);
        // Qualified functions keep their namespace unmeasured.
        let (e, refs) = rewritten("math.greatest(object.a, object.b) > 1");
        assert!(refs.identifiers == ["object"], "{:?}", refs.identifiers);
        assert_eq!(format!("{e:?}").matches(MEASURE_FN).count(), 2);
    }

    #[test]
    fn optional_selection_becomes_optional_index() {
        let (e, _) = rewritten("object.?spec.orValue(1)");
        let text = format!("{e:?}");
        assert!(text.contains(operators::OPT_INDEX), "{text}");
        assert!(!text.contains(operators::OPT_SELECT), "{text}");
    }

    #[test]
    fn type_names_are_identifiers() {
        let (_, refs) = rewritten("type(object.a) == string");
        assert_eq!(refs.identifiers, ["object", "string"]);
    }

    #[test]
    fn depth_is_bounded() {
        let src = vec!["1"; MAX_AST_DEPTH + 5].join(" + ");
        let mut e = Parser::new().parse(&src).unwrap();
        let err = rewrite(&src, &mut e).unwrap_err();
        assert!(err.detail().contains("recursion limit"));
        std::mem::forget(e);
    }
}
