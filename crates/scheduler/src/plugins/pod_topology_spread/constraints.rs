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

use crate::framework::{Lister, PodInfo};
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kyb_api::labels::{Operator, Requirement, Selector};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

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
            Some(selector) => parse_selector(selector)?,
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

/// `metav1.LabelSelectorAsSelector` for a selector that is set: an empty one selects
/// everything.
fn parse_selector(selector: &LabelSelector) -> Result<Selector, String> {
    let mut requirements = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push(requirement(key, Operator::Equals, [value.as_str()]));
    }
    for expression in selector.match_expressions.iter().flatten() {
        let values: BTreeSet<String> = expression.values.iter().flatten().cloned().collect();
        let operator = match expression.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => return Err(format!("{other:?} is not a valid label selector operator")),
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(format!(
                    "key {:?}: for 'in', 'notin' operators, values set can't be empty",
                    expression.key
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(format!(
                    "key {:?}: values set must be empty for exists and does not exist",
                    expression.key
                ));
            }
            _ => {}
        }
        requirements.push(Requirement {
            key: expression.key.clone(),
            operator,
            values,
        });
    }
    Ok(Selector { requirements })
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The objects of a resource in `namespace` (from the lister).
fn in_namespace<'a>(
    objects: &'a [std::sync::Arc<Value>],
    namespace: &'a str,
) -> impl Iterator<Item = &'a Value> {
    objects
        .iter()
        .map(|o| o.as_ref())
        .filter(move |o| str_at(o, "/metadata/namespace") == Some(namespace))
}

/// The object of a resource named `name` in `namespace`.
fn named<'a>(
    objects: &'a [std::sync::Arc<Value>],
    namespace: &'a str,
    name: &str,
) -> Option<&'a Value> {
    in_namespace(objects, namespace).find(|o| str_at(o, "/metadata/name") == Some(name))
}

/// The selector Kubernetes deduces for default constraints: the union of the selectors of
/// the Services selecting the pod and of its controller (ReplicationController,
/// ReplicaSet, StatefulSet). Empty when the pod has none.
pub fn default_selector(pod: &PodInfo, lister: &dyn Lister) -> Selector {
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let services = lister.objects("", "services");
    for service in in_namespace(&services, &pod.namespace) {
        // A Service without a selector selects nothing (not everything).
        let Some(selector) = service.pointer("/spec/selector").and_then(Value::as_object) else {
            continue;
        };
        let matches = selector
            .iter()
            .all(|(key, value)| value.as_str().is_some() && pod.label(key) == value.as_str());
        if matches {
            for (key, value) in selector {
                if let Some(value) = value.as_str() {
                    labels.insert(key.clone(), value.to_string());
                }
            }
        }
    }
    let from_labels = |labels: &BTreeMap<String, String>| Selector {
        requirements: labels
            .iter()
            .map(|(k, v)| requirement(k, Operator::Equals, [v.as_str()]))
            .collect(),
    };
    let mut selector = from_labels(&labels);
    let owner = pod
        .pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let Some(owner) = owner else {
        return selector;
    };
    match (owner.api_version.as_str(), owner.kind.as_str()) {
        ("v1", "ReplicationController") => {
            let controllers = lister.objects("", "replicationcontrollers");
            if let Some(rc) = named(&controllers, &pod.namespace, &owner.name) {
                for (key, value) in rc
                    .pointer("/spec/selector")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    if let Some(value) = value.as_str() {
                        labels.insert(key.clone(), value.to_string());
                    }
                }
                selector = from_labels(&labels);
            }
        }
        ("apps/v1", kind @ ("ReplicaSet" | "StatefulSet")) => {
            let resource = if kind == "ReplicaSet" {
                "replicasets"
            } else {
                "statefulsets"
            };
            let objects = lister.objects("apps", resource);
            if let Some(owner) = named(&objects, &pod.namespace, &owner.name)
                && let Some(owner_selector) = owner.pointer("/spec/selector")
                && let Ok(parsed) = Selector::from_label_selector(owner_selector)
            {
                selector.requirements.extend(parsed.requirements);
            }
        }
        _ => {}
    }
    selector
}
