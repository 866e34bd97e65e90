//! The REST operations Kubernetes publishes for each resource, independent of the
//! OpenAPI version they are written in.
//!
//! For every resource this yields the collection path (list, create, deletecollection),
//! the object path (read, replace, patch, delete), the cluster-wide list of namespaced
//! resources, the deprecated `/watch/` paths, and the subresource paths, each with its
//! operation id, `x-kubernetes-action`, `x-kubernetes-group-version-kind`, parameters,
//! request body and responses. `render_v2` and `render_v3` write them out.

use crate::registry::names;
use crate::resource::{Gvk, ResourceSpec, capitalize, group_camel, tag, url_prefix};

/// An HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Method {
    Get,
    Put,
    Post,
    Delete,
    Patch,
}

impl Method {
    pub(crate) fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Patch => "patch",
        }
    }
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Path,
    Query,
}

/// The JSON type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamType {
    String,
    Boolean,
    Integer,
}

impl ParamType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Boolean => "boolean",
            ParamType::Integer => "integer",
        }
    }
}

/// A path or query parameter.
#[derive(Debug, Clone)]
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) location: Location,
    pub(crate) description: String,
    pub(crate) ty: ParamType,
}

/// The request body of an operation.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    /// An object of this definition, required.
    Object(String),
    /// A patch document in any of the patch content types.
    Patch,
    /// Optional DeleteOptions.
    DeleteOptions,
}

/// What an operation answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Produces {
    /// A single object.
    Object,
    /// A list, or a watch stream.
    Stream,
    /// Plain text (logs).
    Text,
}

impl Produces {
    pub(crate) fn media_types(self) -> &'static [&'static str] {
        match self {
            Produces::Object => &[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ],
            Produces::Stream => &[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
                "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf;stream=watch",
            ],
            Produces::Text => &[
                "text/plain",
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ],
        }
    }
}

/// The patch content types PATCH accepts.
pub(crate) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// What a response carries.
#[derive(Debug, Clone)]
pub(crate) enum ResponseBody {
    /// An object of this definition.
    Ref(String),
    /// A string.
    Text,
}

/// One response of an operation.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub(crate) code: u16,
    pub(crate) description: &'static str,
    pub(crate) body: Option<ResponseBody>,
}

/// One operation on a path.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) method: Method,
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) tag: String,
    pub(crate) action: Option<&'static str>,
    pub(crate) gvk: Option<Gvk>,
    pub(crate) params: Vec<Param>,
    pub(crate) body: Option<Body>,
    pub(crate) produces: Produces,
    pub(crate) responses: Vec<Response>,
}

/// A path and its operations.
#[derive(Debug, Clone)]
pub(crate) struct PathItem {
    pub(crate) path: String,
    pub(crate) params: Vec<Param>,
    pub(crate) operations: Vec<Operation>,
}

/// The definition name of a kind, and whether the server has a schema for it.
pub(crate) trait KindNames {
    fn definition(&self, group: &str, version: &str, kind: &str) -> String;
}

