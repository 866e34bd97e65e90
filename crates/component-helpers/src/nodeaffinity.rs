//! Node affinity, as Kubernetes' `component-helpers/scheduling/corev1/nodeaffinity`: node
//! selector terms parsed once and matched against nodes, preferred terms with their
//! weights, and a pod's required node affinity together with its `nodeSelector`
//! (`GetRequiredNodeAffinity`).
//!
//! The rules:
//! - `matchExpressions` are label requirements (`labels.NewRequirement`): `In` and `NotIn`
//!   need values, `Exists` and `DoesNotExist` none; `Gt` and `Lt` exactly one value that is
//!   an integer, and match only a node whose label is an integer above (below) it — numbers,
//!   not strings, are compared (`"10" Gt "9"`), and a label that is no integer never
//!   matches. Keys must be qualified names and values label values.
//! - `matchFields` support `In` and `NotIn` with exactly one value; a node's only field is
//!   `metadata.name` (any other field reads as empty), and a node without a name skips
//!   field requirements, as Kubernetes does.
//! - A term's requirements are ANDed, the terms ORed; an empty term matches no node, and
//!   neither does a term that does not parse (the others still may). Where a caller must
//!   refuse invalid terms (the scheduler's own arguments, preferred terms), [`parse`]
//!   answers the errors with Kubernetes' field paths.
//!
//! (The DaemonSet controller's and the volume binder's copies compared `Gt`/`Lt` values
//! without checking that exactly one integer was given and accepted invalid keys; the
//! scheduler's copy, ported here, is Kubernetes'.)
//!
//! [`parse`]: NodeSelectorMatcher::parse

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec,
    PreferredSchedulingTerm,
};
use kyb_apimachinery::labels::{self, Operator, Requirement, Selector};
use std::collections::BTreeSet;

/// The only node field selectors can match.
pub const NODE_NAME_FIELD: &str = "metadata.name";

/// What node affinity reads of a node: its name and labels.
pub trait NodeView {
    /// `metadata.name` (empty when unknown).
    fn node_name(&self) -> &str;
    /// The value of label `key`.
    fn node_label(&self, key: &str) -> Option<&str>;
}

impl NodeView for Node {
    fn node_name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn node_label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.as_ref()?.get(key).map(String::as_str)
    }
}

/// Nodes are often shared (informers hand them out in an `Arc`).
impl<T: NodeView + ?Sized> NodeView for std::sync::Arc<T> {
    fn node_name(&self) -> &str {
        (**self).node_name()
    }

    fn node_label(&self, key: &str) -> Option<&str> {
        (**self).node_label(key)
    }
}

/// A node given by name and labels (a node the caller knows only partly).
#[derive(Clone, Copy, Debug)]
pub struct NodeParts<'a> {
    pub name: &'a str,
    pub labels: Option<&'a std::collections::BTreeMap<String, String>>,
}

impl NodeView for NodeParts<'_> {
    fn node_name(&self) -> &str {
        self.name
    }

    fn node_label(&self, key: &str) -> Option<&str> {
        self.labels?.get(key).map(String::as_str)
    }
}

/// A `matchFields` requirement: the node's field equal (`In`) or not (`NotIn`) to `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    key: String,
    value: String,
    equal: bool,
}

impl FieldRequirement {
    fn matches(&self, name: &str) -> bool {
        // A node's only field is its name; any other field reads as empty.
        let field = if self.key == NODE_NAME_FIELD {
            name
        } else {
            ""
        };
        (field == self.value) == self.equal
    }
}

/// A parsed node selector term: label requirements and field requirements, ANDed. A term
/// with neither matches no node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelectorTermMatcher {
    labels: Option<Selector>,
    fields: Option<Vec<FieldRequirement>>,
}

