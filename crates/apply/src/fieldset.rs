//! Sets of field paths, kept in the `fieldsV1` form itself.
//!
//! A set is a JSON object whose keys are serialized path elements (`f:spec`,
//! `k:{"name":"nginx"}`); each value is the set below that element. An element is a
//! *member* of the set when its value is `{}` or contains the key `"."`; a value with
//! other keys only lists members further down. This is exactly how Kubernetes stores
//! `metadata.managedFields[].fieldsV1`, so entries read from an object are used
//! without conversion and untouched entries are written back as they were.
//!
//! Operations follow structured-merge-diff's `fieldpath.Set`: union, intersection,
//! difference (member by member) and recursive difference (whole subtrees). The sets
//! they produce are normalized: no `"."` without siblings, no empty non-member nodes.
//! Recursion follows the nesting of the sets, which is bounded by the depth checks on
//! the objects they come from.

use crate::path::{self, Step};
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// A set of paths (the `fieldsV1` object).
pub(crate) type Set = Map<String, Value>;

/// The key marking that an element with children is itself a member.
const SELF: &str = ".";

fn member_value(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty() || m.contains_key(SELF),
        _ => true,
    }
}

fn has_children(m: &Set) -> bool {
    m.keys().any(|k| k != SELF)
}

/// Takes the membership marker out of a child node, returning whether it was a member.
fn take_membership(m: &mut Set) -> bool {
    m.is_empty() || m.remove(SELF).is_some()
}

/// Puts the membership marker back; returns whether the node must be kept.
fn restore_membership(member: bool, m: &mut Set) -> bool {
    if m.is_empty() {
        return member;
    }
    if member {
        m.insert(SELF.to_owned(), Value::Object(Map::new()));
    }
    true
}

/// Adds `path` as a member. The empty path (the object itself) is never tracked.
pub(crate) fn insert(set: &mut Set, path: &[Step<'_>]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut buf = String::new();
    let mut node = set;
    for step in parents {
        step.write_into(&mut buf);
        match node.get_mut(buf.as_str()) {
            Some(Value::Object(child)) if child.is_empty() => {
                // A member leaf gains children: keep its membership explicit.
                child.insert(SELF.to_owned(), Value::Object(Map::new()));
            }
            Some(Value::Object(_)) => {}
            Some(other) => {
                let mut m = Map::new();
                m.insert(SELF.to_owned(), Value::Object(Map::new()));
                *other = Value::Object(m);
            }
            None => {
                node.insert(buf.clone(), Value::Object(Map::new()));
            }
        }
        let Some(Value::Object(child)) = node.get_mut(buf.as_str()) else {
            return;
        };
        node = child;
    }
    last.write_into(&mut buf);
    match node.get_mut(buf.as_str()) {
        Some(Value::Object(child)) => {
            if !child.is_empty() && !child.contains_key(SELF) {
                child.insert(SELF.to_owned(), Value::Object(Map::new()));
            }
        }
        Some(other) => *other = Value::Object(Map::new()),
        None => {
            node.insert(buf, Value::Object(Map::new()));
        }
    }
}

/// Adds a path given as serialized steps.
#[cfg(test)]
pub(crate) fn insert_serialized<S: AsRef<str>>(set: &mut Set, path: &[S]) {
    let steps: Vec<Step<'_>> = path
        .iter()
        .map(|s| Step::Owned(s.as_ref().to_owned()))
        .collect();
    insert(set, &steps);
}

/// Whether `path` (serialized steps) is a member.
pub(crate) fn contains<S: AsRef<str>>(set: &Set, path: &[S]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut node = set;
    for step in parents {
        match node.get(step.as_ref()) {
            Some(Value::Object(child)) => node = child,
            _ => return false,
        }
    }
    node.get(last.as_ref()).is_some_and(member_value)
}

/// The subset below `step` (empty if none).
pub(crate) fn child<'s>(set: &'s Set, step: &str) -> Option<&'s Set> {
    match set.get(step) {
        Some(Value::Object(m)) if has_children(m) => Some(m),
        _ => None,
    }
}

/// Whether `step` is a member at this level.
pub(crate) fn has_member(set: &Set, step: &str) -> bool {
    set.get(step).is_some_and(member_value)
}

/// Whether the set has no members.
pub(crate) fn is_empty(set: &Set) -> bool {
    // Normalized sets have no empty non-member nodes, so any key means a member.
    !set.keys().any(|k| k != SELF)
}

/// `dst ∪= src`.
pub(crate) fn union_into(dst: &mut Set, src: &Set) {
    for (k, sv) in src {
        if k == SELF {
            continue;
        }
        match dst.get_mut(k) {
            None => {
                dst.insert(k.clone(), sv.clone());
            }
            Some(dv) => {
                let s_member = member_value(sv);
                if !matches!(dv, Value::Object(_)) {
                    *dv = Value::Object(Map::new());
                }
                if let Value::Object(dm) = dv {
                    let d_member = take_membership(dm);
                    if let Value::Object(sm) = sv {
                        union_into(dm, sm);
                    }
                    restore_membership(d_member || s_member, dm);
                }
            }
        }
    }
}

