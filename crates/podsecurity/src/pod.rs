//! Read-only access to a pod's metadata and spec in JSON form, read the way Go reads the
//! typed object: an absent or `null` field is the zero value, and a field of the wrong type
//! is treated as absent. Nothing here panics on any input.

use serde_json::{Map, Value};

static NULL: Value = Value::Null;

/// The metadata and spec of a pod (or of a workload's pod template).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PodView<'a> {
    metadata: Option<&'a Map<String, Value>>,
    spec: Option<&'a Map<String, Value>>,
}

impl<'a> PodView<'a> {
    pub(crate) fn new(metadata: Option<&'a Value>, spec: &'a Value) -> Self {
        PodView {
            metadata: metadata.and_then(Value::as_object),
            spec: spec.as_object(),
        }
    }

    /// The pod's annotations, when it has any.
    pub(crate) fn annotations(&self) -> Option<&'a Map<String, Value>> {
        object(self.metadata, "annotations")
    }

    /// One string annotation.
    pub(crate) fn annotation(&self, key: &str) -> Option<&'a str> {
        self.annotations()?.get(key)?.as_str()
    }

    /// `spec.<key>`, unless absent or null.
    pub(crate) fn spec(&self, key: &str) -> Option<&'a Value> {
        present(self.spec, key)
    }

    /// `spec.<key> == true`.
    pub(crate) fn spec_true(&self, key: &str) -> bool {
        boolean(self.spec, key) == Some(true)
    }

    /// `spec.securityContext`.
    pub(crate) fn security_context(&self) -> Option<&'a Map<String, Value>> {
        object(self.spec, "securityContext")
    }

    /// Init containers, then containers, then ephemeral containers, as Kubernetes visits
    /// them. An element that is not an object reads as a container with no fields.
    pub(crate) fn containers(&self) -> impl Iterator<Item = Container<'a>> + use<'a> {
        let view = *self;
        ["initContainers", "containers", "ephemeralContainers"]
            .into_iter()
            .flat_map(move |key| view.containers_of(key))
    }

    /// The containers of one list: `containers`, `initContainers` or `ephemeralContainers`.
    pub(crate) fn containers_of(&self, key: &str) -> impl Iterator<Item = Container<'a>> + use<'a> {
        array(present(self.spec, key)).iter().map(Container)
    }

    /// `spec.volumes`.
    pub(crate) fn volumes(&self) -> &'a [Value] {
        array(self.spec("volumes"))
    }

    /// `spec.os.name == "windows"`.
    pub(crate) fn is_windows(&self) -> bool {
        string(object(self.spec, "os"), "name") == "windows"
    }

    /// `spec.runtimeClassName` (empty when unset).
    pub(crate) fn runtime_class_name(&self) -> &'a str {
        string(self.spec, "runtimeClassName")
    }
}

/// One container of a pod.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Container<'a>(&'a Value);

impl<'a> Container<'a> {
    fn fields(&self) -> Option<&'a Map<String, Value>> {
        self.0.as_object()
    }

    /// The container's name (empty when unset).
    pub(crate) fn name(&self) -> &'a str {
        string(self.fields(), "name")
    }

    /// The container's image (empty when unset).
    pub(crate) fn image(&self) -> &'a str {
        string(self.fields(), "image")
    }

    /// `securityContext`.
    pub(crate) fn security_context(&self) -> Option<&'a Map<String, Value>> {
        object(self.fields(), "securityContext")
    }

    /// `ports`.
    pub(crate) fn ports(&self) -> &'a [Value] {
        array(present(self.fields(), "ports"))
    }
}

/// `map.<key>`, unless the map or the field is absent, or the field is null.
pub(crate) fn present<'a>(map: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a Value> {
    map?.get(key).filter(|v| !v.is_null())
}

/// `map.<key>` when it is an object.
pub(crate) fn object<'a>(
    map: Option<&'a Map<String, Value>>,
    key: &str,
) -> Option<&'a Map<String, Value>> {
    map?.get(key)?.as_object()
}

/// `map.<key>` when it is a string, else empty (Go's zero value).
pub(crate) fn string<'a>(map: Option<&'a Map<String, Value>>, key: &str) -> &'a str {
    map.and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `map.<key>` when it is a boolean.
pub(crate) fn boolean(map: Option<&Map<String, Value>>, key: &str) -> Option<bool> {
    map?.get(key)?.as_bool()
}

/// The elements of an array value, or none.
pub(crate) fn array(value: Option<&Value>) -> &[Value] {
    value
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// An integer value: a JSON integer, or a float with no fractional part.
pub(crate) fn integer(value: &Value) -> Option<i64> {
    if let Some(i) = value.as_i64() {
        return Some(i);
    }
    if value.is_u64() {
        // Larger than i64::MAX: certainly not zero, and no Kubernetes integer is this large.
        return Some(i64::MAX);
    }
    let f = value.as_f64()?;
    if f.fract() == 0.0 && f.is_finite() {
        // Saturating conversion: only zero-ness and small port numbers matter here.
        Some(f as i64)
    } else {
        None
    }
}

/// A null value, for templates with no spec.
pub(crate) fn null() -> &'static Value {
    &NULL
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn containers_in_kubernetes_order() {
        let spec = json!({
            "containers": [{"name": "c1"}, {"name": "c2"}],
            "ephemeralContainers": [{"name": "e"}],
            "initContainers": [{"name": "i"}, "bogus"],
        });
        let pod = PodView::new(None, &spec);
        let names: Vec<&str> = pod.containers().map(|c| c.name()).collect();
        assert_eq!(names, ["i", "", "c1", "c2", "e"]);
    }

    #[test]
    fn wrong_types_read_as_absent() {
        let spec = json!({
            "containers": {"name": "x"},
            "hostNetwork": "true",
            "securityContext": [],
            "os": {"name": 3},
            "volumes": null,
        });
        let meta = json!({"annotations": ["x"]});
        let pod = PodView::new(Some(&meta), &spec);
        assert_eq!(pod.containers().count(), 0);
        assert!(!pod.spec_true("hostNetwork"));
        assert!(pod.security_context().is_none());
        assert!(!pod.is_windows());
        assert!(pod.volumes().is_empty());
        assert!(pod.annotations().is_none());
        let pod = PodView::new(None, &Value::Null);
        assert_eq!(pod.containers().count(), 0);
        assert_eq!(pod.runtime_class_name(), "");
    }

    #[test]
    fn integers() {
        assert_eq!(integer(&json!(0)), Some(0));
        assert_eq!(integer(&json!(0.0)), Some(0));
        assert_eq!(integer(&json!(-0.0)), Some(0));
        assert_eq!(integer(&json!(8080)), Some(8080));
        assert_eq!(integer(&json!(1.5)), None);
        assert_eq!(integer(&json!(u64::MAX)), Some(i64::MAX));
        assert_eq!(integer(&json!("0")), None);
    }
}
