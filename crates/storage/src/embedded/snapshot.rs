//! Reads from one consistent snapshot of the embedded store: latest or historical values
//! (by walking a key's chain of log entries back to the revision asked for), lists, and
//! the stretches of the log that watches replay.

use super::format::{EntryHeader, KEYS, LOG, LogEntry, META, META_COMPACTED};
use super::redb_error::Context;
use crate::error::{Error, Result};
use crate::keys::{prefix_end, range_start};
use crate::types::{Event, EventKind, KeyValue, ListRequest, ListResponse, Revision};
use bytes::Bytes;
use redb::{ReadOnlyTable, ReadableDatabase, ReadableTable};

/// The store's revision counters as recorded in a snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    /// The revision of the latest write.
    pub revision: Revision,
    /// Revisions below this one have been compacted.
    pub compacted: Revision,
}

impl Counters {
    /// The counters as committed in redb (durably or not).
    pub fn read(txn: &redb::ReadTransaction) -> Result<Self> {
        let meta = txn.open_table(META).context("opening the meta table")?;
        let compacted = match meta.get(META_COMPACTED).context("reading store metadata")? {
            Some(bytes) => super::format::decode_revision(META_COMPACTED, bytes.value())?,
            None => 0,
        };
        let log = txn.open_table(LOG).context("opening the log table")?;
        let revision = log
            .last()
            .context("reading the log")?
            .map_or(0, |(rev, _)| rev.value());
        Ok(Self {
            revision,
            compacted,
        })
    }

    /// Resolves the revision a read asks for (`None` or 0: the latest) and checks that the
    /// snapshot can serve it.
    pub fn readable(&self, requested: Option<Revision>) -> Result<Revision> {
        match requested {
            None | Some(0) => Ok(self.revision),
            Some(rev) if rev > self.revision => Err(Error::FutureRevision {
                requested: rev,
                current: self.revision,
            }),
            Some(rev) if rev < self.compacted => Err(Error::Compacted {
                requested: rev,
                compacted: self.compacted,
            }),
            Some(rev) => Ok(rev),
        }
    }
}

/// A read transaction with the store's tables open.
pub(super) struct Snapshot {
    log: ReadOnlyTable<u64, &'static [u8]>,
    keys: ReadOnlyTable<&'static [u8], u64>,
    pub counters: Counters,
}

impl Snapshot {
    /// A snapshot whose latest revision is `durable`: writes after it may already be in
    /// redb, but are not durable yet and stay invisible.
    pub fn open(db: &redb::Database, durable: Revision) -> Result<Self> {
        let txn = db.begin_read().context("starting a read")?;
        let meta = txn.open_table(META).context("opening the meta table")?;
        let compacted = match meta.get(META_COMPACTED).context("reading store metadata")? {
            Some(bytes) => super::format::decode_revision(META_COMPACTED, bytes.value())?,
            None => 0,
        };
        let counters = Counters {
            revision: durable,
            compacted,
        };
        Ok(Self {
            log: txn.open_table(LOG).context("opening the log table")?,
            keys: txn.open_table(KEYS).context("opening the keys table")?,
            counters,
        })
    }

    pub fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let at = self.counters.readable(revision)?;
        match self.keys.get(key).context("reading a key")? {
            Some(latest) => value_at(&self.log, latest.value(), at),
            None => Ok(None),
        }
    }

    pub fn list(&self, request: &ListRequest) -> Result<ListResponse> {
        let at = self.counters.readable(request.revision)?;
        let begin = range_start(&request.prefix, request.start.as_deref())?;
        let end = prefix_end(&request.prefix);
        let range = match &end {
            Some(end) => self.keys.range::<&[u8]>(begin..end.as_slice()),
            None => self.keys.range::<&[u8]>(begin..),
        }
        .context("listing keys")?;
        let mut kvs = Vec::new();
        let mut next = None;
        for item in range {
            let (_, latest) = item.context("listing keys")?;
            let Some(kv) = value_at(&self.log, latest.value(), at)? else {
                continue;
            };
            if request.limit > 0 && kvs.len() == request.limit {
                next = Some(kv.key);
                break;
            }
            kvs.push(kv);
        }
        Ok(ListResponse {
            kvs,
            revision: at,
            next,
        })
    }

    /// The events for keys under `prefix` in revisions `from..=to`, scanning at most
    /// `max_entries` log entries; also returns the last revision scanned.
    pub fn events(
        &self,
        prefix: &[u8],
        from: Revision,
        to: Revision,
        max_entries: usize,
    ) -> Result<(Vec<Event>, Revision)> {
        if from < self.counters.compacted {
            return Err(Error::Compacted {
                requested: from,
                compacted: self.counters.compacted,
            });
        }
        let mut events = Vec::new();
        let mut last = to;
        let mut scanned = 0;
        for item in self.log.range(from..=to).context("reading the log")? {
            let (rev, bytes) = item.context("reading the log")?;
            let rev = rev.value();
            scanned += 1;
            if scanned > max_entries {
                break;
            }
            last = rev;
            let bytes = bytes.value();
            if !EntryHeader::decode(rev, bytes)?.key.starts_with(prefix) {
                continue;
            }
            let entry = LogEntry::decode(rev, bytes)?;
            let prev = match entry.prev_revision {
                0 => None,
                prev => put_at(&self.log, prev)?,
            };
            events.push(event(entry, rev, prev));
        }
        Ok((events, last))
    }
}

/// The key whose latest log entry is at `latest`, as it was at revision `at`.
pub(super) fn value_at(
    log: &impl ReadableTable<u64, &'static [u8]>,
    latest: Revision,
    at: Revision,
) -> Result<Option<KeyValue>> {
    let mut rev = latest;
    loop {
        let Some(bytes) = log.get(rev).context("reading the log")? else {
            // Only a deletion (or what it superseded) is ever compacted away from under a
            // revision that can still be read: the key did not exist at `at`.
            return Ok(None);
        };
        let header = EntryHeader::decode(rev, bytes.value())?;
        if rev <= at {
            return match header.kind {
                EventKind::Delete => Ok(None),
                EventKind::Put => Ok(Some(
                    LogEntry::decode(rev, bytes.value())?.into_key_value(rev),
                )),
            };
        }
        if header.prev_revision == 0 {
            return Ok(None);
        }
        rev = header.prev_revision;
    }
}

/// The value written at `rev`, if that entry is a put still in the log.
pub(super) fn put_at(
    log: &impl ReadableTable<u64, &'static [u8]>,
    rev: Revision,
) -> Result<Option<KeyValue>> {
    let Some(bytes) = log.get(rev).context("reading the log")? else {
        return Ok(None);
    };
    let entry = LogEntry::decode(rev, bytes.value())?;
    Ok(match entry.kind {
        EventKind::Put => Some(entry.into_key_value(rev)),
        EventKind::Delete => None,
    })
}

/// The event a log entry written at `rev` reports.
pub(super) fn event(entry: LogEntry, rev: Revision, prev: Option<KeyValue>) -> Event {
    let kind = entry.kind;
    let kv = match kind {
        EventKind::Put => entry.into_key_value(rev),
        EventKind::Delete => KeyValue {
            key: entry.key,
            value: Bytes::new(),
            create_revision: 0,
            mod_revision: rev,
            version: 0,
        },
    };
    Event { kind, kv, prev }
}
