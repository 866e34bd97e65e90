//! ControllerRevisions: the template history of StatefulSets and DaemonSets, as
//! Kubernetes' `controller/history` package keeps it.
//!
//! A revision is named `<owner>-<hash>`, labelled with the owner's template labels plus
//! `controller.kubernetes.io/hash: <hash>`, controlled by its owner, and holds as `data`
//! the patch that restores the owner's template (`{"spec":{"template":{…,"$patch":
//! "replace"}}}`, which is what `kubectl rollout undo` applies). Its `revision` number is
//! one more than the highest of the owner's revisions; a template equal to an older
//! revision's re-uses (and bumps) that revision instead of adding one. A hash collision
//! with a different template bumps the owner's `collisionCount`, which feeds the hash.
//! Revisions beyond `revisionHistoryLimit` that no live pod uses are deleted, oldest first.

use crate::ownership::{self, Claim};
use crate::selector;
use anyhow::Context as _;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kyb_runtime::informer::Informer;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// The label holding a revision's hash.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// The label pods carry naming the revision they were made from.
pub const POD_REVISION_LABEL: &str = "controller-revision-hash";

/// The patch a revision stores for a template.
pub fn template_patch(template: &PodTemplateSpec) -> anyhow::Result<Value> {
    let mut template = serde_json::to_value(template).context("serializing the template")?;
    if let Value::Object(map) = &mut template {
        map.insert("$patch".into(), json!("replace"));
    }
    Ok(json!({"spec": {"template": template}}))
}

/// The template a revision's data restores.
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = revision
        .data
        .as_ref()?
        .0
        .get("spec")?
        .get("template")?
        .clone();
    if let Value::Object(map) = &mut template {
        map.remove("$patch");
    }
    serde_json::from_value(template).ok()
}

/// FNV-1a, 32 bits.
fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Kubernetes' `rand.SafeEncodeString`: no vowels, no confusable characters.
pub fn safe_encode(s: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

/// The hash of a revision's data, salted by the collision count.
pub fn hash(data: &Value, collision_count: Option<i32>) -> String {
    let mut bytes = serde_json::to_vec(data).unwrap_or_default();
    if let Some(count) = collision_count {
        bytes.extend_from_slice(&count.to_le_bytes());
    }
    safe_encode(&fnv32a(&bytes).to_string())
}

/// `<prefix>-<hash>`, the prefix cut so the name fits 253 characters.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let limit = 223.min(prefix.len());
    let mut cut = limit;
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{hash}", &prefix[..cut])
}

/// What identifies an owner for its history.
pub struct Owner<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    pub reference: OwnerReference,
    pub selector: Option<&'a LabelSelector>,
    pub template_labels: BTreeMap<String, String>,
    pub deleting: bool,
}

impl<'a> Owner<'a> {
    /// A StatefulSet or DaemonSet (not being deleted) as the owner of the revisions of
    /// its pod `template`.
    pub fn of<K: kube::Resource<DynamicType = ()>>(
        set: &'a K,
        selector: &'a LabelSelector,
        template: &PodTemplateSpec,
    ) -> Owner<'a> {
        let meta = set.meta();
        Owner {
            name: meta.name.as_deref().unwrap_or_default(),
            namespace: meta.namespace.as_deref().unwrap_or_default(),
            uid: meta.uid.as_deref().unwrap_or_default(),
            reference: ownership::controller_reference(set),
            selector: Some(selector),
            template_labels: template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.clone())
                .unwrap_or_default(),
            deleting: false,
        }
    }
}

/// One owner's revisions: claimed from the informer, then brought up to date.
pub struct History {
    pub api: Api<ControllerRevision>,
}

impl History {
    pub fn new(client: kube::Client, namespace: &str) -> History {
        History {
            api: Api::namespaced(client, namespace),
        }
    }

    /// The owner's revisions (adopting selected orphans, releasing unselected ones),
    /// sorted by revision number.
    pub async fn claim(
        &self,
        informer: &Informer<ControllerRevision>,
        owner: &Owner<'_>,
    ) -> anyhow::Result<Vec<ControllerRevision>> {
        let mut owned = vec![];
        for revision in informer.list_namespace(owner.namespace) {
            let selected = owner
                .selector
                .is_some_and(|s| selector::matches(s, revision.metadata.labels.as_ref()));
            match ownership::claim(owner.uid, &revision.metadata, selected) {
                Claim::Owned => owned.push((*revision).clone()),
                Claim::Adopt if !owner.deleting => {
                    match ownership::adopt(&self.api, &revision.metadata, &owner.reference).await {
                        Ok(adopted) => owned.push(adopted),
                        Err(error) => {
                            tracing::debug!(%error, "adopting a ControllerRevision");
                        }
                    }
                }
                Claim::Release => {
                    let _ = ownership::release(&self.api, &revision.metadata, owner.uid).await;
                }
                _ => {}
            }
        }
        owned.sort_by_key(|r| {
            (
                r.revision,
                r.metadata.creation_timestamp.clone().map(|t| t.0),
            )
        });
        Ok(owned)
    }

