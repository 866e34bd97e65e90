//! A small static type inference, enough to reject what Kubernetes' type checker rejects
//! for sure.
//!
//! Kubernetes compiles admission expressions with `object`, `oldObject` and `params` typed
//! `dyn` and requires the output type to be exactly the field's type: a validation must be
//! `bool` (`object.spec.enabled` alone is refused with `must evaluate to bool but got
//! dyn`), a messageExpression `string`, an audit annotation `string` or `null`. The `cel`
//! crate has no checker, so this module infers what it can: literals, operators, a table of
//! well-known functions, selections from the `dyn` roots, the typed `request` and policy
//! variables. Whatever it
//! cannot infer is [`Ty::Unknown`] and accepted, so a valid policy is never refused; the
//! evaluator still reports a wrong runtime type as an error.

use std::fmt;

use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};

use crate::analysis::{HAS_VARIABLE_FN, MEASURE_FN, TICK_FN, VARIABLE_FN};

/// An inferred CEL type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Timestamp,
    Duration,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    /// Kubernetes' checker would say `dyn` here.
    Dyn,
    /// Not inferred; accepted wherever a type is required.
    Unknown,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Null => f.write_str("null_type"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Dyn | Ty::Unknown => f.write_str("dyn"),
        }
    }
}

/// What the inference knows about the names an expression may use.
pub trait TypeEnv {
    /// The type of the policy variable `name` (`variables.<name>`).
    fn variable(&self, name: &str) -> Ty;
}

/// Infers the type of an expression (as rewritten by `analysis`).
pub fn infer(expr: &IdedExpr, env: &dyn TypeEnv) -> Ty {
    Inference {
        env,
        scope: Vec::new(),
    }
    .infer(expr)
}

struct Inference<'e> {
    env: &'e dyn TypeEnv,
    scope: Vec<(String, Ty)>,
}

fn same_or(types: impl IntoIterator<Item = Ty>, empty: Ty) -> Ty {
    let mut iter = types.into_iter();
    let Some(first) = iter.next() else {
        return empty;
    };
    let mut result = first;
    for t in iter {
        if t != result {
            result = Ty::Unknown;
        }
    }
    result
}

/// The type of a field path under `request` (admission.k8s.io/v1 AdmissionRequest, as
/// Kubernetes declares it to CEL); `None` for paths it does not type.
fn request_field(path: &[&str]) -> Option<Ty> {
    let string = || Some(Ty::String);
    match path {
        ["uid" | "subResource" | "requestSubResource" | "name" | "namespace" | "operation"] => {
            string()
        }
        ["kind" | "requestKind", "group" | "version" | "kind"] => string(),
        [
            "resource" | "requestResource",
            "group" | "version" | "resource",
        ] => string(),
        ["userInfo", "username" | "uid"] => string(),
        ["userInfo", "groups"] => Some(Ty::List(Box::new(Ty::String))),
        ["userInfo", "extra"] => Some(Ty::Map(
            Box::new(Ty::String),
            Box::new(Ty::List(Box::new(Ty::String))),
        )),
        ["dryRun"] => Some(Ty::Bool),
        _ => None,
    }
}

/// The field path of an expression that is (an index chain rooted at) the identifier
/// `request` (`request["userInfo"]["username"]` → `["userInfo", "username"]`).
fn request_path(e: &IdedExpr) -> Option<Vec<&str>> {
    match &e.expr {
        Expr::Ident(name) if name == "request" => Some(Vec::new()),
        Expr::Call(call) => request_call_path(call),
        _ => None,
    }
}

fn request_call_path(call: &CallExpr) -> Option<Vec<&str>> {
    if call.func_name != operators::INDEX {
        return None;
    }
    let Expr::Literal(LiteralValue::String(field)) = &call.args.get(1)?.expr else {
        return None;
    };
    let mut path = request_path(call.args.first()?)?;
    path.push(field.inner());
    Some(path)
}

fn function_result(name: &str) -> Ty {
    match name {
        "size" | "int" | "indexOf" | "lastIndexOf" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "string"
        | "lowerAscii"
        | "upperAscii"
        | "trim"
        | "replace"
        | "substring"
        | "charAt"
        | "join"
        | "format"
        | "strings.quote"
        | "getScheme"
        | "getHost"
        | "getHostname"
        | "getPort"
        | "getEscapedPath"
        | "base64.encode"
        | "jsonpatch.escapeKey" => Ty::String,
        "bytes" | "base64.decode" => Ty::Bytes,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        "startsWith" | "endsWith" | "contains" | "matches" | "isSorted" | "isQuantity"
        | "isURL" | "isIP" | "isCIDR" | "isSemver" | "isInteger" | "isGreaterThan"
        | "isLessThan" | "sets.contains" | "sets.intersects" | "sets.equivalent" | "containsIP"
        | "containsCIDR" | "isLoopback" | "isUnspecified" | "allowed" | "errored" | "hasValue" => {
            Ty::Bool
        }
        "reason" | "error" => Ty::String,
        _ => Ty::Unknown,
    }
}

