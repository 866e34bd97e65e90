//! The schemas (OpenAPI definitions) of the built-in types.
//!
//! Generated once, on first use, from k8s-openapi's `JsonSchema` implementations, then
//! brought to the shape Kubernetes publishes: the merge-semantics extensions from
//! [`crate::semantics`] are added, the `required: [metadata]` that k8s-openapi adds to
//! every resource is dropped, special types (Quantity, IntOrString, the
//! JSONSchemaProps unions) get their published form, and a `<Kind>List` schema is
//! added for every kind. References point at `#/components/schemas/<name>` (the v3
//! form); [`to_v2`] rewrites a schema for Swagger 2.0.

use crate::registry::{self, BUILTIN_KINDS, SUPPORT_TYPES, names};
use crate::semantics;
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The prefix of a v3 reference.
pub(crate) const V3_REF: &str = "#/components/schemas/";
/// The prefix of a v2 reference.
pub(crate) const V2_REF: &str = "#/definitions/";

/// Every built-in definition, by name, in v3 form without GVK tags.
pub(crate) fn builtin() -> &'static BTreeMap<String, Value> {
    static SCHEMAS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(generate)
}

fn generate() -> BTreeMap<String, Value> {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.meta_schema = None;
        s.transforms.clear();
    });
    let mut generator = settings.into_generator();
    for kind in BUILTIN_KINDS {
        (kind.generate)(&mut generator);
    }
    for support in SUPPORT_TYPES {
        support(&mut generator);
    }
    let mut schemas: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();

    for (name, schema) in schemas.iter_mut() {
        published_form(name, schema);
        drop_required_metadata(name, schema);
        add_semantics(name, schema);
    }
    for kind in BUILTIN_KINDS {
        if kind.namespaced.is_none() {
            continue;
        }
        let item = (kind.schema_name)().into_owned();
        let list_name = format!("{item}List");
        if schemas.contains_key(&list_name) {
            continue;
        }
        if let Some(item_schema) = schemas.get(&item) {
            let list = list_schema(&item, item_schema, kind.kind);
            schemas.insert(list_name, list);
        }
    }
    schemas
}

/// Replaces the schemas of types whose published form k8s-openapi does not reproduce.
fn published_form(name: &str, schema: &mut Value) {
    let description = schema.get("description").cloned().unwrap_or(Value::Null);
    let replacement = match name {
        names::QUANTITY => json!({
            "description": description,
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }),
        names::INT_OR_STRING => json!({
            "description": description,
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }),
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"
        | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray"
        | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool"
        | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray" =>
        {
            json!({ "description": description })
        }
        _ => return,
    };
    *schema = replacement;
}

/// k8s-openapi marks `metadata` required on every resource because its Rust field is
/// not optional; Kubernetes requires it only on the core Event.
fn drop_required_metadata(name: &str, schema: &mut Value) {
    if name == "io.k8s.api.core.v1.Event" {
        return;
    }
    let is_object_meta = schema
        .pointer("/properties/metadata")
        .and_then(element_ref)
        .is_some_and(|r| r == names::OBJECT_META);
    if !is_object_meta {
        return;
    }
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let now_empty = match object.get_mut("required").and_then(Value::as_array_mut) {
        Some(required) => {
            required.retain(|f| f.as_str() != Some("metadata"));
            required.is_empty()
        }
        None => false,
    };
    if now_empty {
        object.remove("required");
    }
}

fn add_semantics(name: &str, schema: &mut Value) {
    let Some(definition) = semantics::table().definitions.get(name) else {
        return;
    };
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(map_type) = definition.map_type {
        object.insert("x-kubernetes-map-type".into(), map_type.as_str().into());
    }
    let Some(properties) = object.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, field_semantics) in &definition.fields {
        if let Some(property) = properties.get_mut(*field).and_then(Value::as_object_mut) {
            for (extension, value) in field_semantics.extensions() {
                property.insert(extension.into(), value);
            }
        }
    }
}

/// The `<Kind>List` schema for a kind.
fn list_schema(item_name: &str, item_schema: &Value, kind: &str) -> Value {
    let mut properties = Map::new();
    for field in ["apiVersion", "kind"] {
        if let Some(p) = item_schema.pointer(&format!("/properties/{field}")) {
            properties.insert(field.into(), p.clone());
        }
    }
    properties.insert(
        "items".into(),
        json!({
            "description": format!("The {kind} objects in this list."),
            "type": "array",
            "items": {"$ref": format!("{V3_REF}{item_name}")},
        }),
    );
    properties.insert(
        "metadata".into(),
        json!({
            "$ref": format!("{V3_REF}{}", names::LIST_META),
            "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        }),
    );
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "properties": properties,
        "required": ["items"],
    })
}

