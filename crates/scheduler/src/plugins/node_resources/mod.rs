//! The node-resources plugins: [`fit`] (NodeResourcesFit: does the pod fit the node's
//! allocatable resources, and a score by one of three strategies) and [`balanced`]
//! (NodeResourcesBalancedAllocation: favours nodes whose resources stay evenly used). This
//! module holds what both share: the resources they score, each node's allocatable and
//! requested amounts of them as Kubernetes' `resourceAllocationScorer` reads them, and the
//! parsing and validation of their `resources` arguments.

pub mod balanced;
pub mod fit;

use crate::framework::resources::{CPU, EPHEMERAL_STORAGE, MEMORY};
use crate::framework::{NodeInfo, PodInfo};
use kyb_apimachinery::field::{ErrorKind, FieldError};
use serde::Deserialize;
use serde_json::Value;

/// A resource name with a weight, as `resources` arguments give them.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ResourceSpec {
    #[serde(default)]
    pub name: String,
    /// 0 (unset) defaults to 1.
    #[serde(default)]
    pub weight: i64,
}

/// CPU and memory, weight 1 each: the resources scored when the arguments name none.
pub(crate) fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: CPU.into(),
            weight: 1,
        },
        ResourceSpec {
            name: MEMORY.into(),
            weight: 1,
        },
    ]
}

/// How a scored resource is read from pods and nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Cpu,
    Memory,
    EphemeralStorage,
    /// An extended resource, hugepages, or another scalar resource Kubernetes tracks by name.
    Scalar(String),
    /// A name the scheduler does not track per node (`pods`, an unqualified name): never
    /// scored.
    Untracked,
}

/// Whether Kubernetes counts a resource as an extended resource: a name with a domain
/// other than `kubernetes.io`, not a quota `requests.` name.
pub(crate) fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Whether Kubernetes tracks a resource among a node's scalar resources: extended
/// resources, hugepages, `kubernetes.io/` native resources, attachable volumes.
pub(crate) fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

impl Kind {
    fn of(name: &str) -> Kind {
        match name {
            CPU => Kind::Cpu,
            MEMORY => Kind::Memory,
            EPHEMERAL_STORAGE => Kind::EphemeralStorage,
            other if is_scalar_resource_name(other) => Kind::Scalar(other.to_string()),
            _ => Kind::Untracked,
        }
    }
}

/// A resource a score is computed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scored {
    kind: Kind,
    pub weight: i64,
}

/// The resources a plugin scores, and which node total it reads: the requests as they are
/// (`use_requested`, BalancedAllocation) or with the 100m CPU / 200 MiB floor per container
/// (NodeResourcesFit's strategies).
#[derive(Clone, Debug)]
pub(crate) struct ResourceAllocation {
    pub resources: Vec<Scored>,
    use_requested: bool,
}

impl ResourceAllocation {
    pub fn new(specs: &[ResourceSpec], use_requested: bool) -> ResourceAllocation {
        ResourceAllocation {
            resources: specs
                .iter()
                .map(|s| Scored {
                    kind: Kind::of(&s.name),
                    weight: s.weight,
                })
                .collect(),
            use_requested,
        }
    }

    /// What the pod requests of each scored resource, in order.
    pub fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        let cpu_memory = if self.use_requested {
            &pod.requests
        } else {
            &pod.non_zero_requests
        };
        self.resources
            .iter()
            .map(|r| match &r.kind {
                Kind::Cpu => cpu_memory.milli_cpu,
                Kind::Memory => cpu_memory.memory,
                Kind::EphemeralStorage => pod.requests.ephemeral_storage,
                Kind::Scalar(name) => pod.requests.scalar.get(name).copied().unwrap_or(0),
                Kind::Untracked => 0,
            })
            .collect()
    }

    /// The node's allocatable amount of resource `i` and what would be requested there with
    /// the pod: `(0, 0)` — not scored — for a scalar resource the pod does not request, for a
    /// resource the node does not have, or for an untracked one.
    pub fn allocatable_and_requested(
        &self,
        i: usize,
        node: &NodeInfo,
        pod_request: i64,
    ) -> (i64, i64) {
        let Some(resource) = self.resources.get(i) else {
            return (0, 0);
        };
        let requested = if self.use_requested {
            &node.requested
        } else {
            &node.non_zero_requested
        };
        match &resource.kind {
            Kind::Cpu => (
                node.allocatable.milli_cpu,
                requested.milli_cpu.saturating_add(pod_request),
            ),
            Kind::Memory => (
                node.allocatable.memory,
                requested.memory.saturating_add(pod_request),
            ),
            Kind::EphemeralStorage => (
                node.allocatable.ephemeral_storage,
                node.requested.ephemeral_storage.saturating_add(pod_request),
            ),
            Kind::Scalar(_) if pod_request == 0 => (0, 0),
            Kind::Scalar(name) => match node.allocatable.scalar.get(name) {
                Some(allocatable) => (
                    *allocatable,
                    node.requested
                        .scalar
                        .get(name)
                        .copied()
                        .unwrap_or(0)
                        .saturating_add(pod_request),
                ),
                None => (0, 0),
            },
            Kind::Untracked => (0, 0),
        }
    }
}

