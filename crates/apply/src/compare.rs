//! Which fields differ between two versions of an object (structured-merge-diff's
//! `Compare`).
//!
//! A leaf (scalar, atomic value, or a map or list empty or null on both sides) is
//! *added* when only the new side has it, *removed* when only the old side has it and
//! *modified* when both have it with different values. A map or list that only one
//! side has is itself added or removed, besides its contents; a map present as null
//! on one side is not (so creating `containers` where the old object had `null` does
//! not make `containers` itself added). Repeated list items are compared as a whole.

use crate::fieldset::{self, Set};
use crate::list_items::{self, Item};
use crate::path::Step;
use crate::schema::{self, ListKind, Resolved, TypeRef};
use crate::to_set;
use crate::value;
use crate::walk::{self, WalkError};
use serde_json::Value;

const CREATION_TIMESTAMP: &str = "creationTimestamp";

/// The paths that differ between two objects.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: Set,
    pub(crate) modified: Set,
    pub(crate) removed: Set,
}

impl Comparison {
    /// Drops every path below the `ignored` set from all three sets.
    pub(crate) fn exclude(&mut self, ignored: &Set) {
        if ignored.is_empty() {
            return;
        }
        fieldset::subtract_recursive(&mut self.added, ignored);
        fieldset::subtract_recursive(&mut self.modified, ignored);
        fieldset::subtract_recursive(&mut self.removed, ignored);
    }

    /// `added ∪ modified`.
    pub(crate) fn changed(&self) -> Set {
        let mut set = self.added.clone();
        fieldset::union_into(&mut set, &self.modified);
        set
    }

    /// `added ∪ modified`, taking the comparison apart rather than copying it.
    pub(crate) fn into_changed(self) -> Set {
        let mut set = self.added;
        fieldset::union_into(&mut set, &self.modified);
        set
    }

    /// `added ∪ modified ∪ removed`.
    pub(crate) fn touched(&self) -> Set {
        let mut set = self.changed();
        fieldset::union_into(&mut set, &self.removed);
        set
    }
}

/// Compares `old` with `new`, both of type `ty`. `metadata.managedFields` is ignored.
pub(crate) fn compare(old: &Value, new: &Value, ty: &TypeRef) -> Result<Comparison, WalkError> {
    let mut c = Comparer {
        out: Comparison::default(),
        path: Vec::new(),
    };
    c.walk(Some(old), Some(new), ty, 0)?;
    Ok(c.out)
}

struct Comparer<'v> {
    out: Comparison,
    path: Vec<Step<'v>>,
}

