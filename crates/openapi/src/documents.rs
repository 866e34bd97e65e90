//! The documents the API server serves, built lazily and cached.
//!
//! [`Documents`] is made once from the served resources (cheap: nothing is generated
//! yet). Each document — `/openapi/v2`, the `/openapi/v3` index, one `/openapi/v3/<path>`
//! per group-version plus `api`, `apis`, `apis/<group>` and `version` — is generated on
//! first request and then kept as serialized bytes with the SHA-512 hash of those bytes
//! (upper-case hex, as Kubernetes writes it), so that the same request is answered with
//! the same bytes and the index's `?hash=` always matches what the path serves.

use crate::operations::{self, KindNames, PathItem};
use crate::registry::names;
use crate::render;
use crate::resource::{Gvk, ResourceSpec, custom_definition_name};
use crate::schemas::{self, builtin, closure, collect_refs, free_form_kind, free_form_list};
use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The Kubernetes version the documents describe, unless told otherwise.
pub const DEFAULT_SERVER_VERSION: &str = "v1.33.0";

/// One serialized document and its hash.
#[derive(Debug, Clone)]
pub struct Document {
    bytes: Bytes,
    hash: String,
}

impl Document {
    fn new(value: &Value) -> Document {
        let bytes = serde_json::to_vec(value).unwrap_or_default();
        let hash = Sha512::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        Document {
            bytes: Bytes::from(bytes),
            hash,
        }
    }

    /// The JSON text (cheap to clone: reference counted).
    pub fn bytes(&self) -> Bytes {
        self.bytes.clone()
    }

    /// The upper-case hex SHA-512 of [`Document::bytes`].
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The `ETag` header value: the hash in double quotes.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.hash)
    }

    /// The document parsed back into a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}

/// What a v3 document path describes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DocKind {
    /// `api/v1`, `apis/apps/v1`: a group-version's resources.
    GroupVersion { group: String, version: String },
    /// `apis/apps`: a group's versions.
    Group(String),
    /// `api`: the core group's versions.
    CoreVersions,
    /// `apis`: the groups.
    Groups,
    /// `version`: the server's version.
    Version,
}

/// The OpenAPI documents of a set of served resources.
pub struct Documents {
    resources: Vec<ResourceSpec>,
    server_version: String,
    kinds: BTreeMap<String, DocKind>,
    /// Schemas of served kinds this crate has no type for.
    custom: BTreeMap<String, Value>,
    /// `x-kubernetes-group-version-kind` of each definition.
    gvks: BTreeMap<String, BTreeSet<Gvk>>,
    v2: OnceLock<Document>,
    index: OnceLock<Document>,
    v3: BTreeMap<String, OnceLock<Document>>,
}

impl Documents {
    /// Documents for `resources`. Nothing is generated until a document is asked for.
    pub fn new(mut resources: Vec<ResourceSpec>) -> Documents {
        resources.sort();
        resources.dedup();
        let mut kinds = BTreeMap::new();
        kinds.insert("api".to_owned(), DocKind::CoreVersions);
        kinds.insert("apis".to_owned(), DocKind::Groups);
        kinds.insert("version".to_owned(), DocKind::Version);
        for r in &resources {
            kinds.insert(
                r.group_version_path(),
                DocKind::GroupVersion {
                    group: r.group.clone(),
                    version: r.version.clone(),
                },
            );
            if !r.group.is_empty() {
                kinds.insert(format!("apis/{}", r.group), DocKind::Group(r.group.clone()));
            }
        }
        let custom = custom_schemas(&resources);
        let gvks = group_version_kinds(&resources);
        let v3 = kinds.keys().map(|k| (k.clone(), OnceLock::new())).collect();
        Documents {
            resources,
            server_version: DEFAULT_SERVER_VERSION.to_owned(),
            kinds,
            custom,
            gvks,
            v2: OnceLock::new(),
            index: OnceLock::new(),
            v3,
        }
    }

    /// Sets the version written in `info.version` (`v1.33.0` by default).
    pub fn with_server_version(mut self, version: &str) -> Documents {
        self.server_version = version.to_owned();
        self
    }

