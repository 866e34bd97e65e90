#![allow(clippy::unwrap_used)]

use super::*;
use crate::remotecommand::Streams;
use crate::spdy::{Headers, Session};
use std::time::Duration;
use tokio::time::timeout;

const DEADLINE: Duration = Duration::from_secs(10);

/// A remotecommand server on our own SPDY server session: reads stdin to its end, writes
/// it upper-cased to stdout, "warning" to stderr, and exits 3.
async fn serve_command(server: Session) {
    let mut streams = std::collections::HashMap::new();
    while streams.len() < 4 {
        let stream = server.accept().await.unwrap();
        stream.reply(Headers::new()).unwrap();
        let kind = stream.headers().get("streamtype").unwrap().to_string();
        streams.insert(kind, stream);
    }
    let mut stdin = streams.remove("stdin").unwrap();
    let mut input = Vec::new();
    while let Some(chunk) = stdin.read().await {
        input.extend_from_slice(&chunk);
    }
    let stdout = streams.remove("stdout").unwrap();
    stdout
        .write(Bytes::from(input.to_ascii_uppercase()))
        .await
        .unwrap();
    stdout.close().await.unwrap();
    let stderr = streams.remove("stderr").unwrap();
    stderr.write(Bytes::from_static(b"warning")).await.unwrap();
    stderr.close().await.unwrap();
    let error = streams.remove("error").unwrap();
    let status = remotecommand::status(&Outcome::Exited(3)).to_string();
    error.write(Bytes::from(status)).await.unwrap();
    error.close().await.unwrap();
    // Keep the session until the translator closes it.
    server.ended().await;
}

#[tokio::test]
async fn a_websocket_exec_runs_over_spdy_with_stdin_close_and_exit_code() {
    let (backend_client, backend_server) = tokio::io::duplex(64 * 1024);
    let kubelet = tokio::spawn(serve_command(Session::server(backend_server)));
    let streams = Streams {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: false,
    };
    let command = RemoteCommand::start(Session::client(backend_client), streams)
        .await
        .unwrap();
    let (client, server) = tokio::io::duplex(64 * 1024);
    let translating = tokio::spawn(translate(server, Version::V5, command));
    let mut client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
    client
        .send(Message::Binary(b"\x00hello ".to_vec().into()))
        .await
        .unwrap();
    client
        .send(Message::Binary(b"\x00world".to_vec().into()))
        .await
        .unwrap();
    client
        .send(Message::Binary(vec![channel::CLOSE, channel::STDIN].into()))
        .await
        .unwrap();
    let mut channels: [Vec<u8>; 4] = Default::default();
    let mut first = None;
    loop {
        let message = timeout(DEADLINE, client.next()).await.unwrap();
        match message {
            Some(Ok(Message::Binary(data))) => {
                let (channel, data) = data.split_first().unwrap();
                first.get_or_insert((*channel, data.len()));
                channels[usize::from(*channel)].extend_from_slice(data);
            }
            Some(Ok(Message::Close(_))) | None => break,
            Some(Ok(_)) => {}
            Some(Err(e)) => panic!("{e}"),
        }
    }
    // Our answer to the translator's Close goes out as the stream is read to its end.
    while let Some(Ok(_)) = timeout(DEADLINE, client.next()).await.unwrap() {}
    assert_eq!(first, Some((channel::STDOUT, 0)));
    assert_eq!(channels[1], b"HELLO WORLD");
    assert_eq!(channels[2], b"warning");
    assert_eq!(remotecommand::outcome(&channels[3]), Outcome::Exited(3));
    timeout(DEADLINE, translating).await.unwrap().unwrap();
    timeout(DEADLINE, kubelet).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_client_that_leaves_ends_the_backend_session() {
    let (backend_client, backend_server) = tokio::io::duplex(64 * 1024);
    let server = Session::server(backend_server);
    let accepting = {
        let server = server.clone();
        tokio::spawn(async move {
            let mut streams = Vec::new();
            while streams.len() < 2 {
                let stream = server.accept().await.unwrap();
                stream.reply(Headers::new()).unwrap();
                streams.push(stream);
            }
            streams
        })
    };
    let streams = Streams {
        stdout: true,
        ..Streams::default()
    };
    let command = RemoteCommand::start(Session::client(backend_client), streams)
        .await
        .unwrap();
    let _streams = accepting.await.unwrap();
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let translating = tokio::spawn(translate(server_side, Version::V5, command));
    drop(client);
    timeout(DEADLINE, translating).await.unwrap().unwrap();
    timeout(DEADLINE, server.ended()).await.unwrap();
}
