//! Response bodies of the kubelet's API: whole, or streamed from a channel (logs, node log
//! files) so that nothing is buffered whole; and the plain-text answers kubelet gives.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A response body.
pub enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

pub type Response = http::Response<Body>;

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Body {
        Body::Full(Some(bytes))
    }
}

impl Body {
    pub fn empty() -> Body {
        Body::Full(None)
    }
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

/// A whole response of `content_type`.
pub fn bytes(code: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response {
    let mut response = http::Response::new(Body::from(body.into()));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A plain-text answer, as Go's `http.Error` and go-restful's `WriteErrorString` write
/// them (kubelet's errors are text, not `Status` objects).
pub fn text(code: StatusCode, message: impl Into<String>) -> Response {
    bytes(code, "text/plain; charset=utf-8", message.into())
}

/// go-restful's `WriteError`, which most of kubelet's handlers answer with: the message
/// alone.
pub fn error(code: StatusCode, message: impl std::fmt::Display) -> Response {
    text(code, message.to_string())
}

/// Go's `http.Error` (its mux and file server): the message and a newline.
pub fn http_error(code: StatusCode, message: impl std::fmt::Display) -> Response {
    text(code, format!("{message}\n"))
}

/// A JSON document.
pub fn json(value: &serde_json::Value) -> Response {
    bytes(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// Go's `http.NotFound`.
pub fn not_found() -> Response {
    http_error(StatusCode::NOT_FOUND, "404 page not found")
}

/// A streamed response of `content_type` fed by the returned sender.
pub fn stream(content_type: &'static str) -> (mpsc::Sender<Bytes>, Response) {
    let (tx, rx) = mpsc::channel(16);
    let mut response = http::Response::new(Body::Stream(rx));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    (tx, response)
}
