//! How failures talking to a kubelet (or any backend a connector proxies to) become a
//! `Status`: a transport failure as Go's client words it (`Get "https://…": dial tcp …`,
//! code 500 with no reason, as kube-apiserver reports an error that is not a Status), and
//! a backend's error answer with its code and body text.

use kyb_api::Status;
use serde_json::Value;

/// A request that never got an answer: `Get "https://10.0.0.1:10250/healthz": <why>`.
pub fn transport_error(method: &http::Method, url: &str, why: impl std::fmt::Display) -> Status {
    Status::new(500, "", format!("{} {url:?}: {why}", go_method(method)))
}

/// Go's `url.Error` op: the method with only its first letter upper-case (`Get`, `Post`).
fn go_method(method: &http::Method) -> String {
    let text = method.as_str().to_ascii_lowercase();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => text,
    }
}

/// A backend's error answer: a `Status` it sent (JSON) as it is, else its code with the
/// reason that code means and the body text as the message.
pub fn backend_status(code: http::StatusCode, body: &[u8]) -> Status {
    if let Ok(value) = serde_json::from_slice::<Value>(body)
        && value["kind"] == "Status"
        && let Some(message) = value["message"].as_str()
    {
        let code = value["code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(code.as_u16());
        let mut status = Status::new(code, reason_for(code), message);
        status.details = value.get("details").cloned();
        return status;
    }
    let text = String::from_utf8_lossy(body).trim_end().to_string();
    Status::new(code.as_u16(), reason_for(code.as_u16()), text)
}

/// The reason Kubernetes gives an HTTP code (`""`, unknown, for the others).
pub fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn transport_errors_read_like_go_s_client() {
        let status = transport_error(
            &http::Method::GET,
            "https://10.0.0.1:10250/healthz",
            "dial tcp 10.0.0.1:10250: connect: connection refused",
        );
        assert_eq!(status.code, 500);
        assert_eq!(status.reason, "");
        assert_eq!(
            status.message,
            "Get \"https://10.0.0.1:10250/healthz\": dial tcp 10.0.0.1:10250: connect: connection refused"
        );
        let post = transport_error(&http::Method::POST, "https://h:1/x", "EOF");
        assert_eq!(post.message, "Post \"https://h:1/x\": EOF");
    }

    #[test]
    fn a_backend_s_text_answer_keeps_its_code_and_text() {
        let status = backend_status(
            StatusCode::FORBIDDEN,
            b"Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])\n",
        );
        assert_eq!(status.code, 403);
        assert_eq!(status.reason, "Forbidden");
        assert_eq!(
            status.message,
            "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])"
        );
        assert_eq!(backend_status(StatusCode::IM_A_TEAPOT, b"").reason, "");
    }

    #[test]
    fn a_backend_s_status_is_passed_on() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"container \"x\" not found","reason":"NotFound","code":404,"details":{"name":"x"}}"#;
        let status = backend_status(StatusCode::NOT_FOUND, body);
        assert_eq!(status.code, 404);
        assert_eq!(status.reason, "NotFound");
        assert_eq!(status.message, "container \"x\" not found");
        assert_eq!(status.details.unwrap_or_default()["name"], "x");
    }
}
