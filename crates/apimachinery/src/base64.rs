//! Go's `[]byte` in JSON (`Secret.data`, `ConfigMap.binaryData`, certificate and CA data)
//! and in PEM: standard base64 as Go's `base64.StdEncoding`, on the `base64` crate.
//!
//! Decoding as Go does: padding required, `\r` and `\n` ignored anywhere, bits below the
//! last whole byte not checked (Go's decoder is not strict), and errors worded as Go's
//! (`illegal base64 data at input byte N`, N counted in the text as given).

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// `base64.StdEncoding`.
const STD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Encodes bytes, with padding.
pub fn encode(bytes: &[u8]) -> String {
    STD.encode(bytes)
}

/// Decodes standard base64 as Go's `StdEncoding.DecodeString`.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    // Go skips line breaks; remember where each kept byte stood for the error message.
    let mut kept = Vec::with_capacity(text.len());
    let mut positions = Vec::with_capacity(text.len());
    for (i, b) in text.bytes().enumerate() {
        if b != b'\r' && b != b'\n' {
            kept.push(b);
            positions.push(i);
        }
    }
    STD.decode(&kept).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(offset, _)
            | base64::DecodeError::InvalidLastSymbol(offset, _) => offset,
            // An incomplete last group: Go reports where that group starts.
            base64::DecodeError::InvalidLength(len) => len - len % 4,
            // Missing or misplaced padding: where the last (incomplete) group starts.
            base64::DecodeError::InvalidPadding => match kept.len() % 4 {
                0 => kept.len().saturating_sub(4),
                rest => kept.len() - rest,
            },
        };
        let at = positions.get(at).copied().unwrap_or(text.len());
        format!("illegal base64 data at input byte {at}")
    })
}

/// Decodes the base64 body of a PEM block, which may also hold spaces and tabs (Go's
/// `pem.Decode` removes them before decoding).
pub fn decode_pem_body(text: &str) -> Result<Vec<u8>, String> {
    let body: String = text.chars().filter(|c| *c != ' ' && *c != '\t').collect();
    decode(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded).as_deref(), Ok(plain.as_bytes()));
        }
        let data: Vec<u8> = (0..=255).collect();
        for len in 0..data.len() {
            assert_eq!(decode(&encode(&data[..len])).as_deref(), Ok(&data[..len]));
        }
    }

    #[test]
    fn decodes_as_go_std_encoding() {
        // Line breaks are skipped anywhere.
        assert_eq!(decode("Zm9v\nYmFy").as_deref(), Ok(&b"foobar"[..]));
        assert_eq!(decode("Zm\r\n8=").as_deref(), Ok(&b"fo"[..]));
        // Go's decoder is not strict: nonzero bits after the last byte are dropped.
        assert_eq!(decode("Zh==").as_deref(), Ok(&b"f"[..]));
        // Padding is required (the protobuf codec's copy accepted "Zg"; Go does not).
        for bad in [
            "Zg", "abc", "ab!d", "=abc", "ab=c", "Zg=", "Zg===", "Z=g=", "Zm9=Zm9v",
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
        assert_eq!(
            decode("ab!d").err().as_deref(),
            Some("illegal base64 data at input byte 2")
        );
        assert_eq!(
            decode("Zm9v\nab!d").err().as_deref(),
            Some("illegal base64 data at input byte 7")
        );
        assert_eq!(
            decode("Zm9vab").err().as_deref(),
            Some("illegal base64 data at input byte 4")
        );
    }

    #[test]
    fn pem_bodies_may_hold_spaces_and_tabs() {
        assert_eq!(
            decode_pem_body("Zm9v YmFy\n\tZm8=").as_deref(),
            Ok(&b"foobarfo"[..])
        );
    }
}
