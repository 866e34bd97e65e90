//! NodeResourcesFit (PreFilter, Filter, PreScore, Score): does the pod fit in what the node
//! has left, and how good a fit is it.
//!
//! - PreFilter keeps what Filter checks: the pod's requests (containers and sidecars added
//!   up, or the largest init container, plus overhead), with the extended resources the
//!   arguments ignore and zero requests left out.
//! - Filter lists every shortfall of the node, in Kubernetes' words: `Too many pods`,
//!   `Insufficient cpu`, `Insufficient memory`, `Insufficient ephemeral-storage`,
//!   `Insufficient <resource>` for extended resources and hugepages. The status is
//!   `Unschedulable`: evicting pods may make room.
//! - PreScore keeps the pod's request of each scored resource (CPU and memory counted with
//!   Kubernetes' 100m / 200 MiB floor per container that requests none); Score rates the node
//!   by `scoringStrategy.type`: `LeastAllocated` (the default: the free fraction after
//!   placing the pod, weighted), `MostAllocated` (the used fraction, weighted: bin packing)
//!   or `RequestedToCapacityRatio` (a piecewise-linear `shape` of utilization to score).
//!
//! Arguments (`NodeResourcesFitArgs`): `ignoredResources`, `ignoredResourceGroups` (extended
//! resources, or groups of them by domain, Filter does not check), `scoringStrategy` with
//! `type`, `resources` (names and weights, default cpu and memory with weight 1) and
//! `requestedToCapacityRatio.shape` (points `{utilization: 0..100, score: 0..10}`).

use super::{
    ResourceAllocation, ResourceSpec, aggregate, decode_args, default_resources, field_error,
    is_extended_resource_name, is_scalar_resource_name,
};
use crate::framework::{
    ClusterEvent, Code, CycleState, FilterPlugin, Handle, MAX_NODE_SCORE, NodeInfo, Plugin,
    PodInfo, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Snapshot, Status,
};
use kyb_apimachinery::field::{ErrorKind, FieldError};
use kyb_apimachinery::gofmt;
use kyb_apimachinery::names::qualified_name_errors;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

pub const NAME: &str = "NodeResourcesFit";

/// Where PreFilter keeps the pod's requests for Filter.
const PRE_FILTER_KEY: &str = "PreFilterNodeResourcesFit";
/// Where PreScore keeps the pod's requests of the scored resources for Score.
const PRE_SCORE_KEY: &str = "PreScoreNodeResourcesFit";

/// The strategies' names, as `scoringStrategy.type` gives them.
pub const LEAST_ALLOCATED: &str = "LeastAllocated";
pub const MOST_ALLOCATED: &str = "MostAllocated";
pub const REQUESTED_TO_CAPACITY_RATIO: &str = "RequestedToCapacityRatio";