    /// The revision for `data`: an existing equal one (bumped to the newest number when it
    /// is not already the newest) or a new one. `revisions` is updated in place;
    /// `collision_count` is bumped on a hash collision.
    pub async fn ensure(
        &self,
        owner: &Owner<'_>,
        data: &Value,
        revisions: &mut Vec<ControllerRevision>,
        collision_count: &mut i32,
    ) -> anyhow::Result<ControllerRevision> {
        let newest = revisions.iter().map(|r| r.revision).max().unwrap_or(0);
        if let Some(index) = revisions
            .iter()
            .rposition(|r| r.data.as_ref().map(|d| &d.0) == Some(data))
        {
            if revisions[index].revision == newest {
                return Ok(revisions[index].clone());
            }
            let name = revisions[index].metadata.name.clone().unwrap_or_default();
            let patch = json!({"revision": newest + 1});
            let bumped = self
                .api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("bumping ControllerRevision {name}"))?;
            revisions[index] = bumped.clone();
            return Ok(bumped);
        }
        loop {
            let hash = hash(data, Some(*collision_count).filter(|c| *c != 0));
            let mut labels = owner.template_labels.clone();
            labels.insert(HASH_LABEL.into(), hash.clone());
            let revision = ControllerRevision {
                metadata: ObjectMeta {
                    name: Some(revision_name(owner.name, &hash)),
                    namespace: Some(owner.namespace.to_string()),
                    labels: Some(labels),
                    owner_references: Some(vec![owner.reference.clone()]),
                    ..Default::default()
                },
                data: Some(RawExtension(data.clone())),
                revision: newest + 1,
            };
            match self.api.create(&PostParams::default(), &revision).await {
                Ok(created) => {
                    revisions.push(created.clone());
                    return Ok(created);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    let name = revision.metadata.name.clone().unwrap_or_default();
                    let existing = self
                        .api
                        .get(&name)
                        .await
                        .with_context(|| format!("reading ControllerRevision {name}"))?;
                    let ours = ownership::controller_of(&existing.metadata)
                        .is_some_and(|r| r.uid == owner.uid);
                    if ours && existing.data.as_ref().map(|d| &d.0) == Some(data) {
                        revisions.push(existing.clone());
                        return Ok(existing);
                    }
                    *collision_count += 1;
                }
                Err(error) => {
                    return Err(error).context("creating a ControllerRevision");
                }
            }
        }
    }

    /// Deletes the oldest revisions beyond `limit` that are not in `live` (names of the
    /// current and update revisions and those pods use).
    pub async fn truncate(
        &self,
        revisions: &[ControllerRevision],
        live: &HashSet<String>,
        limit: i32,
    ) -> anyhow::Result<()> {
        let history: Vec<&ControllerRevision> = revisions
            .iter()
            .filter(|r| !live.contains(r.metadata.name.as_deref().unwrap_or_default()))
            .collect();
        let excess = history
            .len()
            .saturating_sub(usize::try_from(limit.max(0)).unwrap_or(0));
        for revision in history.into_iter().take(excess) {
            let name = revision.metadata.name.as_deref().unwrap_or_default();
            match self.api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(error) => {
                    return Err(error).with_context(|| format!("deleting revision {name}"));
                }
            }
        }
        Ok(())
    }
}

/// Shares the pattern of the two controllers: a revision handler's keys.
pub fn owner_key(revision: &Arc<ControllerRevision>, kind: &str) -> Option<(String, String)> {
    let owner = ownership::controller_of(&revision.metadata)?;
    (owner.kind == kind).then(|| {
        (
            revision.metadata.namespace.clone().unwrap_or_default(),
            owner.name.clone(),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn template(image: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": image}]},
        }))
        .unwrap()
    }

    #[test]
    fn patch_round_trips() {
        let data = template_patch(&template("nginx")).unwrap();
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        let revision = ControllerRevision {
            data: Some(RawExtension(data)),
            ..Default::default()
        };
        assert_eq!(template_of(&revision).unwrap(), template("nginx"));
    }

    #[test]
    fn hashes_differ_by_template_and_collisions() {
        let a = template_patch(&template("a")).unwrap();
        let b = template_patch(&template("b")).unwrap();
        assert_eq!(hash(&a, None), hash(&a, None));
        assert_ne!(hash(&a, None), hash(&b, None));
        assert_ne!(hash(&a, None), hash(&a, Some(1)));
        assert!(
            hash(&a, None)
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
    }

    #[test]
    fn names_fit() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        assert_eq!(revision_name(&"x".repeat(300), "h").len(), 225);
    }
}