/// `dst −= remove`, member by member: members of `remove` stop being members of `dst`;
/// their children in `dst` stay unless listed too.
pub(crate) fn subtract(dst: &mut Set, remove: &Set) {
    for (k, rv) in remove {
        if k == SELF {
            continue;
        }
        let Some(dv) = dst.get_mut(k) else {
            continue;
        };
        let keep = match dv {
            Value::Object(dm) => {
                let mut d_member = take_membership(dm);
                if member_value(rv) {
                    d_member = false;
                }
                if let Value::Object(rm) = rv
                    && has_children(rm)
                    && has_children(dm)
                {
                    subtract(dm, rm);
                }
                restore_membership(d_member, dm)
            }
            _ => !member_value(rv),
        };
        if !keep {
            dst.remove(k);
        }
    }
}

/// `dst −= remove`, removing every member of `remove` together with everything below it.
pub(crate) fn subtract_recursive(dst: &mut Set, remove: &Set) {
    for (k, rv) in remove {
        if k == SELF {
            continue;
        }
        if member_value(rv) {
            dst.remove(k);
            continue;
        }
        let Some(Value::Object(dm)) = dst.get_mut(k) else {
            continue;
        };
        let Value::Object(rm) = rv else {
            continue;
        };
        let d_member = take_membership(dm);
        subtract_recursive(dm, rm);
        if !restore_membership(d_member, dm) {
            dst.remove(k);
        }
    }
}

/// `a ∩ b`.
pub(crate) fn intersection(a: &Set, b: &Set) -> Set {
    let mut out = Set::new();
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    for (k, sv) in small {
        if k == SELF {
            continue;
        }
        let Some(lv) = large.get(k) else {
            continue;
        };
        let member = member_value(sv) && member_value(lv);
        let mut children = match (sv, lv) {
            (Value::Object(sm), Value::Object(lm)) if has_children(sm) && has_children(lm) => {
                intersection(sm, lm)
            }
            _ => Set::new(),
        };
        if restore_membership(member, &mut children) {
            out.insert(k.clone(), Value::Object(children));
        }
    }
    out
}

/// Every member path, in structured-merge-diff's order: at each level the members
/// (sorted), then the subsets below each element (sorted).
pub(crate) fn members(set: &Set) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut prefix = Vec::new();
    collect_members(set, &mut prefix, &mut out);
    out
}

fn collect_members(set: &Set, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut keys: Vec<&String> = set.keys().filter(|k| *k != SELF).collect();
    keys.sort_by(|a, b| path::compare(a, b));
    for k in &keys {
        if set.get(k.as_str()).is_some_and(member_value) {
            let mut p = prefix.clone();
            p.push((*k).clone());
            out.push(p);
        }
    }
    for k in keys {
        if let Some(Value::Object(m)) = set.get(k.as_str())
            && has_children(m)
        {
            prefix.push(k.clone());
            collect_members(m, prefix, out);
            prefix.pop();
        }
    }
}