impl<'v> Comparer<'v> {
    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        match (lhs, rhs) {
            (None, Some(_)) => fieldset::insert(&mut self.out.added, &self.path),
            (Some(_), None) => fieldset::insert(&mut self.out.removed, &self.path),
            (Some(l), Some(r)) if !value::equal(l, r) => {
                fieldset::insert(&mut self.out.modified, &self.path)
            }
            _ => {}
        }
    }

    /// Marks a map or list that only one side has.
    fn container(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        match (lhs, rhs) {
            (None, Some(_)) => fieldset::insert(&mut self.out.added, &self.path),
            (Some(_), None) => fieldset::insert(&mut self.out.removed, &self.path),
            _ => {}
        }
    }

    fn walk(
        &mut self,
        lhs: Option<&'v Value>,
        rhs: Option<&'v Value>,
        ty: &TypeRef,
        depth: usize,
    ) -> Result<(), WalkError> {
        walk::check_depth(depth)?;
        let resolved = ty.resolve();
        match resolved {
            Resolved::Scalar(_)
            | Resolved::Struct { atomic: true, .. }
            | Resolved::Map { atomic: true, .. }
            | Resolved::List {
                kind: ListKind::Atomic,
                ..
            } => self.leaf(lhs, rhs),
            Resolved::Deduced => {
                let map_like =
                    |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::Object(_)));
                if map_like(lhs) && map_like(rhs) {
                    self.walk_map(lhs, rhs, resolved, depth)?;
                } else {
                    self.leaf(lhs, rhs);
                    // A map replaced by (or replacing) a scalar or list: its contents
                    // appear or disappear too.
                    if lhs.is_some_and(Value::is_object) || rhs.is_some_and(Value::is_object) {
                        let l = lhs.filter(|v| v.is_object());
                        let r = rhs.filter(|v| v.is_object());
                        self.walk_map(l, r, resolved, depth)?;
                    }
                }
            }
            Resolved::Struct { .. } | Resolved::Map { .. } | Resolved::DeducedRoot => {
                self.walk_map(lhs, rhs, resolved, depth)?;
            }
            Resolved::List { item, kind } => self.walk_list(lhs, rhs, item, kind, depth)?,
        }
        Ok(())
    }

    fn walk_map(
        &mut self,
        lhs: Option<&'v Value>,
        rhs: Option<&'v Value>,
        resolved: Resolved<'_>,
        depth: usize,
    ) -> Result<(), WalkError> {
        if walk::empty_map(lhs) && walk::empty_map(rhs) {
            self.leaf(lhs, rhs);
            return Ok(());
        }
        let (lm, rm) = (walk::as_map(lhs), walk::as_map(rhs));
        let mut keys = walk::union_keys(lm, rm);
        let object_meta =
            matches!(resolved, Resolved::Struct { def, .. } if def.name == schema::OBJECT_META);
        if object_meta && !keys.contains(&CREATION_TIMESTAMP) {
            keys.push(CREATION_TIMESTAMP);
        }
        for key in keys {
            if walk::skipped(&self.path, key) {
                continue;
            }
            let (child_type, _) = resolved.member(key);
            let side = |m: Option<&'v serde_json::Map<String, Value>>| match m {
                // Kubernetes serializes an unset creation timestamp of a present
                // ObjectMeta as null; compare as if it were there.
                Some(m) if object_meta && key == CREATION_TIMESTAMP => {
                    Some(m.get(key).unwrap_or(&Value::Null))
                }
                Some(m) => m.get(key),
                None => None,
            };
            let (l, r) = (side(lm), side(rm));
            if l.is_none() && r.is_none() {
                continue;
            }
            self.path.push(Step::Field(key));
            let result = self.walk(l, r, child_type, depth + 1);
            self.path.pop();
            result?;
        }
        self.container(lhs, rhs);
        Ok(())
    }

    fn walk_list(
        &mut self,
        lhs: Option<&'v Value>,
        rhs: Option<&'v Value>,
        item_type: &TypeRef,
        kind: &ListKind,
        depth: usize,
    ) -> Result<(), WalkError> {
        if walk::empty_list(lhs) && walk::empty_list(rhs) {
            self.leaf(lhs, rhs);
            return Ok(());
        }
        let key = |v: Option<&'v Value>, path: &[Step<'_>]| match v.and_then(Value::as_array) {
            Some(items) => list_items::key(items, kind, item_type, true)
                .map_err(|e| WalkError::at(path, &e.message())),
            None => Ok(list_items::Keyed::default()),
        };
        let left = key(lhs, &self.path)?;
        let right = key(rhs, &self.path)?;
        for item in &left.items {
            let other = right.find(&item.pe);
            self.item(Some(item), other, item_type, depth)?;
        }
        for item in &right.items {
            if left.find(&item.pe).is_none() {
                self.item(None, Some(item), item_type, depth)?;
            }
        }
        self.container(lhs, rhs);
        Ok(())
    }

    fn item(
        &mut self,
        l: Option<&Item<'v>>,
        r: Option<&Item<'v>>,
        item_type: &TypeRef,
        depth: usize,
    ) -> Result<(), WalkError> {
        let Some(pe) = l.or(r).map(|i| i.pe.clone()) else {
            return Ok(());
        };
        self.path.push(Step::Owned(pe));
        let result = match (l, r) {
            (Some(l), Some(r)) => match (l.single(), r.single()) {
                (Some(lv), Some(rv)) => self.walk(Some(lv), Some(rv), item_type, depth + 1),
                _ => self.repeated(l, r, item_type, depth),
            },
            (Some(l), None) => match l.single() {
                Some(lv) => self.walk(Some(lv), None, item_type, depth + 1),
                None => {
                    fieldset::insert(&mut self.out.removed, &self.path);
                    Ok(())
                }
            },
            (None, Some(r)) => match r.single() {
                Some(rv) => self.walk(None, Some(rv), item_type, depth + 1),
                None => {
                    fieldset::insert(&mut self.out.added, &self.path);
                    Ok(())
                }
            },
            (None, None) => Ok(()),
        };
        self.path.pop();
        result
    }

    /// An item repeated on at least one side: compared as one value. When it changes,
    /// the fields of a side where it was unique change with it.
    fn repeated(
        &mut self,
        l: &Item<'v>,
        r: &Item<'v>,
        item_type: &TypeRef,
        depth: usize,
    ) -> Result<(), WalkError> {
        let same = l.values.len() == r.values.len()
            && l.values
                .iter()
                .zip(&r.values)
                .all(|(a, b)| value::equal(a, b));
        if same {
            return Ok(());
        }
        fieldset::insert(&mut self.out.modified, &self.path);
        if let Some(lv) = l.single() {
            to_set::add_below(&mut self.out.removed, &self.path, lv, item_type, depth + 1)?;
        }
        if let Some(rv) = r.single() {
            to_set::add_below(&mut self.out.added, &self.path, rv, item_type, depth + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn cmp(def: &str, old: Value, new: Value) -> (Value, Value, Value) {
        let c = compare(&old, &new, &TypeRef::root(def)).unwrap();
        (
            Value::Object(c.added),
            Value::Object(c.modified),
            Value::Object(c.removed),
        )
    }

    #[test]
    fn scalar_changes() {
        let (a, m, r) = cmp(
            "io.k8s.api.apps.v1.Deployment",
            json!({"spec": {"replicas": 1, "paused": true}}),
            json!({"spec": {"replicas": 2, "minReadySeconds": 5}}),
        );
        assert_eq!(a, json!({"f:spec": {"f:minReadySeconds": {}}}));
        assert_eq!(m, json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(r, json!({"f:spec": {"f:paused": {}}}));
    }

    #[test]
    fn new_maps_and_items_are_added_themselves() {
        let (a, _, _) = cmp(
            "io.k8s.api.core.v1.Pod",
            json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}),
            json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        );
        assert_eq!(
            a,
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}}}}
            })
        );
        // A new ObjectMeta brings its (null) creation timestamp, as in Kubernetes.
        let (a, _, _) = cmp(
            "io.k8s.api.core.v1.ReplicationController",
            json!({"spec": {}}),
            json!({"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}),
        );
        assert_eq!(
            a,
            json!({"f:spec": {"f:template": {".": {}, "f:metadata": {
                ".": {}, "f:creationTimestamp": {}, "f:labels": {".": {}, "f:a": {}}
            }}}})
        );
    }

    #[test]
    fn removed_subtrees_list_every_path() {
        let (_, _, r) = cmp(
            "io.k8s.api.core.v1.Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d"}]}}),
            json!({"spec": {"containers": [{"name": "d"}]}}),
        );
        assert_eq!(
            r,
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}}}}})
        );
    }

    #[test]
    fn empty_and_null_are_leaves() {
        let (a, m, r) = cmp(
            "io.k8s.api.core.v1.Pod",
            json!({"spec": {"securityContext": {}}}),
            json!({"spec": {"securityContext": null, "volumes": []}}),
        );
        assert_eq!(a, json!({"f:spec": {"f:volumes": {}}}));
        assert_eq!(m, json!({"f:spec": {"f:securityContext": {}}}));
        assert_eq!(r, json!({}));
    }

    #[test]
    fn managed_fields_are_ignored() {
        let (a, m, r) = cmp(
            "io.k8s.api.core.v1.ConfigMap",
            json!({"metadata": {"managedFields": [{"manager": "a"}]}}),
            json!({"metadata": {}}),
        );
        assert_eq!((a, m, r), (json!({}), json!({}), json!({})));
    }

    #[test]
    fn repeated_items_compare_whole() {
        let (a, m, r) = cmp(
            "io.k8s.api.core.v1.Container",
            json!({"env": [{"name": "a", "value": "1"}, {"name": "b", "value": "3"}]}),
            json!({"env": [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}, {"name": "b", "value": "3"}]}),
        );
        assert_eq!(m, json!({"f:env": {"k:{\"name\":\"a\"}": {}}}));
        assert_eq!(
            r,
            json!({"f:env": {"k:{\"name\":\"a\"}": {"f:name": {}, "f:value": {}}}})
        );
        assert_eq!(a, json!({}));
    }
}
