//! Answers the filters give themselves, without reaching the handler: a `metav1.Status`
//! as JSON, in whatever response body type the server's handlers use.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use kyb_api::Status;
use serde_json::Value;

/// A `Status` failure response (with `Retry-After` when the status asks for one, as 429s
/// do).
pub fn status<B: From<Bytes>>(status: &Status) -> http::Response<B> {
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let bytes = serde_json::to_vec(&status.to_json()).unwrap_or_default();
    let mut response = http::Response::new(B::from(Bytes::from(bytes)));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(seconds) = status
        .details
        .as_ref()
        .and_then(|d| d.get("retryAfterSeconds"))
        .and_then(Value::as_u64)
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}
