//! The node's heartbeat: the Lease `kube-node-lease/<node>` (`holderIdentity` the node,
//! `leaseDurationSeconds` 40, owned by the Node so it goes with it), created when missing
//! and renewed every 10 s by an update of the last Lease seen, as the kubelet's lease
//! controller does. The node lifecycle controller reads `renewTime` to tell a live node.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Api, PostParams};
use std::time::Duration;

/// The namespace of node Leases.
pub const NAMESPACE: &str = "kube-node-lease";

/// Renews one node's Lease.
pub struct LeaseRenewer {
    api: Api<Lease>,
    node_name: String,
    duration: Duration,
    last: Option<Lease>,
}

/// The owner reference of a node's Lease.
pub fn owner_reference(node: &Node) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "v1".to_string(),
        kind: "Node".to_string(),
        name: node.metadata.name.clone()?,
        uid: node.metadata.uid.clone()?,
        ..Default::default()
    })
}

/// The Lease as renewed `now` by `node_name`, keeping `base`'s metadata and adding the
/// owner reference when it has none.
pub fn renewed(
    base: Option<&Lease>,
    node_name: &str,
    duration: Duration,
    owner: Option<OwnerReference>,
    now: jiff::Timestamp,
) -> Lease {
    let mut lease = base.cloned().unwrap_or_else(|| Lease {
        metadata: ObjectMeta {
            name: Some(node_name.to_string()),
            namespace: Some(NAMESPACE.to_string()),
            ..Default::default()
        },
        spec: None,
    });
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(node_name.to_string());
    spec.lease_duration_seconds = Some(i32::try_from(duration.as_secs()).unwrap_or(i32::MAX));
    spec.renew_time = Some(MicroTime(now));
    if lease
        .metadata
        .owner_references
        .as_ref()
        .is_none_or(|refs| refs.is_empty())
    {
        lease.metadata.owner_references = owner.map(|o| vec![o]);
    }
    lease
}

impl LeaseRenewer {
    pub fn new(client: kube::Client, node_name: &str, duration: Duration) -> LeaseRenewer {
        LeaseRenewer {
            api: Api::namespaced(client, NAMESPACE),
            node_name: node_name.to_string(),
            duration,
            last: None,
        }
    }

    /// Renews the Lease (creating it if it does not exist); `node` gives the owner
    /// reference once the Node is known. On a conflict the next renewal starts from a
    /// fresh read.
    pub async fn renew(&mut self, node: Option<&Node>) -> anyhow::Result<()> {
        let owner = node.and_then(owner_reference);
        if self.last.is_none() {
            match self.api.get_opt(&self.node_name).await {
                Ok(found) => self.last = found,
                Err(e) => {
                    return Err(anyhow::Error::new(e).context("failed to get the node lease"));
                }
            }
        }
        let now = jiff::Timestamp::now();
        let lease = renewed(
            self.last.as_ref(),
            &self.node_name,
            self.duration,
            owner,
            now,
        );
        let result = if self.last.is_none() {
            self.api.create(&PostParams::default(), &lease).await
        } else {
            self.api
                .replace(&self.node_name, &PostParams::default(), &lease)
                .await
        };
        match result {
            Ok(lease) => {
                self.last = Some(lease);
                Ok(())
            }
            Err(e) => {
                self.last = None;
                Err(anyhow::Error::new(e).context("failed to update the node lease"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_new_lease_is_held_by_the_node_and_owned_by_it() {
        let mut node = Node::default();
        node.metadata.name = Some("n1".into());
        node.metadata.uid = Some("uid-1".into());
        let now: jiff::Timestamp = "2026-01-01T00:00:00.123456Z".parse().unwrap();
        let lease = renewed(
            None,
            "n1",
            Duration::from_secs(40),
            owner_reference(&node),
            now,
        );
        assert_eq!(lease.metadata.namespace.as_deref(), Some("kube-node-lease"));
        let spec = lease.spec.as_ref().unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(MicroTime(now)));
        let owner = &lease.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Node", "uid-1"));
        // Without the Node yet, no owner; it is added on a later renewal.
        let bare = renewed(None, "n1", Duration::from_secs(40), None, now);
        assert!(bare.metadata.owner_references.is_none());
        let later = renewed(
            Some(&bare),
            "n1",
            Duration::from_secs(40),
            owner_reference(&node),
            now,
        );
        assert_eq!(later.metadata.owner_references.unwrap().len(), 1);
    }
}
