//! Registration: the Node the kubelet creates (`initialNode`: its default labels,
//! `--node-labels`, `--register-with-taints`, the attach-detach annotation, and its first
//! status), and `tryRegisterWithAPIServer`: create it, or, when it exists, reconcile the
//! default labels of the existing Node. The `node.kubernetes.io/not-ready` taint of a new
//! node is the API server's (the TaintNodesByCondition admission plugin), the other
//! condition taints the node lifecycle controller's: the kubelet adds none of them.

use super::options::NodeOptions;
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kyb_node_sys::machine;
use std::collections::BTreeMap;

/// The labels the kubelet keeps current on its Node at every registration.
const DEFAULT_LABELS: [&str; 12] = [
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "node.kubernetes.io/windows-build",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// The Node as first registered, with `status` (the kubelet registers with its status).
pub fn initial_node(options: &NodeOptions, status: NodeStatus) -> Node {
    let arch = machine::go_arch();
    let mut labels: BTreeMap<String, String> = [
        ("kubernetes.io/hostname", options.node_name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", arch),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", arch),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    labels.extend(options.labels.clone());
    Node {
        metadata: ObjectMeta {
            name: Some(options.node_name.clone()),
            labels: Some(labels),
            annotations: Some(
                [(
                    "volumes.kubernetes.io/controller-managed-attach-detach".to_string(),
                    "true".to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: (!options.taints.is_empty()).then(|| options.taints.clone()),
            ..Default::default()
        }),
        status: Some(status),
    }
}

/// The kubelet's `updateDefaultLabels`: sets the existing Node's default labels to the
/// initial Node's values (dropping empty ones); whether anything changed.
pub fn reconcile_default_labels(initial: &Node, existing: &mut Node) -> bool {
    let wanted = initial.metadata.labels.clone().unwrap_or_default();
    let labels = existing.metadata.labels.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for key in DEFAULT_LABELS {
        let Some(value) = wanted.get(key) else {
            continue;
        };
        if labels.get(key) != Some(value) {
            labels.insert(key.to_string(), value.clone());
            changed = true;
        }
        if labels.get(key).is_some_and(String::is_empty) {
            labels.remove(key);
        }
    }
    changed
}

/// One registration attempt: creates the Node, or reconciles an existing one's default
/// labels. Returns the Node as the API server has it.
pub async fn try_register(api: &Api<Node>, initial: &Node) -> anyhow::Result<Node> {
    let name = initial.metadata.name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), initial).await {
        Ok(node) => {
            tracing::info!(node = %name, "registered the node");
            return Ok(node);
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => {
            return Err(anyhow::Error::new(e).context("unable to register node with API server"));
        }
    }
    let mut existing = api
        .get(&name)
        .await
        .map_err(|e| anyhow::Error::new(e).context("unable to get the existing node"))?;
    tracing::info!(node = %name, "node was previously registered");
    if reconcile_default_labels(initial, &mut existing) {
        let patch = serde_json::json!({"metadata": {"labels": existing.metadata.labels}});
        existing = api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| anyhow::Error::new(e).context("updating the node's default labels"))?;
    }
    Ok(existing)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::PathBuf;

    fn options() -> NodeOptions {
        let mut options = NodeOptions::new("n1", PathBuf::from("/"), "v1.33.0");
        options.labels.insert("tier".into(), "web".into());
        options.taints = super::super::options::parse_taints("gpu=yes:NoSchedule").unwrap();
        options
    }

    #[test]
    fn the_initial_node_has_the_kubelet_s_labels_taints_and_annotation() {
        let node = initial_node(&options(), NodeStatus::default());
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "n1");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["beta.kubernetes.io/arch"], machine::go_arch());
        assert_eq!(labels["tier"], "web");
        let annotations = node.metadata.annotations.as_ref().unwrap();
        assert_eq!(
            annotations["volumes.kubernetes.io/controller-managed-attach-detach"],
            "true"
        );
        let taints = node.spec.as_ref().unwrap().taints.as_ref().unwrap();
        assert_eq!(taints.len(), 1);
        assert_eq!(taints[0].key, "gpu");
        let plain = initial_node(
            &NodeOptions::new("n2", PathBuf::from("/"), "v"),
            NodeStatus::default(),
        );
        assert!(plain.spec.unwrap().taints.is_none());
    }

    #[test]
    fn only_default_labels_are_reconciled() {
        let initial = initial_node(&options(), NodeStatus::default());
        let mut existing = Node::default();
        existing.metadata.labels = Some(
            [
                ("kubernetes.io/os".to_string(), "windows".to_string()),
                ("mine".to_string(), "x".to_string()),
            ]
            .into(),
        );
        assert!(reconcile_default_labels(&initial, &mut existing));
        let labels = existing.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/hostname"], "n1");
        assert_eq!(labels["mine"], "x");
        // --node-labels are not reconciled on an existing node, as in the kubelet.
        assert!(!labels.contains_key("tier"));
        assert!(!reconcile_default_labels(&initial, &mut existing));
    }
}
