//! A SPDY/3.1 session over one byte connection: the client opens odd-numbered streams,
//! the server even ones and accepts the client's. A reader task dispatches frames (data to
//! its stream, replies, resets, SETTINGS, WINDOW_UPDATE, PING answered, GOAWAY); a writer
//! task owns the connection's write half and the header compressor, so frames go out in
//! the order they were queued (a stream's SYN_STREAM before its data).
//!
//! Flow control: we never let a peer's data pile up — each stream's data waits in a short
//! queue whose reader task blocks when it is full, and as the application consumes data
//! we grant the peer more window (WINDOW_UPDATE), so a peer that enforces SPDY/3's 64 KiB
//! windows never stalls. Sending, we respect the peer's windows once the peer shows that it
//! keeps them (a WINDOW_UPDATE or an initial-window SETTINGS): Go's spdystream, which the
//! kubelet and containerd speak, neither sends nor expects WINDOW_UPDATE, and holding it
//! to 64 KiB would stall every stream after 64 KiB.
//!
//! The session lives while a [`Session`] handle or one of its streams does; when the last
//! is dropped (or [`Session::close`] is called) queued frames are written, then a GOAWAY,
//! and the connection is shut down.

use super::frame::{self, Frame, FrameReader};
use super::{Error, Headers, compression::HeaderCompressor};
use bytes::{Bytes, BytesMut};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc, oneshot, watch};

/// SPDY/3's initial window of a stream, each way, until SETTINGS say otherwise.
pub const DEFAULT_WINDOW: i64 = 64 * 1024;
/// Consumed bytes granted back to the peer at once.
const WINDOW_UPDATE_THRESHOLD: usize = 32 * 1024;
/// The largest data frame we send.
const MAX_DATA_CHUNK: usize = 32 * 1024;
/// Data frames queued per received stream before the reader waits for the application.
const STREAM_QUEUE: usize = 16;
/// Data frames queued towards the writer before senders wait.
const DATA_QUEUE: usize = 64;
/// Streams a server has not yet accepted before new ones are refused.
const ACCEPT_QUEUE: usize = 64;

/// A handle on a session; clones share it.
#[derive(Clone)]
pub struct Session {
    handle: Arc<Handle>,
}

/// Keeps the session open while it lives; dropping the last signals shutdown.
struct Handle {
    shared: Arc<Shared>,
    incoming: tokio::sync::Mutex<mpsc::Receiver<Stream>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
    }
}

struct Shared {
    client: bool,
    control: mpsc::UnboundedSender<Frame>,
    data: mpsc::Sender<Frame>,
    state: Mutex<State>,
    /// Whether the peer keeps flow-control windows (see the module doc).
    peer_flow_control: AtomicBool,
    shutdown: watch::Sender<bool>,
    ended: watch::Sender<bool>,
}

struct State {
    streams: HashMap<u32, Entry>,
    next_stream_id: u32,
    last_peer_stream_id: u32,
    peer_initial_window: i64,
    go_away: bool,
    ended: bool,
    incoming: Option<mpsc::Sender<Stream>>,
}

struct Entry {
    data: Option<mpsc::Sender<Bytes>>,
    reply: Option<oneshot::Sender<Result<Headers, Error>>>,
    window: Arc<Window>,
    local_closed: bool,
}

/// A stream's sending window.
struct Window {
    state: Mutex<WindowState>,
    changed: Notify,
}

struct WindowState {
    credit: i64,
    reset: Option<u32>,
    ended: bool,
}

impl Window {
    fn new(credit: i64) -> Arc<Window> {
        Arc::new(Window {
            state: Mutex::new(WindowState {
                credit,
                reset: None,
                ended: false,
            }),
            changed: Notify::new(),
        })
    }

    fn update(&self, f: impl FnOnce(&mut WindowState)) {
        if let Ok(mut state) = self.state.lock() {
            f(&mut state);
        }
        self.changed.notify_waiters();
    }
}

