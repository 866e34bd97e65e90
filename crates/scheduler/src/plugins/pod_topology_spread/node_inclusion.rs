//! Which nodes count for a constraint: the incoming pod's required node affinity and node
//! selector (`nodeAffinityPolicy: Honor`) and its tolerations of the node's `NoSchedule` and
//! `NoExecute` taints (`nodeTaintsPolicy: Honor`), compiled once per cycle.
//!
//! Both are `kyb_component_helpers`' rules: node affinity as Kubernetes'
//! `RequiredNodeAffinity` (every `nodeSelector` pair, and any one of the required terms;
//! an empty term, or one that does not parse, selects no node), taints as
//! `ToleratesTaint`.

use crate::framework::NodeInfo;
use k8s_openapi::api::core::v1::{Pod, Toleration};
use kyb_component_helpers::tolerations::tolerate_do_not_schedule;

/// The pod's node selector and required node affinity (`GetRequiredNodeAffinity`).
pub use kyb_component_helpers::nodeaffinity::RequiredNodeAffinity as NodeAffinity;

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
    tolerate_do_not_schedule(tolerations, &node.taints)
}
