//! Response bodies (whole, or streamed for watches) and the helpers that build responses.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use kyb_api::Status;
use serde_json::Value;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A response body: all at once, or a stream of chunks (watch events).
pub enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(chunks) => chunks.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            Body::Full(Some(bytes)) => http_body::SizeHint::with_exact(bytes.len() as u64),
            Body::Full(None) => http_body::SizeHint::with_exact(0),
            Body::Stream(_) => http_body::SizeHint::default(),
        }
    }
}

pub type Response = http::Response<Body>;

/// A JSON response from bytes already serialized.
pub fn json_bytes(code: StatusCode, bytes: impl Into<Bytes>) -> Response {
    let mut response = http::Response::new(Body::Full(Some(bytes.into())));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub fn json(code: StatusCode, value: &Value) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(code, bytes),
        Err(e) => error(&Status::internal(format!("encoding the response: {e}"))),
    }
}

/// A `Status` failure response (with `Retry-After` for 429).
pub fn error(status: &Status) -> Response {
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(code, &status.to_json());
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

pub fn text(code: StatusCode, text: impl Into<String>) -> Response {
    let mut response = http::Response::new(Body::Full(Some(Bytes::from(text.into()))));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A streamed JSON response (a watch); chunks are sent on the returned sender.
pub fn stream() -> (mpsc::Sender<Bytes>, Response) {
    let (tx, rx) = mpsc::channel(64);
    let mut response = http::Response::new(Body::Stream(rx));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    (tx, response)
}

/// Adds `Warning: 299 - "<text>"` headers.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}
