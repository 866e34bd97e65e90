//! The set of fields a value sets (structured-merge-diff's `ToFieldSet`), and the
//! validation of applied configurations against the schema.
//!
//! Leaves are members: scalars, atomic lists, maps and structs, set items. List-map
//! items are members and so are their fields. A map key is a member when its value is
//! null or an empty map, or when it is not a declared struct field (so `labels` entries
//! are, and `spec` is only through its fields). In strict mode (an applied
//! configuration) the value must fit the schema: unknown struct fields, wrong scalar
//! kinds, items without their keys and repeated items are errors, with
//! structured-merge-diff's messages.

use crate::fieldset::{self, Set};
use crate::list_items;
use crate::path::{self, Step};
use crate::schema::{ListKind, Resolved, Scalar, TypeRef};
use crate::walk::{self, WalkError};
use kyb_apimachinery::gofmt;
use serde_json::Value;

/// The fields `v` sets, as a value of type `ty`. `strict` validates and refuses
/// repeated list items; otherwise repeated items are owned as a whole.
pub(crate) fn field_set(v: &Value, ty: &TypeRef, strict: bool) -> Result<Set, WalkError> {
    let mut builder = Builder {
        set: Set::new(),
        errors: Vec::new(),
        strict,
        path: Vec::new(),
    };
    builder.walk(v, ty, true, 0)?;
    if builder.errors.is_empty() {
        Ok(builder.set)
    } else {
        Err(WalkError::Invalid(builder.errors))
    }
}

/// Adds the fields `v` sets below `prefix` to `set` (lenient).
pub(crate) fn add_below(
    set: &mut Set,
    prefix: &[Step<'_>],
    v: &Value,
    ty: &TypeRef,
    depth: usize,
) -> Result<(), WalkError> {
    let mut builder = Builder {
        set: std::mem::take(set),
        errors: Vec::new(),
        strict: false,
        path: prefix.iter().map(|s| Step::Owned(s.serialized())).collect(),
    };
    let result = builder.walk(v, ty, true, depth);
    *set = builder.set;
    result?;
    match builder.errors.is_empty() {
        true => Ok(()),
        false => Err(WalkError::Invalid(builder.errors)),
    }
}

struct Builder<'v> {
    set: Set,
    errors: Vec<String>,
    strict: bool,
    path: Vec<Step<'v>>,
}

impl<'v> Builder<'v> {
    fn record(&mut self) {
        fieldset::insert(&mut self.set, &self.path);
    }

    fn error(&mut self, message: &str) {
        self.errors.push(walk::located(&self.path, message));
    }

    /// Walks `v`; `record` is false inside atomic values, which are only validated.
    fn walk(
        &mut self,
        v: &'v Value,
        ty: &TypeRef,
        record: bool,
        depth: usize,
    ) -> Result<(), WalkError> {
        walk::check_depth(depth)?;
        let resolved = ty.resolve();
        match resolved {
            Resolved::Scalar(kind) => {
                if self.strict {
                    self.check_scalar(kind, v);
                }
                if record {
                    self.record();
                }
            }
            Resolved::Deduced => match v {
                Value::Object(_) => self.walk_map(v, resolved, record, depth)?,
                _ => {
                    if record {
                        self.record();
                    }
                }
            },
            Resolved::Struct { atomic, .. } | Resolved::Map { atomic, .. } => {
                if atomic {
                    if self.strict {
                        self.walk_map(v, resolved, false, depth)?;
                    }
                    if record {
                        self.record();
                    }
                } else {
                    self.walk_map(v, resolved, record, depth)?;
                }
            }
            Resolved::DeducedRoot => self.walk_map(v, resolved, record, depth)?,
            Resolved::List { item, kind } => self.walk_list(v, item, kind, record, depth)?,
        }
        Ok(())
    }

