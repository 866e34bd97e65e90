//! An object as the watch cache keeps it: its JSON (with `resourceVersion` set), ready to
//! send as is, plus what selectors need without parsing it again.

use super::shallow;
use bytes::Bytes;
use kyb_api::{Resource, fields};
use kyb_apimachinery::meta;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

#[derive(Debug)]
pub struct CachedObject {
    /// The storage key (`<prefix>/<namespace>/<name>` or `<prefix>/<name>`), shared with the
    /// cache's index; the name and namespace are read from it.
    pub key: Arc<str>,
    namespaced: bool,
    /// The revision of the write that produced this state (its `resourceVersion`).
    pub revision: u64,
    /// The serialized object, `metadata.resourceVersion` included.
    pub json: Bytes,
    /// `metadata.labels`, sorted by key.
    pub labels: Box<[(Box<str>, Box<str>)]>,
    /// The values of the kind's selectable fields, in the order its strategy lists them.
    pub fields: Box<[Box<str>]>,
    /// The parsed object, once [`Self::shared_value`] was asked for it.
    parsed: OnceLock<Arc<Value>>,
    /// The object's protobuf encoding (no envelope), once a protobuf client asked for it.
    protobuf: OnceLock<Bytes>,
}

impl CachedObject {
    /// Builds the cached form of a stored value written at `revision`.
    pub fn from_stored(
        def: &Resource,
        key: &[u8],
        value: &[u8],
        revision: u64,
    ) -> Result<Self, String> {
        if let Some(object) = Self::from_stored_shallow(def, key, value, revision) {
            return Ok(object);
        }
        let mut object: Value =
            serde_json::from_slice(value).map_err(|e| format!("stored object is not JSON: {e}"))?;
        meta::metadata_mut(&mut object)
            .insert("resourceVersion".into(), revision.to_string().into());
        Self::from_value(def, key, &object, revision)
    }

    /// [`Self::from_stored`] without parsing the whole object, for values in the form the
    /// API server writes them (see [`shallow`]); `None` for anything else.
    fn from_stored_shallow(
        def: &Resource,
        key: &[u8],
        value: &[u8],
        revision: u64,
    ) -> Option<Self> {
        let top = shallow::Entries::parse(value)?;
        let metadata = match top.get("metadata") {
            Some(raw) => Some(shallow::Entries::of(raw)?),
            None => None,
        };
        let json = shallow::with_resource_version(&top, metadata.as_ref(), revision)?;
        let labels = metadata
            .as_ref()
            .and_then(|metadata| metadata.get("labels"))
            .and_then(|labels| serde_json::from_str::<Map<String, Value>>(labels.get()).ok())
            .map(|labels| Self::label_pairs(&labels))
            .unwrap_or_default();
        let mut opened = Vec::new();
        let fields = def
            .strategy
            .selectable_fields()
            .iter()
            .map(|field| {
                let value = shallow::at_path(&top, &mut opened, &field.path);
                field.text(value.as_ref()).into()
            })
            .collect();
        Some(Self {
            key: String::from_utf8_lossy(key).into(),
            namespaced: def.namespaced,
            revision,
            json: Bytes::from(json),
            labels,
            fields,
            parsed: OnceLock::new(),
            protobuf: OnceLock::new(),
        })
    }

    /// Labels as the cache keeps them: sorted pairs, non-string values as "".
    fn label_pairs(labels: &Map<String, Value>) -> Box<[(Box<str>, Box<str>)]> {
        let mut pairs: Vec<(Box<str>, Box<str>)> = labels
            .iter()
            .map(|(k, v)| (k.as_str().into(), v.as_str().unwrap_or_default().into()))
            .collect();
        pairs.sort();
        pairs.into_boxed_slice()
    }

