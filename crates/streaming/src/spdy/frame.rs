//! SPDY/3.1 frames (draft 3.1, section 2.2): their in-memory form, and the codec that reads
//! and writes them, header blocks compressed with the session's zlib streams.

use super::compression::{HeaderCompressor, HeaderDecompressor};
use super::{Error, Headers};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

pub const VERSION: u16 = 3;

pub const SYN_STREAM: u16 = 1;
pub const SYN_REPLY: u16 = 2;
pub const RST_STREAM: u16 = 3;
pub const SETTINGS: u16 = 4;
pub const PING: u16 = 6;
pub const GOAWAY: u16 = 7;
pub const HEADERS: u16 = 8;
pub const WINDOW_UPDATE: u16 = 9;

pub const FLAG_FIN: u8 = 0x01;
pub const FLAG_UNIDIRECTIONAL: u8 = 0x02;
pub const FLAG_SETTINGS_CLEAR: u8 = 0x01;

/// RST_STREAM status codes.
pub mod rst {
    pub const PROTOCOL_ERROR: u32 = 1;
    pub const INVALID_STREAM: u32 = 2;
    pub const REFUSED_STREAM: u32 = 3;
    pub const CANCEL: u32 = 5;
    pub const INTERNAL_ERROR: u32 = 6;
    pub const FLOW_CONTROL_ERROR: u32 = 7;
}

/// SETTINGS ids.
pub const SETTINGS_INITIAL_WINDOW_SIZE: u32 = 7;

/// The largest payload a frame's 24-bit length can state.
pub const MAX_FRAME_LENGTH: usize = (1 << 24) - 1;
/// The largest control frame we accept: header blocks are small; a bound for a hostile peer.
const MAX_CONTROL_LENGTH: usize = 1 << 20;

const STREAM_ID_MASK: u32 = 0x7fff_ffff;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    SynStream {
        stream_id: u32,
        associated_to: u32,
        priority: u8,
        flags: u8,
        headers: Headers,
    },
    SynReply {
        stream_id: u32,
        flags: u8,
        headers: Headers,
    },
    RstStream {
        stream_id: u32,
        status: u32,
    },
    Settings {
        flags: u8,
        /// (flags, id, value)
        entries: Vec<(u8, u32, u32)>,
    },
    Ping {
        id: u32,
    },
    GoAway {
        last_good_stream_id: u32,
        status: u32,
    },
    Headers {
        stream_id: u32,
        flags: u8,
        headers: Headers,
    },
    WindowUpdate {
        stream_id: u32,
        delta: u32,
    },
    Data {
        stream_id: u32,
        flags: u8,
        data: Bytes,
    },
    /// A control frame of a type SPDY/3.1 does not define (or NOOP/CREDENTIAL): ignored.
    Unknown {
        kind: u16,
    },
}

