//! ReplicaSets as a Deployment sees them: the `pod-template-hash` that names them and
//! their templates, template equality ignoring that label, and the revision annotations
//! (`deployment.kubernetes.io/revision`, `revision-history`, `desired-replicas`,
//! `max-replicas`) with the Deployment's own annotations copied onto its new ReplicaSet.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use std::collections::BTreeMap;

pub const HASH_LABEL: &str = "pod-template-hash";
pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
const ROLLBACK_TO: &str = "deprecated.deployment.rollback.to";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The longest `revision-history` kept, in characters.
const MAX_HISTORY_CHARS: usize = 2000;

/// Characters of encoded hashes: no vowels (no words), no look-alikes.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The `pod-template-hash` of `template` with `collision_count`: an FNV-1a hash of the
/// template's serialized form (and the count), its decimal digits mapped to safe
/// characters.
pub fn template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u32::from(*b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(&serde_json::to_vec(template).unwrap_or_default());
    if let Some(count) = collision_count {
        feed(&count.to_le_bytes());
    }
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

fn without_hash(template: &PodTemplateSpec) -> PodTemplateSpec {
    let mut t = template.clone();
    if let Some(meta) = t.metadata.as_mut()
        && let Some(labels) = meta.labels.as_mut()
    {
        labels.remove(HASH_LABEL);
        if labels.is_empty() {
            meta.labels = None;
        }
    }
    t
}

/// Whether two templates are equal but for the `pod-template-hash` label.
pub fn equal_ignoring_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    without_hash(a) == without_hash(b)
}

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

/// A ReplicaSet's revision (0 when unset or malformed).
pub fn revision(rs: &ReplicaSet) -> i64 {
    annotation(&rs.metadata, REVISION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// An integer annotation of a ReplicaSet.
pub fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    annotation(&rs.metadata, key).and_then(|v| v.parse().ok())
}

fn set(annotations: &mut BTreeMap<String, String>, key: &str, value: String) -> bool {
    if annotations.get(key) == Some(&value) {
        return false;
    }
    annotations.insert(key.to_string(), value);
    true
}

/// Sets `desired-replicas` and `max-replicas`; whether anything changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let a = set(annotations, DESIRED_REPLICAS, desired.to_string());
    let b = set(annotations, MAX_REPLICAS, max.to_string());
    a || b
}

/// Copies the Deployment's annotations (but the revision bookkeeping and kubectl's
/// last-applied configuration) onto its new ReplicaSet and raises the ReplicaSet's
/// revision to `new_revision`, remembering the old one in `revision-history`. Whether
/// anything changed.
pub fn set_new_rs_annotations(d: &Deployment, rs: &mut ReplicaSet, new_revision: i64) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if [
            REVISION,
            REVISION_HISTORY,
            DESIRED_REPLICAS,
            MAX_REPLICAS,
            ROLLBACK_TO,
            LAST_APPLIED,
        ]
        .contains(&k.as_str())
        {
            continue;
        }
        changed |= set(annotations, k, v.clone());
    }
    let old = annotations.get(REVISION).cloned().unwrap_or_default();
    let old_number: i64 = if old.is_empty() {
        0
    } else {
        match old.parse() {
            Ok(n) => n,
            Err(_) => return changed,
        }
    };
    if old_number < new_revision {
        annotations.insert(REVISION.to_string(), new_revision.to_string());
        changed = true;
        if !old.is_empty() {
            let mut history: Vec<String> = annotations
                .get(REVISION_HISTORY)
                .map(|h| {
                    h.split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            history.push(old);
            while history.join(",").len() > MAX_HISTORY_CHARS && history.len() > 1 {
                history.remove(0);
            }
            annotations.insert(REVISION_HISTORY.to_string(), history.join(","));
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn template(image: &str, hash: Option<&str>) -> PodTemplateSpec {
        let mut labels = json!({"app": "web"});
        if let Some(h) = hash {
            labels[HASH_LABEL] = json!(h);
        }
        serde_json::from_value(json!({
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": image}]},
        }))
        .unwrap()
    }

    #[test]
    fn hashes_are_stable_safe_and_change_with_template_and_collisions() {
        let a = template_hash(&template("v1", None), None);
        assert_eq!(a, template_hash(&template("v1", None), None));
        assert!(a.bytes().all(|b| ALPHANUMS.contains(&b)) && !a.is_empty() && a.len() <= 10);
        assert_ne!(a, template_hash(&template("v2", None), None));
        assert_ne!(a, template_hash(&template("v1", None), Some(1)));
        assert!(equal_ignoring_hash(
            &template("v1", Some(&a)),
            &template("v1", None)
        ));
        assert!(!equal_ignoring_hash(
            &template("v1", Some(&a)),
            &template("v2", None)
        ));
    }

    #[test]
    fn revisions_move_up_and_keep_history() {
        let d: Deployment = serde_json::from_value(json!({"metadata": {"annotations": {
            "kubernetes.io/change-cause": "v2", REVISION: "9",
            LAST_APPLIED: "{}"}}}))
        .unwrap();
        let mut rs: ReplicaSet =
            serde_json::from_value(json!({"metadata": {"annotations": {REVISION: "1"}}})).unwrap();
        assert!(set_new_rs_annotations(&d, &mut rs, 3));
        let a = rs.metadata.annotations.clone().unwrap();
        assert_eq!(a[REVISION], "3");
        assert_eq!(a[REVISION_HISTORY], "1");
        assert_eq!(a["kubernetes.io/change-cause"], "v2");
        assert!(!a.contains_key(LAST_APPLIED));
        assert!(!set_new_rs_annotations(&d, &mut rs, 3));
        assert!(set_new_rs_annotations(&d, &mut rs, 5));
        assert_eq!(
            rs.metadata.annotations.as_ref().unwrap()[REVISION_HISTORY],
            "1,3"
        );
        assert_eq!(revision(&rs), 5);
        assert!(set_replicas_annotations(&mut rs, 3, 4));
        assert!(!set_replicas_annotations(&mut rs, 3, 4));
        assert_eq!(int_annotation(&rs, MAX_REPLICAS), Some(4));
    }
}
