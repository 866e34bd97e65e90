//! The write-ahead log: what makes a write durable before redb has it on disk.
//!
//! Each batch of writes is appended as one record and fdatasynced before any writer is
//! answered; redb commits the same batch without an fsync. A checkpoint (a durable redb
//! commit) makes the log redundant, and it is truncated. On open, the records after the
//! revision redb has durably are replayed.
//!
//! Record: magic (4) | payload length (4) | CRC-32 of the payload (4) | payload, where the
//! payload is a count (4) then, per write, revision (8) | entry length (4) | encoded
//! [`LogEntry`](super::format::LogEntry). Integers are little-endian.
//!
//! A batch is written with one `write`, so a crash can tear only the last record: a torn
//! tail is cut off, while a damaged record with intact records after it is corruption and
//! refused.

use crate::error::{Error, Result};
use crate::types::Revision;
use std::fs::{File, OpenOptions};
use std::io::{IoSlice, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: u32 = 0x5742_594b; // "KYBW"
const RECORD_HEADER: usize = 12;
/// Larger than any batch the writer builds (its byte budget plus overhead).
const MAX_RECORD: usize = 64 << 20;

pub(super) const WAL_FILE: &str = "kyb.wal";

/// Writes found in the log: revision and encoded entry.
pub(super) type Logged = Vec<(Revision, Vec<u8>)>;

/// Builds one record from the writes of a batch, in place: the header is filled in at the
/// end, so the payload is never copied.
pub(super) struct RecordBuilder {
    /// The record so far: room for the header and the count, then the writes.
    record: Vec<u8>,
    count: u32,
}

/// Bytes a write adds to a record besides its entry: revision and entry length.
const WRITE_OVERHEAD: usize = 12;

impl Default for RecordBuilder {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl RecordBuilder {
    /// A builder with room for entries of about `bytes` in all.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut record = Vec::with_capacity(RECORD_HEADER + 4 + bytes);
        record.resize(RECORD_HEADER + 4, 0);
        Self { record, count: 0 }
    }

    pub fn push(&mut self, revision: Revision, entry: &[u8]) {
        self.record.reserve(WRITE_OVERHEAD + entry.len());
        self.record.extend_from_slice(&revision.to_le_bytes());
        self.record
            .extend_from_slice(&(entry.len() as u32).to_le_bytes());
        self.record.extend_from_slice(entry);
        self.count += 1;
    }

    /// The encoded record; empty when nothing was pushed.
    pub fn finish(mut self) -> Vec<u8> {
        if self.count == 0 {
            return Vec::new();
        }
        let payload_len = self.record.len() - RECORD_HEADER;
        self.record[RECORD_HEADER..RECORD_HEADER + 4].copy_from_slice(&self.count.to_le_bytes());
        let crc = crc32(&self.record[RECORD_HEADER..]);
        self.record[..4].copy_from_slice(&MAGIC.to_le_bytes());
        self.record[4..8].copy_from_slice(&(payload_len as u32).to_le_bytes());
        self.record[8..12].copy_from_slice(&crc.to_le_bytes());
        self.record
    }
}

/// The open log file.
pub(super) struct Wal {
    file: File,
    path: PathBuf,
    /// Bytes appended since the last truncation.
    pub len: u64,
}

impl Wal {
    /// Opens (or creates) the log and returns the writes it holds, in order, after cutting
    /// off a torn last record.
    pub fn open(dir: &Path) -> Result<(Self, Logged)> {
        let path = dir.join(WAL_FILE);
        let io = |doing: &str| {
            let doing = format!("{doing} {}", path.display());
            move |e: std::io::Error| Error::backend(doing, e)
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io("opening"))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io("reading"))?;
        let (writes, valid) = parse(&bytes).map_err(|reason| {
            Error::Corrupt(format!(
                "{}: the write-ahead log is damaged ({reason}); the store cannot be recovered automatically",
                path.display()
            ))
        })?;
        if valid < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                bytes = bytes.len() - valid,
                "cutting off a torn record at the end of the write-ahead log"
            );
            file.set_len(valid as u64).map_err(io("truncating"))?;
            file.sync_all().map_err(io("syncing"))?;
        }
        Ok((
            Self {
                file,
                path,
                len: valid as u64,
            },
            writes,
        ))
    }

    /// Appends records (not yet durable), with as few system calls as it takes.
    pub fn append(&mut self, records: &[&[u8]]) -> Result<()> {
        let mut slices: Vec<IoSlice<'_>> = records.iter().map(|r| IoSlice::new(r)).collect();
        let mut slices = &mut slices[..];
        while !slices.is_empty() {
            let written = self
                .file
                .write_vectored(slices)
                .map_err(|e| Error::backend(format!("appending to {}", self.path.display()), e))?;
            if written == 0 {
                return Err(Error::backend(
                    format!("appending to {}", self.path.display()),
                    "the disk accepted no bytes",
                ));
            }
            self.len += written as u64;
            IoSlice::advance_slices(&mut slices, written);
        }
        Ok(())
    }

    /// Makes everything appended durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::backend(format!("syncing {}", self.path.display()), e))
    }

    /// Empties the log, once a checkpoint has made its contents redundant.
    pub fn truncate(&mut self) -> Result<()> {
        self.file
            .set_len(0)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| Error::backend(format!("truncating {}", self.path.display()), e))?;
        self.len = 0;
        Ok(())
    }
}

