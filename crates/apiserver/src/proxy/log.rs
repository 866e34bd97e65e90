//! `pods/log`, as Kubernetes' `LogREST`: the options read and validated
//! (`PodLogOptions`, with its 400s for malformed values and 422s for invalid ones), the
//! container defaulted or checked (`validateContainer`), then the kubelet's
//! `/containerLogs/{ns}/{pod}/{container}` streamed back as `text/plain` as it arrives
//! (`follow` included), at most `limitBytes` of it; the kubelet's refusals passed on as
//! `GenericHttpResponseChecker` words them. A pod not yet on a node has an empty log.

use super::Answer;
use super::stream::relay;
use crate::engine::Engine;
use crate::response;
use http::{HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use kyb_api::Status;
use kyb_api::status::Cause;
use kyb_serving::{Body, Query, ResourceRequest};
use serde_json::Value;
use std::sync::Arc;

/// How much of a kubelet's error answer is read (Kubernetes' `maxReadLength`).
const MAX_ERROR_BODY: usize = 50000;

pub fn serve(engine: Arc<Engine>, target: ResourceRequest, request: Request<Body>) -> Answer {
    Box::pin(async move {
        if !matches!(*request.method(), Method::GET | Method::HEAD) {
            return Err(Status::method_not_supported());
        }
        let namespace = target.namespace.unwrap_or_default();
        let name = target.name.unwrap_or_default();
        let options = LogOptions::parse(&Query::parse(request.uri().query()), &name)?;
        let pod = engine
            .cache
            .lookup_shared("", "pods", Some(&namespace), &name)
            .ok_or_else(|| Status::not_found("", "pods", &name))?;
        let container = container(&pod, &name, options.container.as_deref())?;
        let node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if node.is_empty() {
            return Ok(text_response(response::Body::Full(None)));
        }
        let mut location = engine.kubelet.location(&engine, node).await?;
        location.insecure_skip_tls_verify = options.insecure_skip_tls_verify_backend;
        let path = format!(
            "/containerLogs/{namespace}/{name}/{container}{}",
            options.kubelet_query()
        );
        let mut outgoing = Request::new(Body::empty());
        *outgoing.uri_mut() = path
            .parse()
            .map_err(|e| Status::bad_request(format!("invalid log request {path:?}: {e}")))?;
        let answer = engine.kubelet.send(&location, outgoing).await?;
        let code = answer.status();
        if !(200..=206).contains(&code.as_u16()) {
            let body = http_body_util::Limited::new(answer.into_body(), MAX_ERROR_BODY)
                .collect()
                .await
                .map_err(|e| Status::internal(format!("reading the kubelet's answer: {e}")))?
                .to_bytes();
            return Err(kubelet_refusal(
                code.as_u16(),
                &String::from_utf8_lossy(&body),
                &name,
            ));
        }
        let limit = options.limit_bytes.and_then(|l| u64::try_from(l).ok());
        Ok(text_response(relay(answer.into_body(), limit)))
    })
}

fn text_response(body: response::Body) -> response::Response {
    let mut answer = http::Response::new(body);
    *answer.status_mut() = StatusCode::OK;
    answer
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    answer
}

/// `PodLogOptions` as the query gives them.
#[derive(Debug, Default, PartialEq)]
struct LogOptions {
    container: Option<String>,
    follow: bool,
    previous: bool,
    timestamps: bool,
    since_seconds: Option<i64>,
    /// RFC 3339, in UTC.
    since_time: Option<String>,
    tail_lines: Option<i64>,
    limit_bytes: Option<i64>,
    insecure_skip_tls_verify_backend: bool,
}

impl LogOptions {
    /// Reads and validates the options of pod `name`'s log.
    fn parse(query: &Query, name: &str) -> Result<LogOptions, Status> {
        let since_time = match query.value("sinceTime") {
            None => None,
            Some(text) => Some(parse_time(text)?),
        };
        let options = LogOptions {
            container: query.value("container").map(str::to_string),
            follow: query.flag("follow"),
            previous: query.flag("previous"),
            timestamps: query.flag("timestamps"),
            since_seconds: query.number("sinceSeconds")?,
            since_time,
            tail_lines: query.number("tailLines")?,
            limit_bytes: query.number("limitBytes")?,
            insecure_skip_tls_verify_backend: query.flag("insecureSkipTLSVerifyBackend"),
        };
        let mut causes = Vec::new();
        if let Some(lines) = options.tail_lines.filter(|l| *l < 0) {
            causes.push(invalid(
                "tailLines",
                lines,
                "must be greater than or equal to 0",
            ));
        }
        if let Some(bytes) = options.limit_bytes.filter(|b| *b < 1) {
            causes.push(invalid("limitBytes", bytes, "must be greater than 0"));
        }
        match (options.since_seconds, &options.since_time) {
            (Some(_), Some(_)) => causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
                    .into(),
                field: String::new(),
            }),
            (Some(seconds), None) if seconds < 1 => {
                causes.push(invalid("sinceSeconds", seconds, "must be greater than 0"));
            }
            _ => {}
        }
        if query.get("stream").is_some() {
            // Stream selection is the PodLogsQuerySplitStreams feature, off in 1.33.
            causes.push(Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: may not be specified".into(),
                field: "stream".into(),
            });
        }
        if causes.is_empty() {
            Ok(options)
        } else {
            Err(Status::invalid("", "PodLogOptions", name, &causes))
        }
    }

    /// The kubelet's query, keys sorted as Go's `url.Values.Encode` sorts them.
    fn kubelet_query(&self) -> String {
        let mut params: Vec<(&str, String)> = Vec::new();
        if self.follow {
            params.push(("follow", "true".into()));
        }
        if let Some(bytes) = self.limit_bytes {
            params.push(("limitBytes", bytes.to_string()));
        }
        if self.previous {
            params.push(("previous", "true".into()));
        }
        if let Some(seconds) = self.since_seconds {
            params.push(("sinceSeconds", seconds.to_string()));
        }
        if let Some(time) = &self.since_time {
            params.push(("sinceTime", time.replace(':', "%3A").replace('+', "%2B")));
        }
        if let Some(lines) = self.tail_lines {
            params.push(("tailLines", lines.to_string()));
        }
        if self.timestamps {
            params.push(("timestamps", "true".into()));
        }
        if params.is_empty() {
            return String::new();
        }
        let pairs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("?{}", pairs.join("&"))
    }
}

