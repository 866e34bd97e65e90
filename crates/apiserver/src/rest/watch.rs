//! `watch`: a chunked stream of `{"type": ..., "object": ...}` events from the watch cache,
//! as JSON lines or, for protobuf clients, length-prefixed `WatchEvent` frames
//! (`application/vnd.kubernetes.protobuf;stream=watch`).
//!
//! A watch starts from the current state (synthetic ADDED events, for `resourceVersion` ""
//! or "0" and for `sendInitialEvents=true`) or resumes after a `resourceVersion` from the
//! resource's event window (an ERROR event with a 410 Status when that is too old). It
//! ends at `timeoutSeconds`, when the client goes away, or when it falls too far behind.

use super::{Call, present, read};
use crate::cache::object::{CachedObject, Filter};
use crate::cache::{CacheEvent, EventType, Subscription, WatchError};
use crate::negotiation::{Format, Output};
use crate::response::{self, Response};
use bytes::Bytes;
use kyb_api::{Resource, Status};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// Bookmarks are sent this often to watchers that asked for them.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(30);

pub async fn watch(call: &Call<'_>) -> Result<Response, Status> {
    let mut filter = read::filter(call)?;
    if let Some(name) = &call.name {
        // The deprecated watch of one object by path.
        filter
            .fields
            .requirements
            .push(kyb_api::fields::Requirement {
                field: "metadata.name".into(),
                equals: true,
                value: name.clone(),
            });
    }
    let prefix = call.def.list_prefix(filter.namespace.as_deref());
    let resource_version = call.query.get("resourceVersion").filter(|v| !v.is_empty());
    super::options::validate_list(&call.query, true)?;
    let initial_events = call.query.flag("sendInitialEvents");
    let bookmarks = call.query.flag("allowWatchBookmarks");
    let timeout = match call.query.number("timeoutSeconds")? {
        Some(seconds) if seconds > 0 => Duration::from_secs(seconds.unsigned_abs()),
        // A negative timeout ends the watch at once, as Go's timer does.
        Some(seconds) if seconds < 0 => Duration::ZERO,
        // Kubernetes spreads unbounded watches over 30 to 60 minutes.
        _ => Duration::from_secs(1800 + fastrand::u64(..1800)),
    };

    let (tx, response) = response::stream_as(call.format.watch_media_type());
    let cache = call.engine.cache.clone();
    let resource = call.cache.clone();
    let subscription = match (resource_version, initial_events) {
        (None, _) | (Some("0"), _) => {
            if resource_version.is_none() {
                // Consistent: start from a state that includes every acknowledged write.
                call.engine.fresh().await;
            }
            resource.subscribe_with_state(&prefix, &filter, cache.revision())
        }
        (Some(rv), true) => {
            read::wait_for(call, read::parse_revision(rv)?).await?;
            resource.subscribe_with_state(&prefix, &filter, cache.revision())
        }
        (Some(rv), false) => {
            let since = read::parse_revision(rv)?;
            read::wait_for(call, since).await?;
            match resource.subscribe_since(since, cache.revision()) {
                Ok(subscription) => subscription,
                Err(WatchError::TooOld { requested, oldest }) => {
                    let status = Status::expired(format!(
                        "too old resource version: {requested} ({oldest})"
                    ));
                    if let Some(frame) = frame(call.format, "ERROR", &status.to_json()) {
                        let _ = tx.try_send(frame);
                    }
                    return Ok(response);
                }
            }
        }
    };
    let stream = Stream {
        def: call.def.clone(),
        storage: call.storage().clone(),
        output: call.output,
        format: call.format,
        filter,
        tx,
        first_table: true,
    };
    tokio::spawn(stream.run(subscription, cache, initial_events, bookmarks, timeout));
    Ok(response)
}

struct Stream {
    def: Arc<Resource>,
    storage: Arc<Resource>,
    output: Output,
    format: Format,
    filter: Filter,
    tx: mpsc::Sender<Bytes>,
    first_table: bool,
}

