//! SPDY/3.1, the multiplexing protocol Kubernetes' exec, attach and port-forward run over
//! between the API server, the kubelet and the container runtime's streaming server:
//! [`frame`] (frames and their codec), [`compression`] (header blocks' zlib streams with
//! the [`dictionary`]), [`session`] (streams, flow control, pings and GOAWAY over any
//! byte connection, as client or server) and [`upgrade`] (a client's HTTP/1.1 upgrade to
//! SPDY/3.1).

pub mod compression;
pub mod dictionary;
pub mod frame;
pub mod session;
pub mod upgrade;

pub use frame::Frame;
pub use session::{Session, Stream, StreamReader, StreamWriter};

/// What can go wrong on a SPDY connection.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("SPDY protocol error: {0}")]
    Protocol(String),
    #[error("SPDY header compression failed: {0}")]
    Compression(String),
    #[error("SPDY connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("the SPDY session is closed")]
    Closed,
    #[error("SPDY stream {stream_id} was reset (status {status})")]
    Reset { stream_id: u32, status: u32 },
}

/// A header block: names (lowercase on the wire, as SPDY/3 requires) and values, a name
/// with several values sent once with the values NUL-separated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    pub fn new() -> Headers {
        Headers::default()
    }

    /// Adds a value (a name may repeat).
    pub fn insert(&mut self, name: &str, value: impl Into<String>) {
        self.0.push((name.to_ascii_lowercase(), value.into()));
    }

    /// The first value of `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The uncompressed block: a count, then each name and its values, length-prefixed.
    pub fn encode(&self) -> Vec<u8> {
        let mut names: Vec<(&str, Vec<&str>)> = Vec::new();
        for (name, value) in &self.0 {
            match names.iter_mut().find(|(n, _)| n == name) {
                Some((_, values)) => values.push(value),
                None => names.push((name, vec![value])),
            }
        }
        let mut out = Vec::new();
        out.extend_from_slice(&(names.len() as u32).to_be_bytes());
        for (name, values) in names {
            let value = values.join("\0");
            out.extend_from_slice(&(name.len() as u32).to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(value.len() as u32).to_be_bytes());
            out.extend_from_slice(value.as_bytes());
        }
        out
    }

    pub fn decode(mut block: &[u8]) -> Result<Headers, Error> {
        fn take<'a>(block: &mut &'a [u8], n: usize) -> Result<&'a [u8], Error> {
            if block.len() < n {
                return Err(Error::Protocol("truncated header block".into()));
            }
            let (head, rest) = block.split_at(n);
            *block = rest;
            Ok(head)
        }
        fn length(block: &mut &[u8]) -> Result<usize, Error> {
            let bytes = take(block, 4)?;
            Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize)
        }
        let count = length(&mut block)?;
        let mut headers = Headers::default();
        for _ in 0..count {
            let n = length(&mut block)?;
            let name = String::from_utf8_lossy(take(&mut block, n)?).into_owned();
            let n = length(&mut block)?;
            let value = String::from_utf8_lossy(take(&mut block, n)?).into_owned();
            for value in value.split('\0') {
                headers.0.push((name.clone(), value.to_string()));
            }
        }
        Ok(headers)
    }
}

impl<const N: usize> From<[(&str, &str); N]> for Headers {
    fn from(pairs: [(&str, &str); N]) -> Headers {
        let mut headers = Headers::new();
        for (name, value) in pairs {
            headers.insert(name, value);
        }
        headers
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn repeated_names_travel_nul_separated() {
        let mut headers = Headers::from([("StreamType", "stdout")]);
        headers.insert("x", "1");
        headers.insert("x", "2");
        let block = headers.encode();
        assert_eq!(&block[..4], &[0, 0, 0, 2]);
        assert!(block.windows(3).any(|w| w == b"1\x002"));
        let decoded = Headers::decode(&block).unwrap();
        assert_eq!(decoded.get("streamtype"), Some("stdout"));
        assert_eq!(decoded, headers);
    }

    #[test]
    fn a_short_block_is_an_error() {
        assert!(Headers::decode(&[0, 0, 0, 1, 0, 0, 0, 9, b'a']).is_err());
    }
}
