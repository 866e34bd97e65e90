//! The garbage collector's dependency graph: every object of every watched resource by
//! UID, with what it needs to decide garbage collection — its owners (from
//! `metadata.ownerReferences`), where it is, and whether it is being deleted and with
//! which propagation finalizer — plus the reverse edges (owner UID → dependent UIDs).
//!
//! Owners that are not (or not yet) observed have no node; their dependents are still
//! indexed under the owner's UID, which is how Kubernetes' "virtual" owner nodes behave.
//! The graph is pure data: the monitors feed it and say which UIDs need attention.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// An object's UID.
pub type Uid = Arc<str>;

/// One of an object's `ownerReferences`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub uid: Uid,
    pub api_version: Arc<str>,
    pub kind: Arc<str>,
    pub name: Box<str>,
    pub block_owner_deletion: bool,
}

/// What the graph keeps of one observed object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Index of the object's resource in the collector's resource table.
    pub resource: usize,
    pub namespace: Option<Box<str>>,
    pub name: Box<str>,
    pub owners: Vec<Owner>,
    /// Has a deletionTimestamp.
    pub deleting: bool,
    /// Has the `orphan` finalizer.
    pub orphan: bool,
    /// Has the `foregroundDeletion` finalizer.
    pub foreground: bool,
}

impl Node {
    /// Being deleted in the foreground: waiting for its blocking dependents.
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.foreground
    }

    /// Being deleted with its dependents to be orphaned.
    pub fn orphaning(&self) -> bool {
        self.deleting && self.orphan
    }
}

/// The graph.
#[derive(Default)]
pub struct Graph {
    nodes: HashMap<Uid, Node>,
    dependents: HashMap<Uid, HashSet<Uid>>,
    /// Interned apiVersion and kind strings (a few dozen distinct values).
    strings: HashSet<Arc<str>>,
}

/// The UIDs a change asks the collector to look at.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Attention(pub Vec<Uid>);

impl Graph {
    pub fn get(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The UIDs of the objects that name `owner` among their owners.
    pub fn dependents(&self, owner: &str) -> Vec<Uid> {
        self.dependents
            .get(owner)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// An interned copy of `text`.
    pub fn intern(&mut self, text: &str) -> Arc<str> {
        if let Some(found) = self.strings.get(text) {
            return found.clone();
        }
        let interned: Arc<str> = Arc::from(text);
        self.strings.insert(interned.clone());
        interned
    }

    /// Whether `dependent` blocks its owner `owner` (`blockOwnerDeletion: true`).
    pub fn blocks(&self, dependent: &str, owner: &str) -> bool {
        self.nodes.get(dependent).is_some_and(|n| {
            n.owners
                .iter()
                .any(|o| &*o.uid == owner && o.block_owner_deletion)
        })
    }

    /// Records the current state of the object `uid`; returns what needs a look.
    pub fn upsert(&mut self, uid: Uid, node: Node) -> Attention {
        let mut attention = Vec::new();
        let old = self.nodes.remove(&uid);
        let old_owners: Vec<Uid> = old
            .as_ref()
            .map(|o| o.owners.iter().map(|o| o.uid.clone()).collect())
            .unwrap_or_default();
        let new_owners: Vec<Uid> = node.owners.iter().map(|o| o.uid.clone()).collect();
        for removed in old_owners.iter().filter(|o| !new_owners.contains(o)) {
            self.unlink(removed, &uid);
            // An owner waiting for its dependents may now be free to go.
            if self
                .nodes
                .get(removed)
                .is_some_and(Node::deleting_dependents)
            {
                attention.push(removed.clone());
            }
        }
        // A reference made non-blocking (the collector breaking a cycle) may free an owner
        // waiting for its dependents.
        if let Some(old) = &old {
            for owner in &node.owners {
                let was_blocking = old
                    .owners
                    .iter()
                    .any(|o| o.uid == owner.uid && o.block_owner_deletion);
                if was_blocking
                    && !owner.block_owner_deletion
                    && self
                        .nodes
                        .get(&owner.uid)
                        .is_some_and(Node::deleting_dependents)
                {
                    attention.push(owner.uid.clone());
                }
            }
        }
        for added in new_owners.iter().filter(|o| !old_owners.contains(o)) {
            self.dependents
                .entry(added.clone())
                .or_default()
                .insert(uid.clone());
        }
        // Owners not observed (absent, or not listed yet): check this dependent.
        // Owners observed in another namespace make the reference invalid.
        let unresolved = node.owners.iter().any(|o| match self.nodes.get(&o.uid) {
            None => true,
            Some(owner) => owner.namespace.is_some() && owner.namespace != node.namespace,
        });
        let changed_owners = old.as_ref().is_none_or(|o| o.owners != node.owners);
        if unresolved && changed_owners {
            attention.push(uid.clone());
        }
        // Being deleted with a propagation finalizer: process it; a dependent that went
        // away-blocking changes count for foreground owners.
        let started_deleting = node.deleting
            && (node.orphan || node.foreground)
            && old.as_ref().is_none_or(|o| {
                o.orphan != node.orphan || o.foreground != node.foreground || !o.deleting
            });
        if started_deleting {
            attention.push(uid.clone());
            if node.foreground {
                attention.extend(self.dependents(&uid));
            }
        }
        if node.deleting && old.as_ref().is_none_or(|o| !o.deleting) {
            // A dependent being deleted may unblock a foreground owner later; its owners
            // are looked at again when it is gone.
            for owner in &node.owners {
                if self
                    .nodes
                    .get(&owner.uid)
                    .is_some_and(Node::deleting_dependents)
                {
                    attention.push(owner.uid.clone());
                }
            }
        }
        if old.is_none() {
            // Observed at last: dependents that thought it absent, or that live in another
            // namespace, are looked at again.
            for dependent in self.dependents(&uid) {
                let elsewhere = node.namespace.is_some()
                    && self
                        .nodes
                        .get(&dependent)
                        .is_some_and(|d| d.namespace != node.namespace);
                if elsewhere {
                    attention.push(dependent);
                }
            }
        }
        self.nodes.insert(uid, node);
        Attention(attention)
    }

    /// Forgets the object `uid` (deleted); returns what needs a look: its dependents
    /// (their owner is gone) and its owners waiting for their dependents.
    pub fn remove(&mut self, uid: &str) -> Attention {
        let Some(node) = self.nodes.remove(uid) else {
            return Attention::default();
        };
        let mut attention = Vec::new();
        for owner in &node.owners {
            self.unlink(&owner.uid, uid);
            if self
                .nodes
                .get(&owner.uid)
                .is_some_and(Node::deleting_dependents)
            {
                attention.push(owner.uid.clone());
            }
        }
        attention.extend(self.dependents(uid));
        Attention(attention)
    }

    /// UIDs of the objects of `resource`, for removing what a relist no longer holds.
    pub fn uids_of(&self, resource: usize) -> Vec<Uid> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.resource == resource)
            .map(|(uid, _)| uid.clone())
            .collect()
    }

    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn node(namespace: Option<&str>, owners: &[(&str, bool)]) -> Node {
        Node {
            resource: 0,
            namespace: namespace.map(Into::into),
            name: "x".into(),
            owners: owners
                .iter()
                .map(|(uid, block)| Owner {
                    uid: Arc::from(*uid),
                    api_version: Arc::from("v1"),
                    kind: Arc::from("ConfigMap"),
                    name: "o".into(),
                    block_owner_deletion: *block,
                })
                .collect(),
            deleting: false,
            orphan: false,
            foreground: false,
        }
    }

