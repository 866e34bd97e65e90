//! SPDY/3's preset zlib dictionary for header blocks (draft 3, section 2.6.10.1): the
//! common header names, each with a 32-bit length prefix, then a run of common values.
//! Both directions of a session compress against it; a peer's zlib stream names it by
//! its Adler-32 (0xe3c6a7c2).

use std::sync::LazyLock;

/// The length-prefixed part: names (and a few values) as SPDY/3 lists them.
const PREFIXED: [&str; 64] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
];

/// `origin` is the last prefixed entry; the rest is one unprefixed run of values.
const LAST_PREFIXED: &str = "origin";
const VALUES: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417",
    "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently",
    "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error",
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct ",
    "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,",
    "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,",
    "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

/// The dictionary's bytes (1423).
pub static DICTIONARY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut bytes = Vec::with_capacity(1423);
    for entry in PREFIXED.iter().chain([&LAST_PREFIXED]) {
        bytes.extend_from_slice(&(entry.len() as u32).to_be_bytes());
        bytes.extend_from_slice(entry.as_bytes());
    }
    bytes.extend_from_slice(VALUES.as_bytes());
    bytes
});

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Adler-32 as zlib computes it, to compare with the dictionary id peers expect.
    fn adler32(bytes: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for byte in bytes {
            a = (a + u32::from(*byte)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }

    #[test]
    fn dictionary_is_spdy3s() {
        assert_eq!(DICTIONARY.len(), 1423);
        assert_eq!(adler32(&DICTIONARY), 0xe3c6_a7c2);
        assert!(DICTIONARY.ends_with(b"enq=0."));
    }
}
