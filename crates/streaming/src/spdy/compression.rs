//! Header block compression: each direction of a session is one zlib stream for the
//! session's life, primed with SPDY/3's dictionary, each block ended with a sync flush so
//! the peer can decode it at once.

use super::Error;
use super::dictionary::DICTIONARY;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The largest header block we inflate: far above any real one, a bound for a hostile peer.
const MAX_HEADER_BLOCK: usize = 1 << 20;

/// The sending side's zlib stream.
pub struct HeaderCompressor {
    zlib: Compress,
}

impl HeaderCompressor {
    pub fn new() -> Result<HeaderCompressor, Error> {
        let mut zlib = Compress::new(Compression::best(), true);
        zlib.set_dictionary(&DICTIONARY)
            .map_err(|e| Error::Compression(e.to_string()))?;
        Ok(HeaderCompressor { zlib })
    }

    /// Compresses one header block, appending it to `out`.
    pub fn compress(&mut self, block: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let start = self.zlib.total_in();
        loop {
            if out.capacity() - out.len() < 64 {
                out.reserve(block.len() / 2 + 1024);
            }
            let consumed = (self.zlib.total_in() - start) as usize;
            self.zlib
                .compress_vec(&block[consumed..], out, FlushCompress::Sync)
                .map_err(|e| Error::Compression(e.to_string()))?;
            // The flush is complete once all input is taken and output room is left over.
            if (self.zlib.total_in() - start) as usize == block.len() && out.len() < out.capacity()
            {
                return Ok(());
            }
        }
    }
}

/// The receiving side's zlib stream.
pub struct HeaderDecompressor {
    zlib: Decompress,
}

impl Default for HeaderDecompressor {
    fn default() -> HeaderDecompressor {
        HeaderDecompressor::new()
    }
}

impl HeaderDecompressor {
    pub fn new() -> HeaderDecompressor {
        HeaderDecompressor {
            zlib: Decompress::new(true),
        }
    }

    /// Inflates one compressed header block.
    pub fn decompress(&mut self, block: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(block.len() * 4 + 64);
        let start = self.zlib.total_in();
        loop {
            let consumed = (self.zlib.total_in() - start) as usize;
            if consumed == block.len() && out.len() < out.capacity() {
                return Ok(out);
            }
            if out.len() == out.capacity() {
                if out.len() >= MAX_HEADER_BLOCK {
                    return Err(Error::Protocol("header block too large".into()));
                }
                out.reserve(out.len());
            }
            let before = (self.zlib.total_in(), out.len());
            match self
                .zlib
                .decompress_vec(&block[consumed..], &mut out, FlushDecompress::Sync)
            {
                Ok(Status::StreamEnd) => {
                    return Err(Error::Protocol("header zlib stream ended".into()));
                }
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.zlib
                        .set_dictionary(&DICTIONARY)
                        .map_err(|e| Error::Compression(e.to_string()))?;
                    continue;
                }
                Err(e) => return Err(Error::Compression(e.to_string())),
            }
            if (self.zlib.total_in(), out.len()) == before && out.len() < out.capacity() {
                // No progress with room to spare: the block is truncated.
                return Err(Error::Protocol("truncated header block".into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn round_trip_over_one_stream() {
        let mut compressor = HeaderCompressor::new().unwrap();
        let mut decompressor = HeaderDecompressor::new();
        for block in [
            b"\x00\x00\x00\x01\x00\x00\x00\nstreamtype\x00\x00\x00\x05error".to_vec(),
            vec![7u8; 100_000],
            b"second block".to_vec(),
        ] {
            let mut out = Vec::new();
            compressor.compress(&block, &mut out).unwrap();
            assert_eq!(decompressor.decompress(&out).unwrap(), block);
        }
    }

    #[test]
    fn decodes_what_zlib_wrote() {
        // Python's zlib.compressobj(9, DEFLATED, 15, 9, DEFAULT_STRATEGY, dictionary) with a
        // sync flush, an independent encoder of the same block.
        let block = b"\x00\x00\x00\x01\x00\x00\x00\nstreamtype\x00\x00\x00\x05error";
        let compressed = [
            0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x02, 0xa6, 0x23, 0x46, 0x70, 0x3a, 0x2b, 0x29,
            0x4a, 0x4d, 0xcc, 0x85, 0x16, 0x25, 0xac, 0xa9, 0xa0, 0x80, 0x06, 0x00, 0x00, 0x00,
            0xff, 0xff,
        ];
        let mut decompressor = HeaderDecompressor::new();
        assert_eq!(decompressor.decompress(&compressed).unwrap(), block);
    }

    #[test]
    fn garbage_is_an_error() {
        let mut decompressor = HeaderDecompressor::new();
        assert!(decompressor.decompress(b"not zlib at all").is_err());
    }
}