impl Session {
    /// A client session (odd stream ids), as the API server speaks to the kubelet.
    pub fn client<T>(io: T) -> Session
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        Session::start(io, true)
    }

    /// A server session (even stream ids) that accepts the client's streams.
    pub fn server<T>(io: T) -> Session
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        Session::start(io, false)
    }

    fn start<T>(io: T, client: bool) -> Session
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (control, control_rx) = mpsc::unbounded_channel();
        let (data, data_rx) = mpsc::channel(DATA_QUEUE);
        let (incoming_tx, incoming_rx) = mpsc::channel(ACCEPT_QUEUE);
        let shared = Arc::new(Shared {
            client,
            control,
            data,
            state: Mutex::new(State {
                streams: HashMap::new(),
                next_stream_id: if client { 1 } else { 2 },
                last_peer_stream_id: 0,
                peer_initial_window: DEFAULT_WINDOW,
                go_away: false,
                ended: false,
                incoming: (!client).then_some(incoming_tx),
            }),
            peer_flow_control: AtomicBool::new(false),
            shutdown: watch::Sender::new(false),
            ended: watch::Sender::new(false),
        });
        let handle = Arc::new(Handle {
            shared: shared.clone(),
            incoming: tokio::sync::Mutex::new(incoming_rx),
        });
        let (read, write) = tokio::io::split(io);
        tokio::spawn(write_loop(write, control_rx, data_rx, shared.clone()));
        tokio::spawn(read_loop(read, Arc::downgrade(&handle), shared));
        Session { handle }
    }

    /// Opens a stream with `headers` (SYN_STREAM; `fin` if we send nothing on it). Wait
    /// for the peer's SYN_REPLY with [`Stream::wait_reply`] before relying on it: Go's
    /// spdystream drops data on a stream it has not yet replied to.
    pub fn open(&self, headers: Headers, fin: bool) -> Result<Stream, Error> {
        let shared = &self.handle.shared;
        let (data_tx, data_rx) = mpsc::channel(STREAM_QUEUE);
        let (reply_tx, reply_rx) = oneshot::channel();
        let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
        if state.ended || state.go_away {
            return Err(Error::Closed);
        }
        let stream_id = state.next_stream_id;
        if stream_id > 0x7fff_ffff {
            return Err(Error::Protocol("stream ids exhausted".into()));
        }
        state.next_stream_id += 2;
        let window = Window::new(state.peer_initial_window);
        state.streams.insert(
            stream_id,
            Entry {
                data: Some(data_tx),
                reply: Some(reply_tx),
                window: window.clone(),
                local_closed: fin,
            },
        );
        // Queued under the lock, so SYN_STREAMs leave in stream id order.
        shared
            .control
            .send(Frame::SynStream {
                stream_id,
                associated_to: 0,
                priority: 0,
                flags: if fin { frame::FLAG_FIN } else { 0 },
                headers: headers.clone(),
            })
            .map_err(|_| Error::Closed)?;
        drop(state);
        Ok(Stream::new(
            self.handle.clone(),
            stream_id,
            headers,
            data_rx,
            window,
            Some(reply_rx),
        ))
    }

    /// The next stream the peer opened (server sessions), `None` once the session ended.
    pub async fn accept(&self) -> Option<Stream> {
        self.handle.incoming.lock().await.recv().await
    }

    /// Ends the session now: queued frames, then GOAWAY, then the connection shut down.
    pub fn close(&self) {
        self.handle.shared.shutdown.send_replace(true);
    }

    /// Resolves once the connection has ended (the peer closed it, or it failed).
    pub async fn ended(&self) {
        let mut ended = self.handle.shared.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }
}

/// One stream: its headers (the peer's SYN_STREAM for an accepted stream, ours for an
/// opened one), a reading half and a writing half.
pub struct Stream {
    headers: Headers,
    reply: Option<oneshot::Receiver<Result<Headers, Error>>>,
    reader: StreamReader,
    writer: StreamWriter,
}

impl Stream {
    fn new(
        handle: Arc<Handle>,
        stream_id: u32,
        headers: Headers,
        data: mpsc::Receiver<Bytes>,
        window: Arc<Window>,
        reply: Option<oneshot::Receiver<Result<Headers, Error>>>,
    ) -> Stream {
        Stream {
            headers,
            reply,
            reader: StreamReader {
                handle: handle.clone(),
                stream_id,
                data,
                unacknowledged: 0,
            },
            writer: StreamWriter {
                handle,
                stream_id,
                window,
            },
        }
    }

    pub fn id(&self) -> u32 {
        self.writer.stream_id
    }

    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Waits for the peer's SYN_REPLY to a stream we opened; a reset or the session's end
    /// is an error.
    pub async fn wait_reply(&mut self) -> Result<Headers, Error> {
        match self.reply.take() {
            Some(reply) => reply.await.unwrap_or(Err(Error::Closed)),
            None => Ok(Headers::default()),
        }
    }

