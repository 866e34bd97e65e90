//! The RBAC authorizer: a [`kyb_rbac::Policy`] kept current from the watch cache's Roles,
//! ClusterRoles, RoleBindings and ClusterRoleBindings, asked on every request.
//!
//! The current state is loaded when the server starts, before it serves anything, then
//! kept current by following the cache (`crate::cache::follow`).

use crate::cache::{CacheEvent, EventType, WatchCache};
use kyb_api::Resource;
use kyb_rbac::Policy;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

const RESOURCES: [&str; 4] = [
    "roles",
    "clusterroles",
    "rolebindings",
    "clusterrolebindings",
];

/// The policy, shared by every request.
pub struct Rbac {
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    policy: Policy,
    /// The (namespace, name) of every object applied, by resource: what a reload removes.
    known: HashMap<Cow<'static, str>, BTreeSet<(String, String)>>,
}

impl Rbac {
    /// Loads the current policy and follows changes until the cache ends.
    pub fn start(cache: &WatchCache) -> Arc<Rbac> {
        let rbac = Arc::new(Rbac {
            state: RwLock::new(State::default()),
        });
        let snapshot = cache.registry().snapshot();
        for resource in RESOURCES {
            let Some(def) = snapshot.find("rbac.authorization.k8s.io", "v1", resource) else {
                tracing::error!(resource, "RBAC resource not registered");
                continue;
            };
            let Some(resource) = cache.resource(def) else {
                tracing::error!(resource, "no cache for an RBAC resource");
                continue;
            };
            crate::cache::follow(&resource, def.clone(), rbac.clone());
        }
        rbac
    }
}

impl crate::cache::Follower for Rbac {
    fn apply(&self, def: &Resource, events: &[Arc<CacheEvent>], initial: bool) {
        let Ok(mut state) = self.state.write() else {
            return;
        };
        let State { policy, known } = &mut *state;
        let known = known.entry(def.plural.clone()).or_default();
        for event in events {
            let value = match event.object.value() {
                Ok(value) => value,
                Err(error) => {
                    tracing::warn!(%error, resource = %def.plural, "unreadable RBAC object");
                    continue;
                }
            };
            let id = (
                event.object.namespace().unwrap_or_default().to_string(),
                event.object.name().to_string(),
            );
            let result = match event.kind {
                EventType::Deleted => {
                    policy.delete(&value);
                    known.remove(&id);
                    Ok(())
                }
                _ => {
                    known.insert(id);
                    policy.apply(&value)
                }
            };
            if let Err(error) = result {
                tracing::warn!(%error, resource = %def.plural, initial, "RBAC object ignored");
            }
        }
    }

    fn forget(&self, def: &Resource) {
        let Ok(mut state) = self.state.write() else {
            return;
        };
        let State { policy, known } = &mut *state;
        for (namespace, name) in known.remove(def.plural.as_ref()).unwrap_or_default() {
            match def.plural.as_ref() {
                "roles" => policy.remove_role(&namespace, &name),
                "clusterroles" => policy.remove_cluster_role(&name),
                "rolebindings" => policy.remove_role_binding(&namespace, &name),
                _ => policy.remove_cluster_role_binding(&name),
            };
        }
    }
}

impl Rbac {
    /// What `user` in `groups` may do in `namespace` (SelfSubjectRulesReview).
    pub fn rules_for(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
    ) -> kyb_rbac::SubjectRules {
        match self.state.read() {
            Ok(state) => state.policy.rules_for(user, groups, namespace),
            Err(_) => kyb_rbac::SubjectRules {
                incomplete: true,
                evaluation_error: Some("RBAC: the policy is unavailable".into()),
                ..Default::default()
            },
        }
    }

    /// Runs `f` with the current policy (escalation checks read roles from it).
    pub fn with_policy<T>(&self, f: impl FnOnce(&Policy) -> T) -> Option<T> {
        self.state.read().ok().map(|state| f(&state.policy))
    }

    /// The policy's decision on `attributes`.
    pub fn authorize(&self, attributes: &kyb_rbac::Attributes<'_>) -> kyb_rbac::Decision {
        match self.state.read() {
            Ok(state) => state.policy.authorize(attributes),
            Err(_) => kyb_rbac::Decision::NoOpinion("RBAC: the policy is unavailable".into()),
        }
    }
}
