//! Where strategic merge patch learns how a field merges: the type of every value it
//! walks through, and for each field its patch strategy and merge key, all from
//! `kyb-openapi` (the one table of merge semantics and the built-in schemas).
//!
//! Fields the table does not know (unknown fields, free-form values such as
//! `RawExtension` or a custom resource's schema inside a CRD) merge like plain JSON:
//! objects merge, lists are replaced.

use kyb_openapi::PatchStrategy;

/// The type of an object being merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema<'a> {
    /// A struct of this OpenAPI definition (`io.k8s.api.core.v1.PodSpec`).
    Struct(&'a str),
    /// A map whose values have this definition (`None`: scalars or free-form values).
    Map(Option<&'static str>),
    /// A value nothing is known about.
    Free,
}

/// How one field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field<'a> {
    /// The type of the field's value, or of its items for a list.
    pub(crate) schema: Schema<'a>,
    /// `x-kubernetes-patch-strategy`.
    pub(crate) strategy: Option<PatchStrategy>,
    /// `x-kubernetes-patch-merge-key`.
    pub(crate) merge_key: Option<&'static str>,
}

impl<'a> Schema<'a> {
    /// How the member `name` of an object of this type merges.
    pub(crate) fn field(self, name: &str) -> Field<'a> {
        match self {
            Schema::Struct(definition) => {
                let semantics = kyb_openapi::list_semantics(definition, name);
                let property = kyb_openapi::definition(definition)
                    .and_then(|d| d.get("properties"))
                    .and_then(|p| p.get(name));
                let is_map = property.is_some_and(|p| {
                    p.get("additionalProperties").is_some()
                        || p.get("items")
                            .is_some_and(|items| items.get("additionalProperties").is_some())
                });
                let target = kyb_openapi::field_type(definition, name);
                let schema = match (is_map, target) {
                    (true, values) => Schema::Map(values),
                    (false, Some(target)) => Schema::Struct(target),
                    (false, None) => Schema::Free,
                };
                Field {
                    schema,
                    strategy: semantics.and_then(|s| s.patch_strategy),
                    merge_key: semantics.and_then(|s| s.patch_merge_key),
                }
            }
            Schema::Map(values) => Field {
                schema: values.map_or(Schema::Free, Schema::Struct),
                strategy: None,
                merge_key: None,
            },
            Schema::Free => Field {
                schema: Schema::Free,
                strategy: None,
                merge_key: None,
            },
        }
    }

    /// The kind name Kubernetes prints for list items of this type in its errors.
    pub(crate) fn kind_name(self) -> &'static str {
        match self {
            Schema::Map(_) => "map",
            _ => "struct",
        }
    }
}

impl Field<'_> {
    /// Whether a list in this field merges item by item (`patchStrategy` `merge`).
    pub(crate) fn merges_lists(&self) -> bool {
        self.strategy.is_some_and(PatchStrategy::merges)
    }

    /// Whether an object in this field is replaced as a whole (`patchStrategy` `replace`).
    pub(crate) fn replaces(&self) -> bool {
        self.strategy == Some(PatchStrategy::Replace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD_SPEC: &str = "io.k8s.api.core.v1.PodSpec";

    #[test]
    fn struct_fields() {
        let containers = Schema::Struct(POD_SPEC).field("containers");
        assert_eq!(
            containers.schema,
            Schema::Struct("io.k8s.api.core.v1.Container")
        );
        assert_eq!(containers.merge_key, Some("name"));
        assert!(containers.merges_lists());

        let tolerations = Schema::Struct(POD_SPEC).field("tolerations");
        assert!(!tolerations.merges_lists());

        let selector = Schema::Struct(POD_SPEC).field("nodeSelector");
        assert_eq!(selector.schema, Schema::Map(None));
        assert!(!selector.replaces());

        let volumes = Schema::Struct(POD_SPEC).field("volumes");
        assert!(volumes.merges_lists());
        assert_eq!(volumes.merge_key, Some("name"));

        let unknown = Schema::Struct(POD_SPEC).field("noSuchField");
        assert_eq!(unknown.schema, Schema::Free);
        assert_eq!(unknown.strategy, None);
    }

    #[test]
    fn maps_of_structs_and_replaced_structs() {
        let props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        let properties = Schema::Struct(props).field("properties");
        assert_eq!(properties.schema, Schema::Map(Some(props)));
        assert_eq!(
            properties.schema.field("spec").schema,
            Schema::Struct(props)
        );

        let pdb = Schema::Struct("io.k8s.api.policy.v1.PodDisruptionBudgetSpec").field("selector");
        assert!(pdb.replaces());

        assert_eq!(Schema::Free.field("x").schema, Schema::Free);
        assert_eq!(Schema::Map(None).kind_name(), "map");
        assert_eq!(Schema::Free.kind_name(), "struct");
    }
}