impl Frame {
    /// Appends the frame's bytes to `out`, its header block compressed by `compressor`.
    pub fn encode(
        &self,
        compressor: &mut HeaderCompressor,
        out: &mut BytesMut,
    ) -> Result<(), Error> {
        let mut body = Vec::new();
        let (kind, flags) = match self {
            Frame::Data {
                stream_id,
                flags,
                data,
            } => {
                if data.len() > MAX_FRAME_LENGTH {
                    return Err(Error::Protocol("data frame too large".into()));
                }
                out.put_u32(stream_id & STREAM_ID_MASK);
                out.put_u32((u32::from(*flags) << 24) | data.len() as u32);
                out.put_slice(data);
                return Ok(());
            }
            Frame::SynStream {
                stream_id,
                associated_to,
                priority,
                flags,
                headers,
            } => {
                body.put_u32(stream_id & STREAM_ID_MASK);
                body.put_u32(associated_to & STREAM_ID_MASK);
                body.put_u8((priority & 0x07) << 5);
                body.put_u8(0);
                compressor.compress(&headers.encode(), &mut body)?;
                (SYN_STREAM, *flags)
            }
            Frame::SynReply {
                stream_id,
                flags,
                headers,
            }
            | Frame::Headers {
                stream_id,
                flags,
                headers,
            } => {
                body.put_u32(stream_id & STREAM_ID_MASK);
                compressor.compress(&headers.encode(), &mut body)?;
                let kind = match self {
                    Frame::SynReply { .. } => SYN_REPLY,
                    _ => HEADERS,
                };
                (kind, *flags)
            }
            Frame::RstStream { stream_id, status } => {
                body.put_u32(stream_id & STREAM_ID_MASK);
                body.put_u32(*status);
                (RST_STREAM, 0)
            }
            Frame::Settings { flags, entries } => {
                body.put_u32(entries.len() as u32);
                for (flags, id, value) in entries {
                    body.put_u32((u32::from(*flags) << 24) | (id & 0x00ff_ffff));
                    body.put_u32(*value);
                }
                (SETTINGS, *flags)
            }
            Frame::Ping { id } => {
                body.put_u32(*id);
                (PING, 0)
            }
            Frame::GoAway {
                last_good_stream_id,
                status,
            } => {
                body.put_u32(last_good_stream_id & STREAM_ID_MASK);
                body.put_u32(*status);
                (GOAWAY, 0)
            }
            Frame::WindowUpdate { stream_id, delta } => {
                body.put_u32(stream_id & STREAM_ID_MASK);
                body.put_u32(delta & STREAM_ID_MASK);
                (WINDOW_UPDATE, 0)
            }
            Frame::Unknown { kind } => (*kind, 0),
        };
        if body.len() > MAX_FRAME_LENGTH {
            return Err(Error::Protocol("control frame too large".into()));
        }
        out.put_u16(0x8000 | VERSION);
        out.put_u16(kind);
        out.put_u32((u32::from(flags) << 24) | body.len() as u32);
        out.put_slice(&body);
        Ok(())
    }
}

/// Reads frames from one direction of a connection, inflating header blocks.
pub struct FrameReader<R> {
    io: R,
    decompressor: HeaderDecompressor,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(io: R) -> FrameReader<R> {
        FrameReader {
            io,
            decompressor: HeaderDecompressor::new(),
        }
    }

    /// The next frame, or `None` at a clean end of the connection between frames.
    pub async fn read(&mut self) -> Result<Option<Frame>, Error> {
        let mut head = [0u8; 8];
        match self.io.read_exact(&mut head[..1]).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        self.io.read_exact(&mut head[1..]).await?;
        let mut head = &head[..];
        let first = head.get_u32();
        let flags_length = head.get_u32();
        let flags = (flags_length >> 24) as u8;
        let length = (flags_length & 0x00ff_ffff) as usize;
        let control = first & 0x8000_0000 != 0;
        if control && length > MAX_CONTROL_LENGTH {
            return Err(Error::Protocol(format!("control frame of {length} bytes")));
        }
        let mut payload = BytesMut::zeroed(length);
        self.io.read_exact(&mut payload).await?;
        let mut payload = payload.freeze();
        if !control {
            return Ok(Some(Frame::Data {
                stream_id: first & STREAM_ID_MASK,
                flags,
                data: payload,
            }));
        }
        let version = ((first >> 16) & 0x7fff) as u16;
        if version != VERSION {
            return Err(Error::Protocol(format!("SPDY version {version}")));
        }
        let kind = (first & 0xffff) as u16;
        let need = |n: usize| {
            if length < n {
                Err(Error::Protocol(format!(
                    "control frame type {kind} of {length} bytes"
                )))
            } else {
                Ok(())
            }
        };
        let frame = match kind {
            SYN_STREAM => {
                need(10)?;
                let stream_id = payload.get_u32() & STREAM_ID_MASK;
                let associated_to = payload.get_u32() & STREAM_ID_MASK;
                let priority = payload.get_u8() >> 5;
                payload.advance(1);
                let headers = self.headers(&payload)?;
                Frame::SynStream {
                    stream_id,
                    associated_to,
                    priority,
                    flags,
                    headers,
                }
            }
            SYN_REPLY | HEADERS => {
                need(4)?;
                let stream_id = payload.get_u32() & STREAM_ID_MASK;
                let headers = self.headers(&payload)?;
                if kind == SYN_REPLY {
                    Frame::SynReply {
                        stream_id,
                        flags,
                        headers,
                    }
                } else {
                    Frame::Headers {
                        stream_id,
                        flags,
                        headers,
                    }
                }
            }
            RST_STREAM => {
                need(8)?;
                Frame::RstStream {
                    stream_id: payload.get_u32() & STREAM_ID_MASK,
                    status: payload.get_u32(),
                }
            }
            SETTINGS => {
                need(4)?;
                let count = payload.get_u32() as usize;
                if payload.remaining() != count.saturating_mul(8) {
                    return Err(Error::Protocol("SETTINGS frame of the wrong length".into()));
                }
                let entries = (0..count)
                    .map(|_| {
                        let flags_id = payload.get_u32();
                        (
                            (flags_id >> 24) as u8,
                            flags_id & 0x00ff_ffff,
                            payload.get_u32(),
                        )
                    })
                    .collect();
                Frame::Settings { flags, entries }
            }
            PING => {
                need(4)?;
                Frame::Ping {
                    id: payload.get_u32(),
                }
            }
            GOAWAY => {
                need(4)?;
                let last_good_stream_id = payload.get_u32() & STREAM_ID_MASK;
                // SPDY/3 GOAWAY carries a status; SPDY/2's did not.
                let status = if payload.remaining() >= 4 {
                    payload.get_u32()
                } else {
                    0
                };
                Frame::GoAway {
                    last_good_stream_id,
                    status,
                }
            }
            WINDOW_UPDATE => {
                need(8)?;
                Frame::WindowUpdate {
                    stream_id: payload.get_u32() & STREAM_ID_MASK,
                    delta: payload.get_u32() & STREAM_ID_MASK,
                }
            }
            kind => Frame::Unknown { kind },
        };
        Ok(Some(frame))
    }

