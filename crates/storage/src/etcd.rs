//! The etcd backend: a real etcd v3 cluster over gRPC.
//!
//! Conditional writes are etcd transactions comparing `create_revision` or `mod_revision`,
//! with a read of the key on the failure branch so that a lost compare-and-swap returns the
//! current value in the same round trip. Revisions, history, watches and compaction are
//! etcd's own; keys and values are stored as given, so `etcdctl get --prefix /registry/`
//! reads them.

use crate::error::{Error, Result};
use crate::keys::{check_key, check_value, prefix_end, range_start};
use crate::store::{Store, WatchStream};
use crate::types::{
    DeleteResponse, Event, EventKind, GetResponse, KeyValue, ListRequest, ListResponse, Revision,
};
use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions,
    KvClient, Txn, TxnOp, TxnOpResponse, WatchClient, WatchOptions,
};
use std::time::Duration;

/// Responses as large as a full list of a big prefix must decode.
const MAX_MESSAGE: usize = 1 << 30;

/// A store on an etcd cluster.
pub struct EtcdStore {
    kv: KvClient,
    watch: WatchClient,
    endpoints: Vec<String>,
}

impl EtcdStore {
    /// Connects to the cluster at `endpoints` (`http://host:port`, several allowed) and
    /// checks that it answers.
    pub async fn connect(endpoints: &[String]) -> Result<Self> {
        if endpoints.is_empty() {
            return Err(Error::InvalidArgument("no etcd endpoints given".into()));
        }
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5));
        let context = || format!("connecting to etcd at {}", endpoints.join(","));
        let client = Client::connect(endpoints, Some(options))
            .await
            .map_err(|e| Error::backend(context(), e))?;
        let store = Self {
            kv: client
                .kv_client()
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
            watch: client.watch_client().max_decoding_message_size(MAX_MESSAGE),
            endpoints: endpoints.to_vec(),
        };
        let revision = store
            .current_revision()
            .await
            .map_err(|e| Error::backend(context(), e))?;
        tracing::info!(endpoints = %store.endpoints.join(","), revision, "etcd store connected");
        Ok(store)
    }

    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key's current value, read in a transaction's failure branch.
    fn current_from(response: &etcd_client::TxnResponse) -> Option<KeyValue> {
        response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(key_value),
            _ => None,
        })
    }

    async fn txn(&self, doing: &str, txn: Txn) -> Result<etcd_client::TxnResponse> {
        self.kv
            .clone()
            .txn(txn)
            .await
            .map_err(|e| map_error(doing, e))
    }
}

