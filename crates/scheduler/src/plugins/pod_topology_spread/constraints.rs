//! Spread constraints as the plugin evaluates them: the pod's
//! `spec.topologySpreadConstraints` (or the cluster defaults when it has none) of one
//! `whenUnsatisfiable` action, with the label selector parsed, `matchLabelKeys` merged in
//! from the pod's labels, and Kubernetes' defaults for `minDomains` (1),
//! `nodeAffinityPolicy` (Honor) and `nodeTaintsPolicy` (Ignore).
//!
//! Default constraints get their selector from the pod's owners, as Kubernetes'
//! `DefaultSelector` does: the selectors of the Services in the pod's namespace whose
//! selector matches the pod, and of its controlling ReplicationController, ReplicaSet or
//! StatefulSet. A pod with none of those gets no default constraints.

use super::counting::FastMap;
use crate::framework::{Lister, PodInfo};
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use kyb_apimachinery::labels::{Operator, Requirement, Selector};
use kyb_component_helpers::label_selector;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// `kubernetes.io/hostname`: spread over nodes (scored per node, as Kubernetes does).
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
/// `topology.kubernetes.io/zone`.
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";

/// `whenUnsatisfiable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Hard: Filter refuses nodes that would break `maxSkew`.
    DoNotSchedule,
    /// Soft: Score prefers nodes in less crowded domains.
    ScheduleAnyway,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::DoNotSchedule => "DoNotSchedule",
            Action::ScheduleAnyway => "ScheduleAnyway",
        }
    }
}

/// One constraint, ready to evaluate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub max_skew: i32,
    pub topology_key: String,
    /// Selects the pods counted (in the incoming pod's namespace).
    pub selector: Selector,
    pub min_domains: i32,
    /// `nodeAffinityPolicy: Honor`: only nodes matching the pod's node affinity and node
    /// selector count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: nodes with taints the pod does not tolerate do not count.
    pub honor_node_taints: bool,
    /// Whether the incoming pod matches its own selector (it adds one to the domain it
    /// lands in).
    pub matches_self: bool,
}

impl Constraint {
    pub fn is_hostname(&self) -> bool {
        self.topology_key == HOSTNAME_KEY
    }
}

/// The system default constraints (`defaultingType: System`).
pub fn system_defaults() -> Vec<TopologySpreadConstraint> {
    [(HOSTNAME_KEY, 3), (ZONE_KEY, 5)]
        .into_iter()
        .map(|(key, max_skew)| TopologySpreadConstraint {
            max_skew,
            topology_key: key.to_string(),
            when_unsatisfiable: Action::ScheduleAnyway.as_str().to_string(),
            ..TopologySpreadConstraint::default()
        })
        .collect()
}

/// The constraints of `specs` with this action, for `pod`.
pub fn from_specs(
    specs: &[TopologySpreadConstraint],
    pod: &PodInfo,
    action: Action,
) -> Result<Vec<Constraint>, String> {
    let mut constraints = Vec::new();
    for spec in specs
        .iter()
        .filter(|s| s.when_unsatisfiable == action.as_str())
    {
        // A constraint without a selector counts no pods.
        let mut selector = match &spec.label_selector {
            Some(selector) => label_selector::as_selector(selector)?,
            None => Selector::nothing(),
        };
        if spec.label_selector.is_some() {
            for key in spec.match_label_keys.iter().flatten() {
                if let Some(value) = pod.label(key) {
                    selector
                        .requirements
                        .push(requirement(key, Operator::Equals, [value]));
                }
            }
        }
        let matches_self = selector.matches_pairs(|key| pod.label(key));
        constraints.push(Constraint {
            max_skew: spec.max_skew,
            topology_key: spec.topology_key.clone(),
            selector,
            min_domains: spec.min_domains.unwrap_or(1),
            honor_node_affinity: spec.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_node_taints: spec.node_taints_policy.as_deref() == Some("Honor"),
            matches_self,
        });
    }
    Ok(constraints)
}

/// Uses `selector` for every default constraint.
pub fn with_selector(constraints: &mut [Constraint], selector: &Selector, pod: &PodInfo) {
    let matches_self = selector.matches_pairs(|key| pod.label(key));
    for constraint in constraints {
        constraint.selector = selector.clone();
        constraint.matches_self = matches_self;
    }
}

