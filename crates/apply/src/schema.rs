//! The shape of each field, as server-side apply sees it, derived from `kyb-openapi`.
//!
//! Every definition's schema and merge semantics are read once and cached as a
//! [`Struct`]: per field, a [`TypeRef`] saying whether it is a scalar, a struct, a map
//! (granular or atomic) or a list (atomic, set, or map keyed by some fields). Lists
//! without a declared list type are atomic, except that a `merge` patch strategy makes
//! them a map keyed by the patch merge key (or a set without one), as Kubernetes'
//! schema conversion does. Definitions `kyb-openapi` does not know, and free-form
//! values, are *deduced*: maps are granular, lists atomic, every key undeclared.

use kyb_openapi::{ListType, MapType, PatchStrategy};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The definition name of `ObjectMeta`.
pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// What a scalar must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Numeric,
    Boolean,
    /// Any scalar (int-or-string, quantities).
    Any,
}

/// How a list's items are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// The list is one value.
    Atomic,
    /// Items are unique scalars.
    Set,
    /// Items are objects identified by these fields.
    Map(Vec<&'static str>),
}

/// The type of a field, a list item or a map value.
#[derive(Debug, Clone)]
pub(crate) enum TypeRef {
    /// A named definition; `atomic` overrides the struct's own map type.
    Definition {
        name: &'static str,
        atomic: bool,
    },
    Scalar(Scalar),
    /// Free-form: maps granular with deduced values, lists atomic.
    Deduced,
    /// The root of an object whose kind has no definition: deduced, but `metadata` is
    /// `ObjectMeta`.
    DeducedRoot,
    Map {
        value: Box<TypeRef>,
        atomic: bool,
    },
    List {
        item: Box<TypeRef>,
        kind: ListKind,
    },
}

/// A struct definition.
#[derive(Debug)]
pub(crate) struct Struct {
    pub(crate) name: &'static str,
    /// `x-kubernetes-map-type: atomic` on the definition (`+structType=atomic`).
    pub(crate) atomic: bool,
    pub(crate) fields: HashMap<&'static str, TypeRef>,
}

/// A definition, resolved.
#[derive(Debug)]
pub(crate) enum Definition {
    Struct(Struct),
    Scalar(Scalar),
    Deduced,
}

/// A type resolved for walking a value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Resolved<'t> {
    Struct {
        def: &'static Struct,
        atomic: bool,
    },
    Map {
        value: &'t TypeRef,
        atomic: bool,
    },
    List {
        item: &'t TypeRef,
        kind: &'t ListKind,
    },
    Scalar(Scalar),
    Deduced,
    DeducedRoot,
}

static DEDUCED: TypeRef = TypeRef::Deduced;
static OBJECT_META_REF: TypeRef = TypeRef::Definition {
    name: OBJECT_META,
    atomic: false,
};

/// The deduced type (for undeclared fields and free-form values).
pub(crate) fn deduced() -> &'static TypeRef {
    &DEDUCED
}

impl TypeRef {
    /// The root type of objects of `definition` (deduced when it is unknown).
    pub(crate) fn root(definition: &str) -> TypeRef {
        match lookup(definition) {
            Some(Definition::Struct(s)) => TypeRef::Definition {
                name: s.name,
                atomic: false,
            },
            _ => TypeRef::DeducedRoot,
        }
    }

    /// Resolves named definitions.
    pub(crate) fn resolve(&self) -> Resolved<'_> {
        match self {
            TypeRef::Definition { name, atomic } => match lookup(name) {
                Some(Definition::Struct(def)) => Resolved::Struct {
                    def,
                    atomic: *atomic || def.atomic,
                },
                Some(Definition::Scalar(s)) => Resolved::Scalar(*s),
                Some(Definition::Deduced) | None => Resolved::Deduced,
            },
            TypeRef::Scalar(s) => Resolved::Scalar(*s),
            TypeRef::Deduced => Resolved::Deduced,
            TypeRef::DeducedRoot => Resolved::DeducedRoot,
            TypeRef::Map { value, atomic } => Resolved::Map {
                value,
                atomic: *atomic,
            },
            TypeRef::List { item, kind } => Resolved::List { item, kind },
        }
    }

    /// The definition name of a list item type, for key defaults.
    pub(crate) fn definition_name(&self) -> Option<&'static str> {
        match self {
            TypeRef::Definition { name, .. } => Some(name),
            _ => None,
        }
    }
}

