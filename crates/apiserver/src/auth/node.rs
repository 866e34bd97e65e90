//! The Node authorizer: what each kubelet (`system:node:<name>` in `system:nodes`) may
//! read — its own Node and Lease, the pods bound to it, and the secrets, configmaps,
//! volumes and service-account tokens those pods use — from `kyb-admission`'s
//! [`NodeGraph`], kept current by following pods, persistent volumes and the other
//! resources the graph needs.

use crate::cache::{CacheEvent, EventType, WatchCache, shallow};
use kyb_admission::{NodeGraph, node_authorizer};
use kyb_api::Resource;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

pub struct NodeAuthorizer {
    state: RwLock<State>,
}

#[derive(Default)]
struct State {
    graph: NodeGraph,
    /// The (namespace, name) of every object applied, by resource: what a reload removes.
    known: HashMap<Cow<'static, str>, BTreeSet<(String, String)>>,
}

impl NodeAuthorizer {
    /// Loads the graph and follows changes.
    pub fn start(cache: &WatchCache) -> Arc<NodeAuthorizer> {
        let authorizer = Arc::new(NodeAuthorizer {
            state: RwLock::new(State::default()),
        });
        let snapshot = cache.registry().snapshot();
        for (group, plural) in node_authorizer::WATCHED_RESOURCES {
            let Some(def) = snapshot.find_stored(group, plural) else {
                continue;
            };
            if let Some(resource) = cache.resource(def) {
                crate::cache::follow(&resource, def.clone(), authorizer.clone());
            }
        }
        authorizer
    }

    /// The decision for a request by `asked.user`; `NoOpinion` for anyone not a node.
    pub fn decide(
        &self,
        asked: &kyb_rbac::Attributes<'_>,
        field_selector: &str,
    ) -> kyb_admission::Decision {
        if !asked.groups.iter().any(|g| g == kyb_admission::NODES_GROUP) {
            return kyb_admission::Decision::NoOpinion(String::new());
        }
        let attributes = kyb_admission::RequestAttributes {
            verb: asked.verb,
            namespace: asked.namespace,
            api_group: asked.api_group,
            resource: asked.resource,
            subresource: asked.subresource,
            name: asked.name,
            field_selector,
            path: asked.path,
            resource_request: asked.resource_request,
        };
        match self.state.read() {
            Ok(state) => state.graph.authorize(asked.user, asked.groups, &attributes),
            Err(_) => kyb_admission::Decision::NoOpinion("the node graph is unavailable".into()),
        }
    }
}

impl crate::cache::Follower for NodeAuthorizer {
    fn apply(&self, def: &Resource, events: &[Arc<CacheEvent>], _initial: bool) {
        let Ok(mut state) = self.state.write() else {
            return;
        };
        let State { graph, known } = &mut *state;
        let known = known.entry(def.plural.clone()).or_default();
        for event in events {
            let namespace = event.object.namespace().unwrap_or_default();
            let name = event.object.name();
            let id = (namespace.to_string(), name.to_string());
            if event.kind == EventType::Deleted {
                graph.delete_named(&def.plural, namespace, name);
                known.remove(&id);
                continue;
            }
            // Most pod events are of pods not bound yet, which grant nothing: the cached
            // selectable field says so without parsing the pod.
            let unbound = def.plural == "pods"
                && event.object.field(def, "spec.nodeName") == Some("")
                && !graph.holds_pod(namespace, name);
            if !unbound {
                // Of a pod, only what the graph reads is parsed.
                let object = match def.plural.as_ref() {
                    "pods" => shallow::project(&event.object.json, node_authorizer::POD_FIELDS),
                    _ => event.object.value().ok(),
                };
                let Some(object) = object else {
                    continue;
                };
                graph.apply(&def.plural, &object);
            }
            known.insert(id);
        }
    }

    fn forget(&self, def: &Resource) {
        let Ok(mut state) = self.state.write() else {
            return;
        };
        let State { graph, known } = &mut *state;
        for (namespace, name) in known.remove(def.plural.as_ref()).unwrap_or_default() {
            graph.delete_named(&def.plural, &namespace, &name);
        }
    }
}