/// `field.Invalid(field, value, detail)` for a number.
fn invalid(field: &str, value: i64, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value}: {detail}"),
        field: field.into(),
    }
}

/// An RFC 3339 time (`metav1.Time`'s query form), re-written in UTC; Go's parse error, a
/// 400, otherwise.
fn parse_time(text: &str) -> Result<String, Status> {
    let timestamp: jiff::Timestamp = text.parse().map_err(|_| {
        Status::bad_request(format!(
            "parsing time {text:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {text:?} as \"2006\""
        ))
    })?;
    Ok(timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// The container whose log is read: the one named, which must be one of the pod's, or the
/// only one; Kubernetes' 400s otherwise.
fn container(pod: &Value, pod_name: &str, wanted: Option<&str>) -> Result<String, Status> {
    crate::streaming::target::validate_container(pod, pod_name, wanted)
}

/// A kubelet's error answer as `GenericHttpResponseChecker` makes it a Status: 500 and
/// 400 keep its text; the others are `NewGenericServerResponse`'s wording for the code,
/// naming `pods/log` and the pod.
fn kubelet_refusal(code: u16, body: &str, pod_name: &str) -> Status {
    let (reason, message) = match code {
        500 => {
            let mut status = Status::internal(format!("Internal error occurred: {body}"));
            status.details = Some(serde_json::json!({"causes": [{"message": body}]}));
            return status;
        }
        400 => return Status::bad_request(body),
        409 => ("Conflict", "the server reported a conflict".to_string()),
        404 => (
            "NotFound",
            "the server could not find the requested resource".to_string(),
        ),
        401 => (
            "Unauthorized",
            "the server has asked for the client to provide credentials".to_string(),
        ),
        403 => ("Forbidden", body.to_string()),
        405 => (
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".to_string(),
        ),
        422 => (
            "Invalid",
            "the server rejected our request due to an error in our request".to_string(),
        ),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request".to_string(),
        ),
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later"
                .to_string(),
        ),
        code if code >= 500 => (
            "InternalError",
            format!("an error on the server ({body:?}) has prevented the request from succeeding"),
        ),
        code => (
            "",
            format!("the server responded with the status code {code} but did not return more information"),
        ),
    };
    Status::new(code, reason, format!("{message} ( pods/log {pod_name})"))
        .with_details("", "pods/log", pod_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(query: &str) -> Result<LogOptions, Status> {
        LogOptions::parse(&Query::parse(Some(query)), "web")
    }

    #[test]
    fn options_are_passed_to_the_kubelet_in_go_s_order() -> Result<(), Status> {
        let options = parse(
            "container=app&follow=true&tailLines=3&timestamps=true&limitBytes=100&previous=1&sinceTime=2026-11-27T17:00:00%2B01:00",
        )?;
        assert_eq!(options.container.as_deref(), Some("app"));
        assert_eq!(
            options.kubelet_query(),
            "?follow=true&limitBytes=100&previous=true&sinceTime=2026-11-27T16%3A00%3A00Z&tailLines=3&timestamps=true"
        );
        assert_eq!(parse("")?.kubelet_query(), "");
        assert_eq!(
            parse("sinceSeconds=10&follow=false")?.kubelet_query(),
            "?sinceSeconds=10"
        );
        Ok(())
    }

    #[test]
    fn invalid_options_are_kubernetes_422s_and_malformed_ones_400s() {
        let refused = |query: &str| parse(query).err().map(|s| (s.code, s.message));
        assert_eq!(
            refused("tailLines=-1"),
            Some((422, "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0".into()))
        );
        assert_eq!(
            refused("limitBytes=0"),
            Some((422, "PodLogOptions \"web\" is invalid: limitBytes: Invalid value: 0: must be greater than 0".into()))
        );
        assert_eq!(
            refused("sinceSeconds=0"),
            Some((422, "PodLogOptions \"web\" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0".into()))
        );
        assert_eq!(
            refused("sinceSeconds=5&sinceTime=2026-11-27T16:00:00Z"),
            Some((422, "PodLogOptions \"web\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into()))
        );
        assert_eq!(
            refused("stream=Stdout"),
            Some((
                422,
                "PodLogOptions \"web\" is invalid: stream: Forbidden: may not be specified".into()
            ))
        );
        assert_eq!(
            refused("tailLines=three"),
            Some((
                400,
                "strconv.ParseInt: parsing \"three\": invalid syntax".into()
            ))
        );
        assert_eq!(
            refused("sinceTime=yesterday").map(|(code, _)| code),
            Some(400)
        );
    }

    #[test]
    fn the_container_is_defaulted_or_checked() {
        let one = json!({"spec": {"containers": [{"name": "app"}]}});
        assert_eq!(container(&one, "web", None), Ok("app".to_string()));
        let many = json!({"spec": {
            "initContainers": [{"name": "setup"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}],
        }});
        assert_eq!(
            container(&many, "web", Some("setup")),
            Ok("setup".to_string())
        );
        assert_eq!(
            container(&many, "web", None).map_err(|s| (s.code, s.message)),
            Err((400, "a container name must be specified for pod web, choose one of: [setup app sidecar]".to_string()))
        );
        assert_eq!(
            container(&many, "web", Some("nope")).map_err(|s| s.message),
            Err("container nope is not valid for pod web".to_string())
        );
    }

    #[test]
    fn kubelet_refusals_read_as_kubernetes_words_them() {
        let waiting = "container \"app\" in pod \"web\" is waiting to start: ContainerCreating";
        let status = kubelet_refusal(400, waiting, "web");
        assert_eq!(
            (status.code, status.reason, status.message.as_str()),
            (400, "BadRequest", waiting)
        );
        let status = kubelet_refusal(404, "pod not found", "web");
        assert_eq!(
            (status.reason, status.message.as_str()),
            (
                "NotFound",
                "the server could not find the requested resource ( pods/log web)"
            )
        );
        let status = kubelet_refusal(500, "boom", "web");
        assert_eq!(status.message, "Internal error occurred: boom");
        let status = kubelet_refusal(403, "Forbidden (user=x)", "web");
        assert_eq!(status.message, "Forbidden (user=x) ( pods/log web)");
        let status = kubelet_refusal(503, "down", "web");
        assert_eq!(
            status.message,
            "an error on the server (\"down\") has prevented the request from succeeding ( pods/log web)"
        );
    }
}
