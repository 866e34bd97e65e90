//! Moving from client-side to server-side `kubectl apply`.
//!
//! For the field manager `kubectl` only, Kubernetes reads the client-side apply
//! annotation `kubectl.kubernetes.io/last-applied-configuration`: conflicts on fields
//! that annotation still describes (same value as live) do not stop the apply, and
//! after a server-side apply the annotation, if present, is rewritten to the applied
//! configuration so that a later client-side apply sees it.

use crate::compare;
use crate::fieldset::{self, Set};
use crate::schema::TypeRef;
use crate::to_set;
use kyb_apimachinery::gofmt;
use serde_json::Value;

/// The field manager this migration applies to.
pub(crate) const KUBECTL: &str = "kubectl";

/// The client-side apply annotation.
pub(crate) const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")?
        .get(ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// The fields whose conflicts are allowed: those the annotation sets to the value the
/// live object has. `None` when there is no usable annotation.
pub(crate) fn allowed_conflicts(live: &Value, api_version: &str, root: &TypeRef) -> Option<Set> {
    let text = annotation(live)?;
    let last: Value = serde_json::from_str(text).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let mut allowed = to_set::field_set(&last, root, true).ok()?;
    let cmp = compare::compare(&last, live, root).ok()?;
    fieldset::subtract(&mut allowed, &cmp.touched());
    Some(allowed)
}

/// Rewrites the annotation on `result` (if it has one) to `config`, as Kubernetes
/// does after `kubectl apply --server-side`.
pub(crate) fn sync_annotation(result: &mut Value, config: &Value) {
    if annotation(result).is_none() {
        return;
    }
    let mut applied = config.clone();
    if let Some(Value::Object(meta)) = applied.get_mut("metadata") {
        match meta.get_mut("annotations") {
            Some(Value::Object(annotations)) => {
                annotations.remove(ANNOTATION);
            }
            Some(_) => {
                meta.remove("annotations");
            }
            None => {}
        }
    }
    let mut text = gofmt::json(&applied);
    text.push('\n');
    if let Some(Value::Object(annotations)) = result.pointer_mut("/metadata/annotations") {
        annotations.insert(ANNOTATION.to_owned(), Value::String(text));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn annotation_is_rewritten_only_when_present() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "annotations": {ANNOTATION: "old", "a": "<b>"}}, "data": {"k": "v"}});
        let mut with = json!({"metadata": {"annotations": {ANNOTATION: "{}"}}});
        sync_annotation(&mut with, &config);
        assert_eq!(
            with["metadata"]["annotations"][ANNOTATION],
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{\"a\":\"\\u003cb\\u003e\"},\"name\":\"x\"}}\n"
        );
        let mut without = json!({"metadata": {}});
        sync_annotation(&mut without, &config);
        assert_eq!(without, json!({"metadata": {}}));
    }

    #[test]
    fn allowed_conflicts_are_unchanged_annotation_fields() {
        let root = TypeRef::root("io.k8s.api.apps.v1.Deployment");
        let last = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3, "paused": true}});
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "annotations": {ANNOTATION: last.to_string()}},
            "spec": {"replicas": 5, "paused": true}});
        let allowed = allowed_conflicts(&live, "apps/v1", &root).unwrap();
        assert!(fieldset::contains(&allowed, &["f:spec", "f:paused"]));
        assert!(!fieldset::contains(&allowed, &["f:spec", "f:replicas"]));
        assert!(allowed_conflicts(&live, "apps/v1beta1", &root).is_none());
    }
}
