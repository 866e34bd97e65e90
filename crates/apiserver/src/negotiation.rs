//! Content negotiation: which representation a client accepts (`Accept`), and what format a
//! request body is in (`Content-Type`).

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

struct MediaType<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

impl<'a> MediaType<'a> {
    fn parse(text: &'a str) -> Self {
        let mut parts = text.split(';');
        let essence = parts.next().unwrap_or_default().trim();
        let params = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
            .collect();
        Self { essence, params }
    }

    fn param(&self, name: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }
}

fn meta_version(v: Option<&str>) -> Option<&'static str> {
    match v {
        Some("v1") => Some("v1"),
        Some("v1beta1") => Some("v1beta1"),
        _ => None,
    }
}

/// Picks the first acceptable representation in the client's order. `discovery` allows the
/// aggregated discovery forms (only `/api` and `/apis` serve them).
pub fn negotiate(accept: Option<&str>, discovery: bool) -> Result<Output, Status> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Output::Json);
    };
    for candidate in accept.split(',') {
        let media = MediaType::parse(candidate);
        if media.param("q") == Some("0") {
            continue;
        }
        match media.essence {
            "application/json" => match (media.param("as"), media.param("g")) {
                (None, _) => return Ok(Output::Json),
                (Some("Table"), Some("meta.k8s.io")) => {
                    if let Some(v) = meta_version(media.param("v")) {
                        return Ok(Output::Table(v));
                    }
                }
                (Some("PartialObjectMetadata"), Some("meta.k8s.io")) => {
                    if let Some(v) = meta_version(media.param("v")) {
                        return Ok(Output::PartialObjectMetadata(v));
                    }
                }
                (Some("PartialObjectMetadataList"), Some("meta.k8s.io")) => {
                    if let Some(v) = meta_version(media.param("v")) {
                        return Ok(Output::PartialObjectMetadataList(v));
                    }
                }
                (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io")) if discovery => {
                    match media.param("v") {
                        Some("v2") => return Ok(Output::Discovery("v2")),
                        Some("v2beta1") => return Ok(Output::Discovery("v2beta1")),
                        _ => {}
                    }
                }
                _ => {}
            },
            "*/*" | "application/*" => return Ok(Output::Json),
            _ => {}
        }
    }
    Err(Status::not_acceptable(
        "only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    ))
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

pub fn body_format(content_type: Option<&str>) -> Result<BodyFormat, Status> {
    let content_type = content_type.unwrap_or_default();
    let media = MediaType::parse(content_type);
    Ok(match media.essence.to_ascii_lowercase().as_str() {
        "application/json" | "" => BodyFormat::Json,
        "application/yaml" | "application/x-yaml" | "text/yaml" => BodyFormat::Yaml,
        "application/vnd.kubernetes.protobuf" => BodyFormat::Protobuf,
        "application/json-patch+json" => BodyFormat::JsonPatch,
        "application/merge-patch+json" => BodyFormat::MergePatch,
        "application/strategic-merge-patch+json" => BodyFormat::StrategicMergePatch,
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => BodyFormat::ApplyPatch,
        _ => return Err(Status::unsupported_media_type(content_type)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_asks_for_tables() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(Some(accept), false), Ok(Output::Table("v1")));
    }

    #[test]
    fn discovery_only_where_allowed() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate(Some(accept), true), Ok(Output::Discovery("v2")));
        assert_eq!(negotiate(Some(accept), false), Ok(Output::Json));
    }

    #[test]
    fn protobuf_with_json_fallback() {
        assert_eq!(
            negotiate(
                Some("application/vnd.kubernetes.protobuf,application/json"),
                false
            ),
            Ok(Output::Json)
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf"), false).map_err(|s| s.code),
            Err(406)
        );
        assert_eq!(negotiate(None, false), Ok(Output::Json));
        assert_eq!(negotiate(Some("*/*"), false), Ok(Output::Json));
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
            body_format(Some("text/plain")).map_err(|s| s.code),
            Err(415)
        );
    }
}
