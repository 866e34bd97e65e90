//! Response bodies (whole, or streamed for watches) and the helpers that build responses,
//! in the format content negotiation chose (JSON, YAML or protobuf).

use crate::negotiation::Format;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use kyb_api::Status;
use serde_json::Value;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A response body: all at once, a known sequence of pieces (a list assembled from cached
/// objects without copying them), or a stream of chunks (watch events).
pub enum Body {
    Full(Option<Bytes>),
    Pieces {
        pieces: std::collections::VecDeque<Bytes>,
        remaining: u64,
    },
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
            Body::Pieces { pieces, remaining } => {
                let chunk = next_chunk(pieces);
                if let Some(chunk) = &chunk {
                    *remaining -= chunk.len() as u64;
                }
                Poll::Ready(chunk.map(|c| Ok(Frame::data(c))))
            }
            Body::Stream(chunks) => chunks.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(None) => true,
            Body::Pieces { pieces, .. } => pieces.is_empty(),
            _ => false,
        }
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            Body::Full(Some(bytes)) => http_body::SizeHint::with_exact(bytes.len() as u64),
            Body::Full(None) => http_body::SizeHint::with_exact(0),
            Body::Pieces { remaining, .. } => http_body::SizeHint::with_exact(*remaining),
            Body::Stream(_) => http_body::SizeHint::default(),
        }
    }
}

pub type Response = http::Response<Body>;

/// A whole body (the filters' own answers).
impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Body {
        Body::Full(Some(bytes))
    }
}

/// Pieces are sent in chunks of about this size: few writes, and a small buffer that is
/// built only when it is about to be sent (so a large list never needs one large buffer).
const CHUNK: usize = 64 << 10;

fn next_chunk(pieces: &mut std::collections::VecDeque<Bytes>) -> Option<Bytes> {
    let first = pieces.pop_front()?;
    if first.len() >= CHUNK
        || pieces
            .front()
            .is_none_or(|next| first.len() + next.len() > CHUNK)
    {
        return Some(first);
    }
    let mut chunk = Vec::with_capacity(CHUNK);
    chunk.extend_from_slice(&first);
    while let Some(next) = pieces.front() {
        if chunk.len() + next.len() > CHUNK {
            break;
        }
        chunk.extend_from_slice(next);
        pieces.pop_front();
    }
    Some(Bytes::from(chunk))
}

/// A whole response from bytes already serialized, of the given media type.
pub fn bytes(code: StatusCode, content_type: &'static str, bytes: impl Into<Bytes>) -> Response {
    let mut response = http::Response::new(Body::Full(Some(bytes.into())));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A JSON response from bytes already serialized.
pub fn json_bytes(code: StatusCode, json: impl Into<Bytes>) -> Response {
    bytes(code, "application/json", json)
}

/// A response made of pieces sent one after the other (a list assembled from objects
/// serialized once), of the given media type.
pub fn pieces(
    code: StatusCode,
    content_type: &'static str,
    pieces: std::collections::VecDeque<Bytes>,
) -> Response {
    let remaining = pieces.iter().map(|p| p.len() as u64).sum();
    let mut response = http::Response::new(Body::Pieces { pieces, remaining });
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A JSON response made of pieces sent one after the other.
pub fn json_pieces(code: StatusCode, json: std::collections::VecDeque<Bytes>) -> Response {
    pieces(code, "application/json", json)
}

pub fn json(code: StatusCode, value: &Value) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(code, bytes),
        Err(e) => error(&Status::internal(format!("encoding the response: {e}"))),
    }
}

/// A value (with "apiVersion" and "kind") in `format`. A value the protobuf encoder cannot
/// write (no protobuf form) goes out as JSON, which the Content-Type says.
pub fn encoded(code: StatusCode, format: Format, value: &Value) -> Response {
    match format {
        Format::Json => json(code, value),
        Format::Yaml => match serde_saphyr::to_string(value) {
            Ok(text) => bytes(code, format.media_type(), text),
            Err(e) => error(&Status::internal(format!("encoding the response: {e}"))),
        },
        Format::Protobuf => match kyb_protobuf::encode(value) {
            Ok(body) => bytes(code, format.media_type(), body),
            Err(e) => {
                tracing::warn!(error = %e, "a response without protobuf form is sent as JSON");
                json(code, value)
            }
        },
    }
}

/// A `Status` failure response (with `Retry-After` for 429), as the filters answer.
pub fn error(status: &Status) -> Response {
    kyb_serving::reply::status(status)
}

/// A `Status` failure response in `format`.
pub fn error_in(format: Format, status: &Status) -> Response {
    let mut response = error(status);
    if format == Format::Json {
        return response;
    }
    let code = response.status();
    let encoded = encoded(code, format, &status.to_json());
    let (parts, body) = encoded.into_parts();
    *response.body_mut() = body;
    if let Some(content_type) = parts.headers.get(header::CONTENT_TYPE) {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type.clone());
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
    stream_as("application/json")
}

/// A streamed response of the given media type; chunks are sent on the returned sender.
pub fn stream_as(content_type: &'static str) -> (mpsc::Sender<Bytes>, Response) {
    let (tx, rx) = mpsc::channel(64);
    let mut response = http::Response::new(Body::Stream(rx));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
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