    /// Builds the cached form of an object whose `resourceVersion` is already `revision`.
    pub fn from_value(
        def: &Resource,
        key: &[u8],
        object: &Value,
        revision: u64,
    ) -> Result<Self, String> {
        let mut json =
            serde_json::to_vec(object).map_err(|e| format!("encoding an object: {e}"))?;
        // The cache keeps this for the object's lifetime: no spare capacity.
        json.shrink_to_fit();
        let key = String::from_utf8_lossy(key).into_owned();
        let labels = meta::labels(object)
            .map(Self::label_pairs)
            .unwrap_or_default();
        let fields = def
            .strategy
            .selectable_fields()
            .iter()
            .map(|f| f.value(object).into())
            .collect();
        Ok(Self {
            key: key.into(),
            namespaced: def.namespaced,
            revision,
            json: Bytes::from(json),
            labels,
            fields,
            parsed: OnceLock::new(),
            protobuf: OnceLock::new(),
        })
    }

    pub fn name(&self) -> &str {
        self.key.rsplit('/').next().unwrap_or_default()
    }

    pub fn namespace(&self) -> Option<&str> {
        if !self.namespaced {
            return None;
        }
        let mut parts = self.key.rsplitn(3, '/');
        parts.next();
        parts.next()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .and_then(|i| self.labels.get(i))
            .map(|(_, v)| v.as_ref())
    }

    /// The value of a selectable field.
    pub fn field(&self, def: &Resource, field: &str) -> Option<&str> {
        match field {
            "metadata.name" => Some(self.name()),
            "metadata.namespace" => Some(self.namespace().unwrap_or_default()),
            other => def
                .strategy
                .selectable_fields()
                .iter()
                .position(|f| f.label == other)
                .and_then(|i| self.fields.get(i))
                .map(AsRef::as_ref),
        }
    }

    /// The parsed object.
    pub fn value(&self) -> Result<Value, String> {
        serde_json::from_slice(&self.json).map_err(|e| format!("cached object is not JSON: {e}"))
    }

    /// The parsed object, parsed once and then kept with this state (a write makes a new
    /// state): for the few objects read on every request of some kind, such as the
    /// namespace and service account of each new pod. Not for objects read once, whose
    /// parsed form would only take memory.
    pub fn shared_value(&self) -> Result<Arc<Value>, String> {
        if let Some(value) = self.parsed.get() {
            return Ok(value.clone());
        }
        let value = Arc::new(self.value()?);
        Ok(self.parsed.get_or_init(|| value).clone())
    }

    /// The object's protobuf encoding (its type's message, without the envelope), made
    /// on first request and then kept with this state, so that protobuf lists and watches
    /// encode each state once, as the JSON is kept for JSON clients. Only for kinds
    /// `kyb-protobuf` knows.
    pub fn protobuf(&self) -> Result<Bytes, String> {
        if let Some(raw) = self.protobuf.get() {
            return Ok(raw.clone());
        }
        let value = self.value()?;
        let type_of = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
        let mut raw = kyb_protobuf::encode_object(type_of("apiVersion"), type_of("kind"), &value)
            .map_err(|e| format!("encoding {} as protobuf: {e}", self.key))?;
        raw.shrink_to_fit();
        Ok(self.protobuf.get_or_init(|| Bytes::from(raw)).clone())
    }

    /// The same object reported at another revision (a deletion's last state).
    pub fn at_revision(&self, def: &Resource, revision: u64) -> Result<Self, String> {
        Self::from_stored(def, self.key.as_bytes(), &self.json, revision)
    }
}

/// Which objects a list or watch wants.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub namespace: Option<String>,
    pub labels: kyb_apimachinery::labels::Selector,
    pub fields: fields::Selector,
}

impl Filter {
    pub fn matches(&self, def: &Resource, object: &CachedObject) -> bool {
        if let Some(ns) = &self.namespace
            && object.namespace() != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches_pairs(|key| object.label(key))
            && self.fields.requirements.iter().all(|r| {
                let value = object.field(def, &r.field).unwrap_or_default();
                (value == r.value) == r.equals
            })
    }

    /// The name a `metadata.name=` field selector pins, which makes a lookup instead of a scan.
    pub fn name(&self) -> Option<&str> {
        self.fields.exact("metadata.name")
    }
}