impl<'t> Resolved<'t> {
    /// The type of the value under `key`, and whether `key` is a declared field.
    pub(crate) fn member(&self, key: &str) -> (&'t TypeRef, bool) {
        match self {
            Resolved::Struct { def, .. } => match def.fields.get(key) {
                Some(t) => (t, true),
                None => (&DEDUCED, false),
            },
            Resolved::Map { value, .. } => (value, false),
            Resolved::DeducedRoot if key == "metadata" => (&OBJECT_META_REF, true),
            _ => (&DEDUCED, false),
        }
    }

    /// Whether undeclared keys are an error (structs only).
    pub(crate) fn closed(&self) -> bool {
        matches!(self, Resolved::Struct { .. })
    }
}

/// Every definition `kyb-openapi` knows (the set is the built-in API's: fixed), keyed by
/// the names its references use, each resolved on first use.
fn table() -> &'static HashMap<&'static str, (&'static Value, OnceLock<Definition>)> {
    type Table = HashMap<&'static str, (&'static Value, OnceLock<Definition>)>;
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        kyb_openapi::definitions()
            .map(|(name, schema)| (name, (schema, OnceLock::new())))
            .collect()
    })
}

/// The resolved definition `name`, `None` for names `kyb-openapi` does not know (kinds
/// without a type: custom resources).
pub(crate) fn lookup(name: &str) -> Option<&'static Definition> {
    let (name, (schema, resolved)) = table().get_key_value(name)?;
    Some(resolved.get_or_init(|| build(name, schema)))
}

fn build(name: &'static str, schema: &'static Value) -> Definition {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let atomic = kyb_openapi::struct_map_type(name) == Some(MapType::Atomic);
        let fields = props
            .iter()
            .map(|(field, prop)| {
                let semantics = kyb_openapi::list_semantics(name, field);
                (field.as_str(), property_type(prop, semantics))
            })
            .collect();
        return Definition::Struct(Struct {
            name,
            atomic,
            fields,
        });
    }
    if schema.get("oneOf").is_some() {
        return Definition::Scalar(Scalar::Any);
    }
    match scalar_of(schema) {
        Some(s) => Definition::Scalar(s),
        None => Definition::Deduced,
    }
}

fn scalar_of(schema: &Value) -> Option<Scalar> {
    match schema.get("type").and_then(Value::as_str)? {
        "string" => Some(Scalar::String),
        "integer" | "number" => Some(Scalar::Numeric),
        "boolean" => Some(Scalar::Boolean),
        _ => None,
    }
}

