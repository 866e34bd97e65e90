//! Identifying the items of set and map lists.
//!
//! A set item is identified by its value (`v:"a"`), a map-list item by the values of
//! its key fields (`k:{"name":"nginx"}`), taking the schema default of a key the item
//! omits (container and service port protocols default to `TCP`). Applied
//! configurations may not repeat an item; stored objects may (Kubernetes accepts, for
//! example, two environment variables of the same name), and such an item is then
//! handled as one atomic value.

use crate::path;
use crate::schema::{self, ListKind, TypeRef};
use serde_json::Value;
use std::collections::HashMap;

/// All occurrences of one item in a list.
#[derive(Debug)]
pub(crate) struct Item<'v> {
    /// The serialized path element.
    pub(crate) pe: String,
    /// The item, more than once when duplicated.
    pub(crate) values: Vec<&'v Value>,
}

impl<'v> Item<'v> {
    /// The item when it occurs once.
    pub(crate) fn single(&self) -> Option<&'v Value> {
        match self.values.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
}

/// The items of a list, in order of first occurrence.
#[derive(Debug, Default)]
pub(crate) struct Keyed<'v> {
    pub(crate) items: Vec<Item<'v>>,
    index: Option<HashMap<String, usize>>,
}

/// Lists longer than this get a hash index for lookups.
const INDEX_THRESHOLD: usize = 12;

impl<'v> Keyed<'v> {
    /// The item identified by `pe`.
    pub(crate) fn find(&self, pe: &str) -> Option<&Item<'v>> {
        match &self.index {
            Some(index) => index.get(pe).and_then(|&i| self.items.get(i)),
            None => self.items.iter().find(|item| item.pe == pe),
        }
    }

    fn position(&self, pe: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(pe).copied(),
            None => self.items.iter().position(|item| item.pe == pe),
        }
    }
}

/// Why a list's items could not be identified (structured-merge-diff's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// `element <i>: <reason>`.
    Element(usize, String),
    /// `duplicate entries for key <pe>`.
    Duplicate(String),
}

impl KeyError {
    /// The message, as Kubernetes reports it after the list's path.
    pub(crate) fn message(&self) -> String {
        match self {
            KeyError::Element(i, reason) => format!("element {i}: {reason}"),
            KeyError::Duplicate(pe) => {
                let mut s = String::from("duplicate entries for key ");
                path::write_display(&mut s, pe);
                s
            }
        }
    }
}

/// The path element of one item of a set or map list.
pub(crate) fn item_pe(
    item: &Value,
    kind: &ListKind,
    item_type: &TypeRef,
) -> Result<String, String> {
    match kind {
        ListKind::Map(keys) => {
            let map = match item {
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into());
                }
                Value::Object(map) => map,
                _ => return Err("associative list with keys may not have non-map elements".into()),
            };
            let mut defaults = Vec::new();
            let mut fields: Vec<(&str, &Value)> = Vec::with_capacity(keys.len());
            for key in keys {
                match map.get(*key) {
                    Some(v) => fields.push((key, v)),
                    None => match schema::key_default(item_type.definition_name(), key) {
                        Some(d) => defaults.push((*key, d)),
                        None => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                            ));
                        }
                    },
                }
            }
            fields.extend(defaults.iter().map(|(k, v)| (*k, v)));
            fields.sort_by(|a, b| a.0.cmp(b.0));
            Ok(path::key(&fields))
        }
        ListKind::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            scalar => Ok(path::set_item(scalar)),
        },
        ListKind::Atomic => Err("atomic lists have no item keys".into()),
    }
}

/// Identifies the items of `list`. Repeated items are an error unless
/// `allow_duplicates`.
pub(crate) fn key<'v>(
    list: &'v [Value],
    kind: &ListKind,
    item_type: &TypeRef,
    allow_duplicates: bool,
) -> Result<Keyed<'v>, KeyError> {
    let mut keyed = Keyed {
        items: Vec::with_capacity(list.len()),
        index: None,
    };
    for (i, item) in list.iter().enumerate() {
        let pe = item_pe(item, kind, item_type).map_err(|reason| KeyError::Element(i, reason))?;
        match keyed.position(&pe) {
            Some(existing) => {
                if !allow_duplicates {
                    return Err(KeyError::Duplicate(pe));
                }
                if let Some(item_slot) = keyed.items.get_mut(existing) {
                    item_slot.values.push(item);
                }
            }
            None => {
                if let Some(index) = keyed.index.as_mut() {
                    index.insert(pe.clone(), keyed.items.len());
                }
                keyed.items.push(Item {
                    pe,
                    values: vec![item],
                });
                if keyed.index.is_none() && keyed.items.len() > INDEX_THRESHOLD {
                    keyed.index = Some(
                        keyed
                            .items
                            .iter()
                            .enumerate()
                            .map(|(i, item)| (item.pe.clone(), i))
                            .collect(),
                    );
                }
            }
        }
    }
    Ok(keyed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn port_type() -> TypeRef {
        TypeRef::Definition {
            name: "io.k8s.api.core.v1.ContainerPort",
            atomic: false,
        }
    }

    #[test]
    fn map_items_are_keyed_with_defaults() {
        let list = vec![
            json!({"containerPort": 80}),
            json!({"containerPort": 53, "protocol": "UDP"}),
        ];
        let kind = ListKind::Map(vec!["containerPort", "protocol"]);
        let keyed = key(&list, &kind, &port_type(), false).unwrap();
        let pes: Vec<&str> = keyed.items.iter().map(|i| i.pe.as_str()).collect();
        assert_eq!(
            pes,
            vec![
                r#"k:{"containerPort":80,"protocol":"TCP"}"#,
                r#"k:{"containerPort":53,"protocol":"UDP"}"#
            ]
        );
        assert!(
            keyed
                .find(r#"k:{"containerPort":80,"protocol":"TCP"}"#)
                .is_some()
        );
    }

    #[test]
    fn errors_use_structured_merge_diff_wording() {
        let kind = ListKind::Map(vec!["name"]);
        let err = key(&[json!({"image": "x"})], &kind, &TypeRef::Deduced, false).unwrap_err();
        assert_eq!(
            err.message(),
            r#"element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#
        );
        let dup = [json!({"name": "a"}), json!({"name": "a"})];
        assert_eq!(
            key(&dup, &kind, &TypeRef::Deduced, false)
                .unwrap_err()
                .message(),
            r#"duplicate entries for key [name="a"]"#
        );
        let keyed = key(&dup, &kind, &TypeRef::Deduced, true).unwrap();
        assert_eq!(keyed.items.len(), 1);
        assert!(keyed.items[0].single().is_none());
        let set_err = key(
            &[json!("a"), json!(null)],
            &ListKind::Set,
            &TypeRef::Deduced,
            false,
        )
        .unwrap_err();
        assert_eq!(
            set_err.message(),
            "element 1: associative list without keys has an element that's an explicit null"
        );
    }

    #[test]
    fn long_lists_are_indexed() {
        let list: Vec<Value> = (0..40).map(|i| json!(format!("v{i}"))).collect();
        let keyed = key(&list, &ListKind::Set, &TypeRef::Deduced, false).unwrap();
        assert_eq!(
            keyed.find(r#"v:"v33""#).unwrap().single(),
            Some(&json!("v33"))
        );
        assert!(keyed.find(r#"v:"nope""#).is_none());
    }
}
