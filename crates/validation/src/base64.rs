//! Standard base64 (with padding), the JSON form of Kubernetes' `[]byte` fields such as
//! `Secret.data` and `ConfigMap.binaryData`.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes bytes.
pub(crate) fn encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b0 = chunk.first().copied().unwrap_or(0);
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let n = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let sym = |shift: u32| char::from(ALPHABET[((n >> shift) & 63) as usize]);
        out.push(sym(18));
        out.push(sym(12));
        out.push(if chunk.len() > 1 { sym(6) } else { '=' });
        out.push(if chunk.len() > 2 { sym(0) } else { '=' });
    }
    out
}

fn value_of(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes padded base64, as Go's `StdEncoding` (newlines are ignored). The error names the
/// offending input byte like Go's `illegal base64 data at input byte N`.
pub(crate) fn decode(input: &str) -> Result<Vec<u8>, String> {
    let bytes: Vec<(usize, u8)> = input
        .bytes()
        .enumerate()
        .filter(|(_, c)| *c != b'\n' && *c != b'\r')
        .collect();
    let illegal = |i: usize| format!("illegal base64 data at input byte {i}");
    if !bytes.len().is_multiple_of(4) {
        let at = bytes.len() - bytes.len() % 4;
        return Err(illegal(bytes.get(at).map_or(input.len(), |(i, _)| *i)));
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (g, chunk) in bytes.chunks(4).enumerate() {
        let last = g + 1 == groups;
        let mut n: u32 = 0;
        let mut pad = 0;
        for (j, (pos, c)) in chunk.iter().enumerate() {
            if *c == b'=' {
                if !last || j < 2 {
                    return Err(illegal(*pos));
                }
                pad += 1;
                n <<= 6;
                continue;
            }
            if pad > 0 {
                return Err(illegal(*pos));
            }
            let v = value_of(*c).ok_or_else(|| illegal(*pos))?;
            n = (n << 6) | v;
        }
        out.push((n >> 16) as u8);
        if pad < 2 {
            out.push((n >> 8) as u8);
        }
        if pad < 1 {
            out.push(n as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let e = encode(s.as_bytes());
            assert_eq!(decode(&e).ok(), Some(s.as_bytes().to_vec()), "{s}");
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode("abc").is_err());
        assert!(decode("ab!d").is_err());
        assert!(decode("=abc").is_err());
        assert!(decode("ab=c").is_err());
    }
}