fn reference(schema: &'static Value) -> Option<&'static str> {
    let direct = schema.get("$ref").and_then(Value::as_str);
    let via_all_of = || {
        schema
            .get("allOf")?
            .as_array()?
            .iter()
            .find_map(|s| s.get("$ref").and_then(Value::as_str))
    };
    direct
        .or_else(via_all_of)?
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
}

fn property_type(
    prop: &'static Value,
    semantics: Option<&'static kyb_openapi::ListSemantics>,
) -> TypeRef {
    let map_atomic = semantics.and_then(|s| s.map_type) == Some(MapType::Atomic);
    if let Some(name) = reference(prop) {
        return TypeRef::Definition {
            name,
            atomic: map_atomic,
        };
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("array") => TypeRef::List {
            item: Box::new(element_type(prop.get("items"))),
            kind: list_kind(semantics),
        },
        Some("object") => match prop.get("additionalProperties") {
            Some(value) if value.is_object() => TypeRef::Map {
                value: Box::new(element_type(Some(value))),
                atomic: map_atomic,
            },
            _ => TypeRef::Deduced,
        },
        _ => {
            if prop.get("oneOf").is_some() {
                TypeRef::Scalar(Scalar::Any)
            } else {
                scalar_of(prop).map_or(TypeRef::Deduced, TypeRef::Scalar)
            }
        }
    }
}

/// The type of list items or map values (nested collections carry no semantics).
fn element_type(schema: Option<&'static Value>) -> TypeRef {
    let Some(schema) = schema else {
        return TypeRef::Deduced;
    };
    if let Some(name) = reference(schema) {
        return TypeRef::Definition {
            name,
            atomic: false,
        };
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => TypeRef::List {
            item: Box::new(element_type(schema.get("items"))),
            kind: ListKind::Atomic,
        },
        Some("object") => match schema.get("additionalProperties") {
            Some(value) if value.is_object() => TypeRef::Map {
                value: Box::new(element_type(Some(value))),
                atomic: false,
            },
            _ => TypeRef::Deduced,
        },
        _ => scalar_of(schema).map_or(TypeRef::Deduced, TypeRef::Scalar),
    }
}

fn list_kind(semantics: Option<&'static kyb_openapi::ListSemantics>) -> ListKind {
    let Some(s) = semantics else {
        return ListKind::Atomic;
    };
    match s.list_type {
        Some(ListType::Atomic) => ListKind::Atomic,
        Some(ListType::Set) => ListKind::Set,
        Some(ListType::Map) => ListKind::Map(s.list_map_keys.clone()),
        None => match s.patch_strategy {
            Some(PatchStrategy::Merge | PatchStrategy::MergeRetainKeys) => {
                match s.patch_merge_key {
                    Some(key) => ListKind::Map(vec![key]),
                    None => ListKind::Set,
                }
            }
            _ => ListKind::Atomic,
        },
    }
}

/// The schema default of a list-map key field, used when an item omits it.
///
/// Kubernetes declares `+default="TCP"` on the `protocol` key of container and service
/// ports; `kyb-openapi`'s schemas carry no defaults, so the two are listed here.
pub(crate) fn key_default(item_definition: Option<&str>, key: &str) -> Option<Value> {
    match (item_definition?, key) {
        ("io.k8s.api.core.v1.ContainerPort" | "io.k8s.api.core.v1.ServicePort", "protocol") => {
            Some(Value::String("TCP".into()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn field(def: &str, f: &str) -> TypeRef {
        match lookup(def).unwrap() {
            Definition::Struct(s) => s.fields.get(f).unwrap().clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn containers_are_a_map_list_keyed_by_name() {
        match field("io.k8s.api.core.v1.PodSpec", "containers") {
            TypeRef::List { item, kind } => {
                assert_eq!(kind, ListKind::Map(vec!["name"]));
                assert_eq!(item.definition_name(), Some("io.k8s.api.core.v1.Container"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn semantics_come_from_the_table() {
        assert!(matches!(
            field("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
            TypeRef::Map { atomic: true, .. }
        ));
        assert!(matches!(
            field(OBJECT_META, "labels"),
            TypeRef::Map { atomic: false, .. }
        ));
        assert!(matches!(
            field(OBJECT_META, "finalizers"),
            TypeRef::List {
                kind: ListKind::Set,
                ..
            }
        ));
        assert!(matches!(
            field("io.k8s.api.core.v1.Container", "args"),
            TypeRef::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
        let selector = field("io.k8s.api.apps.v1.DeploymentSpec", "selector");
        assert!(matches!(
            selector.resolve(),
            Resolved::Struct { atomic: true, .. }
        ));
        let replicas = field("io.k8s.api.apps.v1.DeploymentSpec", "replicas");
        assert!(matches!(
            replicas.resolve(),
            Resolved::Scalar(Scalar::Numeric)
        ));
        let quantity = field("io.k8s.api.core.v1.ResourceRequirements", "limits");
        match quantity {
            TypeRef::Map { value, .. } => {
                assert!(matches!(value.resolve(), Resolved::Scalar(Scalar::Any)))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_and_free_form_definitions_are_deduced() {
        assert!(matches!(
            TypeRef::root("com.example.v1.Widget"),
            TypeRef::DeducedRoot
        ));
        let raw = field("io.k8s.api.apps.v1.ControllerRevision", "data");
        assert!(matches!(raw.resolve(), Resolved::Deduced));
        let root = TypeRef::DeducedRoot;
        let (meta, declared) = root.resolve().member("metadata");
        assert!(declared);
        assert!(matches!(meta.resolve(), Resolved::Struct { .. }));
        let (_, declared) = root.resolve().member("spec");
        assert!(!declared);
    }

    #[test]
    fn port_protocols_default_to_tcp() {
        assert_eq!(
            key_default(Some("io.k8s.api.core.v1.ContainerPort"), "protocol"),
            Some(Value::String("TCP".into()))
        );
        assert_eq!(
            key_default(Some("io.k8s.api.core.v1.ContainerPort"), "name"),
            None
        );
    }
}