    fn headers(&mut self, block: &[u8]) -> Result<Headers, Error> {
        if block.is_empty() {
            return Ok(Headers::default());
        }
        Headers::decode(&self.decompressor.decompress(block)?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    async fn round_trip(frames: Vec<Frame>) -> Vec<Frame> {
        let mut compressor = HeaderCompressor::new().unwrap();
        let mut bytes = BytesMut::new();
        for frame in &frames {
            frame.encode(&mut compressor, &mut bytes).unwrap();
        }
        let mut reader = FrameReader::new(&bytes[..]);
        let mut read = Vec::new();
        while let Some(frame) = reader.read().await.unwrap() {
            read.push(frame);
        }
        read
    }

    #[tokio::test]
    async fn every_frame_type_round_trips() {
        let headers = Headers::from([("streamtype", "stdout"), ("port", "8080")]);
        let frames = vec![
            Frame::SynStream {
                stream_id: 1,
                associated_to: 0,
                priority: 3,
                flags: FLAG_FIN,
                headers: headers.clone(),
            },
            Frame::SynReply {
                stream_id: 1,
                flags: 0,
                headers: Headers::default(),
            },
            Frame::Headers {
                stream_id: 1,
                flags: FLAG_FIN,
                headers,
            },
            Frame::RstStream {
                stream_id: 3,
                status: rst::CANCEL,
            },
            Frame::Settings {
                flags: 0,
                entries: vec![(0, SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20)],
            },
            Frame::Ping { id: 7 },
            Frame::GoAway {
                last_good_stream_id: 5,
                status: 0,
            },
            Frame::WindowUpdate {
                stream_id: 1,
                delta: 65536,
            },
            Frame::Data {
                stream_id: 1,
                flags: FLAG_FIN,
                data: Bytes::from_static(b"hello"),
            },
            Frame::Data {
                stream_id: 1,
                flags: 0,
                data: Bytes::new(),
            },
        ];
        assert_eq!(round_trip(frames.clone()).await, frames);
    }

    #[tokio::test]
    async fn a_truncated_frame_is_an_error() {
        let mut reader = FrameReader::new(&[0x80, 0x03, 0x00, 0x06, 0, 0, 0, 4, 0, 0][..]);
        assert!(reader.read().await.is_err());
    }

    #[tokio::test]
    async fn another_version_is_refused() {
        let mut reader = FrameReader::new(&[0x80, 0x02, 0x00, 0x06, 0, 0, 0, 4, 0, 0, 0, 1][..]);
        assert!(matches!(reader.read().await, Err(Error::Protocol(_))));
    }
}
