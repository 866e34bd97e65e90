//! Stored objects read shallowly: an object's entries as slices of its JSON, so the watch
//! cache can set `metadata.resourceVersion` and pick out labels and selectable fields
//! without building a `serde_json::Value` of the whole object (and serializing it again).
//!
//! The API server stores objects as `serde_json` writes a `Value`: compact, keys sorted
//! and unique. For such input, [`with_resource_version`] gives exactly the bytes that
//! parsing, setting `resourceVersion` and serializing gave; for anything else it declines
//! and the caller takes that slow path.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The entries of one JSON object, in input order, values unparsed.
pub struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Entries<'a> {
    /// The entries of `json` if it is an object.
    pub fn parse(json: &'a [u8]) -> Option<Self> {
        serde_json::from_slice(json).ok()
    }

    /// The entries of a value if it is an object.
    pub fn of(value: &'a RawValue) -> Option<Self> {
        Self::parse(value.get().as_bytes())
    }

    /// The value of `key` (the last one, as a parser keeping one value per key would).
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Whether the keys are strictly increasing: sorted and unique, as `serde_json` writes a
    /// `Value`'s maps.
    pub fn canonical(&self) -> bool {
        self.0.windows(2).all(|pair| pair[0].0 < pair[1].0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;

        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// An object key, borrowed from the input unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }

            fn visit_string<E>(self, key: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

/// An object's entries to change and serialize again: kept as read (values as raw JSON)
/// unless set or removed. Only for objects with sorted, unique keys, so that serializing
/// gives what `serde_json` gives for the same `Value`.
pub struct Edit<'a>(Vec<(Cow<'a, str>, Cow<'a, [u8]>)>);

impl<'a> Edit<'a> {
    /// The entries to edit; `None` unless their keys are sorted and unique.
    pub fn of(entries: &Entries<'a>) -> Option<Self> {
        entries.canonical().then(|| {
            Self(
                entries
                    .0
                    .iter()
                    .map(|(k, v)| (k.clone(), Cow::Borrowed(v.get().as_bytes())))
                    .collect(),
            )
        })
    }

    /// The object `raw` to edit; `None` unless it is an object with sorted, unique keys.
    pub fn of_raw(raw: &'a RawValue) -> Option<Self> {
        Self::of(&Entries::of(raw)?)
    }

    /// The raw JSON of `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        let at = self.find(key).ok()?;
        self.0.get(at).map(|(_, v)| v.as_ref())
    }

    /// Sets `key` to the JSON `value`, where the key sorts.
    pub fn set(&mut self, key: &'a str, value: Vec<u8>) {
        match self.find(key) {
            Ok(at) => {
                if let Some(entry) = self.0.get_mut(at) {
                    entry.1 = Cow::Owned(value);
                }
            }
            Err(at) => self.0.insert(at, (Cow::Borrowed(key), Cow::Owned(value))),
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Ok(at) = self.find(key) {
            self.0.remove(at);
        }
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key))
    }

    /// The object serialized (compact).
    pub fn to_json(&self) -> Vec<u8> {
        let size = self
            .0
            .iter()
            .map(|(k, v)| k.len() + v.len() + 4)
            .sum::<usize>()
            + 2;
        let mut out = Vec::with_capacity(size);
        out.push(b'{');
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Escaped exactly as serde_json escapes keys; writing to a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, key.as_ref());
            out.push(b':');
            out.extend_from_slice(value);
        }
        out.push(b'}');
        out
    }
}

/// The object `top` (read from a stored object, with `metadata` its `metadata` object, if
/// any) serialized with `metadata.resourceVersion` set to `revision`; `None` unless `top`
/// and `metadata` have sorted, unique keys.
pub fn with_resource_version(
    top: &Entries<'_>,
    metadata: Option<&Entries<'_>>,
    revision: u64,
) -> Option<Vec<u8>> {
    let mut top = Edit::of(top)?;
    let mut metadata = match metadata {
        Some(metadata) => Edit::of(metadata)?,
        None => Edit(Vec::new()),
    };
    metadata.set("resourceVersion", format!("\"{revision}\"").into_bytes());
    let metadata = metadata.to_json();
    top.set("metadata", metadata);
    Some(top.to_json())
}

/// The parts of the object `json` that `fields` names, parsed: per top-level field, all of
/// it (`None`) or only the keys listed (a field that is not an object is kept whole).
/// `None` if `json` is not an object.
pub fn project(json: &[u8], fields: &[(&str, Option<&[&str]>)]) -> Option<Value> {
    let top = Entries::parse(json)?;
    let mut view = Map::new();
    for (field, keys) in fields {
        let Some(raw) = top.get(field) else {
            continue;
        };
        let kept = match keys.map(|keys| (keys, Entries::of(raw))) {
            Some((keys, Some(entries))) => {
                let mut kept = Map::new();
                for key in keys {
                    if let Some(value) = entries.get(key) {
                        kept.insert((*key).to_string(), serde_json::from_str(value.get()).ok()?);
                    }
                }
                Value::Object(kept)
            }
            _ => serde_json::from_str(raw.get()).ok()?,
        };
        view.insert((*field).to_string(), kept);
    }
    Some(Value::Object(view))
}

