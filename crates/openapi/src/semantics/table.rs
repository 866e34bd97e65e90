//! Reads `table.txt`, the merge-semantics table.
//!
//! Format, one item a line (`#` starts a comment line):
//!
//! ```text
//! [io.k8s.api.core.v1]                  the package prefix of the definitions below
//! PodSpec                               a definition (prefix + "." + name)
//! LabelSelector struct=atomic           ... whose struct type is atomic (or granular)
//!   containers patch=merge key=name list=map:name
//!   nodeSelector map=atomic
//! ```
//!
//! Indented lines are fields of the definition above, by JSON name, followed by any of
//! `patch=merge|retainKeys|merge,retainKeys|replace`, `key=<patch merge key>`,
//! `list=atomic|set|map:<key>,<key>` and `map=atomic|granular`.

use super::{DefinitionSemantics, ListSemantics, ListType, MapType, PatchStrategy, Table};
use std::collections::HashMap;

pub(crate) fn parse(text: &'static str) -> Table {
    let mut definitions: HashMap<String, DefinitionSemantics> = HashMap::new();
    let mut errors = Vec::new();
    let mut prefix: Option<&'static str> = None;
    let mut current: Option<String> = None;

    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(inner) = trimmed.strip_prefix('[') {
            match inner.strip_suffix(']') {
                Some(p) if !p.is_empty() => {
                    prefix = Some(p);
                    current = None;
                }
                _ => errors.push(format!("line {number}: bad package line")),
            }
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        let mut words = trimmed.split_whitespace();
        let Some(name) = words.next() else { continue };
        if indented {
            let Some(definition) = current.as_ref().and_then(|d| definitions.get_mut(d)) else {
                errors.push(format!("line {number}: field outside a definition"));
                continue;
            };
            match parse_field(words) {
                Ok(semantics) => {
                    if definition.fields.insert(name, semantics).is_some() {
                        errors.push(format!("line {number}: field {name} listed twice"));
                    }
                }
                Err(e) => errors.push(format!("line {number}: {e}")),
            }
        } else {
            let Some(prefix) = prefix else {
                errors.push(format!("line {number}: definition before a package line"));
                continue;
            };
            let full = format!("{prefix}.{name}");
            let mut definition = DefinitionSemantics::default();
            for word in words {
                match word.strip_prefix("struct=").and_then(parse_map_type) {
                    Some(t) => definition.map_type = Some(t),
                    None => errors.push(format!("line {number}: unknown word {word:?}")),
                }
            }
            if definitions.insert(full.clone(), definition).is_some() {
                errors.push(format!("line {number}: definition {full} listed twice"));
            }
            current = Some(full);
        }
    }
    Table {
        definitions,
        errors,
    }
}

fn parse_field(words: impl Iterator<Item = &'static str>) -> Result<ListSemantics, String> {
    let mut s = ListSemantics::default();
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| format!("expected key=value, got {word:?}"))?;
        match key {
            "patch" => {
                s.patch_strategy = Some(
                    PatchStrategy::parse(value)
                        .ok_or_else(|| format!("unknown patch strategy {value:?}"))?,
                )
            }
            "key" if !value.is_empty() => s.patch_merge_key = Some(value),
            "list" => match value.split_once(':') {
                Some(("map", keys)) => {
                    s.list_type = Some(ListType::Map);
                    s.list_map_keys = keys.split(',').filter(|k| !k.is_empty()).collect();
                    if s.list_map_keys.is_empty() {
                        return Err("map list without keys".into());
                    }
                }
                None if value == "atomic" => s.list_type = Some(ListType::Atomic),
                None if value == "set" => s.list_type = Some(ListType::Set),
                _ => return Err(format!("unknown list type {value:?}")),
            },
            "map" => {
                s.map_type = Some(
                    parse_map_type(value).ok_or_else(|| format!("unknown map type {value:?}"))?,
                )
            }
            _ => return Err(format!("unknown key {key:?}")),
        }
    }
    Ok(s)
}

fn parse_map_type(value: &str) -> Option<MapType> {
    match value {
        "atomic" => Some(MapType::Atomic),
        "granular" => Some(MapType::Granular),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn parses_definitions_and_fields() {
        let t = parse(
            "# comment\n[a.b]\nX struct=atomic\n  l patch=merge key=k list=map:k,p\n  m map=granular\nY\n  s list=set\n",
        );
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        let x = t.definitions.get("a.b.X").unwrap();
        assert_eq!(x.map_type, Some(MapType::Atomic));
        let l = x.fields.get("l").unwrap();
        assert_eq!(l.patch_strategy, Some(PatchStrategy::Merge));
        assert_eq!(l.patch_merge_key, Some("k"));
        assert_eq!(l.list_type, Some(ListType::Map));
        assert_eq!(l.list_map_keys, vec!["k", "p"]);
        assert_eq!(x.fields.get("m").unwrap().map_type, Some(MapType::Granular));
        let y = t.definitions.get("a.b.Y").unwrap();
        assert_eq!(y.fields.get("s").unwrap().list_type, Some(ListType::Set));
    }

    #[test]
    fn reports_mistakes() {
        let t = parse(
            "X\n[p]\nY\n  f list=bag\n  g patch=sideways\n  h oops\n  f list=set\n  f list=set\n",
        );
        // X before package, bag, sideways, oops, duplicate f.
        assert_eq!(t.errors.len(), 5, "{:?}", t.errors);
        let t = parse("[p]\n  orphan list=set\n");
        assert_eq!(t.errors.len(), 1);
    }
}
