//! LimitRanger's mutating half: default limits (`default`) and requests (`defaultRequest`)
//! of `type: Container` items written into containers and init containers that lack them,
//! and the `kubernetes.io/limit-ranger` annotation saying what was set.

use std::collections::BTreeMap;

use kyb_apimachinery::quantity::Quantity;
use serde_json::{Map, Value};

use kyb_apimachinery::json::{items, map_at, opt_str};

/// The annotation LimitRanger records its defaults in.
pub const LIMIT_RANGER_ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The default limits and requests a LimitRange gives containers, as canonical strings.
#[derive(Debug, Default)]
pub(crate) struct ContainerDefaults {
    limits: BTreeMap<String, String>,
    requests: BTreeMap<String, String>,
}

impl ContainerDefaults {
    /// Merges the `Container` items of a LimitRange (a later item wins for the same
    /// resource). Each item is read with `SetDefaults_LimitRangeItem` applied — `default`
    /// filled from `max`, `defaultRequest` from `default` then `min` — which is a no-op on
    /// stored (already defaulted) objects. Unparseable quantities are skipped.
    pub(crate) fn of(limit_range: &Value) -> Self {
        let mut out = Self::default();
        for item in items(limit_range, &["spec", "limits"]) {
            if opt_str(item, &["type"]) != Some("Container") {
                continue;
            }
            let list = |key: &str| -> BTreeMap<String, String> {
                map_at(item, &[key])
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| {
                                Quantity::from_json(v)
                                    .ok()
                                    .map(|q| (k.clone(), q.canonical()))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut default = list("default");
            for (k, v) in list("max") {
                default.entry(k).or_insert(v);
            }
            let mut default_request = list("defaultRequest");
            for (k, v) in default.iter().chain(&list("min")) {
                default_request
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
            out.limits.extend(default);
            out.requests.extend(default_request);
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.requests.is_empty()
    }
}

/// Fills missing entries of `resources.<key>` from `defaults`; returns the names set.
/// A `resources` or list that is present but not an object is left for validation.
fn fill(
    container: &mut Map<String, Value>,
    key: &str,
    defaults: &BTreeMap<String, String>,
) -> Vec<String> {
    if defaults.is_empty() {
        return Vec::new();
    }
    let resources = container
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    if resources.is_null() {
        *resources = Value::Object(Map::new());
    }
    let Some(resources) = resources.as_object_mut() else {
        return Vec::new();
    };
    let missing: Vec<&String> = match resources.get(key) {
        None | Some(Value::Null) => defaults.keys().collect(),
        Some(Value::Object(m)) => defaults.keys().filter(|k| !m.contains_key(*k)).collect(),
        Some(_) => return Vec::new(),
    };
    if missing.is_empty() {
        return Vec::new();
    }
    let list = resources
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()));
    if list.is_null() {
        *list = Value::Object(Map::new());
    }
    let mut set = Vec::with_capacity(missing.len());
    if let Some(list) = list.as_object_mut() {
        for k in missing {
            if let Some(v) = defaults.get(k) {
                list.insert(k.clone(), Value::String(v.clone()));
                set.push(k.clone());
            }
        }
    }
    set
}

/// Applies one LimitRange's container defaults to every container and init container;
/// the annotation is (re)written when anything was set.
pub(crate) fn apply(pod: &mut Value, defaults: &ContainerDefaults) {
    if defaults.is_empty() {
        return;
    }
    let mut notes: Vec<String> = Vec::new();
    for (key, label) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(list) = pod
            .get_mut("spec")
            .and_then(|s| s.get_mut(key))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in list.iter_mut() {
            let Some(c) = c.as_object_mut() else { continue };
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let limits = fill(c, "limits", &defaults.limits);
            let requests = fill(c, "requests", &defaults.requests);
            // `fill` names come out sorted, as Kubernetes sorts them.
            if !requests.is_empty() {
                notes.push(format!(
                    "{} request for {label} {name}",
                    requests.join(", ")
                ));
            }
            if !limits.is_empty() {
                notes.push(format!("{} limit for {label} {name}", limits.join(", ")));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let text = format!("LimitRanger plugin set: {}", notes.join("; "));
    let Some(obj) = pod.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if annotations.is_null() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(LIMIT_RANGER_ANNOTATION.to_string(), Value::String(text));
    }
}

/// `SetDefaults_Pod`'s rule, applied before LimitRanger as decoding does: a container
/// with a limit but no request for a resource requests its limit. Idempotent, so a pod
/// the API server already defaulted is unchanged.
pub(crate) fn requests_from_limits(pod: &mut Value) {
    for key in ["containers", "initContainers"] {
        let Some(list) = pod
            .get_mut("spec")
            .and_then(|s| s.get_mut(key))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in list.iter_mut() {
            let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            let Some(limits) = res.get("limits").and_then(Value::as_object) else {
                continue;
            };
            let missing: Vec<(String, Value)> = match res.get("requests") {
                None | Some(Value::Null) => {
                    limits.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
                }
                Some(Value::Object(r)) => limits
                    .iter()
                    .filter(|(k, _)| !r.contains_key(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                Some(_) => continue,
            };
            if missing.is_empty() {
                continue;
            }
            let requests = res
                .entry("requests")
                .or_insert_with(|| Value::Object(Map::new()));
            if requests.is_null() {
                *requests = Value::Object(Map::new());
            }
            if let Some(r) = requests.as_object_mut() {
                r.extend(missing);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limit_range_defaulting_is_applied_on_read() {
        let lr = json!({"spec": {"limits": [
            {"type": "Pod", "max": {"cpu": "4"}},
            {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
             "default": {"memory": "256Mi"}}
        ]}});
        let d = ContainerDefaults::of(&lr);
        assert_eq!(
            d.limits.iter().collect::<Vec<_>>(),
            vec![
                (&"cpu".to_string(), &"2".to_string()),
                (&"memory".to_string(), &"256Mi".to_string())
            ]
        );
        assert_eq!(d.requests.get("cpu").map(String::as_str), Some("2"));
        assert_eq!(d.requests.get("memory").map(String::as_str), Some("256Mi"));
    }

    #[test]
    fn requests_default_to_limits() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "1"}, "requests": "garbage"}}
        ]}});
        requests_from_limits(&mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "1", "memory": "1Mi"})
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["requests"],
            json!("garbage")
        );
    }
}