impl Inference<'_> {
    fn lookup(&self, name: &str) -> Option<Ty> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    }

    fn infer(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None => match name.as_str() {
                    "object" | "oldObject" | "params" => Ty::Dyn,
                    _ => Ty::Unknown,
                },
            },
            // Only `has()` selections survive the rewrite.
            Expr::Select(s) if s.test => Ty::Bool,
            Expr::Select(_) => Ty::Unknown,
            Expr::List(list) => {
                let elements: Vec<Ty> = list.elements.iter().map(|x| self.infer(x)).collect();
                Ty::List(Box::new(same_or(elements, Ty::Dyn)))
            }
            Expr::Map(map) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        keys.push(self.infer(&m.key));
                        values.push(self.infer(&m.value));
                    }
                }
                Ty::Map(
                    Box::new(same_or(keys, Ty::Dyn)),
                    Box::new(same_or(values, Ty::Dyn)),
                )
            }
            Expr::Comprehension(c) => {
                let accu = self.infer(&c.accu_init);
                self.scope.push((c.accu_var.clone(), accu));
                self.scope.push((c.iter_var.clone(), Ty::Unknown));
                let result = self.infer(&c.result);
                self.scope.truncate(self.scope.len() - 2);
                result
            }
            Expr::Call(call) => self.infer_call(call),
            Expr::Struct(_) | Expr::Unspecified => Ty::Unknown,
        }
    }

    fn infer_call(&mut self, call: &CallExpr) -> Ty {
        let arg = |i: usize| call.args.get(i);
        match call.func_name.as_str() {
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
            | operators::LOGICAL_AND
            | operators::LOGICAL_OR
            | operators::LOGICAL_NOT
            | operators::IN
            | operators::NOT_STRICTLY_FALSE
            | HAS_VARIABLE_FN
            | TICK_FN => Ty::Bool,
            MEASURE_FN => arg(0).map_or(Ty::Unknown, |a| self.infer(a)),
            VARIABLE_FN => match arg(0).map(|a| &a.expr) {
                Some(Expr::Literal(LiteralValue::String(name))) => self.env.variable(name.inner()),
                _ => Ty::Unknown,
            },
            operators::INDEX
                if self.lookup("request").is_none() && request_call_path(call).is_some() =>
            {
                request_call_path(call)
                    .and_then(|path| request_field(&path))
                    .unwrap_or(Ty::Unknown)
            }
            operators::INDEX => match arg(0).map(|a| self.infer(a)) {
                Some(Ty::Dyn) => Ty::Dyn,
                Some(Ty::List(t)) if *t != Ty::Dyn => *t,
                Some(Ty::Map(_, v)) if *v != Ty::Dyn => *v,
                _ => Ty::Unknown,
            },
            operators::CONDITIONAL => {
                let a = arg(1).map_or(Ty::Unknown, |a| self.infer(a));
                let b = arg(2).map_or(Ty::Unknown, |b| self.infer(b));
                if a == b {
                    a
                } else if a == Ty::Unknown || b == Ty::Unknown {
                    Ty::Unknown
                } else if a == Ty::Dyn || b == Ty::Dyn {
                    Ty::Dyn
                } else {
                    Ty::Unknown
                }
            }
            operators::ADD
            | operators::SUBSTRACT
            | operators::MULTIPLY
            | operators::DIVIDE
            | operators::MODULO => {
                let a = arg(0).map_or(Ty::Unknown, |a| self.infer(a));
                let b = arg(1).map_or(Ty::Unknown, |b| self.infer(b));
                let dynamic = |t: &Ty| matches!(t, Ty::Dyn | Ty::Unknown);
                let arithmetic = |t: &Ty| matches!(t, Ty::Int | Ty::Uint | Ty::Double);
                match (&a, &b) {
                    (Ty::Int, Ty::Int)
                    | (Ty::Uint, Ty::Uint)
                    | (Ty::Double, Ty::Double)
                    | (Ty::String, Ty::String)
                    | (Ty::Bytes, Ty::Bytes)
                        if a == b =>
                    {
                        a
                    }
                    // CEL has no mixed-type arithmetic: `dyn + int` can only be `int`
                    // (strings and bytes concatenate only with their own type too).
                    (t, other) | (other, t)
                        if dynamic(other)
                            && (arithmetic(t)
                                || (call.func_name == operators::ADD
                                    && matches!(t, Ty::String | Ty::Bytes))) =>
                    {
                        t.clone()
                    }
                    (Ty::List(_), Ty::List(_)) if call.func_name == operators::ADD => {
                        if a == b {
                            a
                        } else {
                            Ty::List(Box::new(Ty::Dyn))
                        }
                    }
                    _ => Ty::Unknown,
                }
            }
            operators::NEGATE => match arg(0).map(|a| self.infer(a)) {
                Some(t @ (Ty::Int | Ty::Double)) => t,
                _ => Ty::Unknown,
            },
            name => {
                // Qualified calls (`math.greatest`) keep their namespace as the target.
                let qualified = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(ns)) if self.lookup(ns).is_none() => {
                        function_result(&format!("{ns}.{name}"))
                    }
                    _ => Ty::Unknown,
                };
                if qualified != Ty::Unknown {
                    qualified
                } else {
                    function_result(name)
                }
            }
        }
    }
}