/// The value at a dotted `path` below `top`, parsed; `None` where the path leaves objects
/// or a key is missing. `opened` keeps the objects opened so far (by their index in `top`)
/// for the next paths through them.
pub fn at_path<'a>(
    top: &Entries<'a>,
    opened: &mut Vec<(usize, Option<Entries<'a>>)>,
    path: &str,
) -> Option<Value> {
    let mut segments = path.split('.');
    let first = segments.next()?;
    let index = top.0.iter().rposition(|(k, _)| k == first)?;
    let (_, raw) = top.0.get(index)?;
    let Some(second) = segments.next() else {
        return serde_json::from_str(raw.get()).ok();
    };
    let slot = match opened.iter().position(|(i, _)| *i == index) {
        Some(slot) => slot,
        None => {
            opened.push((index, Entries::of(raw)));
            opened.len() - 1
        }
    };
    let raw = opened.get(slot)?.1.as_ref()?.get(second)?;
    deeper(raw, segments)
}

/// The value at `segments` below `raw`, parsed.
fn deeper<'a, 's>(mut raw: &'a RawValue, segments: impl Iterator<Item = &'s str>) -> Option<Value> {
    for segment in segments {
        raw = Entries::of(raw)?.get(segment)?;
    }
    serde_json::from_str(raw.get()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The slow path: parse, set, serialize.
    fn by_value(json: &[u8], revision: u64) -> Vec<u8> {
        let mut object: Value = serde_json::from_slice(json).unwrap_or_default();
        kyb_apimachinery::meta::metadata_mut(&mut object)
            .insert("resourceVersion".into(), revision.to_string().into());
        serde_json::to_vec(&object).unwrap_or_default()
    }

    fn read_and_set(stored: &[u8], revision: u64) -> Option<Vec<u8>> {
        let top = Entries::parse(stored)?;
        let metadata = match top.get("metadata") {
            Some(raw) => Some(Entries::of(raw)?),
            None => None,
        };
        with_resource_version(&top, metadata.as_ref(), revision)
    }

    #[test]
    fn sets_the_resource_version_as_parsing_would() {
        for object in [
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n", "uid": "u", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}, "status": {}}),
            json!({"metadata": {"resourceVersion": "3", "name": "x"}}),
            json!({"metadata": {"zzz": 1}}),
            json!({"metadata": {"aaa": 1}}),
            json!({"metadata": {}}),
            json!({"apiVersion": "v1", "kind": "X"}),
            json!({"zzz": "after metadata"}),
            json!({}),
            json!({"kind": "Secret", "metadata": {"name": "q\"uote\\ \u{1} ünï"}, "data": {"k\"ey": "dmFs"}, "n": 1.5e300, "m": -3}),
        ] {
            let stored = serde_json::to_vec(&object).unwrap_or_default();
            let fast = read_and_set(&stored, 42);
            assert_eq!(
                fast.as_deref().map(String::from_utf8_lossy),
                Some(String::from_utf8_lossy(&by_value(&stored, 42))),
                "{object}"
            );
        }
    }

    #[test]
    fn declines_what_it_cannot_reproduce() {
        for stored in [
            &br#"{"b":1,"a":2}"#[..],
            br#"{"a":1,"a":2}"#,
            br#"{"metadata":{"name":"x","labels":{}}}"#,
            br#"{"metadata":"text"}"#,
        ] {
            assert!(
                read_and_set(stored, 1).is_none(),
                "{}",
                String::from_utf8_lossy(stored)
            );
        }
        assert!(Entries::parse(b"[1]").is_none());
        assert!(Entries::parse(b"{\"a\":").is_none());
        assert!(Entries::parse(b"{\"a\":1} x").is_none());
    }

    #[test]
    fn projects_fields() {
        let stored = br#"{"metadata":{"name":"p","managedFields":[{"m":1}],"labels":{"a":"b"}},"spec":{"x":[1,{"y":2}]},"status":"odd","other":1}"#;
        let fields: &[(&str, Option<&[&str]>)] = &[
            ("metadata", Some(&["name", "annotations"])),
            ("spec", None),
            ("status", Some(&["phase"])),
            ("absent", None),
        ];
        assert_eq!(
            project(stored, fields),
            Some(json!({"metadata": {"name": "p"}, "spec": {"x": [1, {"y": 2}]}, "status": "odd"}))
        );
        assert_eq!(project(b"[1]", fields), None);
    }

    #[test]
    fn reads_paths() {
        let stored = br#"{"spec":{"nodeName":"n1","hostNetwork":true,"list":[1]},"status":"odd","top":"t","dup":1,"dup":2}"#;
        let Some(top) = Entries::parse(stored) else {
            panic!("not parsed")
        };
        let mut opened = Vec::new();
        assert_eq!(
            at_path(&top, &mut opened, "spec.nodeName"),
            Some(json!("n1"))
        );
        assert_eq!(
            at_path(&top, &mut opened, "spec.hostNetwork"),
            Some(json!(true))
        );
        assert_eq!(at_path(&top, &mut opened, "spec.missing"), None);
        assert_eq!(at_path(&top, &mut opened, "spec.list.x"), None);
        assert_eq!(at_path(&top, &mut opened, "status.phase"), None);
        assert_eq!(at_path(&top, &mut opened, "top"), Some(json!("t")));
        assert_eq!(at_path(&top, &mut opened, "dup"), Some(json!(2)));
        assert_eq!(at_path(&top, &mut opened, "absent.x"), None);
        assert_eq!(opened.len(), 2, "spec and status opened once each");
    }
}