    fn check_scalar(&mut self, kind: Scalar, v: &Value) {
        let message = match (kind, v) {
            (_, Value::Null) => return,
            (Scalar::String, Value::String(_))
            | (Scalar::Numeric, Value::Number(_))
            | (Scalar::Boolean, Value::Bool(_))
            | (Scalar::Any, Value::String(_) | Value::Number(_) | Value::Bool(_)) => return,
            (Scalar::Numeric, other) => {
                format!("expected numeric (int or float), got {}", gofmt::t(other))
            }
            (Scalar::String, other) => format!("expected string, got {}", go_sharp(other)),
            (Scalar::Boolean, other) => {
                format!("expected boolean, got {}", go_wrapped(other))
            }
            (Scalar::Any, other) => {
                format!("expected any scalar, got {}", go_wrapped(other))
            }
        };
        self.error(&message);
    }

    fn walk_map(
        &mut self,
        v: &'v Value,
        resolved: Resolved<'_>,
        record: bool,
        depth: usize,
    ) -> Result<(), WalkError> {
        let map = match v {
            Value::Object(map) => map,
            Value::Null => return Ok(()),
            other => {
                if self.strict {
                    self.error(&format!("expected map, got {}", go_wrapped(other)));
                } else if record {
                    self.record();
                }
                return Ok(());
            }
        };
        for (key, child) in map {
            if walk::skipped(&self.path, key) {
                continue;
            }
            let (child_type, declared) = resolved.member(key);
            if self.strict && !declared && resolved.closed() {
                self.path.push(Step::Field(key));
                self.error("field not declared in schema");
                self.path.pop();
                // structured-merge-diff stops looking at this map.
                break;
            }
            self.path.push(Step::Field(key));
            let result = self.walk(child, child_type, record, depth + 1);
            if record
                && (child.is_null() || child.as_object().is_some_and(|m| m.is_empty()) || !declared)
            {
                self.record();
            }
            self.path.pop();
            result?;
        }
        Ok(())
    }

    fn walk_list(
        &mut self,
        v: &'v Value,
        item_type: &TypeRef,
        kind: &ListKind,
        record: bool,
        depth: usize,
    ) -> Result<(), WalkError> {
        let items = match v {
            Value::Array(items) => items,
            Value::Null => return Ok(()),
            other => {
                if self.strict {
                    self.error(&format!("expected list, got {}", go_wrapped(other)));
                } else if record {
                    self.record();
                }
                return Ok(());
            }
        };
        if matches!(kind, ListKind::Atomic) {
            if self.strict {
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Step::Owned(path::index(i)));
                    let result = self.walk(item, item_type, false, depth + 1);
                    self.path.pop();
                    result?;
                }
            }
            if record {
                self.record();
            }
            return Ok(());
        }
        let keyed = match list_items::key(items, kind, item_type, !self.strict) {
            Ok(keyed) => keyed,
            Err(e) => {
                self.error(&e.message());
                return Ok(());
            }
        };
        for item in keyed.items {
            self.path.push(Step::Owned(item.pe.clone()));
            let result = match item.single() {
                Some(single) => self.walk(single, item_type, record, depth + 1),
                // A repeated item is owned as a whole.
                None => Ok(()),
            };
            if record {
                self.record();
            }
            self.path.pop();
            result?;
        }
        Ok(())
    }
}

/// Go's `%v` of structured-merge-diff's wrapped value, a pointer to a struct holding the
/// decoded value: `&{3}`, `&{map[a:b]}`.
fn go_wrapped(v: &Value) -> String {
    format!("&{{{}}}", gofmt::v(v))
}

