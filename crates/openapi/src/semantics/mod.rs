//! How lists, maps and structs of the built-in API types merge.
//!
//! Kubernetes declares, per field of its API types, how a client-side strategic merge
//! patch combines lists (`patchStrategy`, `patchMergeKey`) and how server-side apply
//! tracks ownership inside lists, maps and structs (`listType`, `listMapKey`, `mapType`,
//! `structType`). k8s-openapi does not carry these markers, so this module holds them as
//! a table (`table.txt`, recorded from the Kubernetes 1.33 API definitions) and is the one
//! place the OpenAPI documents, strategic merge patch and server-side apply read them
//! from, so that they cannot drift apart.
//!
//! Lookups take the OpenAPI definition name of a type (`io.k8s.api.core.v1.PodSpec`) and
//! a field's JSON name (`containers`). [`field_type`] gives the definition name of a
//! field's type (or of its items, for lists and maps), to walk an object field by field.

mod table;

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// `x-kubernetes-patch-strategy`: how a strategic merge patch treats a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchStrategy {
    /// Lists are merged: items with the same merge key (or, for scalar lists, the same
    /// value) are combined instead of the whole list being replaced.
    Merge,
    /// Fields of the struct that the patch does not mention are cleared.
    RetainKeys,
    /// Both `merge` and `retainKeys` (written `merge,retainKeys`).
    MergeRetainKeys,
    /// The patch value replaces the field as a whole.
    Replace,
}

impl PatchStrategy {
    /// The value as written in the schema extension.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchStrategy::Merge => "merge",
            PatchStrategy::RetainKeys => "retainKeys",
            PatchStrategy::MergeRetainKeys => "merge,retainKeys",
            PatchStrategy::Replace => "replace",
        }
    }

    /// Whether list items are merged (`merge` or `merge,retainKeys`).
    pub fn merges(self) -> bool {
        matches!(self, PatchStrategy::Merge | PatchStrategy::MergeRetainKeys)
    }

    /// Whether unmentioned struct fields are cleared (`retainKeys`).
    pub fn retains_keys(self) -> bool {
        matches!(
            self,
            PatchStrategy::RetainKeys | PatchStrategy::MergeRetainKeys
        )
    }

    fn parse(text: &str) -> Option<PatchStrategy> {
        match text {
            "merge" => Some(PatchStrategy::Merge),
            "retainKeys" => Some(PatchStrategy::RetainKeys),
            "merge,retainKeys" => Some(PatchStrategy::MergeRetainKeys),
            "replace" => Some(PatchStrategy::Replace),
            _ => None,
        }
    }
}

/// `x-kubernetes-list-type`: how server-side apply identifies list items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListType {
    /// The list is one value, owned and replaced as a whole.
    Atomic,
    /// Items are unique scalars, each owned separately.
    Set,
    /// Items are objects identified by the values of the list-map keys.
    Map,
}

impl ListType {
    /// The value as written in the schema extension.
    pub fn as_str(self) -> &'static str {
        match self {
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map => "map",
        }
    }
}

/// `x-kubernetes-map-type`: whether a map (or struct) is owned as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapType {
    /// The map or struct is one value, owned and replaced as a whole.
    Atomic,
    /// Each key (or struct field) is owned separately.
    Granular,
}

impl MapType {
    /// The value as written in the schema extension.
    pub fn as_str(self) -> &'static str {
        match self {
            MapType::Atomic => "atomic",
            MapType::Granular => "granular",
        }
    }
}

