//! kube-apiserver's StreamTranslator: a client's exec or attach over WebSocket
//! (`v5.channel.k8s.io`, or v4) run against a backend's remotecommand over SPDY. Client
//! stdin and resize messages go to the SPDY stdin and resize streams (v5's `[255, 0]` ends
//! stdin with a FIN); the backend's stdout and stderr go back as channel 1 and 2 messages;
//! once both have ended, the backend's status goes out on channel 3 and the WebSocket is
//! closed. Every hop awaits the next (bounded queues), so a slow side slows the other
//! instead of filling memory.

use crate::channel::{self, Incoming, Version};
use crate::remotecommand::{self, Outcome, RemoteCommand};
use crate::spdy::StreamReader;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, frame::coding::CloseCode};

/// Messages queued towards the client before the backend's readers wait.
const CLIENT_QUEUE: usize = 8;
/// How long the client has to answer our Close.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `client` (the upgraded connection, after our 101 with `version`) from `command`
/// until the command ends or the client goes away.
pub async fn translate<S>(client: S, version: Version, command: RemoteCommand)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let websocket = WebSocketStream::from_raw_socket(client, Role::Server, None).await;
    let (mut sink, mut source) = websocket.split();
    let RemoteCommand {
        session,
        mut error,
        mut stdin,
        stdout,
        stderr,
        resize,
    } = command;
    let (to_client, mut queued) = mpsc::channel::<Message>(CLIENT_QUEUE);

    // As kubelet's WebSocket server does: an empty message on the lowest writable channel
    // tells the client the streams are up.
    let first = if stdout.is_some() {
        channel::STDOUT
    } else if stderr.is_some() {
        channel::STDERR
    } else {
        channel::ERROR
    };
    let _ = to_client
        .send(Message::Binary(channel::encode(first, &[]).into()))
        .await;

    let output = async move {
        tokio::join!(
            pump(stdout, channel::STDOUT, &to_client),
            pump(stderr, channel::STDERR, &to_client)
        );
        tracing::debug!("the backend's stdout and stderr ended");
        let mut status = remotecommand::read_status(&mut error).await;
        tracing::debug!(status = %String::from_utf8_lossy(&status), "the backend's status");
        if status.is_empty() {
            status = remotecommand::status(&Outcome::Success)
                .to_string()
                .into_bytes();
        }
        let _ = to_client
            .send(Message::Binary(
                channel::encode(channel::ERROR, &status).into(),
            ))
            .await;
        let _ = to_client
            .send(Message::Close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            })))
            .await;
    };
    let writer = async move {
        while let Some(message) = queued.recv().await {
            if let Err(error) = sink.send(message).await {
                // The client is gone; the input side notices too.
                tracing::debug!(%error, "writing to the client failed");
                return;
            }
        }
    };
    let input = async move {
        while let Some(message) = source.next().await {
            let data = match message {
                Ok(Message::Binary(data)) => data,
                Ok(Message::Close(frame)) => {
                    tracing::debug!(?frame, "the client closed the WebSocket");
                    break;
                }
                Err(error) => {
                    tracing::debug!(%error, "reading from the client failed");
                    break;
                }
                Ok(_) => continue,
            };
            match channel::decode(version, &data) {
                Incoming::Stdin(bytes) => {
                    if let Some(stdin) = &stdin
                        && stdin.write(Bytes::copy_from_slice(bytes)).await.is_err()
                    {
                        tracing::debug!("the backend's stdin closed");
                    }
                }
                Incoming::Resize(size) => {
                    if let Some(resize) = &resize {
                        let _ = resize.write(Bytes::copy_from_slice(size)).await;
                    }
                }
                Incoming::Close(channel::STDIN) => {
                    tracing::debug!("the client closed stdin");
                    if let Some(stdin) = stdin.take() {
                        let _ = stdin.close().await;
                    }
                }
                Incoming::Close(_) | Incoming::Other => {}
            }
        }
    };
    let mut input = std::pin::pin!(input);
    tokio::select! {
        _ = async { tokio::join!(output, writer) } => {
            session.close();
            // The closing handshake: read on until the client answers our Close. Dropping
            // the connection with its answer unread would reset it, and a reset can
            // discard what the client has not read yet (the end of stdout, the status).
            let _ = tokio::time::timeout(CLOSE_WAIT, &mut input).await;
        }
        () = &mut input => tracing::debug!("the client left before the command ended"),
    }
    session.close();
}

/// Ends `client` (upgraded, after our 101) with `status` on the error channel, for a
/// command that could not start (the backend refused it), as kube-apiserver's translator
/// reports a failed SPDY upgrade.
pub async fn refuse<S>(client: S, status: &[u8])
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let mut websocket = WebSocketStream::from_raw_socket(client, Role::Server, None).await;
    let message = Message::Binary(channel::encode(channel::ERROR, status).into());
    // A normal closure, so that the client reads the status rather than an error: a
    // Close without a code is 1005, which client-go reports instead of the status.
    let normal = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    if websocket.send(message).await.is_ok() && websocket.close(Some(normal)).await.is_ok() {
        // The client's answer to our Close (see `translate`).
        let answered = async { while let Some(Ok(_)) = websocket.next().await {} };
        let _ = tokio::time::timeout(CLOSE_WAIT, answered).await;
    }
}

/// Copies one backend output stream to the client's `channel`.
async fn pump(reader: Option<StreamReader>, channel: u8, to_client: &mpsc::Sender<Message>) {
    let Some(mut reader) = reader else { return };
    while let Some(chunk) = reader.read().await {
        let message = Message::Binary(channel::encode(channel, &chunk).into());
        if to_client.send(message).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
