//! `metadata.managedFields`: reading the entries, identifying managers, writing the
//! entries back in Kubernetes' order, and capping the number of update entries.
//!
//! A manager is identified by its name, operation, subresource and, for `Update`
//! entries only, the API version (an applier keeps one entry whatever version it
//! applies in). Entries are written sorted by operation (`Apply` first), time (whole
//! seconds), manager, API version and subresource. Beyond ten `Update` entries, the
//! oldest are merged into one `ancient-changes` entry per API version.

use crate::fieldset::{self, Set};
use kyb_apimachinery::gofmt;
use kyb_apimachinery::time;
use serde_json::{Map, Value, json};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::OnceLock;

/// How many `Update` entries Kubernetes keeps before merging the oldest.
pub(crate) const MAX_UPDATE_ENTRIES: usize = 10;

/// The manager the oldest update entries are merged into.
pub(crate) const ANCIENT_CHANGES: &str = "ancient-changes";

/// `ManagedFieldsEntry.operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    pub(crate) api_version: String,
    /// Empty for the main resource.
    pub(crate) subresource: String,
    /// RFC 3339, as stored.
    pub(crate) time: Option<String>,
    pub(crate) fields: Set,
}

impl Entry {
    /// Whether this is the entry of (manager, operation, version, subresource).
    pub(crate) fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// Kubernetes' manager identifier (the entry without time and fields, as Go's
    /// `encoding/json` writes it); conflicts are grouped and sorted by it.
    pub(crate) fn identifier(&self) -> String {
        identifier(
            &self.manager,
            self.operation,
            &self.api_version,
            &self.subresource,
        )
    }

    fn seconds(&self) -> i64 {
        self.time
            .as_deref()
            .and_then(time::unix_seconds)
            .unwrap_or(0)
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), Value::Object(self.fields.clone()));
        if !self.manager.is_empty() {
            m.insert("manager".into(), Value::String(self.manager.clone()));
        }
        m.insert(
            "operation".into(),
            Value::String(self.operation.as_str().into()),
        );
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        Value::Object(m)
    }
}

/// Kubernetes' manager identifier for (manager, operation, version, subresource).
pub(crate) fn identifier(
    manager: &str,
    operation: Operation,
    api_version: &str,
    subresource: &str,
) -> String {
    let mut out = String::from("{");
    let mut field = |name: &str, v: &str| {
        if v.is_empty() {
            return;
        }
        if out.len() > 1 {
            out.push(',');
        }
        gofmt::write_json_string(&mut out, name);
        out.push(':');
        gofmt::write_json_string(&mut out, v);
    };
    field("manager", manager);
    field("operation", operation.as_str());
    if operation == Operation::Update {
        field("apiVersion", api_version);
    }
    field("subresource", subresource);
    out.push('}');
    out
}

/// The decoded `metadata.managedFields`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Managed {
    pub(crate) entries: Vec<Entry>,
}

impl Managed {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of this manager, if any.
    pub(crate) fn find_mut(
        &mut self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|e| e.is(manager, operation, api_version, subresource))
    }

    /// Removes and returns the entry of this manager.
    pub(crate) fn take(
        &mut self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> Option<Entry> {
        let i = self
            .entries
            .iter()
            .position(|e| e.is(manager, operation, api_version, subresource))?;
        Some(self.entries.remove(i))
    }

    /// Drops entries that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|e| !fieldset::is_empty(&e.fields));
    }

    /// The union of every entry's set.
    pub(crate) fn union(&self) -> Set {
        let mut all = Set::new();
        for e in &self.entries {
            fieldset::union_into(&mut all, &e.fields);
        }
        all
    }

    /// The entries as Kubernetes writes them, or `None` when there are none.
    pub(crate) fn encode(mut self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        self.entries.sort_by(order);
        Some(Value::Array(
            self.entries.iter().map(Entry::to_value).collect(),
        ))
    }

    /// Merges the oldest update entries into `ancient-changes` until at most
    /// [`MAX_UPDATE_ENTRIES`] are left.
    ///
    /// Entries are found through an index of their identifiers, so that a client
    /// sending thousands of entries costs linear time, not quadratic.
    pub(crate) fn cap_updates(&mut self) {
        let mut updaters: Vec<(i64, String)> = self
            .entries
            .iter()
            .filter(|e| e.operation == Operation::Update)
            .map(|e| (e.seconds(), e.identifier()))
            .collect();
        if updaters.len() <= MAX_UPDATE_ENTRIES {
            return;
        }
        updaters.sort();
        let mut slots: Vec<Option<Entry>> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Some)
            .collect();
        let mut by_id: HashMap<String, usize> = slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (e.identifier(), i)))
            .collect();
        let mut remaining = updaters.len();
        // The first (oldest) entry seen of each version, kept until a second one comes.
        let mut first_of_version: HashMap<String, String> = HashMap::new();
        for (_, id) in updaters {
            if remaining <= MAX_UPDATE_ENTRIES {
                break;
            }
            let Some(version) = by_id
                .get(&id)
                .and_then(|&i| slots.get(i))
                .and_then(|e| e.as_ref().map(|e| e.api_version.clone()))
            else {
                continue;
            };
            let bucket_id = identifier(ANCIENT_CHANGES, Operation::Update, &version, "");
            let Some(first) = first_of_version.get(&version).cloned() else {
                first_of_version.insert(version, id);
                continue;
            };
            if id == bucket_id {
                // Never merge the bucket into itself.
                continue;
            }
            if !by_id.contains_key(&bucket_id) {
                // The first entry of the version becomes the bucket.
                if let Some(i) = by_id.remove(&first) {
                    if let Some(Some(e)) = slots.get_mut(i) {
                        e.manager = ANCIENT_CHANGES.to_owned();
                        e.subresource = String::new();
                    }
                    by_id.insert(bucket_id.clone(), i);
                }
            }
            let Some(merged) = by_id
                .remove(&id)
                .and_then(|i| slots.get_mut(i))
                .and_then(Option::take)
            else {
                continue;
            };
            if let Some(Some(bucket)) = by_id.get(&bucket_id).and_then(|&i| slots.get_mut(i)) {
                fieldset::union_into(&mut bucket.fields, &merged.fields);
                bucket.time = merged.time;
            }
            remaining -= 1;
        }
        self.entries = slots.into_iter().flatten().collect();
    }
}