#[async_trait]
impl Store for EtcdStore {
    fn backend(&self) -> &'static str {
        "etcd"
    }

    async fn current_revision(&self) -> Result<Revision> {
        let options = GetOptions::new().with_count_only();
        let response = self
            .kv
            .clone()
            .get(&b"\0"[..], Some(options))
            .await
            .map_err(|e| map_error("reading the revision", e))?;
        Ok(header_revision(response.header()))
    }

    async fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse> {
        check_key(key)?;
        let mut options = GetOptions::new();
        if let Some(revision) = revision.filter(|&r| r > 0) {
            options = options.with_revision(to_etcd(revision)?);
        }
        let response = self
            .kv
            .clone()
            .get(key, Some(options))
            .await
            .map_err(|e| map_read_error("reading a key", revision, e))?;
        let read_at = header_revision(response.header());
        Ok(GetResponse {
            kv: response.kvs().first().map(key_value),
            revision: revision.filter(|&r| r > 0).unwrap_or(read_at),
        })
    }

    async fn list(&self, request: &ListRequest) -> Result<ListResponse> {
        let begin = range_start(&request.prefix, request.start.as_deref())?;
        // etcd reads a range [begin, end); "\0" as the end means "to the last key", and it
        // refuses an empty begin: "\0" is the smallest key there can be.
        let begin = if begin.is_empty() { &b"\0"[..] } else { begin };
        let end = prefix_end(&request.prefix).unwrap_or_else(|| vec![0]);
        let mut options = GetOptions::new().with_range(end);
        if request.limit > 0 {
            // One more than asked, to learn where the next page starts.
            options = options.with_limit(i64::try_from(request.limit + 1).unwrap_or(i64::MAX));
        }
        if let Some(revision) = request.revision.filter(|&r| r > 0) {
            options = options.with_revision(to_etcd(revision)?);
        }
        let response = self
            .kv
            .clone()
            .get(begin, Some(options))
            .await
            .map_err(|e| map_read_error("listing keys", request.revision, e))?;
        let revision = request
            .revision
            .filter(|&r| r > 0)
            .unwrap_or_else(|| header_revision(response.header()));
        let mut kvs: Vec<KeyValue> = response.kvs().iter().map(key_value).collect();
        let next = if request.limit > 0 && kvs.len() > request.limit {
            kvs.pop().map(|kv| kv.key)
        } else {
            None
        };
        Ok(ListResponse {
            kvs,
            revision,
            next,
        })
    }

    async fn create(&self, key: &[u8], value: Bytes) -> Result<Revision> {
        check_key(key)?;
        check_value(&value)?;
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value.to_vec(), None)])
            .or_else([TxnOp::get(key, None)]);
        let response = self.txn("creating a key", txn).await?;
        if response.succeeded() {
            return Ok(header_revision(response.header()));
        }
        match Self::current_from(&response) {
            Some(current) => Err(Error::AlreadyExists {
                current: Box::new(current),
            }),
            // Deleted again between the compare and the read: report it as a conflict the
            // caller retries.
            None => Err(Error::backend(
                "creating a key",
                "the key changed during the create",
            )),
        }
    }

    async fn update(&self, key: &[u8], value: Bytes, expected: Revision) -> Result<Revision> {
        check_key(key)?;
        check_value(&value)?;
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key,
                CompareOp::Equal,
                to_etcd(expected)?,
            )])
            .and_then([TxnOp::put(key, value.to_vec(), None)])
            .or_else([TxnOp::get(key, None)]);
        let response = self.txn("updating a key", txn).await?;
        if response.succeeded() {
            return Ok(header_revision(response.header()));
        }
        match Self::current_from(&response) {
            Some(current) => Err(Error::Conflict {
                expected,
                current: Box::new(current),
            }),
            None => Err(Error::NotFound { key: key.to_vec() }),
        }
    }

    async fn delete(&self, key: &[u8], expected: Option<Revision>) -> Result<DeleteResponse> {
        check_key(key)?;
        let delete = TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()));
        let compare = match expected {
            Some(expected) => Compare::mod_revision(key, CompareOp::Equal, to_etcd(expected)?),
            None => Compare::create_revision(key, CompareOp::Greater, 0),
        };
        let txn = Txn::new()
            .when([compare])
            .and_then([delete])
            .or_else([TxnOp::get(key, None)]);
        let response = self.txn("deleting a key", txn).await?;
        if response.succeeded() {
            let revision = header_revision(response.header());
            let prev = response.op_responses().into_iter().find_map(|op| match op {
                TxnOpResponse::Delete(delete) => delete.prev_kvs().first().map(key_value),
                _ => None,
            });
            return match prev {
                Some(prev) => Ok(DeleteResponse { revision, prev }),
                None => Err(Error::NotFound { key: key.to_vec() }),
            };
        }
        match (Self::current_from(&response), expected) {
            (Some(current), Some(expected)) => Err(Error::Conflict {
                expected,
                current: Box::new(current),
            }),
            _ => Err(Error::NotFound { key: key.to_vec() }),
        }
    }

    async fn watch(&self, prefix: &[u8], start: Revision) -> Result<WatchStream> {
        if start > 0 {
            // etcd reports a compacted start only inside the stream; ask up front so the
            // caller learns it from this call, as with the embedded store.
            let options = GetOptions::new()
                .with_count_only()
                .with_revision(to_etcd(start)?);
            match self.kv.clone().get(&b"\0"[..], Some(options)).await {
                Ok(_) => {}
                Err(error) => match map_read_error("starting a watch", Some(start), error) {
                    Error::FutureRevision { .. } => {}
                    other => return Err(other),
                },
            }
        }
        let mut options = WatchOptions::new().with_prev_key();
        options = match prefix_end(prefix) {
            Some(end) => options.with_range(end),
            None => options.with_range(vec![0]),
        };
        if start > 0 {
            options = options.with_start_revision(to_etcd(start)?);
        }
        let begin = if prefix.is_empty() {
            &b"\0"[..]
        } else {
            prefix
        };
        let mut stream = self
            .watch
            .clone()
            .watch(begin, Some(options))
            .await
            .map_err(|e| map_error("starting a watch", e))?;
        let (out, events) = WatchStream::channel();
        tokio::spawn(async move {
            // Keep the watch open as long as the consumer listens.
            loop {
                let message = tokio::select! {
                    message = stream.message() => message,
                    () = out.closed() => return,
                };
                let response = match message {
                    Ok(Some(response)) => response,
                    Ok(None) => {
                        let _ = out
                            .send(Err(Error::backend("watching", "etcd ended the watch")))
                            .await;
                        return;
                    }
                    Err(error) => {
                        let _ = out.send(Err(map_error("watching", error))).await;
                        return;
                    }
                };
                if response.compact_revision() > 0 {
                    let compacted = Revision::try_from(response.compact_revision()).unwrap_or(0);
                    let _ = out
                        .send(Err(Error::Compacted {
                            requested: start,
                            compacted,
                        }))
                        .await;
                    return;
                }
                if response.canceled() {
                    let reason = response.cancel_reason().to_string();
                    let _ = out.send(Err(Error::backend("watching", reason))).await;
                    return;
                }
                for event in response.events() {
                    let Some(kv) = event.kv() else { continue };
                    let kind = match event.event_type() {
                        etcd_client::EventType::Put => EventKind::Put,
                        etcd_client::EventType::Delete => EventKind::Delete,
                    };
                    let event = Event {
                        kind,
                        kv: key_value(kv),
                        prev: event.prev_kv().map(key_value),
                    };
                    if out.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(events)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let options = CompactionOptions::new().with_physical();
        match self
            .kv
            .clone()
            .compact(to_etcd(revision)?, Some(options))
            .await
        {
            Ok(_) => Ok(()),
            Err(error) => match map_read_error("compacting", Some(revision), error) {
                // Already compacted that far: nothing to do.
                Error::Compacted { .. } => Ok(()),
                other => Err(other),
            },
        }
    }
}

fn key_value(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: kv.key().to_vec(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: Revision::try_from(kv.create_revision()).unwrap_or(0),
        mod_revision: Revision::try_from(kv.mod_revision()).unwrap_or(0),
        version: u64::try_from(kv.version()).unwrap_or(0),
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    header
        .map(|h| Revision::try_from(h.revision()).unwrap_or(0))
        .unwrap_or(0)
}

fn to_etcd(revision: Revision) -> Result<i64> {
    i64::try_from(revision)
        .map_err(|_| Error::InvalidArgument(format!("revision {revision} is out of range")))
}

fn status_message(error: &etcd_client::Error) -> Option<&str> {
    match error {
        etcd_client::Error::GRpcStatus(status) => Some(status.message()),
        _ => None,
    }
}

/// Maps the etcd errors that have a meaning of their own.
fn map_error(doing: &str, error: etcd_client::Error) -> Error {
    match status_message(&error) {
        Some(message) if message.contains("request is too large") => Error::ValueTooLarge {
            size: 0,
            limit: crate::MAX_VALUE_SIZE,
        },
        _ => Error::backend(doing, error),
    }
}

/// [`map_error`], plus the revision errors of a read at `revision`.
fn map_read_error(doing: &str, revision: Option<Revision>, error: etcd_client::Error) -> Error {
    let requested = revision.unwrap_or(0);
    match status_message(&error) {
        Some(message) if message.contains("required revision has been compacted") => {
            Error::Compacted {
                requested,
                // etcd does not say how far; the caller must re-read from the latest.
                compacted: requested + 1,
            }
        }
        Some(message) if message.contains("required revision is a future revision") => {
            Error::FutureRevision {
                requested,
                current: 0,
            }
        }
        _ => map_error(doing, error),
    }
}
