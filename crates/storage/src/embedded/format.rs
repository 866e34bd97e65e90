//! The on-disk layout of the embedded store (one redb file).
//!
//! - `log`: revision → [`LogEntry`]. Every write is one entry: the multi-version history
//!   that historical reads and watches replay. Compaction removes the entries superseded
//!   before the compacted revision.
//! - `keys`: key → revision of the key's latest log entry (which may be a deletion until
//!   compaction removes it).
//! - `meta`: the format marker and the compacted revision.
//!
//! The current revision is the last key of `log`: compaction never removes the entry of
//! the latest revision.

use crate::error::{Error, Result};
use crate::types::{EventKind, KeyValue, Revision};
use bytes::Bytes;
use redb::TableDefinition;

pub(super) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
pub(super) const KEYS: TableDefinition<&[u8], u64> = TableDefinition::new("keys");
pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

pub(super) const META_FORMAT: &str = "format";
pub(super) const META_COMPACTED: &str = "compacted";

/// Written once when the store is created; a file without it is not ours.
pub(super) const FORMAT_MARKER: &[u8] = b"kybernetes-store/1";

/// One write, as kept in the `log` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LogEntry {
    pub kind: EventKind,
    pub key: Vec<u8>,
    /// For a put: the revision that created this incarnation of the key; 0 for a delete.
    pub create_revision: Revision,
    /// For a put: the key's version; 0 for a delete.
    pub version: u64,
    /// The revision of the key's previous log entry (a put or a delete), 0 if none.
    pub prev_revision: Revision,
    /// Empty for a delete.
    pub value: Bytes,
}

// Encoding: kind (1 byte) | create_revision (8) | version (8) | prev_revision (8)
//           | key length (4) | key | value — integers little-endian.
const HEADER: usize = 1 + 8 + 8 + 8 + 4;
const KIND_PUT: u8 = 1;
const KIND_DELETE: u8 = 2;

impl LogEntry {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.key.len() + self.value.len());
        out.push(match self.kind {
            EventKind::Put => KIND_PUT,
            EventKind::Delete => KIND_DELETE,
        });
        out.extend_from_slice(&self.create_revision.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.prev_revision.to_le_bytes());
        // Keys are bounded by the request size, far below 4 GiB.
        out.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.key);
        out.extend_from_slice(&self.value);
        out
    }

    pub fn decode(revision: Revision, bytes: &[u8]) -> Result<Self> {
        let header = EntryHeader::decode(revision, bytes)?;
        Ok(Self {
            kind: header.kind,
            key: header.key.to_vec(),
            create_revision: header.create_revision,
            version: header.version,
            prev_revision: header.prev_revision,
            value: Bytes::copy_from_slice(&bytes[HEADER + header.key.len()..]),
        })
    }

    /// The key-value this entry describes, written at `revision`.
    pub fn into_key_value(self, revision: Revision) -> KeyValue {
        KeyValue {
            key: self.key,
            value: self.value,
            create_revision: self.create_revision,
            mod_revision: revision,
            version: self.version,
        }
    }
}

/// The fixed part of an entry, borrowed, for scans that skip most values.
pub(super) struct EntryHeader<'a> {
    pub kind: EventKind,
    pub create_revision: Revision,
    pub version: u64,
    pub prev_revision: Revision,
    pub key: &'a [u8],
}

impl<'a> EntryHeader<'a> {
    pub fn decode(revision: Revision, bytes: &'a [u8]) -> Result<Self> {
        let corrupt = || Error::Corrupt(format!("log entry at revision {revision} is malformed"));
        if bytes.len() < HEADER {
            return Err(corrupt());
        }
        let kind = match bytes[0] {
            KIND_PUT => EventKind::Put,
            KIND_DELETE => EventKind::Delete,
            _ => return Err(corrupt()),
        };
        let u64_at = |at: usize| {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(buf)
        };
        let mut len = [0u8; 4];
        len.copy_from_slice(&bytes[25..29]);
        let key_len = u32::from_le_bytes(len) as usize;
        let key = bytes.get(HEADER..HEADER + key_len).ok_or_else(corrupt)?;
        Ok(Self {
            kind,
            create_revision: u64_at(1),
            version: u64_at(9),
            prev_revision: u64_at(17),
            key,
        })
    }
}

pub(super) fn encode_revision(revision: Revision) -> [u8; 8] {
    revision.to_le_bytes()
}

pub(super) fn decode_revision(name: &str, bytes: &[u8]) -> Result<Revision> {
    let array: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Corrupt(format!("store metadata {name:?} is malformed")))?;
    Ok(u64::from_le_bytes(array))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let entry = LogEntry {
            kind: EventKind::Put,
            key: b"/registry/pods/default/web".to_vec(),
            create_revision: 3,
            version: 2,
            prev_revision: 3,
            value: Bytes::from_static(b"{\"kind\":\"Pod\"}"),
        };
        assert_eq!(LogEntry::decode(7, &entry.encode()).ok(), Some(entry));
    }

    #[test]
    fn malformed_entries_are_errors_not_panics() {
        for bytes in [&b""[..], &[9u8; 40][..], &[1u8; 29][..]] {
            assert!(matches!(LogEntry::decode(1, bytes), Err(Error::Corrupt(_))));
        }
    }
}
