//! Controller references (`metadata.ownerReferences` with `controller: true`): building
//! them, finding an object's controller, and claiming objects for a controller as
//! Kubernetes' `ControllerRefManager` does — adopt matching orphans, release owned objects
//! that no longer match, ignore objects another controller owns.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams};
use serde::de::DeserializeOwned;
use serde_json::json;
use std::fmt::Debug;

/// The controller reference of `meta`, if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// The controller reference `owner` puts on what it creates (`controller` and
/// `blockOwnerDeletion` true).
pub fn controller_reference<K: kube::Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    let meta = owner.meta();
    OwnerReference {
        api_version: K::api_version(&()).to_string(),
        kind: K::kind(&()).to_string(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// What claiming decides for one candidate object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Owned by this controller and still selected: keep.
    Owned,
    /// An orphan the selector matches: adopt it (unless the owner is being deleted).
    Adopt,
    /// Owned but no longer selected: release it.
    Release,
    /// Not ours (another controller's, or unselected orphan).
    Ignore,
}

/// Decides what to do with `object` for the owner whose UID is `owner_uid`, given whether
/// the owner's selector matches it.
pub fn claim(owner_uid: &str, object: &ObjectMeta, selected: bool) -> Claim {
    match controller_of(object) {
        Some(r) if r.uid == owner_uid => {
            if selected {
                Claim::Owned
            } else {
                Claim::Release
            }
        }
        Some(_) => Claim::Ignore,
        None if selected && object.deletion_timestamp.is_none() => Claim::Adopt,
        None => Claim::Ignore,
    }
}

/// Adds `reference` as `object`'s controller (a merge patch guarded by the object's UID
/// and resourceVersion, so a concurrent change makes it fail with 409 rather than clobber
/// another owner).
pub async fn adopt<K>(
    api: &Api<K>,
    object: &ObjectMeta,
    reference: &OwnerReference,
) -> kube::Result<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    let mut references = object.owner_references.clone().unwrap_or_default();
    references.retain(|r| r.uid != reference.uid);
    references.push(reference.clone());
    let patch = json!({"metadata": {
        "ownerReferences": references,
        "uid": object.uid,
        "resourceVersion": object.resource_version,
    }});
    api.patch(
        object.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
}

/// Removes the owner `owner_uid` from `object`'s references (guarded as [`adopt`]).
pub async fn release<K>(api: &Api<K>, object: &ObjectMeta, owner_uid: &str) -> kube::Result<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    let mut references = object.owner_references.clone().unwrap_or_default();
    references.retain(|r| r.uid != owner_uid);
    let references = if references.is_empty() {
        serde_json::Value::Null
    } else {
        json!(references)
    };
    let patch = json!({"metadata": {
        "ownerReferences": references,
        "uid": object.uid,
        "resourceVersion": object.resource_version,
    }});
    api.patch(
        object.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
}

/// The index of pods (and ReplicaSets) by their controller reference's UID, shared by
/// every controller that finds the objects it controls.
pub const CONTROLLER_UID: &str = "controller-uid";
/// The index of pods without a controller, by namespace.
pub const ORPHANS: &str = "orphans-by-namespace";

/// Index values of `meta` for [`CONTROLLER_UID`].
pub fn controller_uid(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<String> {
    controller_of(meta)
        .map(|r| r.uid.clone())
        .into_iter()
        .collect()
}

/// Index values of `meta` for [`ORPHANS`].
pub fn orphan_namespace(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<String> {
    if controller_of(meta).is_none() {
        vec![meta.namespace.clone().unwrap_or_default()]
    } else {
        vec![]
    }
}

/// An owner's pods, claimed as Kubernetes' `ClaimPods` does and read one at a time: the
/// pods it controls (the [`CONTROLLER_UID`] index) and its namespace's orphans
/// ([`ORPHANS`]). Each owned pod still `selected` goes to `keep` (parsed once, then
/// dropped: a sync of thousands of pods never holds thousands of whole pods); selected
/// orphans are adopted (unless the owner is being deleted) and go to `keep` as adopted;
/// owned pods no longer selected are released. Only the few pods to adopt or release are
/// held whole. A pod gone meanwhile is skipped; other failures are errors.
pub async fn claim_pods(
    pods: &kyb_runtime::informer::Informer<Pod, kyb_runtime::compact::Compacted>,
    api: &Api<Pod>,
    owner: &ObjectMeta,
    reference: &OwnerReference,
    selected: impl Fn(&Pod) -> bool,
    mut keep: impl FnMut(&Pod),
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let uid = owner.uid.as_deref().unwrap_or_default();
    let namespace = owner.namespace.as_deref().unwrap_or_default();
    let deleting = owner.deletion_timestamp.is_some();
    let mut to_change = vec![];
    let mut sort = |pod: std::sync::Arc<Pod>| match claim(uid, &pod.metadata, selected(&pod)) {
        Claim::Owned => keep(&pod),
        Claim::Adopt if !deleting => to_change.push((pod, Claim::Adopt)),
        Claim::Release => to_change.push((pod, Claim::Release)),
        Claim::Adopt | Claim::Ignore => {}
    };
    pods.visit_index(CONTROLLER_UID, uid, &mut sort);
    pods.visit_index(ORPHANS, namespace, &mut sort);
    let gone = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
    for (pod, claimed) in to_change {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        if matches!(claimed, Claim::Adopt) {
            match adopt(api, &pod.metadata, reference).await {
                Ok(adopted) => keep(&adopted),
                Err(e) if gone(&e) => {}
                Err(e) => return Err(e).with_context(|| format!("adopting pod {name}")),
            }
        } else {
            match release(api, &pod.metadata, uid).await {
                Ok(_) => {}
                Err(e) if gone(&e) => {}
                Err(e) => return Err(e).with_context(|| format!("releasing pod {name}")),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn meta(owner: Option<&str>, deleting: bool) -> ObjectMeta {
        serde_json::from_value(serde_json::json!({
            "name": "p",
            "ownerReferences": owner.map(|uid| vec![serde_json::json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid,
                "controller": true,
            })]),
            "deletionTimestamp": if deleting { Some("2026-01-01T00:00:00Z") } else { None },
        }))
        .unwrap()
    }

    #[test]
    fn claims() {
        assert_eq!(claim("me", &meta(Some("me"), false), true), Claim::Owned);
        assert_eq!(claim("me", &meta(Some("me"), false), false), Claim::Release);
        assert_eq!(
            claim("me", &meta(Some("other"), false), true),
            Claim::Ignore
        );
        assert_eq!(claim("me", &meta(None, false), true), Claim::Adopt);
        assert_eq!(claim("me", &meta(None, true), true), Claim::Ignore);
        assert_eq!(claim("me", &meta(None, false), false), Claim::Ignore);
    }
}