    #[test]
    fn a_dependent_of_an_unseen_owner_needs_a_look() {
        let mut graph = Graph::default();
        let attention = graph.upsert(Arc::from("d"), node(Some("ns"), &[("o", false)]));
        assert_eq!(attention.0, vec![Arc::from("d")]);
        assert_eq!(graph.dependents("o"), vec![Arc::from("d")]);
    }

    #[test]
    fn a_dependent_of_a_seen_owner_needs_none() {
        let mut graph = Graph::default();
        graph.upsert(Arc::from("o"), node(Some("ns"), &[]));
        let attention = graph.upsert(Arc::from("d"), node(Some("ns"), &[("o", false)]));
        assert!(attention.0.is_empty());
    }

    #[test]
    fn an_owner_in_another_namespace_is_unresolved() {
        let mut graph = Graph::default();
        graph.upsert(Arc::from("o"), node(Some("a"), &[]));
        let attention = graph.upsert(Arc::from("d"), node(Some("b"), &[("o", false)]));
        assert_eq!(attention.0, vec![Arc::from("d")]);
        // A cluster-scoped owner is fine for a namespaced dependent.
        graph.upsert(Arc::from("c"), node(None, &[]));
        let attention = graph.upsert(Arc::from("e"), node(Some("b"), &[("c", false)]));
        assert!(attention.0.is_empty());
    }

    #[test]
    fn removing_an_owner_points_at_its_dependents() {
        let mut graph = Graph::default();
        graph.upsert(Arc::from("o"), node(Some("ns"), &[]));
        graph.upsert(Arc::from("d1"), node(Some("ns"), &[("o", false)]));
        graph.upsert(Arc::from("d2"), node(Some("ns"), &[("o", true)]));
        let mut attention = graph.remove("o").0;
        attention.sort();
        assert_eq!(attention, vec![Arc::from("d1"), Arc::from("d2")]);
    }

    #[test]
    fn foreground_deletion_points_at_the_owner_and_its_dependents_until_they_go() {
        let mut graph = Graph::default();
        graph.upsert(Arc::from("o"), node(Some("ns"), &[]));
        graph.upsert(Arc::from("d"), node(Some("ns"), &[("o", true)]));
        assert!(graph.blocks("d", "o"));
        let mut deleting = node(Some("ns"), &[]);
        deleting.deleting = true;
        deleting.foreground = true;
        let attention = graph.upsert(Arc::from("o"), deleting);
        assert_eq!(attention.0, vec![Arc::from("o"), Arc::from("d")]);
        assert_eq!(graph.remove("d").0, vec![Arc::from("o")]);
        assert!(graph.dependents("o").is_empty());
    }

    #[test]
    fn dropping_an_owner_reference_unlinks_it() {
        let mut graph = Graph::default();
        graph.upsert(Arc::from("o"), node(Some("ns"), &[]));
        graph.upsert(Arc::from("d"), node(Some("ns"), &[("o", false)]));
        graph.upsert(Arc::from("d"), node(Some("ns"), &[]));
        assert!(graph.dependents("o").is_empty());
    }
}
