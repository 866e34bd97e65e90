//! What a connection is doing, for the timeouts of [`super::serve_with`]: the requests in
//! progress (a request counts until its response body is sent or dropped), when the last
//! one ended, and whether bytes of a new request have arrived since.

use super::Limits;
use bytes::Bytes;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// No time recorded.
const NEVER: u64 = u64::MAX;

/// One connection's activity, shared by its reader, its requests and its watchdog.
#[derive(Clone)]
pub(super) struct Activity(Arc<State>);

struct State {
    start: Instant,
    /// Requests in progress.
    active: AtomicUsize,
    /// When the connection last had no request in progress (milliseconds since `start`).
    idle_since: AtomicU64,
    /// When bytes arrived with no request in progress (the headers of the next request
    /// have begun), or [`NEVER`].
    pending_since: AtomicU64,
}

impl Activity {
    pub(super) fn new() -> Activity {
        Activity(Arc::new(State {
            start: Instant::now(),
            active: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            pending_since: AtomicU64::new(NEVER),
        }))
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.start.elapsed().as_millis()).unwrap_or(NEVER - 1)
    }

    /// The handshake is done: the first request's headers are due from now.
    pub(super) fn connected(&self) {
        let now = self.now();
        self.0.idle_since.store(now, Ordering::Relaxed);
        self.0.pending_since.store(now, Ordering::Relaxed);
    }

    /// A request has begun; it counts until the guard is dropped.
    pub(super) fn request_started(&self) -> RequestGuard {
        self.0.active.fetch_add(1, Ordering::Relaxed);
        self.0.pending_since.store(NEVER, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    fn read(&self) {
        if self.0.active.load(Ordering::Relaxed) == 0
            && self.0.pending_since.load(Ordering::Relaxed) == NEVER
        {
            self.0.pending_since.store(self.now(), Ordering::Relaxed);
        }
    }

    /// Resolves when the connection has outstayed its limits, with the reason: headers
    /// not finished in time (HTTP/1), or idle for too long.
    pub(super) async fn expired(&self, limits: &Limits, http2: bool) -> &'static str {
        let shortest = limits.read_header_timeout.min(limits.idle_timeout);
        let tick = (shortest / 8).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(NEVER - 1);
        let (header, idle) = (
            millis(limits.read_header_timeout),
            millis(limits.idle_timeout),
        );
        loop {
            tokio::time::sleep(tick).await;
            if self.0.active.load(Ordering::Relaxed) > 0 {
                continue;
            }
            let now = self.now();
            let pending = self.0.pending_since.load(Ordering::Relaxed);
            // HTTP/2 reads frames (pings, settings) between requests: only idleness counts.
            if !http2 && pending != NEVER {
                if now.saturating_sub(pending) >= header {
                    return "request headers not received within the read-header timeout";
                }
                continue;
            }
            if now.saturating_sub(self.0.idle_since.load(Ordering::Relaxed)) >= idle {
                return "idle for longer than the idle timeout";
            }
        }
    }
}

/// A request in progress.
pub(super) struct RequestGuard(Activity);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let state = &self.0.0;
        if state.active.fetch_sub(1, Ordering::Relaxed) == 1 {
            state.idle_since.store(self.0.now(), Ordering::Relaxed);
            state.pending_since.store(NEVER, Ordering::Relaxed);
        }
    }
}

/// A connection's byte stream, noting when request bytes arrive.
pub(super) struct Watched<T> {
    io: T,
    activity: Activity,
}

impl<T> Watched<T> {
    pub(super) fn new(io: T, activity: Activity) -> Watched<T> {
        Watched { io, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.read();
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// A response body that keeps its request counted as in progress until it is sent.
pub(super) struct Tracked<B> {
    body: Pin<Box<B>>,
    _request: RequestGuard,
}

impl<B> Tracked<B> {
    pub(super) fn new(body: B, request: RequestGuard) -> Tracked<B> {
        Tracked {
            body: Box::pin(body),
            _request: request,
        }
    }
}

impl<B: http_body::Body<Data = Bytes>> http_body::Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, B::Error>>> {
        self.get_mut().body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
