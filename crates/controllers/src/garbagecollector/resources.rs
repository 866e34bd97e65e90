//! Which resources the garbage collector watches: everything discovery lists that
//! supports `list`, `watch` and `delete` (events excepted, as in Kubernetes), each in its
//! group's preferred version, re-discovered periodically so CustomResourceDefinitions
//! are picked up and dropped.

use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope, verbs};
use std::collections::HashMap;

/// One watched resource.
pub struct Watched {
    pub resource: ApiResource,
    pub namespaced: bool,
    /// Still served (a removed CRD's entry stays, inactive, so indexes stay stable).
    pub active: bool,
    /// Its monitor has listed everything once.
    pub synced: bool,
    pub monitor: Option<tokio::task::AbortHandle>,
}

/// The resource table: entries never move, so nodes refer to them by index.
#[derive(Default)]
pub struct Table {
    pub entries: Vec<Watched>,
    /// (apiVersion, kind) → entry, for owner lookups (every served version maps to the
    /// group's preferred one).
    by_kind: HashMap<(String, String), usize>,
    /// (group, resource) → entry.
    by_resource: HashMap<(String, String), usize>,
}

/// The resources Kubernetes' garbage collector ignores.
fn ignored(resource: &ApiResource) -> bool {
    resource.plural == "events" && (resource.group.is_empty() || resource.group == "events.k8s.io")
}

/// What discovery found: (resource, namespaced) of each collectable resource, plus every
/// (apiVersion, kind) served, mapped to the same (group, plural).
pub struct Found {
    pub resources: Vec<(ApiResource, bool)>,
    pub kinds: Vec<((String, String), (String, String))>,
}

/// Runs discovery.
pub async fn discover(client: &kube::Client) -> anyhow::Result<Found> {
    use anyhow::Context as _;
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .context("discovering API resources")?;
    let mut found = Found {
        resources: vec![],
        kinds: vec![],
    };
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if !collectable(&resource, &caps) {
                continue;
            }
            for version in group.versions() {
                let api_version = if group.name().is_empty() {
                    version.to_string()
                } else {
                    format!("{}/{version}", group.name())
                };
                found.kinds.push((
                    (api_version, resource.kind.clone()),
                    (resource.group.clone(), resource.plural.clone()),
                ));
            }
            let namespaced = matches!(caps.scope, Scope::Namespaced);
            found.resources.push((resource, namespaced));
        }
    }
    Ok(found)
}

fn collectable(resource: &ApiResource, caps: &ApiCapabilities) -> bool {
    !ignored(resource)
        && caps.supports_operation(verbs::LIST)
        && caps.supports_operation(verbs::WATCH)
        && caps.supports_operation(verbs::DELETE)
}

impl Table {
    /// Merges what discovery found; returns the indexes of new entries (to start
    /// monitors for) and of entries no longer served (to stop).
    pub fn merge(&mut self, found: Found) -> (Vec<usize>, Vec<usize>) {
        let mut started = vec![];
        let mut seen = vec![false; self.entries.len()];
        for (resource, namespaced) in found.resources {
            let key = (resource.group.clone(), resource.plural.clone());
            match self.by_resource.get(&key) {
                Some(&index)
                    if self.entries[index].active
                        && self.entries[index].resource.version == resource.version =>
                {
                    seen[index] = true;
                }
                Some(&index) => {
                    // Back again, or served in another preferred version: watch anew.
                    let entry = &mut self.entries[index];
                    if let Some(monitor) = entry.monitor.take() {
                        monitor.abort();
                    }
                    *entry = Watched {
                        resource,
                        namespaced,
                        active: true,
                        synced: false,
                        monitor: None,
                    };
                    if index < seen.len() {
                        seen[index] = true;
                    }
                    started.push(index);
                }
                None => {
                    self.entries.push(Watched {
                        resource,
                        namespaced,
                        active: true,
                        synced: false,
                        monitor: None,
                    });
                    let index = self.entries.len() - 1;
                    self.by_resource.insert(key, index);
                    started.push(index);
                }
            }
        }
        let mut stopped = vec![];
        for (index, seen) in seen.into_iter().enumerate() {
            if !seen && self.entries[index].active {
                let entry = &mut self.entries[index];
                entry.active = false;
                entry.synced = true;
                if let Some(monitor) = entry.monitor.take() {
                    monitor.abort();
                }
                stopped.push(index);
            }
        }
        for (kind, resource) in found.kinds {
            if let Some(&index) = self.by_resource.get(&resource) {
                self.by_kind.insert(kind, index);
            }
        }
        (started, stopped)
    }

    /// The entry for owners of `api_version`/`kind`.
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<&Watched> {
        self.by_kind
            .get(&(api_version.to_string(), kind.to_string()))
            .and_then(|&i| self.entries.get(i))
            .filter(|e| e.active)
    }

    /// Whether every active monitor has listed once.
    pub fn synced(&self) -> bool {
        self.entries.iter().all(|e| !e.active || e.synced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version,
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    #[test]
    fn merging_starts_new_resources_and_stops_gone_ones() {
        let mut table = Table::default();
        let (started, stopped) = table.merge(Found {
            resources: vec![
                (resource("", "v1", "ConfigMap", "configmaps"), true),
                (resource("example.com", "v1", "Widget", "widgets"), true),
            ],
            kinds: vec![
                (
                    ("v1".into(), "ConfigMap".into()),
                    ("".into(), "configmaps".into()),
                ),
                (
                    ("example.com/v1beta1".into(), "Widget".into()),
                    ("example.com".into(), "widgets".into()),
                ),
            ],
        });
        assert_eq!((started, stopped), (vec![0, 1], vec![]));
        assert!(table.for_kind("example.com/v1beta1", "Widget").is_some());
        let (started, stopped) = table.merge(Found {
            resources: vec![(resource("", "v1", "ConfigMap", "configmaps"), true)],
            kinds: vec![],
        });
        assert_eq!((started, stopped), (vec![], vec![1]));
        assert!(table.for_kind("example.com/v1beta1", "Widget").is_none());
        assert!(table.for_kind("v1", "ConfigMap").is_some());
    }

    #[test]
    fn events_are_ignored() {
        assert!(ignored(&resource("", "v1", "Event", "events")));
        assert!(ignored(&resource("events.k8s.io", "v1", "Event", "events")));
        assert!(!ignored(&resource("", "v1", "Pod", "pods")));
    }
}
