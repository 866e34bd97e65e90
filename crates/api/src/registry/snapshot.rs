//! The live registry: the entries the server serves right now, swapped whole on each change.
//!
//! Readers take a [`Snapshot`] (a lock held only to clone an `Arc`): one consistent view of
//! every entry, however long they keep it, never a lock across an `await`. Writers build
//! the next snapshot from the current one and publish it with a new generation, which
//! followers (the watch cache, discovery, OpenAPI) learn through [`Registry::subscribe`].

use super::Resource;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

/// One consistent view of the registry.
#[derive(Debug, Default)]
pub struct Snapshot {
    generation: u64,
    /// Groups in discovery order, each group's entries together, its preferred version
    /// first.
    resources: Vec<Arc<Resource>>,
}

impl Snapshot {
    /// Counts changes: each add or remove makes the next generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every entry, in discovery order.
    pub fn resources(&self) -> &[Arc<Resource>] {
        &self.resources
    }

    /// The resource served at `group/version/plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.resources
            .iter()
            .find(|r| r.plural == plural && r.version == version && r.group == group)
    }

    /// The resource of a kind in a group-version.
    pub fn find_kind(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<Resource>> {
        self.resources
            .iter()
            .find(|r| r.kind == kind && r.version == version && r.group == group)
    }

    /// A resource in its storage version, whatever versions it is served in: what
    /// server-side lookups (admission, authentication) read.
    pub fn find_stored(&self, group: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.resources
            .iter()
            .find(|r| r.plural == plural && r.group == group && r.version == r.storage_version)
    }

    /// Every version of `group`/`plural`, preferred first.
    pub fn versions<'a>(
        &'a self,
        group: &'a str,
        plural: &'a str,
    ) -> impl Iterator<Item = &'a Arc<Resource>> + 'a {
        self.resources
            .iter()
            .filter(move |r| r.plural == plural && r.group == group)
    }

    /// The entry that names the objects under a storage prefix: the first of the versions
    /// sharing it (what the watch cache decodes stored objects as).
    pub fn stored_at(&self, prefix: &str) -> Option<&Arc<Resource>> {
        self.resources.iter().find(|r| r.storage_prefix == prefix)
    }

    /// The groups, in discovery order, each with its versions (preferred first).
    pub fn groups(&self) -> Vec<(&str, Vec<&str>)> {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in &self.resources {
            match groups.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => {
                    if !versions.contains(&r.version.as_ref()) {
                        versions.push(&r.version);
                    }
                }
                None => groups.push((&r.group, vec![&r.version])),
            }
        }
        groups
    }

    /// The resources of one group-version.
    pub fn resources_of<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<Resource>> + 'a {
        self.resources
            .iter()
            .filter(move |r| r.group == group && r.version == version)
    }

    /// Why `resource` cannot join this snapshot, if it cannot.
    fn conflict(&self, resource: &Resource) -> Option<RegistryError> {
        let name = || format!("{}/{}", resource.api_version(), resource.plural);
        if resource.group.contains('/')
            || resource.version.is_empty()
            || resource.kind.is_empty()
            || resource.plural.is_empty()
            || resource.plural.contains('/')
        {
            return Some(RegistryError::Invalid(name()));
        }
        if !resource.is_virtual() && !resource.storage_prefix.starts_with("/registry/") {
            return Some(RegistryError::Invalid(format!(
                "{}: storage prefix {:?} is not under /registry/",
                name(),
                resource.storage_prefix
            )));
        }
        if self
            .find(&resource.group, &resource.version, &resource.plural)
            .is_some()
        {
            return Some(RegistryError::Exists(name()));
        }
        if self
            .find_kind(&resource.group, &resource.version, &resource.kind)
            .is_some()
        {
            return Some(RegistryError::Exists(format!(
                "{}, Kind={}",
                resource.api_version(),
                resource.kind
            )));
        }
        let shares = |other: &&Arc<Resource>| {
            !resource.is_virtual() && other.storage_prefix == resource.storage_prefix
        };
        if let Some(other) = self.resources.iter().find(shares)
            && (other.namespaced != resource.namespaced
                || other.storage_version != resource.storage_version
                || other.kind != resource.kind)
        {
            return Some(RegistryError::Storage(format!(
                "{} and {}/{} share {} but not their scope, kind or storage version",
                name(),
                other.api_version(),
                other.plural,
                resource.storage_prefix
            )));
        }
        None
    }

    /// The next snapshot, with `resource` after the other entries of its group-version (or
    /// of its group, or last).
    fn with(&self, resource: Arc<Resource>) -> Snapshot {
        let mut resources = self.resources.clone();
        let after = |same: &dyn Fn(&Resource) -> bool| resources.iter().rposition(|r| same(r));
        let position = after(&|r| r.group == resource.group && r.version == resource.version)
            .or_else(|| after(&|r| r.group == resource.group))
            .map_or(resources.len(), |i| i + 1);
        resources.insert(position, resource);
        Snapshot {
            generation: self.generation + 1,
            resources,
        }
    }
}