/// The merge semantics Kubernetes declares for one field.
///
/// Fields that declare nothing have no entry: a list without a list type is atomic
/// for server-side apply and replaced by strategic merge patch; a map without a map
/// type is granular.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListSemantics {
    /// `x-kubernetes-patch-strategy`.
    pub patch_strategy: Option<PatchStrategy>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys` (only with [`ListType::Map`]).
    pub list_map_keys: Vec<&'static str>,
    /// `x-kubernetes-map-type` on the field (a map field, or a struct field overriding
    /// the struct's own type).
    pub map_type: Option<MapType>,
}

impl ListSemantics {
    /// The OpenAPI extensions this field carries, in the order Kubernetes writes them.
    pub fn extensions(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut out = Vec::new();
        if !self.list_map_keys.is_empty() {
            out.push((
                "x-kubernetes-list-map-keys",
                serde_json::json!(self.list_map_keys),
            ));
        }
        if let Some(list_type) = self.list_type {
            out.push(("x-kubernetes-list-type", list_type.as_str().into()));
        }
        if let Some(map_type) = self.map_type {
            out.push(("x-kubernetes-map-type", map_type.as_str().into()));
        }
        if let Some(key) = self.patch_merge_key {
            out.push(("x-kubernetes-patch-merge-key", key.into()));
        }
        if let Some(strategy) = self.patch_strategy {
            out.push(("x-kubernetes-patch-strategy", strategy.as_str().into()));
        }
        out
    }
}

/// What the table says about one definition.
#[derive(Debug, Default)]
pub(crate) struct DefinitionSemantics {
    /// `x-kubernetes-map-type` of the definition itself (`+structType`).
    pub(crate) map_type: Option<MapType>,
    /// Per field, by JSON name.
    pub(crate) fields: BTreeMap<&'static str, ListSemantics>,
}

/// The parsed table, by full definition name.
pub(crate) struct Table {
    pub(crate) definitions: HashMap<String, DefinitionSemantics>,
    /// Lines that did not parse; empty unless the table has a mistake (a test checks).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) errors: Vec<String>,
}

static TABLE_TEXT: &str = include_str!("table.txt");

pub(crate) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| table::parse(TABLE_TEXT))
}

/// The merge semantics of `field` of `definition`, if Kubernetes declares any.
///
/// ```
/// use kyb_openapi::{list_semantics, ListType, PatchStrategy};
/// let containers = list_semantics("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
/// assert_eq!(containers.patch_strategy, Some(PatchStrategy::Merge));
/// assert_eq!(containers.patch_merge_key, Some("name"));
/// assert_eq!(containers.list_type, Some(ListType::Map));
/// ```
pub fn list_semantics(definition: &str, field: &str) -> Option<&'static ListSemantics> {
    table().definitions.get(definition)?.fields.get(field)
}

/// `x-kubernetes-map-type` declared on a struct type itself (`+structType=atomic`), such
/// as `io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector`. A field's own
/// [`ListSemantics::map_type`] overrides it.
pub fn struct_map_type(definition: &str) -> Option<MapType> {
    table().definitions.get(definition)?.map_type
}