fn query(name: &'static str) -> Param {
    let (ty, description) = match name {
        "pretty" => (
            ParamType::String,
            "If 'true', the output is pretty printed.",
        ),
        "dryRun" => (
            ParamType::String,
            "When present, the request is processed without persisting anything. The only accepted value is 'All': run every stage.",
        ),
        "fieldManager" => (
            ParamType::String,
            "The name of the actor making the change, recorded in managedFields: at most 128 printable characters. Required for apply patches, optional otherwise.",
        ),
        "fieldValidation" => (
            ParamType::String,
            "What to do with unknown or duplicate fields in the request body: 'Ignore' drops them, 'Warn' (the default) drops them and answers with a warning for each, 'Strict' fails the request.",
        ),
        "force" => (
            ParamType::Boolean,
            "Force an apply request: take over fields that other managers own. Must be unset for other patch types.",
        ),
        "labelSelector" => (
            ParamType::String,
            "Only objects whose labels match this selector. Defaults to everything.",
        ),
        "fieldSelector" => (
            ParamType::String,
            "Only objects whose fields match this selector. Defaults to everything.",
        ),
        "watch" => (
            ParamType::Boolean,
            "Stream add, update and delete events for the matching objects instead of listing them. Give resourceVersion to start from.",
        ),
        "allowWatchBookmarks" => (
            ParamType::Boolean,
            "Ask for BOOKMARK events on a watch. The server decides whether and when to send them; ignored when not watching.",
        ),
        "resourceVersion" => (
            ParamType::String,
            "The resource version the request may be served from; see https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions. Unset by default.",
        ),
        "resourceVersionMatch" => (
            ParamType::String,
            "How resourceVersion applies to a list: 'NotOlderThan' or 'Exact'. Recommended whenever resourceVersion is set. Unset by default.",
        ),
        "sendInitialEvents" => (
            ParamType::Boolean,
            "With watch=true, first send synthetic ADDED events for the current objects, then a BOOKMARK annotated k8s.io/initial-events-end, then the changes. Requires resourceVersionMatch=NotOlderThan.",
        ),
        "timeoutSeconds" => (
            ParamType::Integer,
            "End the list or watch call after this many seconds, active or not.",
        ),
        "limit" => (
            ParamType::Integer,
            "Return at most this many objects. When more exist, the list metadata carries a continue token for the next chunk; the chunks together are one consistent snapshot. Not supported with watch.",
        ),
        "continue" => (
            ParamType::String,
            "The continue token of the previous chunk of a limited list, sent with otherwise identical parameters. An expired token is answered with 410 Gone. Not supported with watch.",
        ),
        "gracePeriodSeconds" => (
            ParamType::Integer,
            "Seconds before the object is deleted; zero deletes at once. Unset uses the default grace period of the kind.",
        ),
        "orphanDependents" => (
            ParamType::Boolean,
            "Deprecated in favour of propagationPolicy: whether dependents are orphaned (the 'orphan' finalizer is added or removed). Not together with propagationPolicy.",
        ),
        "propagationPolicy" => (
            ParamType::String,
            "How dependents are garbage collected: 'Orphan' keeps them, 'Background' deletes them after the owner, 'Foreground' deletes them before the owner. Not together with orphanDependents.",
        ),
        "ignoreStoreReadErrorWithClusterBreakingPotential" => (
            ParamType::Boolean,
            "Delete an object that cannot be read from storage (it fails to decode or decrypt), skipping finalizers and admission. Dangerous: may break the cluster.",
        ),
        _ => (ParamType::String, ""),
    };
    Param {
        name,
        location: Location::Query,
        description: description.to_owned(),
        ty,
    }
}