/// Go's `%#v` of structured-merge-diff's wrapped value (`&value.valueUnstructured{Value:3}`).
fn go_sharp(v: &Value) -> String {
    format!("&value.valueUnstructured{{Value:{}}}", gofmt::sharp_v(v))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn deployment() -> TypeRef {
        TypeRef::root("io.k8s.api.apps.v1.Deployment")
    }

    #[test]
    fn wrapped_values_print_like_go() {
        assert_eq!(go_wrapped(&json!(3)), "&{3}");
        assert_eq!(go_wrapped(&json!({"a": ["x", 1]})), "&{map[a:[x 1]]}");
        assert_eq!(
            go_sharp(&json!(["x", null])),
            r#"&value.valueUnstructured{Value:[]interface {}{"x", interface {}(nil)}}"#
        );
    }

    #[test]
    fn applied_deployment_fields() {
        let config = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {
                    "metadata": {"labels": {"app": "nginx"}},
                    "spec": {"containers": [{
                        "name": "nginx", "image": "nginx:1.14.2",
                        "ports": [{"containerPort": 80}]
                    }]}
                }
            }
        });
        let set = field_set(&config, &deployment(), true).unwrap();
        assert_eq!(
            Value::Object(set),
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:name": {}, "f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                            ".": {}, "f:name": {}, "f:image": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {}, "f:containerPort": {}
                            }}
                        }}}
                    }
                }
            })
        );
    }

    #[test]
    fn empty_and_null_values_are_owned() {
        let pod = json!({"spec": {"volumes": [{"name": "cache", "emptyDir": {}}], "securityContext": null}});
        let set = field_set(&pod, &TypeRef::root("io.k8s.api.core.v1.Pod"), true).unwrap();
        assert_eq!(
            Value::Object(set),
            json!({"f:spec": {
                "f:securityContext": {},
                "f:volumes": {"k:{\"name\":\"cache\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}}
            }})
        );
    }

    #[test]
    fn deduced_objects_own_every_key() {
        let cr = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"labels": {"a": "b"}}, "spec": {"size": 3, "list": [1, 2]}});
        let set = field_set(&cr, &TypeRef::root("com.example.v1.W"), true).unwrap();
        assert_eq!(
            Value::Object(set),
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:labels": {"f:a": {}}},
                "f:spec": {".": {}, "f:size": {}, "f:list": {}}
            })
        );
    }

    #[test]
    fn validation_errors() {
        let bad = json!({"spec": {"replicas": "three", "bogus": 1}});
        let err = field_set(&bad, &deployment(), true).unwrap_err();
        // structured-merge-diff stops at the first undeclared field of a map.
        assert_eq!(err.message(), ".spec.bogus: field not declared in schema");
        let bad = json!({"spec": {"replicas": "three"}});
        assert_eq!(
            field_set(&bad, &deployment(), true).unwrap_err().message(),
            ".spec.replicas: expected numeric (int or float), got string"
        );
        let dup = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "env": [{"name": "foo", "value": "x"}, {"name": "foo", "value": "y"}]}
        ]}}}});
        assert_eq!(
            field_set(&dup, &deployment(), true).unwrap_err().message(),
            r#".spec.template.spec.containers[name="app"].env: duplicate entries for key [name="foo"]"#
        );
        let nokey = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
        assert_eq!(
            field_set(&nokey, &deployment(), true)
                .unwrap_err()
                .message(),
            r#".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#
        );
        let not_string = json!({"metadata": {"name": 3}});
        assert_eq!(
            field_set(&not_string, &deployment(), true)
                .unwrap_err()
                .message(),
            ".metadata.name: expected string, got &value.valueUnstructured{Value:3}"
        );
        // Atomic values are validated too.
        let selector = json!({"spec": {"selector": {"matchLabels": {"a": 1}}}});
        assert!(field_set(&selector, &deployment(), true).is_err());
    }

    #[test]
    fn repeated_items_in_stored_objects_are_owned_whole() {
        let pod = json!({"spec": {"containers": [{"name": "a", "env": [
            {"name": "x", "value": "1"}, {"name": "x", "value": "2"}, {"name": "y", "value": "3"}
        ]}]}});
        let set = field_set(&pod, &TypeRef::root("io.k8s.api.core.v1.Pod"), false).unwrap();
        let env = set
            .get("f:spec")
            .and_then(|s| s.get("f:containers"))
            .and_then(|c| c.get("k:{\"name\":\"a\"}"))
            .and_then(|c| c.get("f:env"))
            .unwrap();
        assert_eq!(
            env,
            &json!({"k:{\"name\":\"x\"}": {}, "k:{\"name\":\"y\"}": {".": {}, "f:name": {}, "f:value": {}}})
        );
    }
}
