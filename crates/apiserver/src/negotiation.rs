//! Content negotiation as Kubernetes does it (`k8s.io/apiserver`'s `negotiation`): which
//! representation (`Output`) in which serialization (`Format`) a client accepts (`Accept`),
//! and what format a request body is in (`Content-Type`).
//!
//! The `Accept` clauses are ordered by q-value (then concrete types before wildcards, then
//! the client's order) and each is tried against the serializers in the server's order —
//! JSON, YAML, protobuf — so `*/*` and `application/*` mean JSON. A clause's `as`, `g` and
//! `v` parameters ask for a transformation (Table, PartialObjectMetadata(List), aggregated
//! discovery), which the endpoint may refuse; `stream` must be `watch`. The first clause
//! the endpoint can satisfy wins; none is 406 Not Acceptable.

use kyb_api::Status;

/// The representation of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The object (or list) itself.
    Json,
    /// `meta.k8s.io` Table, in the given version (`v1` or `v1beta1`).
    Table(&'static str),
    /// `meta.k8s.io` PartialObjectMetadata (or its List), in the given version.
    PartialObjectMetadata(&'static str),
    PartialObjectMetadataList(&'static str),
    /// Aggregated discovery (`apidiscovery.k8s.io`), in the given version.
    Discovery(&'static str),
}

/// The serialization of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    Protobuf,
}

impl Format {
    /// The media type of a whole body in this format, as the `Content-Type` of responses.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/yaml",
            Format::Protobuf => kyb_protobuf::CONTENT_TYPE,
        }
    }

    /// The `Content-Type` of a watch stream in this format (YAML has no stream form).
    pub fn watch_media_type(self) -> &'static str {
        match self {
            Format::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
            _ => "application/json",
        }
    }

    /// The (type, subtype) a clause of `Accept` names it by.
    fn parts(self) -> (&'static str, &'static str) {
        match self {
            Format::Json => ("application", "json"),
            Format::Yaml => ("application", "yaml"),
            Format::Protobuf => ("application", "vnd.kubernetes.protobuf"),
        }
    }
}

/// The serializers every API endpoint has, in the order wildcards pick them.
const SERIALIZERS: [Format; 3] = [Format::Json, Format::Yaml, Format::Protobuf];

/// The media types named by a 406 and a 415 for object bodies.
const SUPPORTED: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// What was agreed on: a representation in a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    pub output: Output,
    pub format: Format,
}

impl Negotiated {
    pub const JSON: Negotiated = Negotiated {
        output: Output::Json,
        format: Format::Json,
    };
}

/// What an endpoint can give besides its object as JSON or YAML.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// The object itself in protobuf (built-in kinds; custom resources have no protobuf
    /// form, though their metadata does).
    pub protobuf: bool,
    /// A Table conversion (every stored resource; not the create-only reviews).
    pub table: bool,
    /// PartialObjectMetadata(List) conversions (resource endpoints).
    pub metadata: bool,
    /// Aggregated discovery (only `/api` and `/apis`).
    pub discovery: bool,
    /// A watch: the format needs a stream form (YAML has none).
    pub watch: bool,
}

impl Endpoint {
    /// `/api` and `/apis`.
    pub const DISCOVERY: Endpoint = Endpoint {
        protobuf: false,
        table: false,
        metadata: false,
        discovery: true,
        watch: false,
    };

    /// Where only the objects themselves are given (Status answers).
    pub const PLAIN: Endpoint = Endpoint {
        protobuf: true,
        table: false,
        metadata: false,
        discovery: false,
        watch: false,
    };
}

/// One clause of `Accept`.
struct Clause<'a> {
    kind: &'a str,
    subtype: &'a str,
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

impl<'a> Clause<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.trim().split(';');
        let range = parts.next().unwrap_or_default();
        let mut halves = range.split('/');
        let kind = halves.next().unwrap_or_default().trim();
        let subtype = match (halves.next(), halves.next()) {
            (None, _) if kind == "*" => "*",
            (Some(subtype), None) => subtype.trim(),
            _ => return None,
        };
        let mut q = 1.0;
        let mut params = Vec::new();
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            if key == "q" {
                // As Go's goautoneg: an unreadable q-value is 0.
                q = value.parse().unwrap_or(0.0);
            } else {
                params.push((key, value.trim_matches('"')));
            }
        }
        Some(Self {
            kind,
            subtype,
            q,
            params,
        })
    }

    fn matches(&self, format: Format) -> bool {
        let (kind, subtype) = format.parts();
        (self.kind == kind && (self.subtype == subtype || self.subtype == "*"))
            || (self.kind == "*" && self.subtype == "*")
    }
}

