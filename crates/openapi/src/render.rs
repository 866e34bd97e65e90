//! Writes path items as OpenAPI v3 or Swagger 2.0 JSON.
//!
//! Both forms keep every query parameter inline on its operation (not as a shared
//! `$ref`): kubectl's server-side field validation check reads the parameter names of
//! the PATCH operation tagged with the kind's `x-kubernetes-group-version-kind`, and the
//! v2 variant of that check only sees inline parameters.

use crate::operations::{Body, Location, Operation, PATCH_TYPES, Param, PathItem, ResponseBody};
use crate::registry::names;
use crate::schemas::{V2_REF, V3_REF};
use serde_json::{Map, Value, json};

/// The security scheme Kubernetes declares: a bearer token in the Authorization header.
pub(crate) fn bearer_scheme() -> Value {
    json!({
        "BearerToken": {
            "description": "Bearer Token authentication",
            "in": "header",
            "name": "authorization",
            "type": "apiKey",
        }
    })
}

/// The `paths` object of a v3 document.
pub(crate) fn paths_v3(items: &[PathItem]) -> Value {
    let mut paths = Map::new();
    for item in items {
        let mut path = Map::new();
        if !item.params.is_empty() {
            path.insert("parameters".into(), params_v3(&item.params));
        }
        for op in &item.operations {
            path.insert(op.method.key().into(), operation_v3(op));
        }
        paths.insert(item.path.clone(), Value::Object(path));
    }
    Value::Object(paths)
}

fn params_v3(params: &[Param]) -> Value {
    Value::Array(
        params
            .iter()
            .map(|p| {
                let mut out = json!({
                    "description": p.description,
                    "in": location(p.location),
                    "name": p.name,
                    "schema": {"type": p.ty.as_str(), "uniqueItems": true},
                });
                if p.location == Location::Path
                    && let Some(o) = out.as_object_mut()
                {
                    o.insert("required".into(), true.into());
                }
                out
            })
            .collect(),
    )
}

fn location(l: Location) -> &'static str {
    match l {
        Location::Path => "path",
        Location::Query => "query",
    }
}

fn operation_v3(op: &Operation) -> Value {
    let mut out = Map::new();
    out.insert("description".into(), op.description.clone().into());
    out.insert("operationId".into(), op.id.clone().into());
    if !op.params.is_empty() {
        out.insert("parameters".into(), params_v3(&op.params));
    }
    if let Some(body) = &op.body {
        let (content, required) = match body {
            Body::Object(name) => (content_v3(&["*/*"], name), true),
            Body::DeleteOptions => (content_v3(&["*/*"], names::DELETE_OPTIONS), false),
            Body::Patch => (content_v3(PATCH_TYPES, names::PATCH), true),
        };
        let mut request = json!({ "content": content });
        if required && let Some(o) = request.as_object_mut() {
            o.insert("required".into(), true.into());
        }
        out.insert("requestBody".into(), request);
    }
    let mut responses = Map::new();
    for r in &op.responses {
        let mut response = json!({ "description": r.description });
        if let (Some(body), Some(o)) = (&r.body, response.as_object_mut()) {
            let mut content = Map::new();
            for media in op.produces.media_types() {
                let schema = match body {
                    ResponseBody::Ref(name) => json!({"$ref": format!("{V3_REF}{name}")}),
                    ResponseBody::Text => json!({"type": "string"}),
                };
                content.insert((*media).into(), json!({ "schema": schema }));
            }
            o.insert("content".into(), Value::Object(content));
        }
        responses.insert(r.code.to_string(), response);
    }
    out.insert("responses".into(), Value::Object(responses));
    out.insert("tags".into(), json!([op.tag]));
    extensions(op, &mut out);
    Value::Object(out)
}

fn content_v3(media_types: &[&str], schema: &str) -> Value {
    let mut content = Map::new();
    for media in media_types {
        content.insert(
            (*media).into(),
            json!({"schema": {"$ref": format!("{V3_REF}{schema}")}}),
        );
    }
    Value::Object(content)
}

fn extensions(op: &Operation, out: &mut Map<String, Value>) {
    if let Some(action) = op.action {
        out.insert("x-kubernetes-action".into(), action.into());
    }
    if let Some(gvk) = &op.gvk {
        out.insert("x-kubernetes-group-version-kind".into(), gvk.to_json());
    }
}

/// The `paths` object of a v2 document.
pub(crate) fn paths_v2(items: &[PathItem]) -> Value {
    let mut paths = Map::new();
    for item in items {
        let mut path = Map::new();
        if !item.params.is_empty() {
            path.insert(
                "parameters".into(),
                Value::Array(item.params.iter().map(param_v2).collect()),
            );
        }
        for op in &item.operations {
            path.insert(op.method.key().into(), operation_v2(op));
        }
        paths.insert(item.path.clone(), Value::Object(path));
    }
    Value::Object(paths)
}

fn param_v2(p: &Param) -> Value {
    let mut out = json!({
        "description": p.description,
        "in": location(p.location),
        "name": p.name,
        "type": p.ty.as_str(),
        "uniqueItems": true,
    });
    if p.location == Location::Path
        && let Some(o) = out.as_object_mut()
    {
        o.insert("required".into(), true.into());
    }
    out
}

fn operation_v2(op: &Operation) -> Value {
    let mut out = Map::new();
    let consumes: Vec<&str> = match op.body {
        Some(Body::Patch) => PATCH_TYPES.to_vec(),
        _ => vec!["*/*"],
    };
    out.insert("consumes".into(), json!(consumes));
    out.insert("description".into(), op.description.clone().into());
    out.insert("operationId".into(), op.id.clone().into());
    let mut params: Vec<Value> = Vec::new();
    if let Some(body) = &op.body {
        let (schema, required) = match body {
            Body::Object(name) => (name.as_str(), true),
            Body::DeleteOptions => (names::DELETE_OPTIONS, false),
            Body::Patch => (names::PATCH, true),
        };
        let mut p = json!({
            "in": "body",
            "name": "body",
            "schema": {"$ref": format!("{V2_REF}{schema}")},
        });
        if required && let Some(o) = p.as_object_mut() {
            o.insert("required".into(), true.into());
        }
        params.push(p);
    }
    params.extend(op.params.iter().map(param_v2));
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    out.insert("produces".into(), json!(op.produces.media_types()));
    let mut responses = Map::new();
    for r in &op.responses {
        let mut response = json!({ "description": r.description });
        if let (Some(body), Some(o)) = (&r.body, response.as_object_mut()) {
            let schema = match body {
                ResponseBody::Ref(name) => json!({"$ref": format!("{V2_REF}{name}")}),
                ResponseBody::Text => json!({"type": "string"}),
            };
            o.insert("schema".into(), schema);
        }
        responses.insert(r.code.to_string(), response);
    }
    out.insert("responses".into(), Value::Object(responses));
    out.insert("schemes".into(), json!(["https"]));
    out.insert("tags".into(), json!([op.tag]));
    extensions(op, &mut out);
    Value::Object(out)
}