    /// Publishes `schema` (an OpenAPI v3 schema without references, such as a
    /// CustomResourceDefinition's `openAPIV3Schema`) for a served kind this crate has no
    /// type for, instead of the free-form object schema it gets otherwise.
    pub fn with_custom_schema(
        mut self,
        group: &str,
        version: &str,
        kind: &str,
        schema: Value,
    ) -> Documents {
        if schemas::builtin_kind_name(group, version, kind).is_none() {
            let name = custom_definition_name(group, version, kind);
            let list = free_form_list(&name, &schema, kind);
            self.custom.insert(format!("{name}List"), list);
            self.custom.insert(name, schema);
        }
        self
    }

    /// The Swagger 2.0 document (`/openapi/v2`).
    pub fn v2(&self) -> &Document {
        self.v2.get_or_init(|| Document::new(&self.v2_value()))
    }

    /// The v3 index (`/openapi/v3`).
    pub fn v3_index(&self) -> &Document {
        self.index
            .get_or_init(|| Document::new(&self.v3_index_value()))
    }

    /// The v3 document of `path` (`api/v1`, `apis/apps/v1`, `apis/apps`, `api`, `apis`,
    /// `version`); `None` for a path the server does not have.
    pub fn v3(&self, path: &str) -> Option<&Document> {
        let path = path.trim_matches('/');
        let cell = self.v3.get(path)?;
        Some(cell.get_or_init(|| Document::new(&self.v3_value(path).unwrap_or(Value::Null))))
    }

    /// The v3 document paths, in order.
    pub fn v3_paths(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }

    /// Generates every document now (for example on a background thread at start-up,
    /// so that the first client does not wait).
    pub fn prepare_all(&self) {
        self.v3_index();
        self.v2();
    }

    /// The Swagger 2.0 document as a JSON value (not cached).
    pub fn v2_value(&self) -> Value {
        let mut items = Vec::new();
        for key in self.kinds.keys() {
            items.extend(self.path_items(key));
        }
        let paths = render::paths_v3(&items);
        let mut roots = BTreeSet::new();
        collect_refs(&paths, &mut roots);
        let mut definitions = Map::new();
        for name in closure(roots, |n| self.schema(n)) {
            if let Some(mut schema) = self.tagged_schema(&name) {
                schemas::to_v2(&name, &mut schema);
                definitions.insert(name, schema);
            }
        }
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": self.server_version},
            "paths": render::paths_v2(&items),
            "definitions": definitions,
            "securityDefinitions": render::bearer_scheme(),
            "security": [{"BearerToken": []}],
        })
    }

    /// The v3 index as a JSON value; generates (and caches) every v3 document for its
    /// hash.
    pub fn v3_index_value(&self) -> Value {
        let mut paths = Map::new();
        for key in self.kinds.keys() {
            if let Some(doc) = self.v3(key) {
                paths.insert(
                    key.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", doc.hash())}),
                );
            }
        }
        json!({ "paths": paths })
    }

    /// The v3 document of `path` as a JSON value (not cached).
    pub fn v3_value(&self, path: &str) -> Option<Value> {
        let path = path.trim_matches('/');
        if !self.kinds.contains_key(path) {
            return None;
        }
        let items = self.path_items(path);
        let paths = render::paths_v3(&items);
        let mut roots = BTreeSet::new();
        collect_refs(&paths, &mut roots);
        let mut schemas = Map::new();
        for name in closure(roots, |n| self.schema(n)) {
            if let Some(schema) = self.tagged_schema(&name) {
                schemas.insert(name, schema);
            }
        }
        Some(json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": self.server_version},
            "paths": paths,
            "components": {
                "schemas": schemas,
                "securitySchemes": render::bearer_scheme(),
            },
            "security": [{"BearerToken": []}],
        }))
    }

    fn path_items(&self, key: &str) -> Vec<PathItem> {
        match self.kinds.get(key) {
            Some(DocKind::CoreVersions) => vec![operations::core_versions_path()],
            Some(DocKind::Groups) => vec![operations::groups_path()],
            Some(DocKind::Version) => vec![operations::version_path()],
            Some(DocKind::Group(group)) => vec![operations::group_path(group)],
            Some(DocKind::GroupVersion { group, version }) => {
                let mut items = vec![operations::resources_path(group, version)];
                for r in self
                    .resources
                    .iter()
                    .filter(|r| &r.group == group && &r.version == version)
                {
                    items.extend(operations::resource_paths(r, self));
                }
                items
            }
            None => Vec::new(),
        }
    }

    fn schema(&self, name: &str) -> Option<&Value> {
        self.custom.get(name).or_else(|| builtin().get(name))
    }

    fn tagged_schema(&self, name: &str) -> Option<Value> {
        let mut schema = self.schema(name)?.clone();
        if let (Some(gvks), Some(object)) = (self.gvks.get(name), schema.as_object_mut()) {
            object.insert(
                "x-kubernetes-group-version-kind".into(),
                Value::Array(gvks.iter().map(Gvk::to_json).collect()),
            );
        }
        Some(schema)
    }
}