/// Whether an inferred type satisfies a field's allowed types (none listed: any type);
/// on failure the message Kubernetes gives (`must evaluate to bool but got int`).
pub fn check_output(ty: &Ty, allowed: &[Ty]) -> Result<(), String> {
    if allowed.is_empty() || *ty == Ty::Unknown || allowed.contains(ty) {
        return Ok(());
    }
    if let [only] = allowed {
        Err(format!("must evaluate to {only} but got {ty}"))
    } else {
        let names: Vec<String> = allowed.iter().map(ToString::to_string).collect();
        Err(format!(
            "must evaluate to one of [{}] but got {ty}",
            names.join(" ")
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::analysis::rewrite;
    use kube_cel::cel::parser::Parser;

    struct Vars;
    impl TypeEnv for Vars {
        fn variable(&self, name: &str) -> Ty {
            match name {
                "flag" => Ty::Bool,
                "raw" => Ty::Dyn,
                _ => Ty::Unknown,
            }
        }
    }

    fn ty(src: &str) -> Ty {
        let mut e = Parser::new()
            .enable_optional_syntax(true)
            .parse(src)
            .unwrap();
        rewrite(src, &mut e).unwrap();
        infer(&e, &Vars)
    }

    #[test]
    fn infers_what_kubernetes_checks() {
        assert_eq!(ty("object.spec.replicas <= 5"), Ty::Bool);
        assert_eq!(ty("object.spec.enabled"), Ty::Dyn);
        assert_eq!(ty("1 + 2"), Ty::Int);
        assert_eq!(ty("'a' + 'b'"), Ty::String);
        assert_eq!(ty("object.items.all(i, i.x > 1)"), Ty::Bool);
        assert_eq!(ty("object.items.map(i, i.x)"), Ty::List(Box::new(Ty::Dyn)));
        assert_eq!(ty("variables.flag"), Ty::Bool);
        assert_eq!(ty("variables.raw"), Ty::Dyn);
        assert_eq!(ty("has(object.spec)"), Ty::Bool);
        assert_eq!(ty("true ? object.a : false"), Ty::Dyn);
        assert_eq!(ty("request.userInfo.username"), Ty::String);
        assert_eq!(
            ty("request.userInfo.groups"),
            Ty::List(Box::new(Ty::String))
        );
        assert_eq!(ty("request.options"), Ty::Unknown);
        assert_eq!(ty("[request].all(request, request.x)"), Ty::Bool);
        assert_eq!(ty("object.spec.replicas * 2"), Ty::Int);
        assert_eq!(ty("'x' + object.name"), Ty::String);
        assert_eq!(ty("object.a + object.b"), Ty::Unknown);
        assert_eq!(ty("[1, 2]").to_string(), "list(int)");
        assert_eq!(ty("size(object.items)"), Ty::Int);
        assert_eq!(ty("math.greatest(1, 2)"), Ty::Unknown);
    }

    #[test]
    fn output_check_messages() {
        assert_eq!(
            check_output(&Ty::Int, &[Ty::Bool]).unwrap_err(),
            "must evaluate to bool but got int"
        );
        assert_eq!(
            check_output(&Ty::Dyn, &[Ty::Bool]).unwrap_err(),
            "must evaluate to bool but got dyn"
        );
        assert_eq!(
            check_output(&Ty::Int, &[Ty::String, Ty::Null]).unwrap_err(),
            "must evaluate to one of [string null_type] but got int"
        );
        assert!(check_output(&Ty::Unknown, &[Ty::Bool]).is_ok());
        assert!(check_output(&Ty::Null, &[Ty::String, Ty::Null]).is_ok());
    }
}