/// Why the registry refused a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// The resource (or its kind) is already served in that group-version.
    Exists(String),
    /// The resource would share storage with a different resource.
    Storage(String),
    /// A name is empty or malformed.
    Invalid(String),
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exists(what) => write!(f, "{what} is already registered"),
            Self::Storage(what) => write!(f, "conflicting storage: {what}"),
            Self::Invalid(what) => write!(f, "invalid resource: {what}"),
        }
    }
}

impl std::error::Error for RegistryError {}

/// The resources served, shared by every part of the server that depends on them.
pub struct Registry {
    current: RwLock<Arc<Snapshot>>,
    changes: watch::Sender<u64>,
}

impl Registry {
    /// A registry of `resources`, in that order (groups' preferred versions first).
    pub fn new(resources: impl IntoIterator<Item = Resource>) -> Result<Registry, RegistryError> {
        let mut snapshot = Snapshot::default();
        for resource in resources {
            if let Some(conflict) = snapshot.conflict(&resource) {
                return Err(conflict);
            }
            snapshot.resources.push(Arc::new(resource));
        }
        let (changes, _) = watch::channel(snapshot.generation);
        Ok(Registry {
            current: RwLock::new(Arc::new(snapshot)),
            changes,
        })
    }

    /// The current entries, consistent with each other, for as long as the caller keeps them.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves a new resource from now on; followers are told.
    pub fn add(&self, resource: Resource) -> Result<Arc<Resource>, RegistryError> {
        let resource = Arc::new(resource);
        self.change(|current| match current.conflict(&resource) {
            Some(conflict) => Err(conflict),
            None => Ok((current.with(resource.clone()), resource.clone())),
        })
    }

    /// Stops serving `group/version/plural` (its stored objects stay); followers are told.
    /// `None` if it was not served.
    pub fn remove(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.change(|current| -> Result<_, ()> {
            let removed = current.find(group, version, plural).cloned().ok_or(())?;
            let resources = current
                .resources
                .iter()
                .filter(|r| !Arc::ptr_eq(r, &removed))
                .cloned()
                .collect();
            let next = Snapshot {
                generation: current.generation + 1,
                resources,
            };
            Ok((next, removed))
        })
        .ok()
    }

