#![allow(clippy::unwrap_used)]

use super::*;
use tokio::time::timeout;

const DEADLINE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn bytes_cross_unwrapped_both_ways_and_the_backends_end_closes_the_client() {
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let (backend, mut kubelet) = tokio::io::duplex(64 * 1024);
    let tunnelling = tokio::spawn(tunnel(server_side, backend));
    let mut client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
    client
        .send(Message::Binary(b"\x80\x03\x00\x06".to_vec().into()))
        .await
        .unwrap();
    client
        .send(Message::Binary(b"rest".to_vec().into()))
        .await
        .unwrap();
    let mut received = [0u8; 8];
    timeout(DEADLINE, kubelet.read_exact(&mut received))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&received, b"\x80\x03\x00\x06rest");
    kubelet.write_all(b"reply").await.unwrap();
    let message = timeout(DEADLINE, client.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(message, Message::Binary(b"reply".to_vec().into()));
    drop(kubelet);
    match timeout(DEADLINE, client.next()).await.unwrap() {
        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {}
        Some(Ok(other)) => panic!("unexpected {other:?}"),
    }
    drop(client);
    timeout(DEADLINE, tunnelling).await.unwrap().unwrap();
}