/// The writes in `bytes` and how many bytes hold complete records.
fn parse(bytes: &[u8]) -> std::result::Result<(Logged, usize), String> {
    let mut writes = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(payload) = record_at(bytes, at) else {
            // Damage: a torn tail if no intact record follows it, corruption otherwise.
            if let Some(later) = (at + 1..bytes.len()).find(|&p| record_at(bytes, p).is_some()) {
                return Err(format!(
                    "damaged record at offset {at} with an intact record at offset {later} after it"
                ));
            }
            break;
        };
        parse_payload(payload, &mut writes).map_err(|e| format!("{e} at offset {at}"))?;
        at += RECORD_HEADER + payload.len();
    }
    Ok((writes, at))
}

/// The payload of the intact record starting at `at`, if there is one.
fn record_at(bytes: &[u8], at: usize) -> Option<&[u8]> {
    let header = bytes.get(at..at + RECORD_HEADER)?;
    let word =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    let (magic, len, crc) = (word(0), word(4) as usize, word(8));
    if magic != MAGIC || !(4..=MAX_RECORD).contains(&len) {
        return None;
    }
    let payload = bytes.get(at + RECORD_HEADER..at + RECORD_HEADER + len)?;
    (crc32(payload) == crc).then_some(payload)
}

fn parse_payload(payload: &[u8], writes: &mut Logged) -> std::result::Result<(), String> {
    let malformed = || "malformed record".to_string();
    let count = u32::from_le_bytes(payload[..4].try_into().map_err(|_| malformed())?);
    let mut at = 4;
    for _ in 0..count {
        let fixed = payload.get(at..at + 12).ok_or_else(malformed)?;
        let revision = u64::from_le_bytes(fixed[..8].try_into().map_err(|_| malformed())?);
        let len = u32::from_le_bytes(fixed[8..].try_into().map_err(|_| malformed())?) as usize;
        let entry = payload.get(at + 12..at + 12 + len).ok_or_else(malformed)?;
        writes.push((revision, entry.to_vec()));
        at += 12 + len;
    }
    if at != payload.len() {
        return Err(malformed());
    }
    Ok(())
}

/// CRC-32 (IEEE 802.3, the standard polynomial 0xedb88320), computed by `crc32fast`
/// (hardware-accelerated where the CPU has it).
fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(writes: &[(Revision, &[u8])]) -> Vec<u8> {
        let mut builder = RecordBuilder::default();
        for (rev, entry) in writes {
            builder.push(*rev, entry);
        }
        builder.finish()
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn crc32_is_the_same_for_every_alignment_and_length() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let bytewise = |bytes: &[u8]| {
            let mut crc = !0u32;
            for &b in bytes {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        0xedb8_8320 ^ (crc >> 1)
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        };
        for start in 0..9 {
            for end in (start..data.len()).step_by(37) {
                assert_eq!(crc32(&data[start..end]), bytewise(&data[start..end]));
            }
        }
    }

    #[test]
    fn a_record_is_header_then_count_then_writes() {
        let built = record(&[(7, b"seven"), (8, b"")]);
        let mut payload = 2u32.to_le_bytes().to_vec();
        for (rev, entry) in [(7u64, &b"seven"[..]), (8, b"")] {
            payload.extend_from_slice(&rev.to_le_bytes());
            payload.extend_from_slice(&(entry.len() as u32).to_le_bytes());
            payload.extend_from_slice(entry);
        }
        let mut expected = MAGIC.to_le_bytes().to_vec();
        expected.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        expected.extend_from_slice(&crc32(&payload).to_le_bytes());
        expected.extend_from_slice(&payload);
        assert_eq!(built, expected);
        assert!(RecordBuilder::with_capacity(100).finish().is_empty());
    }

    #[test]
    fn records_round_trip() {
        let mut log = record(&[(1, b"one"), (2, b"two")]);
        log.extend(record(&[(3, b"three")]));
        let (writes, valid) = parse(&log).unwrap_or_default();
        assert_eq!(valid, log.len());
        let revisions: Vec<_> = writes.iter().map(|(r, _)| *r).collect();
        assert_eq!(revisions, vec![1, 2, 3]);
        assert_eq!(writes[2].1, b"three");
    }

    #[test]
    fn a_torn_last_record_is_cut_off() {
        let first = record(&[(1, b"one")]);
        let second = record(&[(2, b"two")]);
        for cut in 1..second.len() {
            let mut log = first.clone();
            log.extend_from_slice(&second[..cut]);
            let (writes, valid) = parse(&log).unwrap_or_default();
            assert_eq!((writes.len(), valid), (1, first.len()), "cut at {cut}");
        }
    }

    #[test]
    fn damage_before_intact_records_is_refused() {
        let mut log = record(&[(1, b"one")]);
        log.extend(record(&[(2, b"two")]));
        log[RECORD_HEADER + 6] ^= 0xff;
        assert!(parse(&log).is_err());
    }
}