    /// Accepts a stream the peer opened (SYN_REPLY).
    pub fn reply(&self, headers: Headers) -> Result<(), Error> {
        self.writer.handle.shared.control_frame(Frame::SynReply {
            stream_id: self.id(),
            flags: 0,
            headers,
        })
    }

    pub async fn read(&mut self) -> Option<Bytes> {
        self.reader.read().await
    }

    pub async fn write(&self, data: Bytes) -> Result<(), Error> {
        self.writer.write(data).await
    }

    pub async fn close(&self) -> Result<(), Error> {
        self.writer.close().await
    }

    pub fn into_split(self) -> (StreamReader, StreamWriter) {
        (self.reader, self.writer)
    }
}

/// The receiving half of a stream.
pub struct StreamReader {
    handle: Arc<Handle>,
    stream_id: u32,
    data: mpsc::Receiver<Bytes>,
    unacknowledged: usize,
}

impl StreamReader {
    /// The next chunk of data; `None` once the peer half-closed the stream (FIN), reset
    /// it, or the session ended.
    pub async fn read(&mut self) -> Option<Bytes> {
        let chunk = self.data.recv().await?;
        self.unacknowledged += chunk.len();
        if self.unacknowledged >= WINDOW_UPDATE_THRESHOLD {
            let delta = std::mem::take(&mut self.unacknowledged) as u32;
            let _ = self.handle.shared.control_frame(Frame::WindowUpdate {
                stream_id: self.stream_id,
                delta,
            });
        }
        Some(chunk)
    }
}

/// The sending half of a stream; clones send on the same stream.
#[derive(Clone)]
pub struct StreamWriter {
    handle: Arc<Handle>,
    stream_id: u32,
    window: Arc<Window>,
}

impl StreamWriter {
    pub fn id(&self) -> u32 {
        self.stream_id
    }

    /// Sends `data`, in frames the peer's window allows.
    pub async fn write(&self, mut data: Bytes) -> Result<(), Error> {
        while !data.is_empty() {
            let n = self.take_window(data.len().min(MAX_DATA_CHUNK)).await?;
            let chunk = data.split_to(n);
            self.send(Frame::Data {
                stream_id: self.stream_id,
                flags: 0,
                data: chunk,
            })
            .await?;
        }
        Ok(())
    }

    /// Half-closes the stream: an empty data frame with FIN.
    pub async fn close(&self) -> Result<(), Error> {
        self.send(Frame::Data {
            stream_id: self.stream_id,
            flags: frame::FLAG_FIN,
            data: Bytes::new(),
        })
        .await?;
        let shared = &self.handle.shared;
        if let Ok(mut state) = shared.state.lock() {
            let remove = match state.streams.get_mut(&self.stream_id) {
                Some(entry) => {
                    entry.local_closed = true;
                    entry.data.is_none()
                }
                None => false,
            };
            if remove {
                state.streams.remove(&self.stream_id);
            }
        }
        Ok(())
    }

    /// Aborts the stream both ways (RST_STREAM).
    pub fn reset(&self, status: u32) -> Result<(), Error> {
        let shared = &self.handle.shared;
        if let Ok(mut state) = shared.state.lock() {
            state.streams.remove(&self.stream_id);
        }
        self.window.update(|w| w.reset = Some(status));
        shared.control_frame(Frame::RstStream {
            stream_id: self.stream_id,
            status,
        })
    }

    async fn send(&self, frame: Frame) -> Result<(), Error> {
        self.handle
            .shared
            .data
            .send(frame)
            .await
            .map_err(|_| Error::Closed)
    }

    /// Up to `want` bytes of the peer's window, waiting while it is exhausted.
    async fn take_window(&self, want: usize) -> Result<usize, Error> {
        loop {
            let changed = self.window.changed.notified();
            {
                let mut state = self.window.state.lock().map_err(|_| Error::Closed)?;
                if let Some(status) = state.reset {
                    return Err(Error::Reset {
                        stream_id: self.stream_id,
                        status,
                    });
                }
                if state.ended {
                    return Err(Error::Closed);
                }
                let enforced = self.handle.shared.peer_flow_control.load(Ordering::Acquire);
                if !enforced || state.credit > 0 {
                    let n = if enforced {
                        want.min(state.credit as usize)
                    } else {
                        want
                    };
                    state.credit -= n as i64;
                    return Ok(n);
                }
            }
            changed.await;
        }
    }
}