impl Stream {
    async fn run(
        mut self,
        mut subscription: Subscription,
        cache: Arc<crate::cache::WatchCache>,
        initial_events_end: bool,
        bookmarks: bool,
        timeout: Duration,
    ) {
        if timeout.is_zero() {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        for event in std::mem::take(&mut subscription.initial) {
            if !self.send_event(&event).await {
                return;
            }
        }
        let mut last = subscription.revision;
        if initial_events_end && !self.send_bookmark(last, true).await {
            return;
        }
        let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
        ticker.tick().await;
        loop {
            tokio::select! {
                () = &mut deadline => return,
                () = self.tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    let revision = cache.revision();
                    if revision > last {
                        last = revision;
                        if !self.send_bookmark(revision, false).await {
                            return;
                        }
                    }
                }
                event = subscription.events.recv() => match event {
                    Ok(event) => {
                        last = last.max(event.revision);
                        if !self.send_event(&event).await {
                            return;
                        }
                    }
                    // Too slow (or the cache was reset): end; the client resumes from its
                    // last resourceVersion.
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    }

    /// Sends an event if the watcher's filter lets it through; false when the client is gone.
    async fn send_event(&mut self, event: &CacheEvent) -> bool {
        let matches = |o: &CachedObject| self.filter.matches(&self.storage, o);
        let now = matches(&event.object);
        let before = event.prev.as_deref().is_some_and(matches);
        let mut last_state = None;
        let kind = match event.kind {
            EventType::Added if now => "ADDED",
            EventType::Deleted if now => "DELETED",
            EventType::Modified => match (now, before) {
                (true, true) => "MODIFIED",
                (true, false) => "ADDED",
                (false, true) => match event
                    .prev
                    .as_deref()
                    .map(|p| p.at_revision(&self.storage, event.revision))
                {
                    // Left the filter: a deletion of what the watcher last saw.
                    Some(Ok(last)) => {
                        last_state = Some(last);
                        "DELETED"
                    }
                    _ => return true,
                },
                (false, false) => return true,
            },
            _ => return true,
        };
        let object = last_state.as_ref().unwrap_or(&event.object);
        let Some(frame) = self.encode(kind, object) else {
            return true;
        };
        self.tx.send(frame).await.is_ok()
    }

    fn encode(&mut self, kind: &str, object: &CachedObject) -> Option<Bytes> {
        let same_version = self.def.same_version(&self.storage);
        if self.output == Output::Json && same_version {
            match self.format {
                Format::Json => {
                    let mut frame = Vec::with_capacity(object.json.len() + 32);
                    frame.extend_from_slice(b"{\"type\":\"");
                    frame.extend_from_slice(kind.as_bytes());
                    frame.extend_from_slice(b"\",\"object\":");
                    frame.extend_from_slice(&object.json);
                    frame.extend_from_slice(b"}\n");
                    return Some(frame.into());
                }
                Format::Protobuf => {
                    // The object's encoding, made once for every protobuf watcher and list.
                    let raw = object.protobuf().ok()?;
                    let enveloped =
                        kyb_protobuf::envelope(&self.def.api_version(), &self.def.kind, &raw);
                    return kyb_protobuf::watch_frame(kind, &enveloped)
                        .ok()
                        .map(Into::into);
                }
                Format::Yaml => {}
            }
        }
        let mut value = object.value().ok()?;
        if !same_version {
            value = self
                .storage
                .strategy
                .convert(value, &self.storage, &self.def)
                .ok()?;
        }
        let value = match self.output {
            Output::Json | Output::Discovery(_) => value,
            Output::Table(version) => {
                let revision = value.pointer("/metadata/resourceVersion").cloned();
                let mut table =
                    present::table_for(&self.def, version, std::iter::once(value), revision, None);
                if !self.first_table {
                    table["columnDefinitions"] = Value::Null;
                }
                self.first_table = false;
                table
            }
            Output::PartialObjectMetadata(version) | Output::PartialObjectMetadataList(version) => {
                present::partial(&value, version)
            }
        };
        frame(self.format, kind, &value)
    }

    async fn send_bookmark(&self, revision: u64, initial_events_end: bool) -> bool {
        let (api_version, kind) = match self.output {
            Output::PartialObjectMetadata(v) | Output::PartialObjectMetadataList(v) => (
                format!("meta.k8s.io/{v}"),
                "PartialObjectMetadata".to_string(),
            ),
            _ => (self.def.api_version(), self.def.kind.to_string()),
        };
        let mut metadata =
            json!({"resourceVersion": revision.to_string(), "creationTimestamp": null});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
        match frame(self.format, "BOOKMARK", &object) {
            Some(frame) => self.tx.send(frame).await.is_ok(),
            None => true,
        }
    }
}

/// One event in the stream's format: a JSON line, or a length-prefixed protobuf
/// `WatchEvent` (a JSON line for an object without protobuf form, such as a Table).
fn frame(format: Format, kind: &str, object: &Value) -> Option<Bytes> {
    if format == Format::Protobuf {
        match kyb_protobuf::encode_watch_event(kind, object) {
            Ok(frame) => return Some(frame.into()),
            Err(e) => tracing::warn!(error = %e, "a watch event without protobuf form"),
        }
    }
    let mut frame = serde_json::to_vec(&json!({"type": kind, "object": object})).ok()?;
    frame.push(b'\n');
    Some(frame.into())
}