/// The highest score a `shape` point may give (scaled to [`MAX_NODE_SCORE`]).
const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
/// Utilization in percent.
const MAX_UTILIZATION: i64 = 100;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FitArgs {
    #[serde(default)]
    ignored_resources: Option<Vec<String>>,
    #[serde(default)]
    ignored_resource_groups: Option<Vec<String>>,
    #[serde(default)]
    scoring_strategy: Option<ScoringStrategyArgs>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScoringStrategyArgs {
    #[serde(rename = "type", default)]
    strategy: String,
    #[serde(default)]
    resources: Option<Vec<ResourceSpec>>,
    #[serde(default)]
    requested_to_capacity_ratio: Option<RequestedToCapacityRatioArgs>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestedToCapacityRatioArgs {
    #[serde(default)]
    shape: Option<Vec<ShapePoint>>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShapePoint {
    #[serde(default)]
    utilization: i64,
    #[serde(default)]
    score: i64,
}

/// How nodes are scored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScoringStrategy {
    LeastAllocated,
    MostAllocated,
    /// Points `(utilization %, score 0..=100)`, utilization strictly increasing.
    RequestedToCapacityRatio {
        shape: Vec<(i64, i64)>,
    },
}

/// The plugin, with its parsed arguments.
pub struct NodeResourcesFit {
    ignored_resources: BTreeSet<String>,
    ignored_resource_groups: BTreeSet<String>,
    strategy: ScoringStrategy,
    allocation: ResourceAllocation,
}

/// Checks the arguments as Kubernetes validates `NodeResourcesFitArgs` (after defaulting).
fn validate(
    args: &FitArgs,
    strategy: &ScoringStrategyArgs,
    resources: &[ResourceSpec],
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, name) in args.ignored_resources.iter().flatten().enumerate() {
        for message in qualified_name_errors(name) {
            errors.push(field_error(
                ErrorKind::Invalid,
                format!("ignoredResources[{i}]"),
                Some(name.as_str().into()),
                message,
            ));
        }
    }
    for (i, group) in args.ignored_resource_groups.iter().flatten().enumerate() {
        let field = format!("ignoredResourceGroups[{i}]");
        if group.contains('/') {
            errors.push(field_error(
                ErrorKind::Invalid,
                field.clone(),
                Some(group.as_str().into()),
                "resource group name can't contain '/'",
            ));
        }
        for message in qualified_name_errors(group) {
            errors.push(field_error(
                ErrorKind::Invalid,
                field.clone(),
                Some(group.as_str().into()),
                message,
            ));
        }
    }
    let supported = [LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO];
    if !supported.contains(&strategy.strategy.as_str()) {
        let quoted: Vec<String> = supported.iter().map(|s| gofmt::quote(s)).collect();
        errors.push(field_error(
            ErrorKind::NotSupported,
            "scoringStrategy.type".into(),
            Some(strategy.strategy.as_str().into()),
            format!("supported values: {}", quoted.join(", ")),
        ));
    }
    for (i, resource) in resources.iter().enumerate() {
        if resource.weight <= 0 || resource.weight > 100 {
            errors.push(field_error(
                ErrorKind::Invalid,
                format!("scoringStrategy.resources[{i}].weight"),
                Some(resource.weight.into()),
                format!(
                    "resource weight of {} not in valid range (0, 100]",
                    resource.name
                ),
            ));
        }
    }
    match &strategy.requested_to_capacity_ratio {
        Some(ratio) => errors.extend(validate_shape(ratio.shape.as_deref().unwrap_or_default())),
        // Kubernetes requires the shape only implicitly (it cannot build the scorer without
        // one); say so up front.
        None if strategy.strategy == REQUESTED_TO_CAPACITY_RATIO => {
            errors.extend(validate_shape(&[]))
        }
        None => {}
    }
    errors
}

fn validate_shape(shape: &[ShapePoint]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if shape.is_empty() {
        errors.push(field_error(
            ErrorKind::Required,
            "scoringStrategy.shape".into(),
            None,
            "at least one point must be specified",
        ));
        return errors;
    }
    if let Some(i) = (1..shape.len()).find(|&i| shape[i - 1].utilization >= shape[i].utilization) {
        errors.push(field_error(
            ErrorKind::Invalid,
            format!("scoringStrategy.shape[{i}].utilization"),
            Some(shape[i].utilization.into()),
            "values must be sorted in increasing order",
        ));
    }
    for (i, point) in shape.iter().enumerate() {
        if !(0..=MAX_UTILIZATION).contains(&point.utilization) {
            errors.push(field_error(
                ErrorKind::Invalid,
                format!("scoringStrategy.shape[{i}].utilization"),
                Some(point.utilization.into()),
                format!("not in valid range [0, {MAX_UTILIZATION}]"),
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&point.score) {
            errors.push(field_error(
                ErrorKind::Invalid,
                format!("scoringStrategy.shape[{i}].score"),
                Some(point.score.into()),
                format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
    errors
}

/// Builds the plugin from its `NodeResourcesFitArgs`, with Kubernetes' defaults.
pub fn factory(args: &Value, _handle: &Arc<Handle>) -> Result<Arc<dyn Plugin>, String> {
    Ok(Arc::new(NodeResourcesFit::new(args)?))
}

impl NodeResourcesFit {
    pub fn new(args: &Value) -> Result<NodeResourcesFit, String> {
        let args: FitArgs = decode_args(NAME, args)?;
        let default_strategy = ScoringStrategyArgs {
            strategy: LEAST_ALLOCATED.into(),
            ..ScoringStrategyArgs::default()
        };
        let strategy = args.scoring_strategy.as_ref().unwrap_or(&default_strategy);
        let mut resources = strategy
            .resources
            .clone()
            .filter(|r| !r.is_empty())
            .unwrap_or_else(default_resources);
        for resource in &mut resources {
            if resource.weight == 0 {
                resource.weight = 1;
            }
        }
        aggregate(&validate(&args, strategy, &resources))?;
        let scoring = match strategy.strategy.as_str() {
            MOST_ALLOCATED => ScoringStrategy::MostAllocated,
            REQUESTED_TO_CAPACITY_RATIO => ScoringStrategy::RequestedToCapacityRatio {
                shape: strategy
                    .requested_to_capacity_ratio
                    .as_ref()
                    .and_then(|r| r.shape.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        (
                            p.utilization,
                            p.score * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
                        )
                    })
                    .collect(),
            },
            _ => ScoringStrategy::LeastAllocated,
        };
        Ok(NodeResourcesFit {
            ignored_resources: args.ignored_resources.into_iter().flatten().collect(),
            ignored_resource_groups: args.ignored_resource_groups.into_iter().flatten().collect(),
            strategy: scoring,
            allocation: ResourceAllocation::new(&resources, false),
        })
    }

    pub fn strategy(&self) -> &ScoringStrategy {
        &self.strategy
    }

    /// What Filter checks of the pod's requests.
    fn fit_request(&self, pod: &PodInfo) -> FitRequest {
        let requests = &pod.requests;
        let scalars = requests
            .scalar
            .iter()
            .filter(|(name, amount)| {
                **amount != 0 && is_scalar_resource_name(name) && !self.ignores(name)
            })
            .map(|(name, amount)| (name.clone(), *amount))
            .collect();
        FitRequest {
            milli_cpu: requests.milli_cpu,
            memory: requests.memory,
            ephemeral_storage: requests.ephemeral_storage,
            scalars,
        }
    }

    /// Whether the arguments leave an (extended) resource unchecked.
    fn ignores(&self, name: &str) -> bool {
        if !is_extended_resource_name(name) {
            return false;
        }
        self.ignored_resources.contains(name)
            || (!self.ignored_resource_groups.is_empty()
                && name
                    .split('/')
                    .next()
                    .is_some_and(|group| self.ignored_resource_groups.contains(group)))
    }

    /// The node's score for a pod requesting `requests` of the scored resources.
    fn score_node(&self, requests: &[i64], node: &NodeInfo) -> i64 {
        let mut node_score: i128 = 0;
        let mut weight_sum: i128 = 0;
        for (i, resource) in self.allocation.resources.iter().enumerate() {
            let pod_request = requests.get(i).copied().unwrap_or(0);
            let (allocatable, requested) =
                self.allocation
                    .allocatable_and_requested(i, node, pod_request);
            if allocatable == 0 {
                continue;
            }
            let (allocatable, requested) = (i128::from(allocatable), i128::from(requested));
            let weight = i128::from(resource.weight);
            let max = i128::from(MAX_NODE_SCORE);
            match &self.strategy {
                ScoringStrategy::LeastAllocated => {
                    let score = if requested > allocatable {
                        0
                    } else {
                        (allocatable - requested) * max / allocatable
                    };
                    node_score += score * weight;
                    weight_sum += weight;
                }
                ScoringStrategy::MostAllocated => {
                    // Requests may exceed what is allocatable (pods without requests count
                    // the per-container floor).
                    let score = requested.min(allocatable) * max / allocatable;
                    node_score += score * weight;
                    weight_sum += weight;
                }
                ScoringStrategy::RequestedToCapacityRatio { shape } => {
                    let utilization = if requested > allocatable {
                        i128::from(MAX_UTILIZATION)
                    } else {
                        requested * i128::from(MAX_UTILIZATION) / allocatable
                    };
                    let score = i128::from(broken_linear(shape, utilization));
                    // Only resources scoring above zero count, weights included.
                    if score > 0 {
                        node_score += score * weight;
                        weight_sum += weight;
                    }
                }
            }
        }
        if weight_sum == 0 {
            return 0;
        }
        let score = match self.strategy {
            ScoringStrategy::RequestedToCapacityRatio { .. } => {
                // Rounded half away from zero, as Go's math.Round.
                (node_score as f64 / weight_sum as f64).round() as i128
            }
            _ => node_score / weight_sum,
        };
        i64::try_from(score).unwrap_or(0)
    }
}

/// The piecewise-linear function through `shape`'s points (constant before the first and
/// after the last), in integer arithmetic as Kubernetes computes it.
fn broken_linear(shape: &[(i64, i64)], utilization: i128) -> i64 {
    let mut previous: Option<(i64, i64)> = None;
    for &(u, s) in shape {
        if utilization <= i128::from(u) {
            let Some((pu, ps)) = previous else {
                return s;
            };
            let value = i128::from(ps)
                + i128::from(s - ps) * (utilization - i128::from(pu)) / i128::from(u - pu);
            return i64::try_from(value).unwrap_or(0);
        }
        previous = Some((u, s));
    }
    shape.last().map_or(0, |&(_, s)| s)
}

/// The pod's requests as Filter checks them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct FitRequest {
    milli_cpu: i64,
    memory: i64,
    ephemeral_storage: i64,
    /// Scalar resources requested (non-zero, not ignored), by name.
    scalars: Vec<(String, i64)>,
}

/// The pod's requests of the scored resources, in the order of the arguments.
#[derive(Clone, Debug)]
struct ScoreRequest(Vec<i64>);

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Room appears when a node is added or grows, or a pod goes away or shrinks.
    fn events(&self) -> &'static [ClusterEvent] {
        &[
            ClusterEvent::NodeAdd,
            ClusterEvent::NodeUpdate,
            ClusterEvent::PodDelete,
            ClusterEvent::PodUpdate,
        ]
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }

    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodeResourcesFit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(PRE_FILTER_KEY, self.fit_request(pod));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeResourcesFit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let computed;
        let request = match state.read::<FitRequest>(PRE_FILTER_KEY) {
            Some(request) => request,
            None => {
                computed = self.fit_request(pod);
                &computed
            }
        };
        let allocatable = &node.allocatable;
        let requested = &node.requested;
        let free = |allocatable: i64, requested: i64| allocatable.saturating_sub(requested);
        // Nothing is allocated unless the node refuses the pod.
        let mut reasons: Vec<String> = Vec::new();
        let pods = i64::try_from(node.pods.len()).unwrap_or(i64::MAX);
        if pods.saturating_add(1) > allocatable.allowed_pods {
            reasons.push("Too many pods".into());
        }
        if request.milli_cpu > 0
            && request.milli_cpu > free(allocatable.milli_cpu, requested.milli_cpu)
        {
            reasons.push("Insufficient cpu".into());
        }
        if request.memory > 0 && request.memory > free(allocatable.memory, requested.memory) {
            reasons.push("Insufficient memory".into());
        }
        if request.ephemeral_storage > 0
            && request.ephemeral_storage
                > free(allocatable.ephemeral_storage, requested.ephemeral_storage)
        {
            reasons.push("Insufficient ephemeral-storage".into());
        }
        for (name, amount) in &request.scalars {
            let available = free(
                allocatable.scalar.get(name).copied().unwrap_or(0),
                requested.scalar.get(name).copied().unwrap_or(0),
            );
            if *amount > available {
                reasons.push(format!("Insufficient {name}"));
            }
        }
        if reasons.is_empty() {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, reasons)
        }
    }
}

impl PreScorePlugin for NodeResourcesFit {
    fn pre_score(&self, state: &mut CycleState, pod: &PodInfo, _nodes: &[Arc<NodeInfo>]) -> Status {
        state.write(
            PRE_SCORE_KEY,
            ScoreRequest(self.allocation.pod_requests(pod)),
        );
        Status::success()
    }
}

impl ScorePlugin for NodeResourcesFit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> (i64, Status) {
        let score = match state.read::<ScoreRequest>(PRE_SCORE_KEY) {
            Some(ScoreRequest(requests)) => self.score_node(requests, node),
            None => self.score_node(&self.allocation.pod_requests(pod), node),
        };
        (score, Status::success())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::test_support::{node, pod, running};
    use super::*;
    use crate::framework::testing;
    use serde_json::json;

    fn plugin(args: Value) -> NodeResourcesFit {
        NodeResourcesFit::new(&args).unwrap()
    }

    fn filter(plugin: &NodeResourcesFit, pod: &PodInfo, node: &NodeInfo) -> Status {
        let mut state = CycleState::new();
        let (result, status) = plugin.pre_filter(&mut state, pod, &Snapshot::new(vec![]));
        assert!(status.is_success() && result.is_none());
        plugin.filter(&state, pod, node)
    }

    /// Runs PreScore and Score on each node.
    fn scores(plugin: &NodeResourcesFit, pod: &PodInfo, nodes: &[Arc<NodeInfo>]) -> Vec<i64> {
        let mut state = CycleState::new();
        assert!(plugin.pre_score(&mut state, pod, nodes).is_success());
        nodes
            .iter()
            .map(|n| {
                let (score, status) = plugin.score(&state, pod, n);
                assert!(status.is_success());
                score
            })
            .collect()
    }

    /// A node with 10m CPU, 20 bytes of memory and of ephemeral storage, room for 32 pods,
    /// 5 `example.com/foo` and 5 `hugepages-2Mi`, running one pod requesting `used`.
    fn small_node(used: Value) -> Arc<NodeInfo> {
        node(
            "n",
            json!({"cpu": "10m", "memory": "20", "ephemeral-storage": "20", "pods": "32",
                "example.com/foo": "5", "hugepages-2Mi": "5"}),
            &[running(0, &[used])],
        )
    }

    fn refused(status: &Status, reasons: &[&str]) -> bool {
        status.code() == Code::Unschedulable && status.reasons() == reasons
    }

    #[test]
    fn a_pod_requesting_nothing_always_fits() {
        let p = plugin(Value::Null);
        let full = small_node(json!({"cpu": "10m", "memory": "20"}));
        assert!(filter(&p, &pod(&[json!({})]), &full).is_success());
    }

    #[test]
    fn every_insufficient_resource_is_listed() {
        let p = plugin(Value::Null);
        let full = small_node(json!({"cpu": "10m", "memory": "20"}));
        let status = filter(&p, &pod(&[json!({"cpu": "1m", "memory": "1"})]), &full);
        assert!(
            refused(&status, &["Insufficient cpu", "Insufficient memory"]),
            "{status}"
        );
        let half = small_node(json!({"cpu": "5m", "memory": "19"}));
        let status = filter(&p, &pod(&[json!({"cpu": "1m", "memory": "2"})]), &half);
        assert!(refused(&status, &["Insufficient memory"]), "{status}");
        // An exact fit fits.
        let status = filter(&p, &pod(&[json!({"cpu": "5m", "memory": "1"})]), &half);
        assert!(status.is_success());
        // Containers add up.
        let status = filter(
            &p,
            &pod(&[json!({"cpu": "3m"}), json!({"cpu": "3m"})]),
            &half,
        );
        assert!(refused(&status, &["Insufficient cpu"]));
    }

    #[test]
    fn the_largest_init_container_counts() {
        let p = plugin(Value::Null);
        let n = small_node(json!({"cpu": "8m", "memory": "19"}));
        let incoming = testing::pod(json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3m", "memory": "1"}}}],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1m", "memory": "1"}}}]}}));
        assert!(refused(&filter(&p, &incoming, &n), &["Insufficient cpu"]));
        let roomy = small_node(json!({"cpu": "7m", "memory": "19"}));
        assert!(filter(&p, &incoming, &roomy).is_success());
    }

    #[test]
    fn ephemeral_storage_extended_resources_and_hugepages() {
        let p = plugin(Value::Null);
        let n = small_node(
            json!({"ephemeral-storage": "10", "example.com/foo": "3", "hugepages-2Mi": "2"}),
        );
        let status = filter(&p, &pod(&[json!({"ephemeral-storage": "11"})]), &n);
        assert!(refused(&status, &["Insufficient ephemeral-storage"]));
        let status = filter(&p, &pod(&[json!({"example.com/foo": "3"})]), &n);
        assert!(refused(&status, &["Insufficient example.com/foo"]));
        assert!(filter(&p, &pod(&[json!({"example.com/foo": "2"})]), &n).is_success());
        let status = filter(&p, &pod(&[json!({"hugepages-2Mi": "4"})]), &n);
        assert!(refused(&status, &["Insufficient hugepages-2Mi"]));
        // A resource the node does not have at all.
        let status = filter(&p, &pod(&[json!({"example.com/bar": "1"})]), &n);
        assert!(refused(&status, &["Insufficient example.com/bar"]));
        // A zero request is no request.
        assert!(filter(&p, &pod(&[json!({"example.com/bar": "0"})]), &n).is_success());
    }

    #[test]
    fn too_many_pods_comes_first() {
        let p = plugin(Value::Null);
        let n = node(
            "n",
            json!({"cpu": "1", "memory": "1Gi", "pods": "1", "example.com/foo": "1"}),
            &[running(0, &[json!({"cpu": "500m"})])],
        );
        assert!(refused(
            &filter(&p, &pod(&[json!({})]), &n),
            &["Too many pods"]
        ));
        let status = filter(
            &p,
            &pod(&[
                json!({"cpu": "600m", "memory": "2Gi", "ephemeral-storage": "1",
                "example.com/foo": "2", "example.com/bar": "1"}),
            ]),
            &n,
        );
        assert!(
            refused(
                &status,
                &[
                    "Too many pods",
                    "Insufficient cpu",
                    "Insufficient memory",
                    "Insufficient ephemeral-storage",
                    "Insufficient example.com/bar",
                    "Insufficient example.com/foo",
                ]
            ),
            "{status}"
        );
    }

    #[test]
    fn ignored_resources_and_groups_are_not_checked() {
        let n = small_node(json!({}));
        let wants =
            pod(&[json!({"example.com/bar": "1", "other.io/baz": "1", "hugepages-2Mi": "9"})]);
        let p = plugin(json!({"ignoredResources": ["example.com/bar"]}));
        assert!(refused(
            &filter(&p, &wants, &n),
            &["Insufficient hugepages-2Mi", "Insufficient other.io/baz"]
        ));
        let p = plugin(json!({"ignoredResourceGroups": ["other.io", "example.com"]}));
        assert!(refused(
            &filter(&p, &wants, &n),
            &["Insufficient hugepages-2Mi"]
        ));
        // Only extended resources can be ignored.
        let p = plugin(json!({"ignoredResources": ["hugepages-2Mi"]}));
        assert!(refused(
            &filter(&p, &pod(&[json!({"hugepages-2Mi": "9"})]), &n),
            &["Insufficient hugepages-2Mi"]
        ));
    }

    #[test]
    fn filter_without_pre_filter_state_computes_it() {
        let p = plugin(Value::Null);
        let n = small_node(json!({"cpu": "10m"}));
        let status = p.filter(&CycleState::new(), &pod(&[json!({"cpu": "1m"})]), &n);
        assert!(refused(&status, &["Insufficient cpu"]));
    }

    /// Kubernetes' example: two containers requesting 1000m + 2000m CPU and 2000 + 3000 bytes
    /// of memory, on a 4-CPU and a 6-CPU node with 10000 bytes each.
    fn differently_sized_nodes() -> (Arc<PodInfo>, Vec<Arc<NodeInfo>>) {
        let incoming = pod(&[
            json!({"cpu": "1000m", "memory": "2000"}),
            json!({"cpu": "2000m", "memory": "3000"}),
        ]);
        let nodes = vec![
            node("node1", json!({"cpu": "4000m", "memory": "10000"}), &[]),
            node("node2", json!({"cpu": "6000m", "memory": "10000"}), &[]),
        ];
        (incoming, nodes)
    }

    #[test]
    fn least_allocated() {
        let p = plugin(Value::Null);
        assert_eq!(p.strategy(), &ScoringStrategy::LeastAllocated);
        let (incoming, nodes) = differently_sized_nodes();
        // node1: cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 → 37.
        // node2: cpu 50, memory 50 → 50.
        assert_eq!(scores(&p, &incoming, &nodes), [37, 50]);

        // A pod without requests counts 100m and 200 MiB; so do the pods already there.
        let nodes = [
            node("empty", json!({"cpu": "4", "memory": "4Gi"}), &[]),
            node(
                "busy",
                json!({"cpu": "4", "memory": "4Gi"}),
                &[running(0, &[json!({})]), running(1, &[json!({"cpu": "1"})])],
            ),
        ];
        // empty: cpu 3900*100/4000 = 97, memory 3896Mi*100/4096Mi = 95 → 96.
        // busy: cpu (4000-1200)*100/4000 = 70, memory (4096-600)*100/4096 = 85 → 77.
        assert_eq!(scores(&p, &pod(&[json!({})]), &nodes), [96, 77]);

        // Requests beyond the node score 0 for that resource.
        let big = pod(&[json!({"cpu": "5", "memory": "2Gi"})]);
        assert_eq!(scores(&p, &big, &nodes[..1]), [25]);
    }

    #[test]
    fn weights_and_extended_resources() {
        let p = plugin(
            json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
            {"name": "example.com/gpu", "weight": 2}]}}),
        );
        let nodes = [
            node(
                "gpu",
                json!({"cpu": "4", "memory": "4Gi", "example.com/gpu": "4"}),
                &[],
            ),
            node("plain", json!({"cpu": "4", "memory": "4Gi"}), &[]),
        ];
        let incoming = pod(&[json!({"cpu": "2", "memory": "1Gi", "example.com/gpu": "1"})]);
        // gpu: (50*1 + 75*1 + 75*2) / 4 = 68; plain: the GPU is not scored: (50 + 75) / 2 = 62.
        assert_eq!(scores(&p, &incoming, &nodes), [68, 62]);
        // A pod not requesting the GPU is not scored on it.
        assert_eq!(
            scores(&p, &pod(&[json!({"cpu": "2", "memory": "1Gi"})]), &nodes),
            [62, 62]
        );
    }

    #[test]
    fn most_allocated() {
        let p = plugin(json!({"scoringStrategy": {"type": "MostAllocated"}}));
        assert_eq!(p.strategy(), &ScoringStrategy::MostAllocated);
        let (incoming, nodes) = differently_sized_nodes();
        // node1: cpu 75, memory 50 → 62; node2: 50, 50 → 50.
        assert_eq!(scores(&p, &incoming, &nodes), [62, 50]);
        // Requests beyond the node count as all of it.
        let one = [node("n", json!({"cpu": "4", "memory": "4Gi"}), &[])];
        assert_eq!(
            scores(&p, &pod(&[json!({"cpu": "5", "memory": "1Gi"})]), &one),
            [62]
        );
        // Without requests: cpu 100*100/4000 = 2, memory 200*100/4096 = 4 → 3.
        assert_eq!(scores(&p, &pod(&[json!({})]), &one), [3]);
    }

    #[test]
    fn requested_to_capacity_ratio() {
        // The shape of LeastAllocated: 10 at 0% down to 0 at 100%.
        let p = plugin(
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                {"utilization": 100, "score": 0}]}}}),
        );
        assert_eq!(
            p.strategy(),
            &ScoringStrategy::RequestedToCapacityRatio {
                shape: vec![(0, 100), (100, 0)]
            }
        );
        let (incoming, nodes) = differently_sized_nodes();
        // node1: cpu 75% → 25, memory 50% → 50; (25 + 50) / 2 = 37.5, rounded: 38.
        assert_eq!(scores(&p, &incoming, &nodes), [38, 50]);
    }

    #[test]
    fn requested_to_capacity_ratio_documented_example() {
        // Kubernetes' "Resource Bin Packing" example: shape 0 → 0, 100 → 10; intel.com/foo
        // weight 5, memory 1, cpu 3; the pod requests 2 foo, 256 MiB, 2 CPU.
        let p = plugin(
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 5}, {"name": "memory", "weight": 1},
                {"name": "cpu", "weight": 3}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                {"utilization": 100, "score": 10}]}}}),
        );
        let incoming = pod(&[json!({"intel.com/foo": "2", "memory": "256Mi", "cpu": "2"})]);
        let nodes = [
            node(
                "node1",
                json!({"intel.com/foo": "4", "memory": "1Gi", "cpu": "8"}),
                &[running(
                    0,
                    &[json!({"intel.com/foo": "1", "memory": "256Mi", "cpu": "1"})],
                )],
            ),
            node(
                "node2",
                json!({"intel.com/foo": "8", "memory": "1Gi", "cpu": "8"}),
                &[running(
                    1,
                    &[json!({"intel.com/foo": "2", "memory": "512Mi", "cpu": "6"})],
                )],
            ),
        ];
        // node1: foo 3/4 → 75, memory 512/1024 → 50, cpu 3/8 → 37;
        //        (75*5 + 50*1 + 37*3) / 9 = 59.6 → 60.
        // node2: foo 4/8 → 50, memory 768/1024 → 75, cpu 8/8 → 100;
        //        (50*5 + 75*1 + 100*3) / 9 = 69.4 → 69.
        assert_eq!(scores(&p, &incoming, &nodes), [60, 69]);
    }

    #[test]
    fn requested_to_capacity_ratio_counts_only_resources_scoring_above_zero() {
        // 0 up to 50% utilization, then up to 10 at 100%.
        let p = plugin(
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                {"utilization": 50, "score": 0}, {"utilization": 100, "score": 10}]}}}),
        );
        let nodes = [node("n", json!({"cpu": "4", "memory": "4Gi"}), &[])];
        // cpu 25% → 0 (left out with its weight), memory 75% → 50: the node scores 50.
        assert_eq!(
            scores(&p, &pod(&[json!({"cpu": "1", "memory": "3Gi"})]), &nodes),
            [50]
        );
        // Past the last point the score stays; before the first too.
        assert_eq!(broken_linear(&[(10, 30), (90, 70)], 100), 70);
        assert_eq!(broken_linear(&[(10, 30), (90, 70)], 0), 30);
        assert_eq!(broken_linear(&[(10, 30), (90, 70)], 50), 50);
    }

    #[test]
    fn score_without_pre_score_state_computes_it() {
        let p = plugin(Value::Null);
        let (incoming, nodes) = differently_sized_nodes();
        let (score, status) = p.score(&CycleState::new(), &incoming, &nodes[0]);
        assert!(status.is_success());
        assert_eq!(score, 37);
    }

    #[test]
    fn args_defaults_and_validation() {
        let p = plugin(json!({"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "NodeResourcesFitArgs", "scoringStrategy": {"type": "MostAllocated",
            "resources": [{"name": "cpu"}, {"name": "memory", "weight": 3}]}}));
        assert_eq!(
            p.allocation
                .resources
                .iter()
                .map(|r| r.weight)
                .collect::<Vec<_>>(),
            [1, 3]
        );
        let error = |args: Value| NodeResourcesFit::new(&args).err().unwrap();
        assert_eq!(
            error(json!({"scoringStrategy": {"type": "Random"}})),
            "scoringStrategy.type: Unsupported value: \"Random\": supported values: \
             \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
        );
        assert_eq!(
            error(json!({"scoringStrategy": {"resources": [{"name": "cpu"}]}})),
            "scoringStrategy.type: Unsupported value: \"\": supported values: \
             \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
        );
        assert_eq!(
            error(json!({"scoringStrategy": {"type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 101}, {"name": "memory", "weight": -1}]}})),
            "[scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu \
             not in valid range (0, 100], scoringStrategy.resources[1].weight: Invalid value: -1: \
             resource weight of memory not in valid range (0, 100]]"
        );
        assert_eq!(
            error(json!({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})),
            "scoringStrategy.shape: Required value: at least one point must be specified"
        );
        assert_eq!(
            error(
                json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11},
                    {"utilization": 40, "score": 5}, {"utilization": 101, "score": 0}]}}})
            ),
            "[scoringStrategy.shape[1].utilization: Invalid value: 40: values must be sorted in \
             increasing order, scoringStrategy.shape[0].score: Invalid value: 11: not in valid \
             range [0, 10], scoringStrategy.shape[2].utilization: Invalid value: 101: not in \
             valid range [0, 100]]"
        );
        assert_eq!(
            error(json!({"ignoredResourceGroups": ["example.com/foo"]})),
            "ignoredResourceGroups[0]: Invalid value: \"example.com/foo\": resource group name \
             can't contain '/'"
        );
        assert_eq!(
            error(json!({"ignoredResourceGroups": ["example.com", "/foo"]})),
            "[ignoredResourceGroups[1]: Invalid value: \"/foo\": resource group name can't \
             contain '/', ignoredResourceGroups[1]: Invalid value: \"/foo\": prefix part must \
             be non-empty]"
        );
        assert!(
            error(json!({"ignoredResources": ["bad name"]})).starts_with(
                "ignoredResources[0]: Invalid value: \"bad name\": name part must consist of"
            )
        );
        assert!(error(json!({"unknownField": 1})).starts_with("decoding NodeResourcesFit args:"));
    }
}
