//! Monitors: one metadata-only watch per collectable resource, feeding the graph. A relist
//! (the watch's `Init` … `InitDone`) drops the objects it no longer holds, as deletions.

use super::collect::Collector;
use super::graph::{Node, Owner, Uid};
use super::resources;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use std::collections::HashSet;
use std::sync::Arc;

/// Runs discovery and starts/stops monitors to match.
pub async fn rediscover(collector: &Arc<Collector>) -> anyhow::Result<()> {
    let found = resources::discover(collector.reader()).await?;
    let (started, stopped) = collector.table_mut(|table| table.merge(found));
    for index in stopped {
        tracing::info!(index, "garbage collector: resource no longer served");
        collector.forget_resource(index);
    }
    for index in started {
        let Some(resource) = collector.table(|t| t.entries.get(index).map(|e| e.resource.clone()))
        else {
            continue;
        };
        tracing::debug!(resource = %resource.plural, group = %resource.group, "garbage collector: watching");
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(collector.reader().clone(), &resource);
        let task = tokio::spawn(watch(collector.clone(), index, api));
        collector.table_mut(|t| {
            if let Some(entry) = t.entries.get_mut(index) {
                entry.monitor = Some(task.abort_handle());
            }
        });
    }
    Ok(())
}

async fn watch(
    collector: Arc<Collector>,
    index: usize,
    api: Api<PartialObjectMeta<DynamicObject>>,
) {
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut relisted: Option<HashSet<Uid>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(object)) => {
                collector.observe(index, &object);
            }
            Ok(Event::InitApply(object)) => {
                if let Some(uid) = collector.observe(index, &object)
                    && let Some(seen) = &mut relisted
                {
                    seen.insert(uid);
                }
            }
            Ok(Event::Delete(object)) => {
                if let Some(uid) = object.metadata.uid.as_deref() {
                    collector.forget(uid);
                }
            }
            Ok(Event::Init) => relisted = Some(HashSet::new()),
            Ok(Event::InitDone) => {
                if let Some(seen) = relisted.take() {
                    collector.forget_missing(index, &seen);
                }
                collector.table_mut(|t| {
                    if let Some(entry) = t.entries.get_mut(index) {
                        entry.synced = true;
                    }
                });
            }
            Err(error) => {
                tracing::debug!(index, %error, "garbage collector watch failed; retrying");
            }
        }
    }
}

/// The graph node of an object's metadata (`None` without a UID or name).
pub fn node_of(
    index: usize,
    object: &PartialObjectMeta<DynamicObject>,
    intern: &mut dyn FnMut(&str) -> Arc<str>,
) -> Option<(Uid, Node)> {
    let meta = &object.metadata;
    let uid: Uid = Arc::from(meta.uid.as_deref()?);
    let name = meta.name.as_deref()?;
    let finalizers = meta.finalizers.as_deref().unwrap_or_default();
    let owners = meta
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|r| Owner {
            uid: Arc::from(r.uid.as_str()),
            api_version: intern(&r.api_version),
            kind: intern(&r.kind),
            name: r.name.as_str().into(),
            block_owner_deletion: r.block_owner_deletion == Some(true),
        })
        .collect();
    Some((
        uid,
        Node {
            resource: index,
            namespace: meta.namespace.as_deref().map(Into::into),
            name: name.into(),
            owners,
            deleting: meta.deletion_timestamp.is_some(),
            orphan: finalizers.iter().any(|f| f == "orphan"),
            foreground: finalizers.iter().any(|f| f == "foregroundDeletion"),
        },
    ))
}
