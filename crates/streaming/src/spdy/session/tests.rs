#![allow(clippy::unwrap_used)]

use super::*;
use crate::spdy::frame::{FrameReader, rst};
use std::time::Duration;
use tokio::time::timeout;

const DEADLINE: Duration = Duration::from_secs(10);

fn pair() -> (Session, Session) {
    let (a, b) = tokio::io::duplex(16 * 1024);
    (Session::client(a), Session::server(b))
}

async fn read_all(stream: &mut StreamReader) -> Vec<u8> {
    let mut all = Vec::new();
    while let Some(chunk) = stream.read().await {
        all.extend_from_slice(&chunk);
    }
    all
}

#[tokio::test]
async fn streams_carry_headers_and_data_both_ways_until_fin() {
    let (client, server) = pair();
    let served = tokio::spawn(async move {
        let stream = server.accept().await.unwrap();
        assert_eq!(stream.headers().get("streamtype"), Some("stdin"));
        stream.reply(Headers::from([("ok", "yes")])).unwrap();
        let (mut reader, writer) = stream.into_split();
        let got = read_all(&mut reader).await;
        writer.write(Bytes::from(got.clone())).await.unwrap();
        writer.close().await.unwrap();
        got
    });
    let mut stream = client
        .open(Headers::from([("streamType", "stdin")]), false)
        .unwrap();
    assert_eq!(stream.id(), 1);
    let reply = timeout(DEADLINE, stream.wait_reply())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.get("ok"), Some("yes"));
    stream.write(Bytes::from_static(b"hello ")).await.unwrap();
    stream.write(Bytes::from_static(b"world")).await.unwrap();
    stream.close().await.unwrap();
    let (mut reader, _writer) = stream.into_split();
    let echoed = timeout(DEADLINE, read_all(&mut reader)).await.unwrap();
    assert_eq!(echoed, b"hello world");
    assert_eq!(served.await.unwrap(), b"hello world");
}

#[tokio::test]
async fn large_transfers_flow_through_windows_both_ways() {
    let (client, server) = pair();
    // A megabyte each way, far past the 64 KiB initial windows; the server is ours, so
    // it grants window as it reads and the client must wait for those grants.
    let payload: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    let expected = payload.clone();
    let served = tokio::spawn(async move {
        let stream = server.accept().await.unwrap();
        stream.reply(Headers::new()).unwrap();
        let (mut reader, writer) = stream.into_split();
        let got = read_all(&mut reader).await;
        writer.write(Bytes::from(got)).await.unwrap();
        writer.close().await.unwrap();
    });
    let mut stream = client.open(Headers::new(), false).unwrap();
    stream.wait_reply().await.unwrap();
    let (mut reader, writer) = stream.into_split();
    let sending = tokio::spawn(async move {
        writer.write(Bytes::from(payload)).await.unwrap();
        writer.close().await.unwrap();
    });
    let echoed = timeout(DEADLINE, read_all(&mut reader)).await.unwrap();
    assert_eq!(echoed.len(), expected.len());
    assert!(echoed == expected);
    sending.await.unwrap();
    served.await.unwrap();
}

/// A raw peer: frames written and read by hand, as a non-Rust implementation would.
struct RawPeer {
    reader: FrameReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    compressor: HeaderCompressor,
}

impl RawPeer {
    async fn send(&mut self, frame: Frame) {
        let mut bytes = BytesMut::new();
        frame.encode(&mut self.compressor, &mut bytes).unwrap();
        self.writer.write_all(&bytes).await.unwrap();
    }

    /// Accepts stream 1 (SYN_REPLY).
    async fn reply(&mut self) {
        self.send(Frame::SynReply {
            stream_id: 1,
            flags: 0,
            headers: Headers::new(),
        })
        .await;
    }

    async fn next(&mut self) -> Frame {
        timeout(DEADLINE, self.reader.read())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    }
}

fn raw_pair() -> (Session, RawPeer) {
    let (a, b) = tokio::io::duplex(256 * 1024);
    let (read, write) = tokio::io::split(b);
    (
        Session::client(a),
        RawPeer {
            reader: FrameReader::new(read),
            writer: write,
            compressor: HeaderCompressor::new().unwrap(),
        },
    )
}