/// Reads a plugin's arguments (`Value::Null`: none). `apiVersion` and `kind` may be given;
/// any other unknown field is refused, as Kubernetes decodes the configuration strictly.
pub(crate) fn decode_args<T: for<'de> Deserialize<'de> + Default>(
    plugin: &str,
    args: &Value,
) -> Result<T, String> {
    if args.is_null() {
        return Ok(T::default());
    }
    let mut args = args.clone();
    if let Some(object) = args.as_object_mut() {
        object.remove("apiVersion");
        object.remove("kind");
    }
    serde_json::from_value(args).map_err(|e| format!("decoding {plugin} args: {e}"))
}

/// A field error at `field` (a path inside the arguments).
pub(crate) fn field_error(
    kind: ErrorKind,
    field: String,
    value: Option<Value>,
    detail: impl Into<String>,
) -> FieldError {
    FieldError {
        kind,
        field,
        value,
        detail: detail.into(),
    }
}

/// Several field errors as one message, the way Kubernetes aggregates them: the error
/// alone, or `[e1, e2]` (each distinct message once).
pub(crate) fn aggregate(errors: &[FieldError]) -> Result<(), String> {
    let mut messages: Vec<String> = Vec::new();
    for error in errors {
        let message = error.to_string();
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    match messages.as_slice() {
        [] => Ok(()),
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    #![allow(clippy::unwrap_used)]
    //! Pods and nodes for the node-resources tests.

    use crate::framework::testing;
    use crate::framework::{NodeInfo, PodInfo};
    use serde_json::{Value, json};
    use std::sync::Arc;

    /// A pod whose containers request `requests` (one resource list per container).
    pub fn pod(requests: &[Value]) -> Arc<PodInfo> {
        let containers: Vec<Value> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("c{i}"), "resources": {"requests": r}}))
            .collect();
        testing::pod(json!({"metadata": {"name": "incoming"}, "spec": {"containers": containers}}))
    }

    /// A node with `allocatable`, running `pods`.
    pub fn node(name: &str, allocatable: Value, pods: &[Arc<PodInfo>]) -> Arc<NodeInfo> {
        Arc::new(testing::node(
            json!({"metadata": {"name": name}, "status": {"allocatable": allocatable}}),
            pods,
        ))
    }

    /// A pod already on a node (a distinct name each time it is called with a new `n`).
    pub fn running(n: usize, requests: &[Value]) -> Arc<PodInfo> {
        let containers: Vec<Value> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("c{i}"), "resources": {"requests": r}}))
            .collect();
        testing::pod(
            json!({"metadata": {"name": format!("running-{n}")}, "spec": {"containers": containers}}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_name_classes() {
        assert!(is_extended_resource_name("example.com/gpu"));
        assert!(!is_extended_resource_name("kubernetes.io/something"));
        assert!(!is_extended_resource_name("cpu"));
        assert!(!is_extended_resource_name("requests.example.com/gpu"));
        assert!(is_scalar_resource_name("hugepages-2Mi"));
        assert!(is_scalar_resource_name("attachable-volumes-aws-ebs"));
        assert!(!is_scalar_resource_name("pods"));
        assert_eq!(Kind::of("pods"), Kind::Untracked);
        assert_eq!(Kind::of("cpu"), Kind::Cpu);
    }

    #[test]
    fn aggregated_errors() {
        let e = |detail: &str| {
            field_error(
                ErrorKind::Invalid,
                "resources[0].weight".into(),
                Some(2.into()),
                detail,
            )
        };
        assert_eq!(aggregate(&[]), Ok(()));
        assert_eq!(
            aggregate(&[e("must be 1")]),
            Err("resources[0].weight: Invalid value: 2: must be 1".into())
        );
        assert_eq!(
            aggregate(&[e("a"), e("b"), e("a")]),
            Err("[resources[0].weight: Invalid value: 2: a, resources[0].weight: Invalid value: 2: b]".into())
        );
    }
}