fn order(p: &Entry, q: &Entry) -> Ordering {
    p.operation
        .as_str()
        .cmp(q.operation.as_str())
        .then_with(|| p.seconds().cmp(&q.seconds()))
        .then_with(|| p.manager.cmp(&q.manager))
        .then_with(|| p.api_version.cmp(&q.api_version))
        .then_with(|| p.subresource.cmp(&q.subresource))
}

/// Whether the client asked to clear managed fields: an empty list, or one empty entry.
pub(crate) fn is_reset(v: Option<&Value>) -> bool {
    let Some(Value::Array(items)) = v else {
        return false;
    };
    match items.as_slice() {
        [] => true,
        [Value::Object(entry)] => entry.iter().all(|(k, v)| match k.as_str() {
            "manager" | "operation" | "apiVersion" | "fieldsType" | "subresource" => {
                v.is_null() || v.as_str() == Some("")
            }
            "time" | "fieldsV1" => v.is_null(),
            // Unknown keys are dropped when Kubernetes decodes the entry.
            _ => true,
        }),
        _ => false,
    }
}

/// Reads `metadata.managedFields`. `trusted` skips canonicalizing the field sets
/// (entries this crate wrote); client-provided entries are checked and normalized.
pub(crate) fn decode(v: Option<&Value>, trusted: bool) -> Result<Managed, String> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Managed::default()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("managedFields must be a list".into()),
    };
    let mut managed = Managed::default();
    // A later entry of the same manager replaces an earlier one, as in Kubernetes.
    let mut by_id: HashMap<String, usize> = HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let entry = decode_entry(i, item, trusted)?;
        match by_id
            .get(&entry.identifier())
            .and_then(|&at| managed.entries.get_mut(at))
        {
            Some(existing) => *existing = entry,
            None => {
                by_id.insert(entry.identifier(), managed.entries.len());
                managed.entries.push(entry);
            }
        }
    }
    Ok(managed)
}

fn decode_entry(i: usize, item: &Value, trusted: bool) -> Result<Entry, String> {
    let Value::Object(m) = item else {
        return Err(format!("managed fields entry {i} is not an object"));
    };
    let string = |key: &str| -> Result<String, String> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!(
                "{key} of managed fields entry {i} must be a string"
            )),
        }
    };
    let operation = match string("operation")?.as_str() {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return Err("operation must be `Apply` or `Update`".into()),
    };
    let api_version = string("apiVersion")?;
    if api_version.is_empty() {
        return Err("apiVersion must not be empty".into());
    }
    match string("fieldsType")?.as_str() {
        "FieldsV1" => {}
        "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
        other => {
            let q = gofmt::quote(other);
            return Err(format!(
                "invalid fieldsType {q} in managed fields entry {i}"
            ));
        }
    }
    let fields = match m.get("fieldsV1") {
        None | Some(Value::Null) => Set::new(),
        Some(v) => {
            let mut v = v.clone();
            fieldset::validate(&mut v, !trusted).map_err(|e| format!("error decoding set: {e}"))?;
            match v {
                Value::Object(set) => set,
                _ => Set::new(),
            }
        }
    };
    let time = match m.get("time") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(_) => return Err(format!("time of managed fields entry {i} must be a string")),
    };
    Ok(Entry {
        manager: string("manager")?,
        operation,
        api_version,
        subresource: string("subresource")?,
        time,
        fields,
    })
}

/// The fields Kubernetes never records as managed: the type, the object's identity and
/// what the server maintains.
fn strip_set() -> &'static Set {
    static STRIP: OnceLock<Set> = OnceLock::new();
    STRIP.get_or_init(|| {
        let v = json!({
            "f:apiVersion": {},
            "f:kind": {},
            "f:metadata": {
                ".": {},
                "f:name": {},
                "f:namespace": {},
                "f:creationTimestamp": {},
                "f:selfLink": {},
                "f:uid": {},
                "f:clusterName": {},
                "f:generation": {},
                "f:managedFields": {},
                "f:resourceVersion": {}
            }
        });
        match v {
            Value::Object(m) => m,
            _ => Set::new(),
        }
    })
}