/// Sorts members the way [`members`] lists them.
pub(crate) fn compare_paths(a: &[String], b: &[String]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match path::compare(x, y) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// A set of dotted field paths (`status`, `metadata.labels`), for reset fields.
pub(crate) fn from_dotted(paths: &[&str]) -> Set {
    let mut set = Set::new();
    for p in paths {
        let steps: Vec<Step<'_>> = p
            .split('.')
            .filter(|s| !s.is_empty())
            .map(Step::Field)
            .collect();
        insert(&mut set, &steps);
    }
    set
}

/// Checks that `v` is a well-formed `fieldsV1` object: objects all the way down and
/// keys that are `"."` or valid path elements. With `canonicalize`, rewrites keys into
/// the form structured-merge-diff serializes (sorted list-map keys, compact JSON).
pub(crate) fn validate(v: &mut Value, canonicalize: bool) -> Result<(), String> {
    let Value::Object(m) = v else {
        return Err("expected an object".into());
    };
    let mut renames = Vec::new();
    for (k, child) in m.iter_mut() {
        if k != SELF {
            if canonicalize {
                match path::canonical(k) {
                    Some(c) if c != *k => renames.push((k.clone(), c)),
                    Some(_) => {}
                    None => return Err(format!("invalid path element {k:?}")),
                }
            } else if !k.starts_with("f:") && !path::is_valid(k) {
                return Err(format!("invalid path element {k:?}"));
            }
        } else if !matches!(child, Value::Object(c) if c.is_empty()) {
            return Err("expected an empty object for \".\"".into());
        }
        validate(child, canonicalize)?;
    }
    for (old, new) in renames {
        if let Some(child) = m.remove(&old) {
            match m.get_mut(&new) {
                Some(Value::Object(existing)) => {
                    if let Value::Object(c) = child {
                        let member =
                            take_membership(existing) || c.is_empty() || c.contains_key(SELF);
                        union_into(existing, &c);
                        restore_membership(member, existing);
                    }
                }
                _ => {
                    m.insert(new, child);
                }
            }
        }
    }
    // A lone "." is spelled `{}`.
    if m.len() == 1 && m.contains_key(SELF) {
        m.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn set(v: Value) -> Set {
        match v {
            Value::Object(m) => m,
            _ => Set::new(),
        }
    }

    fn ins(s: &mut Set, path: &[&str]) {
        insert_serialized(s, path);
    }

    #[test]
    fn insert_marks_members_and_parents() {
        let mut s = Set::new();
        ins(&mut s, &["f:spec", "f:replicas"]);
        assert_eq!(
            Value::Object(s.clone()),
            json!({"f:spec": {"f:replicas": {}}})
        );
        ins(&mut s, &["f:spec"]);
        assert_eq!(
            Value::Object(s.clone()),
            json!({"f:spec": {".": {}, "f:replicas": {}}})
        );
        let mut t = Set::new();
        ins(&mut t, &["f:a"]);
        ins(&mut t, &["f:a", "f:b"]);
        assert_eq!(Value::Object(t), json!({"f:a": {".": {}, "f:b": {}}}));
        assert!(contains(&s, &["f:spec"]));
        assert!(contains(&s, &["f:spec", "f:replicas"]));
        assert!(!contains(&s, &["f:status"]));
        let mut root = Set::new();
        insert(&mut root, &[]);
        assert!(is_empty(&root));
    }

    #[test]
    fn difference_is_member_by_member() {
        let mut s = set(json!({"f:a": {".": {}, "f:b": {}}, "f:c": {}}));
        subtract(&mut s, &set(json!({"f:a": {}})));
        assert_eq!(
            Value::Object(s.clone()),
            json!({"f:a": {"f:b": {}}, "f:c": {}})
        );
        subtract(&mut s, &set(json!({"f:a": {"f:b": {}}})));
        assert_eq!(Value::Object(s.clone()), json!({"f:c": {}}));
        subtract(&mut s, &set(json!({"f:c": {"f:d": {}}})));
        assert_eq!(Value::Object(s.clone()), json!({"f:c": {}}));
        subtract(&mut s, &set(json!({"f:c": {".": {}, "f:d": {}}})));
        assert!(is_empty(&s));
    }

    #[test]
    fn recursive_difference_drops_subtrees() {
        let mut s = set(
            json!({"f:status": {"f:x": {}}, "f:metadata": {"f:labels": {"f:a": {}}, "f:name": {}}}),
        );
        subtract_recursive(&mut s, &from_dotted(&["status", "metadata.labels"]));
        assert_eq!(Value::Object(s), json!({"f:metadata": {"f:name": {}}}));
    }

    #[test]
    fn union_and_intersection() {
        let mut a = set(json!({"f:a": {"f:b": {}}}));
        union_into(&mut a, &set(json!({"f:a": {}, "f:c": {}})));
        assert_eq!(
            Value::Object(a.clone()),
            json!({"f:a": {".": {}, "f:b": {}}, "f:c": {}})
        );
        let i = intersection(
            &a,
            &set(json!({"f:a": {"f:b": {}, "f:z": {}}, "f:c": {"f:q": {}}})),
        );
        assert_eq!(Value::Object(i), json!({"f:a": {"f:b": {}}}));
    }

    #[test]
    fn members_are_listed_in_smd_order() {
        let s = set(json!({
            "f:spec": {"f:template": {"f:x": {}}, "f:replicas": {}},
            "f:metadata": {"f:labels": {"f:app": {}}}
        }));
        let m: Vec<String> = members(&s).iter().map(|p| path::display(p)).collect();
        assert_eq!(
            m,
            vec![".metadata.labels.app", ".spec.replicas", ".spec.template.x"]
        );
    }

    #[test]
    fn validation_rejects_garbage_and_canonicalizes() {
        let mut ok = json!({"f:a": {".": {}, "k:{ \"b\":1, \"a\":2 }": {}}});
        validate(&mut ok, true).unwrap();
        assert_eq!(ok, json!({"f:a": {".": {}, "k:{\"a\":2,\"b\":1}": {}}}));
        for bad in [
            json!([]),
            json!({"x:1": {}}),
            json!({"f:a": 1}),
            json!({".": {"f:a": {}}}),
        ] {
            let mut bad = bad;
            assert!(validate(&mut bad, true).is_err(), "{bad}");
        }
        let mut lone = json!({"f:a": {".": {}}});
        validate(&mut lone, false).unwrap();
        assert_eq!(lone, json!({"f:a": {}}));
    }
}