#[tokio::test]
async fn a_peer_without_flow_control_is_not_held_to_64_kib() {
    // Go's spdystream never sends WINDOW_UPDATE: sending must not stall at 64 KiB.
    let (client, mut peer) = raw_pair();
    let mut stream = client.open(Headers::new(), false).unwrap();
    assert!(matches!(
        peer.next().await,
        Frame::SynStream { stream_id: 1, .. }
    ));
    peer.reply().await;
    stream.wait_reply().await.unwrap();
    let writing = tokio::spawn(async move {
        stream
            .write(Bytes::from(vec![1u8; 200 * 1024]))
            .await
            .unwrap();
        stream.close().await.unwrap();
        stream
    });
    let mut received = 0;
    loop {
        match peer.next().await {
            Frame::Data { data, flags, .. } => {
                received += data.len();
                if flags & frame::FLAG_FIN != 0 {
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(received, 200 * 1024);
    timeout(DEADLINE, writing).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_peer_that_keeps_windows_is_respected() {
    let (client, mut peer) = raw_pair();
    peer.send(Frame::Settings {
        flags: 0,
        entries: vec![(0, frame::SETTINGS_INITIAL_WINDOW_SIZE, 1000)],
    })
    .await;
    // A ping round trip proves the SETTINGS were read before the stream opens.
    peer.send(Frame::Ping { id: 2 }).await;
    assert_eq!(peer.next().await, Frame::Ping { id: 2 });
    let stream = client.open(Headers::new(), false).unwrap();
    assert!(matches!(peer.next().await, Frame::SynStream { .. }));
    let writing = tokio::spawn(async move { stream.write(Bytes::from(vec![0u8; 1500])).await });
    let Frame::Data { data, .. } = peer.next().await else {
        panic!("expected data");
    };
    assert_eq!(data.len(), 1000);
    // Nothing more until the window grows; then the rest.
    peer.send(Frame::Ping { id: 4 }).await;
    assert_eq!(peer.next().await, Frame::Ping { id: 4 });
    peer.send(Frame::WindowUpdate {
        stream_id: 1,
        delta: 600,
    })
    .await;
    let Frame::Data { data, .. } = peer.next().await else {
        panic!("expected data");
    };
    assert_eq!(data.len(), 500);
    timeout(DEADLINE, writing).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn we_grant_window_as_data_is_consumed() {
    let (client, mut peer) = raw_pair();
    let mut stream = client.open(Headers::new(), false).unwrap();
    assert!(matches!(peer.next().await, Frame::SynStream { .. }));
    peer.reply().await;
    stream.wait_reply().await.unwrap();
    // The peer sends exactly its 64 KiB window, then waits for a grant.
    for _ in 0..4 {
        peer.send(Frame::Data {
            stream_id: 1,
            flags: 0,
            data: Bytes::from(vec![9u8; 16 * 1024]),
        })
        .await;
    }
    let mut read = 0;
    while read < 64 * 1024 {
        read += timeout(DEADLINE, stream.read())
            .await
            .unwrap()
            .unwrap()
            .len();
    }
    let mut granted = 0;
    while granted < 32 * 1024 {
        match peer.next().await {
            Frame::WindowUpdate {
                stream_id: 1,
                delta,
            } => granted += delta,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_reset_fails_the_reply_and_later_writes() {
    let (client, mut peer) = raw_pair();
    let mut stream = client.open(Headers::new(), false).unwrap();
    assert!(matches!(peer.next().await, Frame::SynStream { .. }));
    peer.send(Frame::RstStream {
        stream_id: 1,
        status: rst::REFUSED_STREAM,
    })
    .await;
    let error = timeout(DEADLINE, stream.wait_reply())
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, Error::Reset { status: 3, .. }), "{error}");
    let error = stream.write(Bytes::from_static(b"x")).await.unwrap_err();
    assert!(matches!(error, Error::Reset { .. }), "{error}");
    assert!(stream.read().await.is_none());
}

#[tokio::test]
async fn the_end_of_the_connection_ends_every_stream() {
    let (client, peer) = raw_pair();
    let mut stream = client.open(Headers::new(), false).unwrap();
    drop(peer);
    assert!(
        timeout(DEADLINE, stream.wait_reply())
            .await
            .unwrap()
            .is_err()
    );
    assert!(timeout(DEADLINE, stream.read()).await.unwrap().is_none());
    timeout(DEADLINE, client.ended()).await.unwrap();
    assert!(client.open(Headers::new(), false).is_err());
}

#[tokio::test]
async fn dropping_the_last_handle_sends_goaway() {
    let (client, mut peer) = raw_pair();
    drop(client);
    assert!(matches!(peer.next().await, Frame::GoAway { .. }));
    assert!(
        timeout(DEADLINE, peer.reader.read())
            .await
            .unwrap()
            .unwrap()
            .is_none()
    );
}