impl NodeSelectorTermMatcher {
    /// Parses a term; the errors name the offending fields under `path`.
    pub fn parse(term: &NodeSelectorTerm, path: &str) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let mut parsed = NodeSelectorTermMatcher::default();
        if let Some(expressions) = term.match_expressions.as_ref().filter(|e| !e.is_empty()) {
            match label_requirements(expressions, &format!("{path}.matchExpressions")) {
                Ok(selector) => parsed.labels = Some(selector),
                Err(e) => errors.extend(e),
            }
        }
        if let Some(fields) = term.match_fields.as_ref().filter(|f| !f.is_empty()) {
            match field_requirements(fields, &format!("{path}.matchFields")) {
                Ok(fields) => parsed.fields = Some(fields),
                Err(e) => errors.extend(e),
            }
        }
        if errors.is_empty() {
            Ok(parsed)
        } else {
            Err(errors)
        }
    }

    /// Whether the node satisfies every requirement of the term.
    pub fn matches(&self, node: &impl NodeView) -> bool {
        if self.labels.is_none() && self.fields.is_none() {
            return false;
        }
        if let Some(selector) = &self.labels
            && !selector.matches_pairs(|key| node.node_label(key))
        {
            return false;
        }
        let name = node.node_name();
        name.is_empty()
            || self
                .fields
                .iter()
                .flatten()
                .all(|requirement| requirement.matches(name))
    }
}

