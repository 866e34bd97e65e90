//! Bringing recorded field sets up to date with the schema, as Kubernetes does on
//! every write (structured-merge-diff's `ReconcileFieldSetWithSchema`).
//!
//! A set recorded while a struct, map or list was granular may own parts of what the
//! schema now declares atomic. Such a set is rewritten to own the atomic value itself,
//! so that its owner keeps conflicting on any change of it (the server-side apply
//! documentation's "compatibility across topology changes"). The opposite change
//! needs nothing: the owner of a formerly atomic value keeps owning the value and
//! none of its parts. Values of deduced type and fields a struct does not declare are
//! left as they are.

use crate::fieldset::Set;
use crate::managed::Managed;
use crate::schema::{ListKind, Resolved, TypeRef};
use crate::walk::{self, WalkError};
use serde_json::Value;

/// The membership marker of a node with children.
const SELF: &str = ".";

/// Reconciles the set of every entry with the type `root`.
pub(crate) fn managed_fields(managed: &mut Managed, root: &TypeRef) -> Result<(), WalkError> {
    for entry in &mut managed.entries {
        reconcile(&mut entry.fields, root, 0)?;
    }
    Ok(())
}

fn reconcile(set: &mut Set, ty: &TypeRef, depth: usize) -> Result<(), WalkError> {
    walk::check_depth(depth)?;
    let resolved = ty.resolve();
    for (key, node) in set.iter_mut() {
        let Some(child_type) = child_type(resolved, key) else {
            continue;
        };
        let Value::Object(children) = node else {
            continue;
        };
        if !children.keys().any(|k| k != SELF) {
            continue;
        }
        if atomic(child_type) && !children.contains_key(SELF) {
            // Parts of a value that is atomic now: own the value instead.
            children.clear();
            continue;
        }
        reconcile(children, child_type, depth + 1)?;
    }
    Ok(())
}

/// The type below the path element `key`, when the schema declares one.
fn child_type<'t>(resolved: Resolved<'t>, key: &str) -> Option<&'t TypeRef> {
    match resolved {
        Resolved::Struct { .. } | Resolved::DeducedRoot => {
            let (t, declared) = resolved.member(key.strip_prefix("f:")?);
            declared.then_some(t)
        }
        Resolved::Map { value, .. } => key.starts_with("f:").then_some(value),
        Resolved::List { item, kind } => {
            let keyed = key.starts_with("k:") || key.starts_with("v:") || key.starts_with("i:");
            (keyed && *kind != ListKind::Atomic).then_some(item)
        }
        Resolved::Scalar(_) | Resolved::Deduced => None,
    }
}

fn atomic(ty: &TypeRef) -> bool {
    matches!(
        ty.resolve(),
        Resolved::Struct { atomic: true, .. }
            | Resolved::Map { atomic: true, .. }
            | Resolved::List {
                kind: ListKind::Atomic,
                ..
            }
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn reconciled(def: &str, set: Value) -> Value {
        let Value::Object(mut set) = set else {
            panic!("not a set")
        };
        reconcile(&mut set, &TypeRef::root(def), 0).unwrap();
        Value::Object(set)
    }

    #[test]
    fn parts_of_atomic_values_become_the_value() {
        let set = json!({"f:spec": {
            "f:selector": {"f:matchLabels": {"f:app": {}}},
            "f:template": {"f:spec": {
                "f:nodeSelector": {"f:disk": {}},
                "f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:args": {"i:0": {}}, "f:env": {"k:{\"name\":\"X\"}": {}}}}
            }}
        }});
        assert_eq!(
            reconciled("io.k8s.api.apps.v1.Deployment", set),
            json!({"f:spec": {
                "f:selector": {},
                "f:template": {"f:spec": {
                    "f:nodeSelector": {},
                    "f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:args": {}, "f:env": {"k:{\"name\":\"X\"}": {}}}}
                }}
            }})
        );
    }

    #[test]
    fn granular_undeclared_and_deduced_parts_stay() {
        let set = json!({
            "f:metadata": {"f:labels": {"f:a": {}}, "f:bogus": {"f:x": {}}},
            "f:spec": {"f:data": {"f:key1": {}}, "f:list": {"i:0": {}}}
        });
        assert_eq!(
            reconciled("io.k8s.api.apps.v1.Deployment", set.clone()),
            set
        );
        assert_eq!(reconciled("com.example.v1.Widget", set.clone()), set);
        // An owner of the atomic value itself keeps whatever it has below it.
        let member = json!({"f:spec": {"f:selector": {".": {}, "f:matchLabels": {"f:app": {}}}}});
        assert_eq!(
            reconciled("io.k8s.api.apps.v1.Deployment", member.clone()),
            member
        );
    }
}