impl Shared {
    fn control_frame(&self, frame: Frame) -> Result<(), Error> {
        self.control.send(frame).map_err(|_| Error::Closed)
    }

    /// Whether `stream_id` is one the peer may open.
    fn is_peer_stream_id(&self, stream_id: u32) -> bool {
        stream_id != 0 && (stream_id % 2 == 1) != self.client
    }

    /// The connection ended: every stream ends, every waiter wakes.
    fn end(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.ended = true;
            state.incoming = None;
            for (_, mut entry) in state.streams.drain() {
                if let Some(reply) = entry.reply.take() {
                    let _ = reply.send(Err(Error::Closed));
                }
                entry.window.update(|w| w.ended = true);
            }
        }
        self.ended.send_replace(true);
    }
}

async fn write_loop<W: AsyncWrite>(
    write: W,
    mut control: mpsc::UnboundedReceiver<Frame>,
    mut data: mpsc::Receiver<Frame>,
    shared: Arc<Shared>,
) {
    let mut write = std::pin::pin!(write);
    let mut compressor = match HeaderCompressor::new() {
        Ok(compressor) => compressor,
        Err(error) => {
            tracing::warn!(%error, "SPDY header compressor");
            shared.end();
            return;
        }
    };
    let mut shutdown = shared.shutdown.subscribe();
    let mut ended = shared.ended.subscribe();
    let mut buffer = BytesMut::new();
    let mut closing = false;
    loop {
        let frame = if closing {
            // Whatever was queued before the shutdown still goes out.
            match control.try_recv() {
                Ok(frame) => Some(frame),
                Err(_) => data.try_recv().ok(),
            }
        } else {
            tokio::select! {
                biased;
                frame = control.recv() => frame,
                frame = data.recv() => frame,
                _ = shutdown.wait_for(|s| *s) => { closing = true; continue; }
                _ = ended.wait_for(|e| *e) => { closing = true; continue; }
            }
        };
        let Some(frame) = frame else {
            if !closing {
                closing = true;
                continue;
            }
            let last_good_stream_id = shared
                .state
                .lock()
                .map(|s| s.last_peer_stream_id)
                .unwrap_or(0);
            let go_away = Frame::GoAway {
                last_good_stream_id,
                status: 0,
            };
            if go_away.encode(&mut compressor, &mut buffer).is_ok() {
                let _ = write.write_all(&buffer).await;
            }
            let _ = write.shutdown().await;
            return;
        };
        let mut next = Some(frame);
        while let Some(frame) = next.take() {
            if let Err(error) = frame.encode(&mut compressor, &mut buffer) {
                tracing::warn!(%error, "SPDY frame not sent");
            }
            if buffer.len() < 64 * 1024 {
                next = control.try_recv().or_else(|_| data.try_recv()).ok();
            }
        }
        if let Err(error) = write.write_all(&buffer).await {
            tracing::debug!(%error, "SPDY connection write failed");
            shared.end();
            return;
        }
        buffer.clear();
        if write.flush().await.is_err() {
            shared.end();
            return;
        }
    }
}

async fn read_loop<R: AsyncRead>(read: R, handle: std::sync::Weak<Handle>, shared: Arc<Shared>) {
    let read = std::pin::pin!(read);
    let mut reader = FrameReader::new(read);
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let frame = tokio::select! {
            frame = reader.read() => frame,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        match frame {
            Ok(Some(frame)) => {
                if let Err(error) = dispatch(&shared, &handle, frame).await {
                    tracing::debug!(%error, "SPDY session failed");
                    let _ = shared.control_frame(Frame::GoAway {
                        last_good_stream_id: 0,
                        status: 1,
                    });
                    break;
                }
            }
            Ok(None) => break,
            Err(error) => {
                tracing::debug!(%error, "SPDY connection read failed");
                break;
            }
        }
    }
    shared.end();
}