/// `matchExpressions` as a label selector (Kubernetes' `labels.NewRequirement` checks).
fn label_requirements(
    expressions: &[NodeSelectorRequirement],
    path: &str,
) -> Result<Selector, Vec<String>> {
    let mut errors = Vec::new();
    let mut requirements = Vec::with_capacity(expressions.len());
    for (i, expression) in expressions.iter().enumerate() {
        let path = format!("{path}[{i}]");
        let values: &[String] = expression.values.as_deref().unwrap_or_default();
        let operator = match expression.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::GreaterThan,
            "Lt" => Operator::LessThan,
            other => {
                errors.push(format!(
                    "{path}.operator: Unsupported value: {other:?}: supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\""
                ));
                continue;
            }
        };
        let before = errors.len();
        if let Err(e) = labels::check_key(&expression.key) {
            errors.push(format!("{path}.key: {e}"));
        }
        let invalid_values = |why: &str| format!("{path}.values: Invalid value: {values:?}: {why}");
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                errors.push(invalid_values(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errors.push(invalid_values(
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errors.push(invalid_values(
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (j, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        errors.push(format!(
                            "{path}.values[{j}]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                        ));
                    }
                }
            }
            _ => {}
        }
        for (j, value) in values.iter().enumerate() {
            if let Err(e) = labels::check_value(value) {
                errors.push(format!("{path}.values[{j}]: {e}"));
            }
        }
        if errors.len() == before {
            requirements.push(Requirement {
                key: expression.key.clone(),
                operator,
                values: values.iter().cloned().collect::<BTreeSet<String>>(),
            });
        }
    }
    if errors.is_empty() {
        Ok(Selector { requirements })
    } else {
        Err(errors)
    }
}

/// `matchFields` as field requirements (`In` and `NotIn`, one value each).
fn field_requirements(
    requirements: &[NodeSelectorRequirement],
    path: &str,
) -> Result<Vec<FieldRequirement>, Vec<String>> {
    let mut errors = Vec::new();
    let mut parsed = Vec::with_capacity(requirements.len());
    for (i, requirement) in requirements.iter().enumerate() {
        let path = format!("{path}[{i}]");
        let equal = match requirement.operator.as_str() {
            "In" => true,
            "NotIn" => false,
            other => {
                errors.push(format!(
                    "{path}.operator: Invalid value: {other:?}: not a valid selector operator"
                ));
                continue;
            }
        };
        match requirement.values.as_deref().unwrap_or_default() {
            [value] => parsed.push(FieldRequirement {
                key: requirement.key.clone(),
                value: value.clone(),
                equal,
            }),
            values => errors.push(format!(
                "{path}.values: Invalid value: {values:?}: must have one element"
            )),
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// Whether a term has no requirements at all (it selects no node).
pub fn is_empty_term(term: &NodeSelectorTerm) -> bool {
    term.match_expressions.as_ref().is_none_or(Vec::is_empty)
        && term.match_fields.as_ref().is_none_or(Vec::is_empty)
}

/// A parsed `NodeSelector`: its terms, ORed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelectorMatcher {
    terms: Vec<NodeSelectorTermMatcher>,
}

impl NodeSelectorMatcher {
    /// Parses every term; any invalid term is an error (for configurations that must be
    /// valid as a whole).
    pub fn parse(selector: &NodeSelector, path: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        let mut errors = Vec::new();
        for (i, term) in selector.node_selector_terms.iter().enumerate() {
            if is_empty_term(term) {
                continue;
            }
            match NodeSelectorTermMatcher::parse(term, &format!("{path}.nodeSelectorTerms[{i}]")) {
                Ok(term) => terms.push(term),
                Err(e) => errors.extend(e),
            }
        }
        if errors.is_empty() {
            Ok(NodeSelectorMatcher { terms })
        } else {
            Err(errors.join(", "))
        }
    }

    /// Parses the terms, dropping invalid ones (they match no node): how Kubernetes reads
    /// a pod's required node affinity or a volume's (`NewLazyErrorNodeSelector`).
    pub fn parse_lenient(selector: &NodeSelector) -> Self {
        NodeSelectorMatcher {
            terms: selector
                .node_selector_terms
                .iter()
                .filter(|t| !is_empty_term(t))
                .filter_map(|t| NodeSelectorTermMatcher::parse(t, "").ok())
                .collect(),
        }
    }

    /// Whether the node matches any of the terms.
    pub fn matches(&self, node: &impl NodeView) -> bool {
        self.terms.iter().any(|t| t.matches(node))
    }
}

/// Whether `node` matches any term of `selector`, invalid terms matching nothing
/// (`MatchNodeSelectorTerms`).
pub fn match_node_selector_terms(selector: &NodeSelector, node: &impl NodeView) -> bool {
    NodeSelectorMatcher::parse_lenient(selector).matches(node)
}

/// Parsed preferred scheduling terms with their weights (terms of weight 0 dropped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreferredTerms {
    terms: Vec<(NodeSelectorTermMatcher, i64)>,
}

impl PreferredTerms {
    /// Parses the terms; any invalid term is an error.
    pub fn parse(terms: &[PreferredSchedulingTerm], path: &str) -> Result<Self, String> {
        let mut parsed = Vec::with_capacity(terms.len());
        let mut errors = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            if term.weight == 0 {
                continue;
            }
            match NodeSelectorTermMatcher::parse(
                &term.preference,
                &format!("{path}[{i}].preference"),
            ) {
                Ok(matcher) => parsed.push((matcher, i64::from(term.weight))),
                Err(e) => errors.extend(e),
            }
        }
        if errors.is_empty() {
            Ok(PreferredTerms { terms: parsed })
        } else {
            Err(errors.join(", "))
        }
    }

    /// The sum of the weights of the terms the node matches.
    pub fn score(&self, node: &impl NodeView) -> i64 {
        self.terms
            .iter()
            .filter(|(term, _)| term.matches(node))
            .map(|(_, weight)| weight)
            .sum()
    }
}

/// What a node must satisfy for a pod: its `nodeSelector` (every pair) and its required
/// node affinity (any term) — Kubernetes' `GetRequiredNodeAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    node_selector: Vec<(String, String)>,
    /// `None`: no required node affinity.
    affinity: Option<NodeSelectorMatcher>,
}

impl RequiredNodeAffinity {
    /// The pod's required node affinity.
    pub fn new(pod: &Pod) -> Self {
        pod.spec.as_ref().map(Self::from_spec).unwrap_or_default()
    }

    /// The required node affinity of a pod spec (a template's).
    pub fn from_spec(spec: &PodSpec) -> Self {
        RequiredNodeAffinity {
            node_selector: spec
                .node_selector
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            affinity: required_terms(spec).map(NodeSelectorMatcher::parse_lenient),
        }
    }

    /// Whether the pod restricts nodes by affinity or selector at all.
    pub fn is_set(&self) -> bool {
        !self.node_selector.is_empty() || self.affinity.is_some()
    }

    /// Whether the node matches the pod's node selector and required node affinity.
    pub fn matches(&self, node: &impl NodeView) -> bool {
        self.node_selector
            .iter()
            .all(|(key, value)| node.node_label(key) == Some(value.as_str()))
            && self.affinity.as_ref().is_none_or(|a| a.matches(node))
    }
}

/// A pod spec's `requiredDuringSchedulingIgnoredDuringExecution` node selector.
pub fn required_terms(spec: &PodSpec) -> Option<&NodeSelector> {
    spec.affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()
}

/// A pod spec's `preferredDuringSchedulingIgnoredDuringExecution` terms, when it has any.
pub fn preferred_terms(spec: &PodSpec) -> Option<&[PreferredSchedulingTerm]> {
    spec.affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .preferred_during_scheduling_ignored_during_execution
        .as_deref()
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::{Value, json};

    fn node(name: &str, labels: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    fn selector(terms: Value) -> NodeSelector {
        serde_json::from_value(json!({ "nodeSelectorTerms": terms })).unwrap()
    }

    fn expression_matches(expression: Value, labels: Value) -> bool {
        match_node_selector_terms(
            &selector(json!([{ "matchExpressions": [expression] }])),
            &node("n", labels),
        )
    }

    #[test]
    fn requirement_operators() {
        let yes = |e: Value, l: Value| assert!(expression_matches(e.clone(), l.clone()), "{e} {l}");
        let no = |e: Value, l: Value| assert!(!expression_matches(e.clone(), l.clone()), "{e} {l}");
        yes(
            json!({"key": "foo", "operator": "In", "values": ["bar", "x"]}),
            json!({"foo": "bar"}),
        );
        no(
            json!({"key": "foo", "operator": "In", "values": ["bar"]}),
            json!({}),
        );
        no(
            json!({"key": "foo", "operator": "NotIn", "values": ["bar"]}),
            json!({"foo": "bar"}),
        );
        yes(
            json!({"key": "foo", "operator": "NotIn", "values": ["bar"]}),
            json!({}),
        );
        yes(
            json!({"key": "foo", "operator": "Exists"}),
            json!({"foo": ""}),
        );
        no(
            json!({"key": "foo", "operator": "Exists"}),
            json!({"bar": "foo"}),
        );
        yes(
            json!({"key": "foo", "operator": "DoesNotExist"}),
            json!({"bar": "foo"}),
        );
        no(
            json!({"key": "foo", "operator": "DoesNotExist"}),
            json!({"foo": "bar"}),
        );
        yes(
            json!({"key": "v", "operator": "Gt", "values": ["0204"]}),
            json!({"v": "0206"}),
        );
        no(
            json!({"key": "v", "operator": "Gt", "values": ["0204"]}),
            json!({"v": "0204"}),
        );
        yes(
            json!({"key": "mem", "operator": "Lt", "values": ["5"]}),
            json!({"mem": "4"}),
        );
        no(
            json!({"key": "mem", "operator": "Lt", "values": ["5"]}),
            json!({"mem": "5"}),
        );
    }

    #[test]
    fn gt_and_lt_compare_numbers_and_need_exactly_one_integer() {
        // The DaemonSet and volume copies took the first of several values or compared
        // whatever parsed; Kubernetes refuses the requirement (the term matches nothing).
        let gt = |values: Value, label: &str| {
            expression_matches(
                json!({"key": "v", "operator": "Gt", "values": values}),
                json!({ "v": label }),
            )
        };
        assert!(gt(json!(["9"]), "10"), "numbers, not strings");
        assert!(!gt(json!(["1", "2"]), "10"), "two values");
        assert!(!gt(json!([]), "10"), "no value");
        assert!(!gt(json!(["x"]), "10"), "not an integer");
        assert!(!gt(json!(["1"]), "abc"), "label not an integer");
        // "-1" is no valid label value: the term is invalid.
        assert!(!gt(json!(["-1"]), "0"));
        assert!(!expression_matches(
            json!({"key": "v", "operator": "Gt", "values": ["1"]}),
            json!({})
        ));
    }

    #[test]
    fn invalid_terms_match_nothing_but_the_others_still_do() {
        let n = node("n", json!({"foo": "5"}));
        let invalid =
            json!({"matchExpressions": [{"key": "foo", "operator": "Equals", "values": ["5"]}]});
        let bad_key = json!({"matchExpressions": [{"key": "-foo", "operator": "Exists"}]});
        let valid = json!({"matchExpressions": [{"key": "foo", "operator": "Exists"}]});
        assert!(!match_node_selector_terms(
            &selector(json!([invalid.clone()])),
            &n
        ));
        assert!(!match_node_selector_terms(&selector(json!([bad_key])), &n));
        assert!(match_node_selector_terms(
            &selector(json!([invalid, valid])),
            &n
        ));
        assert!(
            NodeSelectorMatcher::parse(
                &selector(json!([{"matchExpressions": [
            {"key": "foo", "operator": "In", "values": []}]}])),
                "x"
            )
            .is_err()
        );
        for empty in [json!([]), json!([{}]), json!([{"matchExpressions": []}])] {
            assert!(!match_node_selector_terms(&selector(empty), &n));
        }
    }

    #[test]
    fn fields_match_the_node_name() {
        let terms = |op: &str, values: Value| {
            selector(
                json!([{"matchFields": [{"key": "metadata.name", "operator": op, "values": values}]}]),
            )
        };
        assert!(match_node_selector_terms(
            &terms("In", json!(["n1"])),
            &node("n1", json!({}))
        ));
        assert!(!match_node_selector_terms(
            &terms("In", json!(["n1"])),
            &node("n2", json!({}))
        ));
        assert!(!match_node_selector_terms(
            &terms("NotIn", json!(["n1"])),
            &node("n1", json!({}))
        ));
        assert!(!match_node_selector_terms(
            &terms("In", json!(["n1", "n2"])),
            &node("n1", json!({}))
        ));
        assert!(!match_node_selector_terms(
            &terms("Exists", json!([])),
            &node("n1", json!({}))
        ));
        let parts = NodeParts {
            name: "n1",
            labels: None,
        };
        assert!(match_node_selector_terms(
            &terms("In", json!(["n1"])),
            &parts
        ));
    }

    #[test]
    fn required_node_affinity_adds_the_node_selector() {
        let pod: Pod = serde_json::from_value(json!({"spec": {"containers": [],
            "nodeSelector": {"foo": "bar"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}}}))
        .unwrap();
        let required = RequiredNodeAffinity::new(&pod);
        assert!(required.is_set());
        assert!(required.matches(&node("n", json!({"foo": "bar", "zone": "z"}))));
        assert!(!required.matches(&node("n", json!({"foo": "bar"}))));
        assert!(!required.matches(&node("n", json!({"zone": "z"}))));
        assert!(RequiredNodeAffinity::default().matches(&node("n", json!({}))));
        assert!(!RequiredNodeAffinity::default().is_set());
    }

    #[test]
    fn preferred_terms_sum_their_weights() {
        let terms: Vec<PreferredSchedulingTerm> = serde_json::from_value(json!([
            {"weight": 2, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
            {"weight": 3, "preference": {"matchExpressions": [{"key": "b", "operator": "Exists"}]}},
            {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
        ]))
        .unwrap();
        let preferred = PreferredTerms::parse(&terms, "p").unwrap();
        assert_eq!(preferred.score(&node("n", json!({"a": "", "b": ""}))), 5);
        assert_eq!(preferred.score(&node("n", json!({"a": ""}))), 2);
    }
}