/// The clauses of an `Accept` header, best first: by q-value, then concrete types and
/// subtypes before wildcards, then in the client's order.
fn clauses(accept: &str) -> Vec<Clause<'_>> {
    let mut clauses: Vec<Clause<'_>> = accept.split(',').filter_map(Clause::parse).collect();
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| (a.kind == "*").cmp(&(b.kind == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

fn meta_version(v: Option<&str>) -> Option<&'static str> {
    match v {
        Some("v1") => Some("v1"),
        Some("v1beta1") => Some("v1beta1"),
        _ => None,
    }
}

/// What one clause asks of one serializer, if the endpoint can give it.
fn accept_clause(clause: &Clause<'_>, format: Format, endpoint: &Endpoint) -> Option<Output> {
    let (mut kind, mut group, mut version) = (None, None, None);
    let mut converts = false;
    for (key, value) in &clause.params {
        match *key {
            "as" => (kind, converts) = (Some(*value), true),
            "g" => (group, converts) = (Some(*value), true),
            "v" => (version, converts) = (Some(*value), true),
            "stream" if !value.is_empty() && (*value != "watch" || format == Format::Yaml) => {
                return None;
            }
            _ => {}
        }
    }
    if !converts {
        return (format != Format::Protobuf || endpoint.protobuf).then_some(Output::Json);
    }
    match (group.unwrap_or_default(), kind.unwrap_or_default()) {
        ("meta.k8s.io", "Table") if endpoint.table && format != Format::Protobuf => {
            meta_version(version).map(Output::Table)
        }
        ("meta.k8s.io", "PartialObjectMetadata") if endpoint.metadata => {
            meta_version(version).map(Output::PartialObjectMetadata)
        }
        ("meta.k8s.io", "PartialObjectMetadataList") if endpoint.metadata => {
            meta_version(version).map(Output::PartialObjectMetadataList)
        }
        ("apidiscovery.k8s.io", "APIGroupDiscoveryList")
            if endpoint.discovery && format == Format::Json =>
        {
            match version {
                Some("v2") => Some(Output::Discovery("v2")),
                Some("v2beta1") => Some(Output::Discovery("v2beta1")),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Picks the representation and format for an endpoint; 406 when the client accepts
/// nothing it can give. No `Accept` (or an empty one) is JSON.
pub fn negotiate(accept: Option<&str>, endpoint: &Endpoint) -> Result<Negotiated, Status> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Negotiated::JSON);
    };
    for clause in clauses(accept) {
        if clause.q <= 0.0 {
            continue;
        }
        for format in SERIALIZERS {
            if !clause.matches(format) {
                continue;
            }
            if let Some(output) = accept_clause(&clause, format, endpoint) {
                // A watch's format must have a stream form; Kubernetes does not look
                // further once the best clause has none.
                if endpoint.watch && format == Format::Yaml {
                    return Err(not_acceptable());
                }
                return Ok(Negotiated { output, format });
            }
        }
    }
    Err(not_acceptable())
}

/// Kubernetes' 406 for an `Accept` nothing satisfies.
pub fn not_acceptable() -> Status {
    Status::not_acceptable(format!(
        "only the following media types are accepted: {SUPPORTED}"
    ))
}

/// The format a failure (`Status`) is written in: negotiated without transformations,
/// JSON when nothing matches (the failure is not hidden behind a negotiation failure).
pub fn error_format(accept: Option<&str>) -> Format {
    negotiate(accept, &Endpoint::PLAIN)
        .map(|n| n.format)
        .unwrap_or(Format::Json)
}

/// The format of a request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    Yaml,
    Protobuf,
    JsonPatch,
    MergePatch,
    StrategicMergePatch,
    ApplyPatch,
}

/// The format of a body by its `Content-Type` (415 for an unknown one).
pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, Status> {
    let content_type = content_type.unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    Ok(match essence.to_ascii_lowercase().as_str() {
        "application/json" | "" => BodyFormat::Json,
        "application/yaml" | "application/x-yaml" | "text/yaml" => BodyFormat::Yaml,
        "application/vnd.kubernetes.protobuf" => BodyFormat::Protobuf,
        "application/json-patch+json" => BodyFormat::JsonPatch,
        "application/merge-patch+json" => BodyFormat::MergePatch,
        "application/strategic-merge-patch+json" => BodyFormat::StrategicMergePatch,
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => BodyFormat::ApplyPatch,
        _ => return Err(unsupported_media_type(SUPPORTED)),
    })
}

/// The format of an object body (create, update, reviews): a serializer's, never a patch's.
pub fn object_body_format(content_type: Option<&str>) -> Result<BodyFormat, Status> {
    match body_format(content_type)? {
        format @ (BodyFormat::Json | BodyFormat::Yaml | BodyFormat::Protobuf) => Ok(format),
        _ => Err(unsupported_media_type(SUPPORTED)),
    }
}

/// The format of a patch: one of the patch types (strategic merge patch only where the
/// kind has a type to merge by).
pub fn patch_format(content_type: Option<&str>, strategic: bool) -> Result<BodyFormat, Status> {
    let refused = || unsupported_patch(strategic);
    match body_format(content_type).map_err(|_| refused())? {
        BodyFormat::StrategicMergePatch if !strategic => Err(refused()),
        format @ (BodyFormat::JsonPatch
        | BodyFormat::MergePatch
        | BodyFormat::StrategicMergePatch
        | BodyFormat::ApplyPatch) => Ok(format),
        _ => Err(refused()),
    }
}

/// The 415 for a patch that is not of a patch type the endpoint reads.
pub fn unsupported_patch(strategic: bool) -> Status {
    unsupported_media_type(if strategic {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    })
}

/// Kubernetes' 415 for a body in a format the endpoint does not read.
fn unsupported_media_type(accepted: &str) -> Status {
    Status::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESOURCE: Endpoint = Endpoint {
        protobuf: true,
        table: true,
        metadata: true,
        discovery: false,
        watch: false,
    };

    fn pick(accept: &str, endpoint: &Endpoint) -> Result<(Output, Format), u16> {
        negotiate(Some(accept), endpoint)
            .map(|n| (n.output, n.format))
            .map_err(|s| s.code)
    }

    #[test]
    fn kubectl_get_asks_for_tables() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            pick(accept, &RESOURCE),
            Ok((Output::Table("v1"), Format::Json))
        );
        // Without a table conversion (the reviews), the plain object is next.
        let reviews = Endpoint {
            table: false,
            ..RESOURCE
        };
        assert_eq!(pick(accept, &reviews), Ok((Output::Json, Format::Json)));
        assert_eq!(
            pick("application/json;as=Table;v=v1;g=meta.k8s.io", &reviews),
            Err(406)
        );
    }

    #[test]
    fn discovery_only_where_allowed() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            pick(accept, &Endpoint::DISCOVERY),
            Ok((Output::Discovery("v2"), Format::Json))
        );
        assert_eq!(pick(accept, &RESOURCE), Ok((Output::Json, Format::Json)));
    }

    #[test]
    fn protobuf_first_when_asked_first() {
        assert_eq!(
            pick(
                "application/vnd.kubernetes.protobuf,application/json",
                &RESOURCE
            ),
            Ok((Output::Json, Format::Protobuf))
        );
        assert_eq!(
            pick("application/vnd.kubernetes.protobuf", &RESOURCE),
            Ok((Output::Json, Format::Protobuf))
        );
        // Custom resources have no protobuf form: the JSON fallback, or 406.
        let custom = Endpoint {
            protobuf: false,
            ..RESOURCE
        };
        assert_eq!(
            pick(
                "application/vnd.kubernetes.protobuf,application/json",
                &custom
            ),
            Ok((Output::Json, Format::Json))
        );
        assert_eq!(
            pick("application/vnd.kubernetes.protobuf", &custom),
            Err(406)
        );
        // ... but their metadata does.
        assert_eq!(
            pick(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                &custom
            ),
            Ok((Output::PartialObjectMetadataList("v1"), Format::Protobuf))
        );
    }

    #[test]
    fn tables_are_never_protobuf() {
        assert_eq!(
            pick(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
                &RESOURCE
            ),
            Err(406)
        );
        assert_eq!(
            pick(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json",
                &RESOURCE
            ),
            Ok((Output::Json, Format::Json))
        );
        assert_eq!(
            pick("application/yaml;as=Table;v=v1;g=meta.k8s.io", &RESOURCE),
            Ok((Output::Table("v1"), Format::Yaml))
        );
    }

    #[test]
    fn q_values_and_wildcards() {
        assert_eq!(pick("*/*", &RESOURCE), Ok((Output::Json, Format::Json)));
        assert_eq!(pick("*", &RESOURCE), Ok((Output::Json, Format::Json)));
        assert_eq!(
            pick("application/*", &RESOURCE),
            Ok((Output::Json, Format::Json))
        );
        assert_eq!(
            pick("application/yaml", &RESOURCE),
            Ok((Output::Json, Format::Yaml))
        );
        assert_eq!(
            pick(
                "application/json;q=0.5, application/vnd.kubernetes.protobuf",
                &RESOURCE
            ),
            Ok((Output::Json, Format::Protobuf))
        );
        assert_eq!(
            pick("*/*, application/yaml", &RESOURCE),
            Ok((Output::Json, Format::Yaml))
        );
        assert_eq!(
            pick("application/json;q=0, application/yaml;q=0.1", &RESOURCE),
            Ok((Output::Json, Format::Yaml))
        );
        assert_eq!(pick("text/html, image/*", &RESOURCE), Err(406));
        assert_eq!(pick("application/json;q=0", &RESOURCE), Err(406));
        assert_eq!(negotiate(None, &RESOURCE), Ok(Negotiated::JSON));
        assert_eq!(negotiate(Some("  "), &RESOURCE), Ok(Negotiated::JSON));
    }

    #[test]
    fn streams() {
        let watch = Endpoint {
            watch: true,
            ..RESOURCE
        };
        assert_eq!(
            pick("application/json;stream=watch", &watch),
            Ok((Output::Json, Format::Json))
        );
        assert_eq!(
            pick("application/vnd.kubernetes.protobuf;stream=watch", &watch),
            Ok((Output::Json, Format::Protobuf))
        );
        assert_eq!(pick("application/json;stream=other", &watch), Err(406));
        assert_eq!(pick("application/yaml", &watch), Err(406));
        assert_eq!(pick("application/yaml, application/json", &watch), Err(406));
    }

    #[test]
    fn the_406_names_every_serializer() {
        let status = negotiate(Some("text/html"), &RESOURCE).expect_err("406");
        assert_eq!(status.code, 406);
        assert_eq!(
            status.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn failures_are_written_without_transformations() {
        assert_eq!(
            error_format(Some(
                "application/vnd.kubernetes.protobuf, application/json"
            )),
            Format::Protobuf
        );
        assert_eq!(
            error_format(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
            )),
            Format::Json
        );
        assert_eq!(
            error_format(Some("application/json;as=Table;v=v1;g=meta.k8s.io")),
            Format::Json
        );
        assert_eq!(error_format(None), Format::Json);
    }

    #[test]
    fn body_formats() {
        assert_eq!(
            body_format(Some("application/json; charset=utf-8")),
            Ok(BodyFormat::Json)
        );
        assert_eq!(
            body_format(Some("application/strategic-merge-patch+json")),
            Ok(BodyFormat::StrategicMergePatch)
        );
        assert_eq!(
            body_format(Some("text/plain")).map_err(|s| s.message),
            Err("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf".into())
        );
        assert_eq!(
            object_body_format(Some("application/merge-patch+json")).map_err(|s| s.code),
            Err(415)
        );
        assert_eq!(
            patch_format(Some("application/json"), true).map_err(|s| s.message),
            Err("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml".into())
        );
        assert_eq!(
            patch_format(Some("application/strategic-merge-patch+json"), false).map_err(|s| s.code),
            Err(415)
        );
        assert_eq!(
            patch_format(Some("application/apply-patch+yaml"), false),
            Ok(BodyFormat::ApplyPatch)
        );
    }
}