/// Removes the never-recorded fields from a manager's set.
pub(crate) fn strip(set: &mut Set) {
    fieldset::subtract(set, strip_set());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn entry(manager: &str, op: &str, version: &str, time: &str) -> Value {
        json!({"manager": manager, "operation": op, "apiVersion": version, "time": time,
               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {format!("f:{manager}"): {}}}}})
    }

    #[test]
    fn identifiers_match_kubernetes() {
        assert_eq!(
            identifier("kubectl", Operation::Update, "apps/v1", ""),
            r#"{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1"}"#
        );
        assert_eq!(
            identifier("kubectl", Operation::Apply, "apps/v1", "status"),
            r#"{"manager":"kubectl","operation":"Apply","subresource":"status"}"#
        );
    }

    #[test]
    fn entries_are_sorted_like_kubernetes() {
        let v = json!([
            entry("b", "Update", "v1", "2024-01-01T00:00:02Z"),
            entry("a", "Update", "v1", "2024-01-01T00:00:02Z"),
            entry("z", "Update", "v1", "2024-01-01T00:00:01Z"),
            entry("y", "Apply", "v1", "2024-01-01T00:00:09Z"),
        ]);
        let m = decode(Some(&v), false).unwrap();
        let out = m.encode().unwrap();
        let names: Vec<&str> = out
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["y", "z", "a", "b"]);
    }

    #[test]
    fn decode_errors_match_kubernetes() {
        let bad_op = json!([{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
        assert_eq!(
            decode(Some(&bad_op), false).unwrap_err(),
            "operation must be `Apply` or `Update`"
        );
        let no_version = json!([{"operation": "Apply", "fieldsType": "FieldsV1"}]);
        assert_eq!(
            decode(Some(&no_version), false).unwrap_err(),
            "apiVersion must not be empty"
        );
        let no_type = json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": ""}]);
        assert_eq!(
            decode(Some(&no_type), false).unwrap_err(),
            "missing fieldsType in managed fields entry 0"
        );
        let bad_type =
            json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}]);
        assert_eq!(
            decode(Some(&bad_type), false).unwrap_err(),
            r#"invalid fieldsType "FieldsV2" in managed fields entry 0"#
        );
        let bad_set = json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"x": {}}}]);
        assert!(decode(Some(&bad_set), false).is_err());
    }

    #[test]
    fn same_manager_entries_collapse() {
        let v = json!([
            entry("a", "Apply", "v1", "2024-01-01T00:00:00Z"),
            entry("a", "Apply", "v2", "2024-01-01T00:00:00Z")
        ]);
        let m = decode(Some(&v), false).unwrap();
        assert_eq!(m.entries.len(), 1);
        assert_eq!(m.entries[0].api_version, "v2");
        let v = json!([
            entry("a", "Update", "v1", "2024-01-01T00:00:00Z"),
            entry("a", "Update", "v2", "2024-01-01T00:00:00Z")
        ]);
        assert_eq!(decode(Some(&v), false).unwrap().entries.len(), 2);
    }

    #[test]
    fn resets() {
        assert!(is_reset(Some(&json!([]))));
        assert!(is_reset(Some(&json!([{}]))));
        assert!(is_reset(Some(&json!([{"manager": "", "time": null}]))));
        assert!(!is_reset(Some(&json!([{"manager": "a"}]))));
        assert!(!is_reset(Some(&json!([{"fieldsV1": {}}]))));
        assert!(!is_reset(None));
        assert!(!is_reset(Some(&json!(null))));
    }

    #[test]
    fn capping_merges_the_oldest_updates() {
        let mut items = vec![entry("applier", "Apply", "v1", "2024-01-01T00:00:00Z")];
        for i in 0..12 {
            items.push(entry(
                &format!("u{i:02}"),
                "Update",
                "v1",
                &format!("2024-01-01T00:00:{:02}Z", i + 1),
            ));
        }
        let mut m = decode(Some(&Value::Array(items)), false).unwrap();
        m.cap_updates();
        let out = m.encode().unwrap();
        let names: Vec<&str> = out
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 11);
        assert_eq!(names[0], "applier");
        assert_eq!(names[1], "ancient-changes");
        let bucket = &out[1];
        assert_eq!(bucket["time"], "2024-01-01T00:00:03Z");
        assert_eq!(
            bucket["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:u00": {}, "f:u01": {}, "f:u02": {}}}})
        );
        assert_eq!(
            &names[2..],
            &[
                "u03", "u04", "u05", "u06", "u07", "u08", "u09", "u10", "u11"
            ]
        );
    }

    #[test]
    fn stripping_keeps_labels() {
        let mut s = match json!({"f:apiVersion": {}, "f:metadata": {".": {}, "f:name": {}, "f:labels": {"f:a": {}}}})
        {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        strip(&mut s);
        assert_eq!(
            Value::Object(s),
            json!({"f:metadata": {"f:labels": {"f:a": {}}}})
        );
    }
}