    /// The generation of each change from now on: the receiver sees the latest, and
    /// [`Registry::snapshot`] gives the entries at (or after) it.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Publishes the snapshot `change` makes of the current one, under the write lock (so
    /// changes are applied and announced in order).
    fn change<T, E>(
        &self,
        change: impl FnOnce(&Snapshot) -> Result<(Snapshot, T), E>,
    ) -> Result<T, E> {
        let mut current = match self.current.write() {
            Ok(current) => current,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (next, result) = change(&current)?;
        let generation = next.generation;
        *current = Arc::new(next);
        self.changes.send_replace(generation);
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{BUILTIN, Normalized, ResourceDef, Strategy};
    use serde_json::Value;

    struct Plain;

    impl Strategy for Plain {
        fn normalize(&self, object: Value) -> Result<Normalized, String> {
            Ok(Normalized {
                object,
                unknown: Vec::new(),
            })
        }
        fn table_columns(&self) -> Vec<Value> {
            Vec::new()
        }
        fn table_cells(&self, _: &Value, _: std::time::SystemTime) -> Vec<Value> {
            Vec::new()
        }
    }

    fn registry() -> Result<Registry, RegistryError> {
        Registry::new(
            BUILTIN
                .iter()
                .map(|def| Resource::new(def.clone(), Arc::new(Plain))),
        )
    }

    fn widgets(version: &'static str) -> Resource {
        Resource::new(
            ResourceDef::custom("example.com", version, "Widget", "widgets", true),
            Arc::new(Plain),
        )
    }

    #[test]
    fn the_builtin_table_is_a_valid_registry() -> Result<(), RegistryError> {
        let snapshot = registry()?.snapshot();
        assert_eq!(snapshot.resources().len(), BUILTIN.len());
        let groups = snapshot.groups();
        assert_eq!(groups.first().map(|(g, _)| *g), Some(""));
        let autoscaling = groups.iter().find(|(g, _)| *g == "autoscaling");
        assert_eq!(autoscaling.map(|(_, v)| v.clone()), Some(vec!["v2", "v1"]));
        let stored = snapshot.find_stored("autoscaling", "horizontalpodautoscalers");
        assert_eq!(stored.map(|r| r.version.as_ref()), Some("v2"));
        let events = snapshot.stored_at("/registry/events");
        assert_eq!(events.map(|r| r.group.as_ref()), Some(""));
        Ok(())
    }

    #[test]
    fn snapshots_stay_as_they_were_taken() -> Result<(), RegistryError> {
        let registry = registry()?;
        let before = registry.snapshot();
        let added = registry.add(widgets("v1"))?;
        let after = registry.snapshot();
        assert!(before.find("example.com", "v1", "widgets").is_none());
        assert_eq!(before.generation() + 1, after.generation());
        let found = after.find("example.com", "v1", "widgets");
        assert!(found.is_some_and(|r| Arc::ptr_eq(r, &added)));
        assert_eq!(
            after.groups().last(),
            Some(&("example.com", vec!["v1"])),
            "a new group comes last"
        );
        // Entries already served are shared, not copied.
        let pods = |s: &Snapshot| s.find("", "v1", "pods").cloned();
        assert!(matches!((pods(&before), pods(&after)), (Some(a), Some(b)) if Arc::ptr_eq(&a, &b)));

        let removed = registry.remove("example.com", "v1", "widgets");
        assert!(removed.is_some_and(|r| Arc::ptr_eq(&r, &added)));
        assert!(after.find("example.com", "v1", "widgets").is_some());
        let last = registry.snapshot();
        assert!(last.find("example.com", "v1", "widgets").is_none());
        assert_eq!(last.generation(), after.generation() + 1);
        assert!(registry.remove("example.com", "v1", "widgets").is_none());
        assert_eq!(registry.snapshot().generation(), last.generation());
        Ok(())
    }

    #[test]
    fn versions_of_a_group_stay_together() -> Result<(), RegistryError> {
        let registry = registry()?;
        registry.add(widgets("v1"))?;
        registry.add(Resource::new(
            ResourceDef::custom("other.example.com", "v1", "Gadget", "gadgets", false),
            Arc::new(Plain),
        ))?;
        let v2 = Resource::new(
            ResourceDef {
                storage_prefix: "/registry/example.com/widgets".into(),
                storage_version: "v1".into(),
                ..ResourceDef::custom("example.com", "v2", "Widget", "widgets", true)
            },
            Arc::new(Plain),
        );
        registry.add(v2)?;
        let snapshot = registry.snapshot();
        let groups = snapshot.groups();
        let tail: Vec<_> = groups.iter().rev().take(2).collect();
        assert_eq!(
            tail,
            vec![
                &("other.example.com", vec!["v1"]),
                &("example.com", vec!["v1", "v2"])
            ]
        );
        let versions: Vec<&str> = snapshot
            .versions("example.com", "widgets")
            .map(|r| r.version.as_ref())
            .collect();
        assert_eq!(versions, vec!["v1", "v2"]);
        assert_eq!(
            snapshot
                .find_stored("example.com", "widgets")
                .map(|r| r.version.as_ref()),
            Some("v1")
        );
        Ok(())
    }

    #[test]
    fn conflicting_entries_are_refused() -> Result<(), RegistryError> {
        let registry = registry()?;
        let generation = registry.snapshot().generation();
        let pods = Resource::new(BUILTIN[1].clone(), Arc::new(Plain));
        assert!(matches!(registry.add(pods), Err(RegistryError::Exists(_))));
        let stolen = Resource::new(
            ResourceDef {
                storage_prefix: "/registry/pods".into(),
                ..ResourceDef::custom("example.com", "v1", "Widget", "widgets", false)
            },
            Arc::new(Plain),
        );
        assert!(matches!(
            registry.add(stolen),
            Err(RegistryError::Storage(_))
        ));
        let outside = Resource::new(
            ResourceDef {
                storage_prefix: "/elsewhere/widgets".into(),
                ..ResourceDef::custom("example.com", "v1", "Widget", "widgets", true)
            },
            Arc::new(Plain),
        );
        assert!(matches!(
            registry.add(outside),
            Err(RegistryError::Invalid(_))
        ));
        assert_eq!(registry.snapshot().generation(), generation);
        Ok(())
    }

    #[tokio::test]
    async fn followers_are_told_of_each_change() -> anyhow::Result<()> {
        let registry = registry()?;
        let mut changes = registry.subscribe();
        let start = *changes.borrow_and_update();
        registry.add(widgets("v1"))?;
        tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed()).await??;
        assert_eq!(*changes.borrow_and_update(), start + 1);
        assert_eq!(registry.snapshot().generation(), start + 1);
        registry.remove("example.com", "v1", "widgets");
        changes.changed().await?;
        assert_eq!(*changes.borrow_and_update(), start + 2);
        Ok(())
    }
}
