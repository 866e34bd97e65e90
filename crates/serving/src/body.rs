//! Request bodies as handlers see them: a stream of frames, never buffered by the serving
//! stack. A handler that needs the whole body collects it ([`collect`]), within the limit
//! the body-limit layer set; a handler that streams (exec, port-forward, proxy) reads frames
//! as they come or takes the connection over with `hyper::upgrade::on`.

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use kyb_api::Status;
use std::pin::Pin;
use std::task::{Context, Poll};

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A request body: whatever the connection delivers (or a test builds), boxed.
pub struct Body(http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>);

impl Body {
    /// Boxes any body.
    pub fn new<B>(body: B) -> Body
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        Body(body.map_err(Into::into).boxed_unsync())
    }

    /// A whole body (tests, in-process requests).
    pub fn full(bytes: impl Into<Bytes>) -> Body {
        Body::new(http_body_util::Full::new(bytes.into()))
    }

    pub fn empty() -> Body {
        Body::full(Bytes::new())
    }
}

impl Default for Body {
    fn default() -> Self {
        Body::empty()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Body")
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.get_mut().0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

/// A body grew past its limit while it was read.
#[derive(Debug)]
pub struct TooLarge {
    pub limit: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Request entity too large: limit is {}", self.limit)
    }
}

impl std::error::Error for TooLarge {}

impl TooLarge {
    pub fn status(&self) -> Status {
        Status::too_large(self.to_string())
    }
}

/// A body that fails with [`TooLarge`] once more than `limit` bytes have been read.
pub(crate) struct Limited {
    inner: Body,
    remaining: usize,
    limit: usize,
}

impl Limited {
    pub(crate) fn new(inner: Body, limit: usize) -> Limited {
        Limited {
            inner,
            remaining: limit,
            limit,
        }
    }
}

impl http_body::Body for Limited {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, Bytes::len);
                if len > this.remaining {
                    this.remaining = 0;
                    return Poll::Ready(Some(Err(Box::new(TooLarge { limit: this.limit }))));
                }
                this.remaining -= len;
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Reads a whole body: 413 when it is over the limit the body-limit layer set, 400 when
/// the connection fails while it is read.
pub async fn collect(body: Body) -> Result<Bytes, Status> {
    match body.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) => match error.downcast_ref::<TooLarge>() {
            Some(too_large) => Err(too_large.status()),
            None => Err(Status::bad_request(format!(
                "reading the request body: {error}"
            ))),
        },
    }
}

/// Reads and drops up to `limit` bytes of a body.
pub(crate) async fn discard(mut body: Body, limit: usize) {
    let mut read = 0;
    while read < limit {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, Bytes::len),
            _ => return,
        }
    }
}