fn queries(names: &[&'static str]) -> Vec<Param> {
    names.iter().map(|n| query(n)).collect()
}

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const DELETE_COLLECTION_PARAMS: &[&str] = &[
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
];

fn path_param(name: &'static str, description: String) -> Param {
    Param {
        name,
        location: Location::Path,
        description,
        ty: ParamType::String,
    }
}

fn namespace_param() -> Param {
    path_param(
        "namespace",
        "The namespace of the objects: the scope in which their names are unique.".into(),
    )
}

fn responses(codes: &[(u16, &'static str)], body: &ResponseBody) -> Vec<Response> {
    let mut out: Vec<Response> = codes
        .iter()
        .map(|(code, description)| Response {
            code: *code,
            description,
            body: Some(body.clone()),
        })
        .collect();
    out.push(Response {
        code: 401,
        description: "Unauthorized",
        body: None,
    });
    out
}

const OK: (u16, &str) = (200, "OK");
const CREATED: (u16, &str) = (201, "Created");
const ACCEPTED: (u16, &str) = (202, "Accepted");

/// The kind a subresource reads and writes, and its verbs.
struct Subresource {
    gvk: Gvk,
    /// (method, verb word in the operation id, action)
    operations: &'static [(Method, &'static str, &'static str)],
    text: bool,
}

const GET_PUT_PATCH: &[(Method, &str, &str)] = &[
    (Method::Get, "read", "get"),
    (Method::Put, "replace", "put"),
    (Method::Patch, "patch", "patch"),
];
const POST: &[(Method, &str, &str)] = &[(Method::Post, "create", "post")];
const PUT: &[(Method, &str, &str)] = &[(Method::Put, "replace", "put")];
const GET: &[(Method, &str, &str)] = &[(Method::Get, "read", "get")];

fn subresource(parent: &Gvk, name: &str) -> Option<Subresource> {
    let (gvk, operations, text) = match name {
        "status" | "ephemeralcontainers" | "resize" => (parent.clone(), GET_PUT_PATCH, false),
        "scale" => (Gvk::new("autoscaling", "v1", "Scale"), GET_PUT_PATCH, false),
        "finalize" => (parent.clone(), PUT, false),
        "binding" => (Gvk::new("", "v1", "Binding"), POST, false),
        "eviction" => (Gvk::new("policy", "v1", "Eviction"), POST, false),
        "token" => (
            Gvk::new("authentication.k8s.io", "v1", "TokenRequest"),
            POST,
            false,
        ),
        "log" => (parent.clone(), GET, true),
        _ => return None,
    };
    Some(Subresource {
        gvk,
        operations,
        text,
    })
}

/// The GVKs of the kinds a resource's subresources use (for tagging their schemas).
pub(crate) fn subresource_kinds(spec: &ResourceSpec) -> Vec<Gvk> {
    let parent = Gvk::new(&spec.group, &spec.version, &spec.kind);
    spec.subresources
        .iter()
        .filter_map(|s| subresource(&parent, s))
        .filter(|s| !s.text)
        .map(|s| s.gvk)
        .collect()
}

/// Every path of one resource.
pub(crate) fn resource_paths(spec: &ResourceSpec, names: &dyn KindNames) -> Vec<PathItem> {
    let prefix = url_prefix(&spec.group, &spec.version);
    let tag = tag(&spec.group, &spec.version);
    let gv = format!("{}{}", group_camel(&spec.group), capitalize(&spec.version));
    let gvk = Gvk::new(&spec.group, &spec.version, &spec.kind);
    let kind = spec.kind.as_str();
    let object = names.definition(&spec.group, &spec.version, kind);
    let list = format!("{object}List");
    let scope = if spec.namespaced { "Namespaced" } else { "" };
    let (collection, scope_params) = if spec.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", spec.plural),
            vec![namespace_param()],
        )
    } else {
        (format!("{prefix}/{}", spec.plural), Vec::new())
    };
    let item = format!("{collection}/{{name}}");
    let name_param = path_param("name", format!("The name of the {kind}."));
    let op = |method, verb: &str, suffix: &str, action, description: String| Operation {
        method,
        id: format!("{verb}{gv}{scope}{kind}{suffix}"),
        description,
        tag: tag.clone(),
        action: Some(action),
        gvk: Some(gvk.clone()),
        params: Vec::new(),
        body: None,
        produces: Produces::Object,
        responses: Vec::new(),
    };
    let object_body = ResponseBody::Ref(object.clone());
    let status_body = ResponseBody::Ref(names::STATUS.to_owned());
    let mut paths = Vec::new();

    // The collection.
    let mut ops = Vec::new();
    if spec.has_verb("list") {
        let mut o = op(
            Method::Get,
            "list",
            "",
            "list",
            format!("List or watch objects of kind {kind}."),
        );
        o.params = queries(LIST_PARAMS);
        o.produces = Produces::Stream;
        o.responses = responses(&[OK], &ResponseBody::Ref(list.clone()));
        ops.push(o);
    }
    if spec.has_verb("create") {
        let mut o = op(
            Method::Post,
            "create",
            "",
            "post",
            format!("Create a {kind}."),
        );
        o.params = queries(WRITE_PARAMS);
        o.body = Some(Body::Object(object.clone()));
        o.responses = responses(&[OK, CREATED, ACCEPTED], &object_body);
        ops.push(o);
    }
    if spec.has_verb("deletecollection") {
        let mut o = op(
            Method::Delete,
            "delete",
            "",
            "deletecollection",
            format!("Delete a collection of {kind} objects."),
        );
        o.id = format!("delete{gv}Collection{scope}{kind}");
        o.params = queries(DELETE_COLLECTION_PARAMS);
        o.body = Some(Body::DeleteOptions);
        o.responses = responses(&[OK], &status_body);
        ops.push(o);
    }
    if !ops.is_empty() {
        let mut params = scope_params.clone();
        params.push(query("pretty"));
        paths.push(PathItem {
            path: collection.clone(),
            params,
            operations: ops,
        });
    }

    // The object.
    let mut ops = Vec::new();
    if spec.has_verb("get") {
        let mut o = op(
            Method::Get,
            "read",
            "",
            "get",
            format!("Read the specified {kind}."),
        );
        o.responses = responses(&[OK], &object_body);
        ops.push(o);
    }
    if spec.has_verb("update") {
        let mut o = op(
            Method::Put,
            "replace",
            "",
            "put",
            format!("Replace the specified {kind}."),
        );
        o.params = queries(WRITE_PARAMS);
        o.body = Some(Body::Object(object.clone()));
        o.responses = responses(&[OK, CREATED], &object_body);
        ops.push(o);
    }
    if spec.has_verb("patch") {
        let mut o = op(
            Method::Patch,
            "patch",
            "",
            "patch",
            format!("Partially update the specified {kind}."),
        );
        o.params = queries(PATCH_PARAMS);
        o.body = Some(Body::Patch);
        o.responses = responses(&[OK, CREATED], &object_body);
        ops.push(o);
    }
    if spec.has_verb("delete") {
        let mut o = op(
            Method::Delete,
            "delete",
            "",
            "delete",
            format!("Delete a {kind}."),
        );
        o.params = queries(DELETE_PARAMS);
        o.body = Some(Body::DeleteOptions);
        o.responses = responses(&[OK, ACCEPTED], &status_body);
        ops.push(o);
    }
    if !ops.is_empty() {
        let mut params = vec![name_param.clone()];
        params.extend(scope_params.iter().cloned());
        params.push(query("pretty"));
        paths.push(PathItem {
            path: item.clone(),
            params,
            operations: ops,
        });
    }

    // Namespaced resources across all namespaces.
    if spec.namespaced && spec.has_verb("list") {
        let mut o = op(
            Method::Get,
            "list",
            "ForAllNamespaces",
            "list",
            format!("List or watch objects of kind {kind} in all namespaces."),
        );
        o.id = format!("list{gv}{kind}ForAllNamespaces");
        o.params = queries(LIST_PARAMS);
        o.produces = Produces::Stream;
        o.responses = responses(&[OK], &ResponseBody::Ref(list.clone()));
        let mut params = vec![query("pretty")];
        params.append(&mut o.params);
        paths.push(PathItem {
            path: format!("{prefix}/{}", spec.plural),
            params,
            operations: vec![o],
        });
    }

    // The deprecated watch paths.
    if spec.has_verb("watch") {
        let watch_body = ResponseBody::Ref(names::WATCH_EVENT.to_owned());
        let watch_prefix = format!("{prefix}/watch");
        let mut watch_path = |path: String, params: Vec<Param>, o: Operation| {
            let mut all = params;
            all.extend(queries(LIST_PARAMS));
            all.push(query("pretty"));
            all.sort_by_key(|p| (p.location == Location::Query, p.name));
            paths.push(PathItem {
                path,
                params: all,
                operations: vec![o],
            });
        };
        let watch_collection = collection.replacen(&prefix, &watch_prefix, 1);
        let mut o = op(
            Method::Get,
            "watch",
            "List",
            "watchlist",
            format!(
                "Watch changes to a list of {kind}. Deprecated: use the 'watch' parameter of the list operation."
            ),
        );
        o.produces = Produces::Stream;
        o.responses = responses(&[OK], &watch_body);
        watch_path(watch_collection.clone(), scope_params.clone(), o);

        let mut o = op(
            Method::Get,
            "watch",
            "",
            "watch",
            format!(
                "Watch changes to one {kind}. Deprecated: use the 'watch' parameter of the list operation with a 'fieldSelector' on the name."
            ),
        );
        o.produces = Produces::Stream;
        o.responses = responses(&[OK], &watch_body);
        let mut params = vec![name_param.clone()];
        params.extend(scope_params.iter().cloned());
        watch_path(format!("{watch_collection}/{{name}}"), params, o);

        if spec.namespaced {
            let mut o = op(
                Method::Get,
                "watch",
                "",
                "watchlist",
                format!(
                    "Watch changes to {kind} objects in all namespaces. Deprecated: use the 'watch' parameter of the list operation."
                ),
            );
            o.id = format!("watch{gv}{kind}ListForAllNamespaces");
            o.produces = Produces::Stream;
            o.responses = responses(&[OK], &watch_body);
            watch_path(format!("{watch_prefix}/{}", spec.plural), Vec::new(), o);
        }
    }

    // Subresources.
    for name in &spec.subresources {
        let Some(sub) = subresource(&gvk, name) else {
            continue;
        };
        let sub_object = names.definition(&sub.gvk.group, &sub.gvk.version, &sub.gvk.kind);
        let body = if sub.text {
            ResponseBody::Text
        } else {
            ResponseBody::Ref(sub_object.clone())
        };
        let suffix = capitalize(name);
        let mut ops = Vec::new();
        for (method, verb, action) in sub.operations {
            let description = match method {
                Method::Get => format!("Read {name} of the specified {kind}."),
                Method::Put => format!("Replace {name} of the specified {kind}."),
                Method::Patch => format!("Partially update {name} of the specified {kind}."),
                Method::Post => format!("Create {name} of a {kind}."),
                Method::Delete => format!("Delete {name} of a {kind}."),
            };
            let mut o = op(*method, verb, &suffix, action, description);
            o.gvk = Some(sub.gvk.clone());
            match method {
                Method::Get => {
                    o.responses = responses(&[OK], &body);
                    if sub.text {
                        o.produces = Produces::Text;
                    }
                }
                Method::Put => {
                    o.params = queries(WRITE_PARAMS);
                    o.body = Some(Body::Object(sub_object.clone()));
                    o.responses = responses(&[OK, CREATED], &body);
                }
                Method::Patch => {
                    o.params = queries(PATCH_PARAMS);
                    o.body = Some(Body::Patch);
                    o.responses = responses(&[OK, CREATED], &body);
                }
                Method::Post => {
                    o.params = queries(WRITE_PARAMS);
                    o.body = Some(Body::Object(sub_object.clone()));
                    o.responses = responses(&[OK, CREATED, ACCEPTED], &body);
                }
                Method::Delete => {}
            }
            ops.push(o);
        }
        let mut params = vec![name_param.clone()];
        params.extend(scope_params.iter().cloned());
        params.push(query("pretty"));
        paths.push(PathItem {
            path: format!("{item}/{name}"),
            params,
            operations: ops,
        });
    }
    paths
}

fn discovery_op(id: String, description: &str, tag: String, schema: &str) -> Operation {
    Operation {
        method: Method::Get,
        id,
        description: description.to_owned(),
        tag,
        action: None,
        gvk: None,
        params: Vec::new(),
        body: None,
        produces: Produces::Object,
        responses: responses(&[OK], &ResponseBody::Ref(schema.to_owned())),
    }
}

fn discovery_path(path: String, operation: Operation) -> PathItem {
    PathItem {
        path,
        params: Vec::new(),
        operations: vec![operation],
    }
}

/// `GET /api/v1/`, `GET /apis/apps/v1/`: the resources of a group-version.
pub(crate) fn resources_path(group: &str, version: &str) -> PathItem {
    discovery_path(
        format!("{}/", url_prefix(group, version)),
        discovery_op(
            format!(
                "get{}{}APIResources",
                group_camel(group),
                capitalize(version)
            ),
            "Get the available resources.",
            tag(group, version),
            names::API_RESOURCE_LIST,
        ),
    )
}

/// `GET /apis/<group>/`: the group's versions.
pub(crate) fn group_path(group: &str) -> PathItem {
    discovery_path(
        format!("/apis/{group}/"),
        discovery_op(
            format!("get{}APIGroup", group_camel(group)),
            "Get information of a group.",
            crate::resource::group_tag(group),
            names::API_GROUP,
        ),
    )
}

/// `GET /api/`: the versions of the core group.
pub(crate) fn core_versions_path() -> PathItem {
    discovery_path(
        "/api/".into(),
        discovery_op(
            "getCoreAPIVersions".into(),
            "Get the available API versions.",
            "core".into(),
            names::API_VERSIONS,
        ),
    )
}

/// `GET /apis/`: the groups.
pub(crate) fn groups_path() -> PathItem {
    discovery_path(
        "/apis/".into(),
        discovery_op(
            "getAPIVersions".into(),
            "Get the available API versions.",
            "apis".into(),
            names::API_GROUP_LIST,
        ),
    )
}

/// `GET /version/`: the server's version.
pub(crate) fn version_path() -> PathItem {
    discovery_path(
        "/version/".into(),
        discovery_op(
            "getCodeVersion".into(),
            "Get the code version.",
            "version".into(),
            names::VERSION_INFO,
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    struct Builtin;
    impl KindNames for Builtin {
        fn definition(&self, group: &str, version: &str, kind: &str) -> String {
            crate::schemas::builtin_kind_name(group, version, kind).unwrap_or_default()
        }
    }

    fn spec(
        group: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        subs: &[&str],
    ) -> ResourceSpec {
        ResourceSpec {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            verbs: [
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
            ]
            .map(String::from)
            .to_vec(),
            subresources: subs.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn ids(paths: &[PathItem]) -> Vec<(String, String)> {
        paths
            .iter()
            .flat_map(|p| {
                p.operations
                    .iter()
                    .map(move |o| (p.path.clone(), o.id.clone()))
            })
            .collect()
    }

    #[test]
    fn namespaced_resource_operations() {
        let paths = resource_paths(
            &spec("", "Pod", "pods", true, &["status", "binding", "eviction"]),
            &Builtin,
        );
        let ids = ids(&paths);
        let has = |path: &str, id: &str| ids.contains(&(path.to_owned(), id.to_owned()));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods",
            "listCoreV1NamespacedPod"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods",
            "createCoreV1NamespacedPod"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods",
            "deleteCoreV1CollectionNamespacedPod"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods/{name}",
            "readCoreV1NamespacedPod"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods/{name}",
            "patchCoreV1NamespacedPod"
        ));
        assert!(has("/api/v1/pods", "listCoreV1PodForAllNamespaces"));
        assert!(has(
            "/api/v1/watch/namespaces/{namespace}/pods",
            "watchCoreV1NamespacedPodList"
        ));
        assert!(has(
            "/api/v1/watch/namespaces/{namespace}/pods/{name}",
            "watchCoreV1NamespacedPod"
        ));
        assert!(has(
            "/api/v1/watch/pods",
            "watchCoreV1PodListForAllNamespaces"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods/{name}/status",
            "replaceCoreV1NamespacedPodStatus"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods/{name}/binding",
            "createCoreV1NamespacedPodBinding"
        ));
        assert!(has(
            "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            "createCoreV1NamespacedPodEviction"
        ));
    }

    #[test]
    fn cluster_resource_and_scale() {
        let paths = resource_paths(&spec("", "Node", "nodes", false, &["status"]), &Builtin);
        let ids = ids(&paths);
        assert!(ids.contains(&("/api/v1/nodes".into(), "listCoreV1Node".into())));
        assert!(ids.contains(&(
            "/api/v1/watch/nodes/{name}".into(),
            "watchCoreV1Node".into()
        )));
        assert!(!ids.iter().any(|(_, id)| id.contains("ForAllNamespaces")));

        let deployment = spec("apps", "Deployment", "deployments", true, &["scale"]);
        let paths = resource_paths(&deployment, &Builtin);
        let scale = paths.iter().find(|p| p.path.ends_with("/scale")).unwrap();
        let patch = scale
            .operations
            .iter()
            .find(|o| o.method == Method::Patch)
            .unwrap();
        assert_eq!(patch.id, "patchAppsV1NamespacedDeploymentScale");
        assert_eq!(patch.gvk, Some(Gvk::new("autoscaling", "v1", "Scale")));
        assert!(patch.params.iter().any(|p| p.name == "fieldValidation"));
    }

    #[test]
    fn verbs_limit_operations() {
        let mut s = spec("", "Event", "events", true, &[]);
        s.verbs = vec!["get".into(), "list".into()];
        let paths = resource_paths(&s, &Builtin);
        let methods: Vec<_> = paths
            .iter()
            .flat_map(|p| p.operations.iter().map(|o| o.method))
            .collect();
        assert!(methods.iter().all(|m| *m == Method::Get));
        assert!(!paths.iter().any(|p| p.path.contains("/watch/")));
    }

    #[test]
    fn every_patch_operation_accepts_field_validation() {
        let paths = resource_paths(
            &spec(
                "apps",
                "Deployment",
                "deployments",
                true,
                &["status", "scale"],
            ),
            &Builtin,
        );
        for o in paths.iter().flat_map(|p| &p.operations) {
            if matches!(o.method, Method::Patch | Method::Put | Method::Post) {
                assert!(
                    o.params.iter().any(|p| p.name == "fieldValidation"),
                    "{}",
                    o.id
                );
                assert!(
                    o.params.iter().any(|p| p.name == "fieldManager"),
                    "{}",
                    o.id
                );
                assert!(o.params.iter().any(|p| p.name == "dryRun"), "{}", o.id);
            }
        }
    }
}