impl KindNames for Documents {
    fn definition(&self, group: &str, version: &str, kind: &str) -> String {
        definition_name(group, version, kind)
    }
}

fn definition_name(group: &str, version: &str, kind: &str) -> String {
    schemas::builtin_kind_name(group, version, kind)
        .unwrap_or_else(|| custom_definition_name(group, version, kind))
}

fn custom_schemas(resources: &[ResourceSpec]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for r in resources {
        if schemas::builtin_kind_name(&r.group, &r.version, &r.kind).is_some() {
            continue;
        }
        let name = custom_definition_name(&r.group, &r.version, &r.kind);
        let schema = free_form_kind(&r.kind);
        let list = free_form_list(&name, &schema, &r.kind);
        out.insert(format!("{name}List"), list);
        out.insert(name, schema);
    }
    out
}

fn group_version_kinds(resources: &[ResourceSpec]) -> BTreeMap<String, BTreeSet<Gvk>> {
    let mut out: BTreeMap<String, BTreeSet<Gvk>> = BTreeMap::new();
    let mut tag = |name: String, gvk: Gvk| {
        out.entry(name).or_default().insert(gvk);
    };
    let mut group_versions = BTreeSet::from([(String::new(), "v1".to_owned())]);
    for r in resources {
        let name = definition_name(&r.group, &r.version, &r.kind);
        tag(name.clone(), Gvk::new(&r.group, &r.version, &r.kind));
        tag(
            format!("{name}List"),
            Gvk::new(&r.group, &r.version, &format!("{}List", r.kind)),
        );
        for sub in operations::subresource_kinds(r) {
            tag(definition_name(&sub.group, &sub.version, &sub.kind), sub);
        }
        group_versions.insert((r.group.clone(), r.version.clone()));
    }
    for (group, version) in &group_versions {
        tag(
            names::DELETE_OPTIONS.to_owned(),
            Gvk::new(group, version, "DeleteOptions"),
        );
        tag(
            names::WATCH_EVENT.to_owned(),
            Gvk::new(group, version, "WatchEvent"),
        );
    }
    for (name, kind) in [
        (names::STATUS, "Status"),
        (names::API_RESOURCE_LIST, "APIResourceList"),
        (names::API_GROUP, "APIGroup"),
        (names::API_GROUP_LIST, "APIGroupList"),
        (names::API_VERSIONS, "APIVersions"),
    ] {
        tag(name.to_owned(), Gvk::new("", "v1", kind));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::time::Instant;

    /// The specs of the stored built-in resources, as the API server's registry starts
    /// with them (reviews, never stored, have no list to describe).
    fn builtin_resource_specs() -> Vec<ResourceSpec> {
        kyb_api::registry::BUILTIN
            .iter()
            .filter(|def| !def.is_virtual())
            .map(ResourceSpec::of)
            .collect()
    }

    fn documents() -> Documents {
        Documents::new(builtin_resource_specs())
    }

    /// Every `$ref` in `doc` names an entry of `doc[section]`.
    fn unresolved_refs(doc: &Value, prefix: &str, section: &[&str]) -> Vec<String> {
        let mut targets = Vec::new();
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(o) => {
                    for (k, v) in o {
                        match (k.as_str(), v.as_str()) {
                            ("$ref", Some(r)) => out.push(r.to_owned()),
                            _ => walk(v, out),
                        }
                    }
                }
                Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        walk(doc, &mut targets);
        let mut defs = doc;
        for s in section {
            defs = &defs[*s];
        }
        targets
            .into_iter()
            .filter(|t| match t.strip_prefix(prefix) {
                Some(name) => defs.get(name).is_none(),
                None => true,
            })
            .collect()
    }

    /// Schema keywords (not property names) used anywhere in `schema`.
    fn keywords(schema: &Value, out: &mut BTreeSet<String>) {
        if let Value::Object(o) = schema {
            for (k, v) in o {
                out.insert(k.clone());
                match k.as_str() {
                    "properties" => {
                        if let Some(props) = v.as_object() {
                            props.values().for_each(|p| keywords(p, out));
                        }
                    }
                    "items" | "additionalProperties" => keywords(v, out),
                    "oneOf" | "allOf" | "anyOf" => {
                        if let Some(a) = v.as_array() {
                            a.iter().for_each(|s| keywords(s, out));
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// What kubectl's query-param verifier does: find the PATCH operation tagged with
    /// the GVK and look for the parameter among its own parameters.
    fn supports_field_validation(doc: &Value, gvk: &Gvk) -> bool {
        let Some(paths) = doc["paths"].as_object() else {
            return false;
        };
        paths.values().any(|item| {
            let op = &item["patch"];
            op["x-kubernetes-group-version-kind"] == gvk.to_json()
                && op["parameters"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|p| p["name"] == "fieldValidation"))
        })
    }

    #[test]
    fn v3_documents_are_complete_and_self_contained() {
        let docs = documents();
        for spec in builtin_resource_specs() {
            let path = spec.group_version_path();
            let doc = docs.v3(&path).unwrap().to_value();
            assert_eq!(doc["openapi"], "3.0.0");
            assert_eq!(
                unresolved_refs(&doc, "#/components/schemas/", &["components", "schemas"]),
                Vec::<String>::new(),
                "{path}"
            );
            let schemas = doc["components"]["schemas"].as_object().unwrap();
            let gvk = Gvk::new(&spec.group, &spec.version, &spec.kind);
            let list = Gvk::new(&spec.group, &spec.version, &format!("{}List", spec.kind));
            for wanted in [&gvk, &list] {
                let tagged = schemas.values().any(|s| {
                    s["x-kubernetes-group-version-kind"]
                        .as_array()
                        .is_some_and(|a| a.contains(&wanted.to_json()))
                });
                assert!(tagged, "{path}: no schema tagged {wanted:?}");
            }
            let delete_options = &schemas[names::DELETE_OPTIONS]["x-kubernetes-group-version-kind"];
            assert!(
                delete_options
                    .as_array()
                    .unwrap()
                    .contains(&Gvk::new(&spec.group, &spec.version, "DeleteOptions").to_json())
            );
            assert!(supports_field_validation(&doc, &gvk), "{gvk:?}");
        }
    }

    #[test]
    fn pod_schema_in_core_document() {
        let doc = documents().v3("api/v1").unwrap().to_value();
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let content = patch["requestBody"]["content"].as_object().unwrap();
        for media in [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ] {
            assert!(content.contains_key(media), "{media}");
        }
        // The Scale schema is in apps/v1, tagged autoscaling/v1.
        let apps = documents().v3("apis/apps/v1").unwrap().to_value();
        assert_eq!(
            apps["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"]["x-kubernetes-group-version-kind"],
            json!([{"group": "autoscaling", "kind": "Scale", "version": "v1"}])
        );
        assert!(
            apps["components"]["schemas"]
                .get("io.k8s.api.core.v1.Node")
                .is_none()
        );
    }

    #[test]
    fn index_hashes_match_documents() {
        let docs = documents();
        let index = docs.v3_index().to_value();
        let paths = index["paths"].as_object().unwrap();
        for key in [
            "api/v1",
            "apis/apps/v1",
            "apis/rbac.authorization.k8s.io/v1",
            "api",
            "apis",
            "apis/apps",
            "version",
        ] {
            let url = paths[key]["serverRelativeURL"].as_str().unwrap();
            let hash = docs.v3(key).unwrap().hash();
            assert_eq!(url, format!("/openapi/v3/{key}?hash={hash}"));
            assert_eq!(hash.len(), 128);
        }
        assert!(docs.v3("apis/nope/v1").is_none());
        assert!(docs.v3("/api/v1").is_some());
    }

    #[test]
    fn hashes_are_stable() {
        let mut reversed = builtin_resource_specs();
        reversed.reverse();
        let a = documents();
        let b = Documents::new(reversed);
        assert_eq!(
            a.v3("api/v1").unwrap().hash(),
            b.v3("api/v1").unwrap().hash()
        );
        assert_eq!(a.v3_index().hash(), b.v3_index().hash());
        assert_eq!(
            a.v3("api/v1").unwrap().bytes(),
            b.v3("api/v1").unwrap().bytes()
        );
        assert_eq!(a.v3_index().etag(), format!("\"{}\"", a.v3_index().hash()));

        let mut fewer = builtin_resource_specs();
        fewer.retain(|s| s.kind != "ConfigMap");
        let c = Documents::new(fewer);
        assert_ne!(
            a.v3("api/v1").unwrap().hash(),
            c.v3("api/v1").unwrap().hash()
        );
    }

    #[test]
    fn v2_document_is_swagger() {
        let doc = documents().v2().to_value();
        assert_eq!(doc["swagger"], "2.0");
        assert_eq!(
            unresolved_refs(&doc, "#/definitions/", &["definitions"]),
            Vec::<String>::new()
        );
        let pod = &doc["definitions"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["consumes"].as_array().unwrap().len(), 4);
        assert!(supports_field_validation(
            &doc,
            &Gvk::new("apps", "v1", "Deployment")
        ));
        assert_eq!(patch["parameters"][0]["in"], "body");

        // Only Swagger 2.0 schema keywords.
        let allowed = [
            "$ref",
            "description",
            "type",
            "format",
            "items",
            "properties",
            "required",
            "additionalProperties",
            "enum",
            "default",
        ];
        let mut used = BTreeSet::new();
        for schema in doc["definitions"].as_object().unwrap().values() {
            keywords(schema, &mut used);
        }
        let odd: Vec<_> = used
            .iter()
            .filter(|k| !k.starts_with("x-") && !allowed.contains(&k.as_str()))
            .collect();
        assert!(odd.is_empty(), "{odd:?}");
    }

    #[test]
    fn custom_kinds_get_free_form_schemas() {
        let mut specs = builtin_resource_specs();
        specs.push(ResourceSpec {
            group: "stable.example.com".into(),
            version: "v1".into(),
            kind: "CronTab".into(),
            plural: "crontabs".into(),
            namespaced: true,
            verbs: vec!["get".into(), "list".into(), "patch".into()],
            subresources: vec![],
        });
        let docs = Documents::new(specs);
        let doc = docs.v3("apis/stable.example.com/v1").unwrap().to_value();
        let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(schema["x-kubernetes-preserve-unknown-fields"], true);
        assert!(
            doc["components"]["schemas"]
                .get("com.example.stable.v1.CronTabList")
                .is_some()
        );
        assert!(docs.v3("apis/stable.example.com").is_some());

        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "description": "The cron spec."}}});
        let docs = Documents::new(docs.resources.clone()).with_custom_schema(
            "stable.example.com",
            "v1",
            "CronTab",
            schema,
        );
        let doc = docs.v3("apis/stable.example.com/v1").unwrap().to_value();
        let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            schema["properties"]["spec"]["description"],
            "The cron spec."
        );
        assert_eq!(
            schema["x-kubernetes-group-version-kind"][0]["kind"],
            "CronTab"
        );
    }

    #[test]
    fn documents_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Documents>();
    }

    #[test]
    fn free_functions_match_documents() {
        let specs = builtin_resource_specs();
        assert_eq!(
            crate::v3(&specs, "api/v1"),
            Some(documents().v3("api/v1").unwrap().to_value())
        );
        assert!(crate::v3(&specs, "apis/nope/v1").is_none());
        assert!(
            crate::v3_index(&specs)["paths"]
                .get("apis/batch/v1")
                .is_some()
        );
        assert_eq!(crate::v2(&specs)["swagger"], "2.0");
    }

    #[test]
    fn generation_time() {
        let start = Instant::now();
        let _ = builtin();
        let schemas = start.elapsed();
        let docs = documents();
        let start = Instant::now();
        let core = docs.v3("api/v1").unwrap().bytes().len();
        let core_time = start.elapsed();
        let start = Instant::now();
        docs.v3_index();
        let all_v3 = start.elapsed();
        let start = Instant::now();
        let v2 = docs.v2().bytes().len();
        let v2_time = start.elapsed();
        println!(
            "schemas {schemas:?}; api/v1 {core} bytes in {core_time:?}; all v3 {all_v3:?}; v2 {v2} bytes in {v2_time:?}"
        );
    }
}
