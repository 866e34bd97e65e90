//! Duplicate fields in a JSON body (`{"a": 1, "a": 2}`): JSON parsers keep the last one
//! silently, Kubernetes reports them per `fieldValidation` (a warning, or 400 with
//! `Strict`). One streaming pass over the bytes, building nothing but the paths found.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// The paths (`spec.replicas`, `spec.containers[0].name`) of keys that appear twice in
/// one object of the document; empty when there are none or the bytes are not JSON.
pub fn find(json: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let walker = Walker {
        path: String::new(),
        found: &mut found,
    };
    if walker.deserialize(&mut deserializer).is_err() {
        return Vec::new();
    }
    found
}

struct Walker<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Walker<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                self.found.push(path.clone());
            }
            map.next_value_seed(Walker {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while seq
            .next_element_seed(Walker {
                path: format!("{}[{index}]", self.path),
                found: self.found,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_at_any_depth() {
        let json = br#"{"metadata":{"name":"a","name":"b"},"spec":{"containers":[{"image":"x","image":"y"}]},"x":1}"#;
        assert_eq!(
            find(json),
            vec!["metadata.name", "spec.containers[0].image"]
        );
        assert!(find(br#"{"a":{"a":1},"b":[1,2]}"#).is_empty());
        assert!(find(b"not json").is_empty());
        // Deeper than the parser allows: no panic, nothing reported.
        let deep = "[".repeat(100_000);
        assert!(find(deep.as_bytes()).is_empty());
    }
}
