//! The index from subjects to the bindings that name them, so that finding the bindings
//! that apply to a request costs a few hash lookups instead of a scan of every binding.

use crate::subject::{Subject, SubjectKind};
use std::collections::{BTreeSet, HashMap};

/// Binding names by the user names and group names their subjects cover, for the bindings
/// of one scope (the cluster role bindings, or the role bindings of one namespace).
///
/// Service account subjects are filed under the user name they authenticate as
/// (`system:serviceaccount:<ns>:<name>`), with the binding's namespace filled in when the
/// subject leaves it out; so user and service account matching are one lookup.
#[derive(Clone, Debug, Default)]
pub struct SubjectIndex {
    users: HashMap<String, BTreeSet<String>>,
    groups: HashMap<String, BTreeSet<String>>,
}

impl SubjectIndex {
    fn keys<'s>(
        subjects: &'s [Subject],
        binding_namespace: &'s str,
    ) -> impl Iterator<Item = (bool, String)> + 's {
        subjects
            .iter()
            .filter_map(move |subject| match subject.kind {
                SubjectKind::Group => Some((false, subject.name.clone())),
                SubjectKind::User | SubjectKind::ServiceAccount => subject
                    .user_name(binding_namespace)
                    .map(|user| (true, user)),
            })
    }

    /// Files the binding `name` under each of its subjects.
    pub fn add(&mut self, name: &str, subjects: &[Subject], binding_namespace: &str) {
        for (is_user, key) in Self::keys(subjects, binding_namespace) {
            let map = if is_user {
                &mut self.users
            } else {
                &mut self.groups
            };
            map.entry(key).or_default().insert(name.to_string());
        }
    }

    /// Takes the binding `name` out from under each of its subjects.
    pub fn remove(&mut self, name: &str, subjects: &[Subject], binding_namespace: &str) {
        for (is_user, key) in Self::keys(subjects, binding_namespace) {
            let map = if is_user {
                &mut self.users
            } else {
                &mut self.groups
            };
            if let Some(names) = map.get_mut(&key) {
                names.remove(name);
                if names.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }

    /// The names of the bindings that name `user` or one of `groups`, sorted and without
    /// repeats.
    pub fn candidates<'s>(&'s self, user: &str, groups: &[String]) -> Vec<&'s str> {
        let mut names: Vec<&str> = Vec::new();
        if let Some(found) = self.users.get(user) {
            names.extend(found.iter().map(String::as_str));
        }
        for group in groups {
            if let Some(found) = self.groups.get(group.as_str()) {
                names.extend(found.iter().map(String::as_str));
            }
        }
        names.sort_unstable();
        names.dedup();
        names
    }
}
