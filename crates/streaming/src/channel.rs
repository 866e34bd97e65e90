//! The WebSocket channel protocols of exec and attach (`v5.channel.k8s.io`,
//! `v4.channel.k8s.io`): each binary message starts with a channel byte — 0 stdin,
//! 1 stdout, 2 stderr, 3 error (the final `metav1.Status` JSON), 4 resize (JSON
//! `{"Width":…,"Height":…}`); v5 adds 255, `[255, channel]` closing that channel (kubectl
//! sends `[255, 0]` at the end of its stdin). Also the WebSocket upgrade's checks and
//! answer, and the port-forward tunnel's protocol name.

use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

pub const V5: &str = "v5.channel.k8s.io";
pub const V4: &str = "v4.channel.k8s.io";
/// The exec/attach protocols served over WebSocket, preferred first.
pub const PROTOCOLS: [&str; 2] = [V5, V4];
/// The port-forward WebSocket tunnel: SPDY/3.1 inside binary messages (KEP 4006).
pub const PORT_FORWARD_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";
/// The SPDY protocol of port-forward.
pub const PORT_FORWARD: &str = "portforward.k8s.io";

pub const STDIN: u8 = 0;
pub const STDOUT: u8 = 1;
pub const STDERR: u8 = 2;
pub const ERROR: u8 = 3;
pub const RESIZE: u8 = 4;
pub const CLOSE: u8 = 255;

/// The WebSocket protocol version of an exec or attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V4,
    V5,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::V4 => V4,
            Version::V5 => V5,
        }
    }
}

/// A message received from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming<'a> {
    Stdin(&'a [u8]),
    Resize(&'a [u8]),
    /// `[255, channel]` (v5).
    Close(u8),
    /// Anything else (an empty message, an unknown or write-only channel): ignored.
    Other,
}

/// Splits a client's binary message into its channel and data.
pub fn decode(version: Version, message: &[u8]) -> Incoming<'_> {
    match message.split_first() {
        Some((&STDIN, data)) => Incoming::Stdin(data),
        Some((&RESIZE, data)) => Incoming::Resize(data),
        Some((&CLOSE, [channel, ..])) if version == Version::V5 => Incoming::Close(*channel),
        _ => Incoming::Other,
    }
}

/// A message for the client on `channel`.
pub fn encode(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(channel);
    message.extend_from_slice(data);
    message
}

/// Whether the request asks for a WebSocket (`Connection: Upgrade`, `Upgrade: websocket`).
pub fn is_websocket(headers: &HeaderMap) -> bool {
    let has_token = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|value| {
            value
                .to_str()
                .unwrap_or("")
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        })
    };
    has_token(header::CONNECTION, "upgrade") && has_token(header::UPGRADE, "websocket")
}

/// The protocols the client offers in `Sec-WebSocket-Protocol`, in its order.
pub fn offered(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The first protocol the client offers that `supported` lists.
pub fn negotiate<'a>(headers: &HeaderMap, supported: &[&'a str]) -> Option<&'a str> {
    offered(headers)
        .iter()
        .find_map(|p| supported.iter().find(|s| **s == p).copied())
}

/// The 101 answer to a WebSocket upgrade with `protocol`; `None` without a usable
/// `Sec-WebSocket-Key`.
pub fn switching_protocols(headers: &HeaderMap, protocol: &str) -> Option<Response<()>> {
    let key = headers.get(header::SEC_WEBSOCKET_KEY)?;
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).ok()?,
    );
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_str(protocol).ok()?,
    );
    Some(response)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn messages_split_by_channel() {
        assert_eq!(decode(Version::V5, b"\x00hi"), Incoming::Stdin(b"hi"));
        assert_eq!(
            decode(Version::V5, br#"{"Width":80,"Height":24}"#),
            Incoming::Other
        );
        assert_eq!(
            decode(Version::V5, b"\x04{\"Width\":80}"),
            Incoming::Resize(b"{\"Width\":80}")
        );
        assert_eq!(decode(Version::V5, &[255, 0]), Incoming::Close(0));
        assert_eq!(decode(Version::V4, &[255, 0]), Incoming::Other);
        assert_eq!(decode(Version::V5, &[]), Incoming::Other);
        assert_eq!(encode(STDOUT, b"out"), b"\x01out");
    }

    #[test]
    fn the_clients_first_supported_protocol_wins() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("base64.channel.k8s.io, v4.channel.k8s.io"),
        );
        headers.append(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(V5));
        assert_eq!(negotiate(&headers, &PROTOCOLS), Some(V4));
        assert_eq!(negotiate(&headers, &[PORT_FORWARD_TUNNEL]), None);
    }

    #[test]
    fn the_upgrade_answer_carries_the_accept_key() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        // RFC 6455's example key and answer.
        headers.insert(
            header::SEC_WEBSOCKET_KEY,
            HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="),
        );
        assert!(is_websocket(&headers));
        let response = switching_protocols(&headers, V5).unwrap();
        assert_eq!(response.status(), 101);
        assert_eq!(
            response.headers()[header::SEC_WEBSOCKET_ACCEPT],
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(response.headers()[header::SEC_WEBSOCKET_PROTOCOL], V5);
    }
}