/// The definition name of the type of `field` of `definition`: the field's own type
/// for a struct field, the item type for a list, the value type for a map. `None` for
/// scalars, for unknown definitions or fields, and for free-form values.
///
/// ```
/// use kyb_openapi::field_type;
/// assert_eq!(field_type("io.k8s.api.core.v1.Pod", "spec"), Some("io.k8s.api.core.v1.PodSpec"));
/// assert_eq!(field_type("io.k8s.api.core.v1.PodSpec", "containers"), Some("io.k8s.api.core.v1.Container"));
/// ```
pub fn field_type(definition: &str, field: &str) -> Option<&'static str> {
    let property = crate::schemas::builtin()
        .get(definition)?
        .get("properties")?
        .get(field)?;
    crate::schemas::element_ref(property)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn table_parses_without_errors() {
        assert_eq!(table().errors, Vec::<String>::new());
        assert!(table().definitions.len() > 100);
    }

    #[test]
    fn every_entry_names_an_existing_field() {
        let schemas = crate::schemas::builtin();
        let mut missing = Vec::new();
        for (name, semantics) in &table().definitions {
            let Some(schema) = schemas.get(name) else {
                missing.push(name.clone());
                continue;
            };
            for field in semantics.fields.keys() {
                if schema.pointer(&format!("/properties/{field}")).is_none() {
                    missing.push(format!("{name}.{field}"));
                }
            }
        }
        assert_eq!(missing, Vec::<String>::new());
    }

    #[test]
    fn list_kinds_match_field_shapes() {
        // List semantics only on arrays, map types only on objects.
        let schemas = crate::schemas::builtin();
        let mut wrong = Vec::new();
        for (name, semantics) in &table().definitions {
            for (field, s) in &semantics.fields {
                let Some(property) = schemas
                    .get(name)
                    .and_then(|d| d.pointer(&format!("/properties/{field}")))
                else {
                    continue;
                };
                let is_array = property.get("type").and_then(|t| t.as_str()) == Some("array");
                if s.list_type.is_some() && !is_array {
                    wrong.push(format!("{name}.{field}: list type on a non-list"));
                }
                if s.list_type == Some(ListType::Map) && s.list_map_keys.is_empty() {
                    wrong.push(format!("{name}.{field}: map list without keys"));
                }
                if s.patch_merge_key.is_some() && !s.patch_strategy.is_some_and(|p| p.merges()) {
                    wrong.push(format!("{name}.{field}: merge key without merge"));
                }
            }
        }
        assert_eq!(wrong, Vec::<String>::new());
    }

    #[test]
    fn well_known_fields() {
        let c = list_semantics("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
        assert_eq!(c.patch_merge_key, Some("name"));
        assert_eq!(c.list_map_keys, vec!["name"]);

        let ports = list_semantics("io.k8s.api.core.v1.Container", "ports").unwrap();
        assert_eq!(ports.patch_merge_key, Some("containerPort"));
        assert_eq!(ports.list_map_keys, vec!["containerPort", "protocol"]);

        let svc = list_semantics("io.k8s.api.core.v1.ServiceSpec", "ports").unwrap();
        assert_eq!(svc.patch_merge_key, Some("port"));
        assert_eq!(svc.list_map_keys, vec!["port", "protocol"]);

        let volumes = list_semantics("io.k8s.api.core.v1.PodSpec", "volumes").unwrap();
        assert_eq!(volumes.patch_strategy, Some(PatchStrategy::MergeRetainKeys));
        assert!(volumes.patch_strategy.unwrap().retains_keys());

        let owners = list_semantics(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "ownerReferences",
        )
        .unwrap();
        assert_eq!(owners.patch_merge_key, Some("uid"));

        let finalizers = list_semantics(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "finalizers",
        )
        .unwrap();
        assert_eq!(finalizers.list_type, Some(ListType::Set));
        assert_eq!(finalizers.patch_strategy, Some(PatchStrategy::Merge));

        let strategy = list_semantics("io.k8s.api.apps.v1.DeploymentSpec", "strategy").unwrap();
        assert_eq!(strategy.patch_strategy, Some(PatchStrategy::RetainKeys));

        let selector = list_semantics("io.k8s.api.core.v1.PodSpec", "nodeSelector").unwrap();
        assert_eq!(selector.map_type, Some(MapType::Atomic));

        assert_eq!(
            struct_map_type("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"),
            Some(MapType::Atomic)
        );
        assert_eq!(struct_map_type("io.k8s.api.core.v1.PodSpec"), None);
        assert!(list_semantics("io.k8s.api.core.v1.PodSpec", "nodeName").is_none());
        assert!(list_semantics("no.such.Type", "x").is_none());
    }

    #[test]
    fn extensions_are_emitted_in_order() {
        let c = list_semantics("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
        let names: Vec<_> = c.extensions().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            vec![
                "x-kubernetes-list-map-keys",
                "x-kubernetes-list-type",
                "x-kubernetes-patch-merge-key",
                "x-kubernetes-patch-strategy"
            ]
        );
    }

    #[test]
    fn field_types_follow_lists_and_maps() {
        assert_eq!(
            field_type("io.k8s.api.core.v1.Container", "env"),
            Some("io.k8s.api.core.v1.EnvVar")
        );
        assert_eq!(
            field_type("io.k8s.api.core.v1.ResourceRequirements", "limits"),
            Some("io.k8s.apimachinery.pkg.api.resource.Quantity")
        );
        assert_eq!(
            field_type("io.k8s.api.core.v1.Pod", "metadata"),
            Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
        assert_eq!(field_type("io.k8s.api.core.v1.Container", "name"), None);
        assert_eq!(field_type("io.k8s.api.core.v1.Container", "nope"), None);
    }
}

#[cfg(test)]
mod audit {
    /// Lists array and map fields without an entry (run with --ignored to review).
    #[test]
    #[ignore]
    fn unannotated_collections() {
        let schemas = crate::schemas::builtin();
        for (name, schema) in schemas {
            let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else {
                continue;
            };
            for (field, p) in props {
                let ty = p.get("type").and_then(|t| t.as_str());
                let is_list = ty == Some("array");
                let is_map = ty == Some("object") && p.get("additionalProperties").is_some();
                if (is_list || is_map) && super::list_semantics(name, field).is_none() {
                    println!("{name}.{field} {}", if is_list { "list" } else { "map" });
                }
            }
        }
    }
}