async fn dispatch(
    shared: &Arc<Shared>,
    handle: &std::sync::Weak<Handle>,
    frame: Frame,
) -> Result<(), Error> {
    match frame {
        Frame::Data {
            stream_id,
            flags,
            data,
        } => {
            let sender = {
                let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
                let Some(entry) = state.streams.get_mut(&stream_id) else {
                    return Ok(());
                };
                let sender = entry.data.clone();
                if flags & frame::FLAG_FIN != 0 {
                    entry.data = None;
                    if entry.local_closed {
                        state.streams.remove(&stream_id);
                    }
                }
                sender
            };
            if let Some(sender) = sender
                && !data.is_empty()
            {
                // Waits while the application is behind: backpressure to the peer.
                let _ = sender.send(data).await;
            }
        }
        Frame::SynStream {
            stream_id,
            flags,
            headers,
            ..
        } => {
            let (data_tx, data_rx) = mpsc::channel(STREAM_QUEUE);
            let accepted = {
                let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
                if !shared.is_peer_stream_id(stream_id) || stream_id <= state.last_peer_stream_id {
                    return Err(Error::Protocol(format!("unexpected stream id {stream_id}")));
                }
                state.last_peer_stream_id = stream_id;
                let window = Window::new(state.peer_initial_window);
                let fin = flags & frame::FLAG_FIN != 0;
                state.streams.insert(
                    stream_id,
                    Entry {
                        data: (!fin).then(|| data_tx.clone()),
                        reply: None,
                        window: window.clone(),
                        local_closed: flags & frame::FLAG_UNIDIRECTIONAL != 0,
                    },
                );
                match (state.incoming.clone(), handle.upgrade()) {
                    (Some(incoming), Some(handle)) if !state.go_away => Some((
                        incoming,
                        Stream::new(handle, stream_id, headers, data_rx, window, None),
                    )),
                    _ => None,
                }
            };
            drop(data_tx);
            match accepted {
                Some((incoming, stream)) => {
                    if incoming.try_send(stream).is_err() {
                        refuse(shared, stream_id)?;
                    }
                }
                None => refuse(shared, stream_id)?,
            }
        }
        Frame::SynReply {
            stream_id,
            flags,
            headers,
        } => {
            let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
            if let Some(entry) = state.streams.get_mut(&stream_id) {
                if let Some(reply) = entry.reply.take() {
                    let _ = reply.send(Ok(headers));
                }
                if flags & frame::FLAG_FIN != 0 {
                    entry.data = None;
                }
            }
        }
        Frame::Headers {
            stream_id, flags, ..
        } => {
            if flags & frame::FLAG_FIN != 0 {
                let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
                if let Some(entry) = state.streams.get_mut(&stream_id) {
                    entry.data = None;
                }
            }
        }
        Frame::RstStream { stream_id, status } => {
            let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
            if let Some(mut entry) = state.streams.remove(&stream_id) {
                if let Some(reply) = entry.reply.take() {
                    let _ = reply.send(Err(Error::Reset { stream_id, status }));
                }
                entry.window.update(|w| w.reset = Some(status));
            }
        }
        Frame::Settings { entries, .. } => {
            for (_, id, value) in entries {
                if id == frame::SETTINGS_INITIAL_WINDOW_SIZE {
                    let value = i64::from(value & 0x7fff_ffff);
                    shared.peer_flow_control.store(true, Ordering::Release);
                    let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
                    let delta = value - state.peer_initial_window;
                    state.peer_initial_window = value;
                    for entry in state.streams.values() {
                        entry.window.update(|w| w.credit += delta);
                    }
                }
            }
        }
        Frame::WindowUpdate { stream_id, delta } => {
            shared.peer_flow_control.store(true, Ordering::Release);
            let state = shared.state.lock().map_err(|_| Error::Closed)?;
            if let Some(entry) = state.streams.get(&stream_id) {
                entry.window.update(|w| w.credit += i64::from(delta));
            }
        }
        Frame::Ping { id } => {
            // Our own pings have our parity; a peer's is echoed.
            let ours = (id % 2 == 1) == shared.client;
            if !ours {
                shared.control_frame(Frame::Ping { id })?;
            }
        }
        Frame::GoAway { .. } => {
            let mut state = shared.state.lock().map_err(|_| Error::Closed)?;
            state.go_away = true;
            state.incoming = None;
        }
        Frame::Unknown { .. } => {}
    }
    Ok(())
}

fn refuse(shared: &Shared, stream_id: u32) -> Result<(), Error> {
    if let Ok(mut state) = shared.state.lock() {
        state.streams.remove(&stream_id);
    }
    shared.control_frame(Frame::RstStream {
        stream_id,
        status: frame::rst::REFUSED_STREAM,
    })
}

#[cfg(test)]
mod tests;
