//! The port-forward WebSocket tunnel (`SPDY/3.1+portforward.k8s.io`, KEP 4006): the
//! client's SPDY bytes arrive in WebSocket binary messages and go, unwrapped, onto the
//! backend's upgraded SPDY connection; the backend's bytes go back as binary messages.
//! The API server never parses the SPDY inside.

use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The largest backend read carried in one message.
const CHUNK: usize = 32 * 1024;
/// How long one direction may go on after the other has ended.
const LINGER: Duration = Duration::from_secs(10);

/// Carries bytes between `client` (the upgraded connection, after our 101) and `backend`
/// until both directions have ended.
pub async fn tunnel<S, B>(client: S, backend: B)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
    B: AsyncRead + AsyncWrite + Unpin + Send,
{
    let websocket = WebSocketStream::from_raw_socket(client, Role::Server, None).await;
    let (mut sink, mut source) = websocket.split();
    let (mut backend_read, mut backend_write) = tokio::io::split(backend);
    let upstream = async move {
        while let Some(message) = source.next().await {
            match message {
                Ok(Message::Binary(data)) => {
                    if backend_write.write_all(&data).await.is_err() {
                        break;
                    }
                }
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = backend_write.shutdown().await;
    };
    let downstream = async move {
        let mut buffer = vec![0u8; CHUNK];
        loop {
            match backend_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let message = Message::Binary(buffer[..n].to_vec().into());
                    if sink.send(message).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    };
    let (mut upstream, mut downstream) = (Box::pin(upstream), Box::pin(downstream));
    tokio::select! {
        () = &mut upstream => { let _ = tokio::time::timeout(LINGER, downstream).await; }
        () = &mut downstream => { let _ = tokio::time::timeout(LINGER, upstream).await; }
    }
}

#[cfg(test)]
mod tests;
