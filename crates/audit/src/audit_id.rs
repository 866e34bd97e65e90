//! Audit IDs: every request gets one, echoed in the `Audit-ID` response header and written
//! as the `auditID` of its events. A client may choose it by sending the header.

/// The request and response header that carries the audit ID.
pub const AUDIT_ID_HEADER: &str = "Audit-ID";

/// A new random (version 4) UUID, lowercase and hyphenated, as Kubernetes generates.
pub fn new_audit_id() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes: [u8; 16] = fastrand::u128(..).to_le_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut id = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    id
}

/// The audit ID of a request: the client's `Audit-ID` header as given (Kubernetes keeps
/// it untruncated), or a new UUID when the header is absent or empty.
pub fn audit_id_for(header: Option<&str>) -> String {
    match header {
        Some(id) if !id.is_empty() => id.to_string(),
        _ => new_audit_id(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_v4_shape() {
        let id = new_audit_id();
        assert_eq!(id.len(), 36);
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        assert!(
            id.bytes()
                .all(|b| b == b'-' || b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(new_audit_id(), id);
    }

    #[test]
    fn client_header_wins() {
        assert_eq!(audit_id_for(Some("my-id")), "my-id");
        assert_eq!(audit_id_for(Some("")).len(), 36);
        assert_eq!(audit_id_for(None).len(), 36);
    }
}