/// The schema of a kind this crate has no type for (a custom resource): any object
/// with the standard type and object metadata.
pub(crate) fn free_form_kind(kind: &str) -> Value {
    json!({
        "description": format!("{kind} is a resource whose schema this server does not publish."),
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object.",
                "type": "string",
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents.",
                "type": "string",
            },
            "metadata": {
                "$ref": format!("{V3_REF}{}", names::OBJECT_META),
                "description": "Standard object's metadata.",
            },
        },
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// The list schema of a kind this crate has no type for.
pub(crate) fn free_form_list(item_name: &str, item_schema: &Value, kind: &str) -> Value {
    list_schema(item_name, item_schema, kind)
}

/// The target of a `$ref` in v3 form, if `schema` is a reference.
pub(crate) fn ref_target(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix(V3_REF)
}

/// The definition a property refers to: itself, its items, or its map values.
pub(crate) fn element_ref(property: &Value) -> Option<&str> {
    ref_target(property)
        .or_else(|| property.get("items").and_then(ref_target))
        .or_else(|| property.get("additionalProperties").and_then(ref_target))
}

/// Adds the names of every definition `schema` refers to.
pub(crate) fn collect_refs(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value.as_str()) {
                    ("$ref", Some(target)) => {
                        if let Some(name) = target.strip_prefix(V3_REF) {
                            out.insert(name.to_owned());
                        }
                    }
                    _ => collect_refs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Every definition reachable from `roots` through references, looked up with `lookup`.
pub(crate) fn closure<'a>(
    roots: BTreeSet<String>,
    lookup: impl Fn(&str) -> Option<&'a Value>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut pending: Vec<String> = roots.into_iter().collect();
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = lookup(&name) {
            let mut refs = BTreeSet::new();
            collect_refs(schema, &mut refs);
            pending.extend(refs.into_iter().filter(|r| !seen.contains(r)));
        }
    }
    seen
}

/// Rewrites a v3-form schema for Swagger 2.0: references point at `#/definitions/`,
/// and the union types are written the way Swagger can express them.
pub(crate) fn to_v2(name: &str, schema: &mut Value) {
    match name {
        names::QUANTITY | names::INT_OR_STRING => {
            if let Some(object) = schema.as_object_mut() {
                object.remove("oneOf");
                object.insert("type".into(), "string".into());
            }
        }
        _ => rewrite_refs(schema),
    }
}

fn rewrite_refs(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                if key == "$ref" {
                    if let Some(name) = value.as_str().and_then(|r| r.strip_prefix(V3_REF)) {
                        *value = Value::String(format!("{V2_REF}{name}"));
                    }
                } else {
                    rewrite_refs(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The definition name of a built-in kind, if this crate knows its type.
pub(crate) fn builtin_kind_name(group: &str, version: &str, kind: &str) -> Option<String> {
    registry::find(group, version, kind).map(|k| (k.schema_name)().into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn pod_schema_has_published_shape() {
        let pod = builtin().get("io.k8s.api.core.v1.Pod").unwrap();
        assert!(
            pod.get("required").is_none(),
            "metadata must not be required"
        );
        assert_eq!(
            pod.pointer("/properties/spec/$ref").and_then(Value::as_str),
            Some("#/components/schemas/io.k8s.api.core.v1.PodSpec")
        );
        let containers = builtin()
            .get("io.k8s.api.core.v1.PodSpec")
            .and_then(|s| s.pointer("/properties/containers"))
            .unwrap();
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        assert!(
            containers["description"]
                .as_str()
                .unwrap()
                .contains("containers")
        );
    }

    #[test]
    fn core_event_keeps_required_metadata() {
        let event = builtin().get("io.k8s.api.core.v1.Event").unwrap();
        assert!(
            event["required"]
                .as_array()
                .unwrap()
                .contains(&json!("metadata"))
        );
    }

    #[test]
    fn lists_are_synthesized() {
        let list = builtin().get("io.k8s.api.apps.v1.DeploymentList").unwrap();
        assert_eq!(list["required"], json!(["items"]));
        assert_eq!(
            list.pointer("/properties/items/items/$ref")
                .and_then(Value::as_str),
            Some("#/components/schemas/io.k8s.api.apps.v1.Deployment")
        );
        assert!(list.pointer("/properties/kind/description").is_some());
    }

    #[test]
    fn special_types() {
        let q = builtin().get(names::QUANTITY).unwrap();
        assert!(q.get("oneOf").is_some());
        assert!(q.get("x-kubernetes-int-or-string").is_none());
        let mut v2 = q.clone();
        to_v2(names::QUANTITY, &mut v2);
        assert_eq!(v2["type"], "string");
        assert!(v2.get("oneOf").is_none());
        let i = builtin().get(names::INT_OR_STRING).unwrap();
        assert_eq!(i["format"], "int-or-string");
        let label_selector = builtin()
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
            .unwrap();
        assert_eq!(label_selector["x-kubernetes-map-type"], "atomic");
    }

    #[test]
    fn v2_rewrites_references() {
        let mut pod = builtin().get("io.k8s.api.core.v1.Pod").unwrap().clone();
        to_v2("io.k8s.api.core.v1.Pod", &mut pod);
        assert_eq!(
            pod.pointer("/properties/spec/$ref").and_then(Value::as_str),
            Some("#/definitions/io.k8s.api.core.v1.PodSpec")
        );
    }

    #[test]
    fn every_reference_resolves() {
        let all = builtin();
        let mut refs = BTreeSet::new();
        for schema in all.values() {
            collect_refs(schema, &mut refs);
        }
        let missing: Vec<_> = refs.iter().filter(|r| !all.contains_key(*r)).collect();
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn closure_follows_references() {
        let roots = BTreeSet::from(["io.k8s.api.core.v1.Pod".to_owned()]);
        let names = closure(roots, |n| builtin().get(n));
        assert!(names.contains("io.k8s.api.core.v1.Container"));
        assert!(names.contains(names::OBJECT_META));
        assert!(!names.contains("io.k8s.api.apps.v1.Deployment"));
    }
}