fn requirement<'a>(
    key: &str,
    operator: Operator,
    values: impl IntoIterator<Item = &'a str>,
) -> Requirement {
    Requirement {
        key: key.to_string(),
        operator,
        values: values.into_iter().map(str::to_string).collect(),
    }
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// A map selector (`spec.selector` of Services and ReplicationControllers) as pairs;
/// `None` when not set.
fn map_selector(object: &Value) -> Option<Vec<(String, String)>> {
    let selector = object.pointer("/spec/selector")?.as_object()?;
    Some(
        selector
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
    )
}

/// A `metav1.LabelSelector` (`spec.selector` of ReplicaSets and StatefulSets); `None` when
/// it does not parse.
fn label_selector(object: &Value) -> Option<Selector> {
    let selector = object.pointer("/spec/selector").unwrap_or(&Value::Null);
    Selector::from_label_selector(selector).ok()
}

/// One resource's objects by namespace, with what the default selector needs of each,
/// rebuilt when the lister's objects change (another `Arc` anywhere in the list).
#[derive(Debug)]
struct Index<T> {
    /// The objects it was built from (held, so comparing them by address is exact).
    seen: Vec<Arc<Value>>,
    /// Per namespace: (name, what was extracted).
    by_namespace: FastMap<String, Vec<(String, T)>>,
}

impl<T> Default for Index<T> {
    fn default() -> Self {
        Index {
            seen: Vec::new(),
            by_namespace: FastMap::default(),
        }
    }
}

impl<T> Index<T> {
    fn refresh(&mut self, objects: Vec<Arc<Value>>, extract: impl Fn(&Value) -> T) {
        let same = objects.len() == self.seen.len()
            && objects
                .iter()
                .zip(&self.seen)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if same {
            return;
        }
        self.by_namespace.clear();
        for object in &objects {
            let (Some(namespace), Some(name)) = (
                str_at(object, "/metadata/namespace"),
                str_at(object, "/metadata/name"),
            ) else {
                continue;
            };
            self.by_namespace
                .entry(namespace.to_string())
                .or_default()
                .push((name.to_string(), extract(object)));
        }
        self.seen = objects;
    }

    fn in_namespace(&self, namespace: &str) -> &[(String, T)] {
        self.by_namespace.get(namespace).map_or(&[], Vec::as_slice)
    }

    fn named(&self, namespace: &str, name: &str) -> Option<&T> {
        self.in_namespace(namespace)
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }
}

#[derive(Debug, Default)]
struct Indexes {
    services: Index<Option<Vec<(String, String)>>>,
    replication_controllers: Index<Option<Vec<(String, String)>>>,
    replica_sets: Index<Option<Selector>>,
    stateful_sets: Index<Option<Selector>>,
}

/// The Services and controllers the default selector is deduced from, read from the lister
/// (`services`, `replicationcontrollers`, `apps/replicasets`, `apps/statefulsets`) and
/// indexed by namespace.
#[derive(Debug, Default)]
pub struct Owners {
    indexes: Mutex<Indexes>,
}

impl Owners {
    /// The selector Kubernetes deduces for default constraints: the union of the selectors
    /// of the Services selecting the pod and of its controller (ReplicationController,
    /// ReplicaSet, StatefulSet). Empty when the pod has none.
    pub fn default_selector(&self, pod: &PodInfo, lister: &dyn Lister) -> Selector {
        let mut guard = match self.indexes.lock() {
            Ok(indexes) => indexes,
            Err(poisoned) => {
                self.indexes.clear_poison();
                let mut indexes = poisoned.into_inner();
                *indexes = Indexes::default();
                indexes
            }
        };
        let indexes = &mut *guard;
        indexes
            .services
            .refresh(lister.objects("", "services"), map_selector);
        let mut labels: BTreeMap<&str, &str> = BTreeMap::new();
        // A Service without a selector selects nothing (not everything).
        for (_, selector) in indexes.services.in_namespace(&pod.namespace) {
            let Some(selector) = selector else {
                continue;
            };
            if selector
                .iter()
                .all(|(k, v)| pod.label(k) == Some(v.as_str()))
            {
                labels.extend(selector.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            }
        }
        let owner = pod
            .pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        let mut extra = Vec::new();
        match owner.map(|o| (o.api_version.as_str(), o.kind.as_str(), o.name.as_str())) {
            Some(("v1", "ReplicationController", name)) => {
                indexes
                    .replication_controllers
                    .refresh(lister.objects("", "replicationcontrollers"), map_selector);
                if let Some(selector) = indexes.replication_controllers.named(&pod.namespace, name)
                {
                    for (k, v) in selector.iter().flatten() {
                        labels.insert(k, v);
                    }
                }
            }
            Some(("apps/v1", "ReplicaSet", name)) => {
                indexes
                    .replica_sets
                    .refresh(lister.objects("apps", "replicasets"), label_selector);
                if let Some(Some(selector)) = indexes.replica_sets.named(&pod.namespace, name) {
                    extra.extend(selector.requirements.iter().cloned());
                }
            }
            Some(("apps/v1", "StatefulSet", name)) => {
                indexes
                    .stateful_sets
                    .refresh(lister.objects("apps", "statefulsets"), label_selector);
                if let Some(Some(selector)) = indexes.stateful_sets.named(&pod.namespace, name) {
                    extra.extend(selector.requirements.iter().cloned());
                }
            }
            _ => {}
        }
        let mut requirements: Vec<Requirement> = labels
            .into_iter()
            .map(|(k, v)| requirement(k, Operator::Equals, [v]))
            .collect();
        requirements.extend(extra);
        Selector { requirements }
    }
}
