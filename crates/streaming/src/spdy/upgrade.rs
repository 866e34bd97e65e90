//! The client side of the HTTP/1.1 upgrade to SPDY/3.1 on a connection of one's own (what
//! client-go's SPDY round tripper sends): `Connection: Upgrade`, `Upgrade: SPDY/3.1` and
//! the offered `X-Stream-Protocol-Version`s, then the `101` answer's head read byte by
//! byte, so nothing of the SPDY session that follows is consumed.

use super::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest answer head we read.
const MAX_HEAD: usize = 16 * 1024;

/// Sends `POST path` to `host` on `io`, offering `versions`, and reads the answer: the
/// version the server chose (empty if it named none). Anything but `101` is an error
/// with the answer's status line.
pub async fn upgrade<T>(
    io: &mut T,
    host: &str,
    path: &str,
    versions: &[&str],
) -> Result<String, Error>
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\
         Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
    );
    for version in versions {
        request.push_str(&format!("X-Stream-Protocol-Version: {version}\r\n"));
    }
    request.push_str("\r\n");
    io.write_all(request.as_bytes()).await?;
    io.flush().await?;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return Err(Error::Protocol("upgrade answer head too large".into()));
        }
        head.push(io.read_u8().await?);
    }
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if status.split(' ').nth(1) != Some("101") {
        return Err(Error::Protocol(format!("upgrade refused: {status}")));
    }
    let negotiated = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| {
            name.trim()
                .eq_ignore_ascii_case("x-stream-protocol-version")
        })
        .map(|(_, value)| value.trim().to_string())
        .unwrap_or_default();
    Ok(negotiated)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn the_answer_head_is_read_and_nothing_after_it() {
        let (mut client, mut server) = tokio::io::duplex(4096);
        let serving = tokio::spawn(async move {
            let mut request = vec![0u8; 1024];
            let n = server.read(&mut request).await.unwrap();
            let request = String::from_utf8_lossy(&request[..n]).into_owned();
            server
                .write_all(
                    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\
                      Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\nSPDY",
                )
                .await
                .unwrap();
            request
        });
        let negotiated = upgrade(
            &mut client,
            "h",
            "/exec/x",
            &["v4.channel.k8s.io", "channel.k8s.io"],
        )
        .await
        .unwrap();
        assert_eq!(negotiated, "v4.channel.k8s.io");
        let mut rest = [0u8; 4];
        client.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"SPDY");
        let request = serving.await.unwrap();
        assert!(request.starts_with("POST /exec/x HTTP/1.1\r\n"));
        assert!(request.contains("X-Stream-Protocol-Version: channel.k8s.io\r\n"));
    }

    #[tokio::test]
    async fn a_refusal_is_an_error_with_its_status() {
        let (mut client, mut server) = tokio::io::duplex(4096);
        tokio::spawn(async move {
            let mut request = vec![0u8; 1024];
            let _ = server.read(&mut request).await;
            let _ = server
                .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                .await;
        });
        let error = upgrade(&mut client, "h", "/", &[]).await.unwrap_err();
        assert!(error.to_string().contains("403 Forbidden"), "{error}");
    }
}
