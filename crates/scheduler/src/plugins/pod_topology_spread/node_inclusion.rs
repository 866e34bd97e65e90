//! Which nodes count for a constraint: the incoming pod's required node affinity and node
//! selector (`nodeAffinityPolicy: Honor`) and its tolerations of the node's `NoSchedule` and
//! `NoExecute` taints (`nodeTaintsPolicy: Honor`), compiled once per cycle.
//!
//! Node affinity is matched as Kubernetes' `RequiredNodeAffinity` does: every
//! `nodeSelector` pair, and any one of the required terms; an empty term, or one that does
//! not parse, selects no node.

use crate::framework::NodeInfo;
use k8s_openapi::api::core::v1::{NodeSelectorTerm, Pod, Taint, Toleration};
use kyb_api::labels::{Operator, Requirement, Selector};
use std::collections::BTreeSet;

/// A `matchFields` requirement (`metadata.name` is the only field a node has).
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    key: String,
    value: String,
    /// `In` (true) or `NotIn` (false).
    equal: bool,
}

/// One required node selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    labels: Selector,
    fields: Vec<FieldRequirement>,
}

impl Term {
    /// The term, or `None` when it selects no node (empty, or invalid).
    fn compile(term: &NodeSelectorTerm) -> Option<Term> {
        let expressions = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        if expressions.is_empty() && fields.is_empty() {
            return None;
        }
        let mut requirements = Vec::with_capacity(expressions.len());
        for expression in expressions {
            let values: BTreeSet<String> = expression.values.iter().flatten().cloned().collect();
            let operator = match expression.operator.as_str() {
                "In" if !values.is_empty() => Operator::In,
                "NotIn" if !values.is_empty() => Operator::NotIn,
                "Exists" if values.is_empty() => Operator::Exists,
                "DoesNotExist" if values.is_empty() => Operator::DoesNotExist,
                "Gt" | "Lt"
                    if values.len() == 1 && values.iter().all(|v| v.parse::<i64>().is_ok()) =>
                {
                    if expression.operator == "Gt" {
                        Operator::GreaterThan
                    } else {
                        Operator::LessThan
                    }
                }
                _ => return None,
            };
            requirements.push(Requirement {
                key: expression.key.clone(),
                operator,
                values,
            });
        }
        let mut field_requirements = Vec::with_capacity(fields.len());
        for field in fields {
            let [value] = field.values.as_deref().unwrap_or_default() else {
                return None;
            };
            let equal = match field.operator.as_str() {
                "In" => true,
                "NotIn" => false,
                _ => return None,
            };
            field_requirements.push(FieldRequirement {
                key: field.key.clone(),
                value: value.clone(),
                equal,
            });
        }
        Some(Term {
            labels: Selector { requirements },
            fields: field_requirements,
        })
    }

    fn matches(&self, node: &NodeInfo) -> bool {
        let labels = node.labels();
        self.labels
            .matches_pairs(|key| labels.and_then(|l| l.get(key)).map(String::as_str))
            && self.fields.iter().all(|f| {
                let actual = if f.key == "metadata.name" {
                    node.name.as_str()
                } else {
                    ""
                };
                (actual == f.value) == f.equal
            })
    }
}

/// The pod's node selector and required node affinity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAffinity {
    node_selector: Vec<(String, String)>,
    /// `None`: no required node affinity.
    required_terms: Option<Vec<Term>>,
}

impl NodeAffinity {
    pub fn new(pod: &Pod) -> NodeAffinity {
        let Some(spec) = pod.spec.as_ref() else {
            return NodeAffinity::default();
        };
        let required_terms = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|selector| {
                selector
                    .node_selector_terms
                    .iter()
                    .filter_map(Term::compile)
                    .collect()
            });
        NodeAffinity {
            node_selector: spec
                .node_selector
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            required_terms,
        }
    }

    /// Whether the pod restricts nodes by affinity or selector at all.
    pub fn is_set(&self) -> bool {
        !self.node_selector.is_empty() || self.required_terms.is_some()
    }

    /// Whether the node matches the pod's node selector and required node affinity.
    pub fn matches(&self, node: &NodeInfo) -> bool {
        let labels = node.labels();
        let selector_ok = self.node_selector.iter().all(|(key, value)| {
            labels.and_then(|l| l.get(key)).map(String::as_str) == Some(value.as_str())
        });
        selector_ok
            && self
                .required_terms
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(node)))
    }
}

/// What the pod brings to decide whether a node counts.
#[derive(Debug, Default)]
pub struct NodeInclusion {
    pub affinity: NodeAffinity,
    pub tolerations: Vec<Toleration>,
}

impl NodeInclusion {
    pub fn new(pod: &Pod) -> NodeInclusion {
        NodeInclusion {
            affinity: NodeAffinity::new(pod),
            tolerations: pod
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.clone())
                .unwrap_or_default(),
        }
    }
}

/// Whether `tolerations` tolerate every `NoSchedule` and `NoExecute` taint of the node.
pub fn tolerates_taints(tolerations: &[Toleration], node: &NodeInfo) -> bool {
    node.taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .all(|taint| tolerations.iter().any(|t| tolerates(t, taint)))
}

/// Whether a toleration tolerates a taint (an empty key with `Exists` tolerates every
/// taint; an empty effect every effect).
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}
