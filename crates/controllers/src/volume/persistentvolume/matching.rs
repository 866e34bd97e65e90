//! Which PersistentVolume a claim may bind to — pure functions over the objects.
//!
//! Kubernetes' static binding rules: a claim gets the *smallest* Available volume of its
//! storage class (`""` = volumes without a class) that offers every access mode it asks
//! for, is at least as large as its storage request, has the same volume mode and carries
//! labels matching the claim's `spec.selector`. Volumes are looked at in groups by their
//! set of access modes, the groups with the fewest modes first, so a claim for
//! `ReadWriteOnce` prefers an RWO volume to a larger-but-fitting RWO+RWX one only when
//! the RWO group has a fit. A volume pre-bound to the claim (`spec.claimRef` naming it)
//! wins over all others; volumes pre-bound to other claims are never chosen. With a node
//! to bind for (`volume.kubernetes.io/selected-node` of WaitForFirstConsumer claims), the
//! volume's `spec.nodeAffinity` must also allow that node.

use crate::selector;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kyb_component_helpers::nodeaffinity;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The legacy annotation that names a claim's or volume's class (wins over the field).
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// The class a claim asks for (`""`: volumes without a class).
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(class) = annotation(&claim.metadata.annotations, ANN_STORAGE_CLASS) {
        return class;
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// The class a volume belongs to (`""`: none).
pub fn volume_class(volume: &PersistentVolume) -> &str {
    if let Some(class) = annotation(&volume.metadata.annotations, ANN_STORAGE_CLASS) {
        return class;
    }
    volume
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

fn annotation<'a>(map: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    map.as_ref()?.get(key).map(String::as_str)
}

/// The claim's storage request, in nano-units (0 when it asks for none).
pub fn claim_request(claim: &PersistentVolumeClaim) -> i128 {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| parse_quantity(&q.0))
        .unwrap_or(0)
}

/// The volume's storage capacity, in nano-units (0 when it has none).
pub fn volume_capacity(volume: &PersistentVolume) -> i128 {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| parse_quantity(&q.0))
        .unwrap_or(0)
}

/// A resource quantity (`5Gi`, `500M`, `1.5G`, `1e9`, `100m`) in nano-units, exactly;
/// `None` if malformed. Values too large for `i128` saturate.
pub fn parse_quantity(text: &str) -> Option<i128> {
    kyb_apimachinery::quantity::parse_scaled(text, 9)
}

/// Whether the claim and the volume disagree on `Filesystem` vs `Block`.
pub fn volume_mode_mismatch(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let claim_mode = claim.spec.as_ref().and_then(|s| s.volume_mode.as_deref());
    let volume_mode = volume.spec.as_ref().and_then(|s| s.volume_mode.as_deref());
    claim_mode.unwrap_or("Filesystem") != volume_mode.unwrap_or("Filesystem")
}

fn claim_modes(claim: &PersistentVolumeClaim) -> &[String] {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

fn volume_modes(volume: &PersistentVolume) -> &[String] {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

/// Whether the volume offers every access mode the claim asks for.
pub fn access_modes_offered(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let offered = volume_modes(volume);
    claim_modes(claim).iter().all(|m| offered.contains(m))
}

/// Whether the volume's `claimRef` names this claim (a `claimRef` without a UID is a
/// user's pre-binding and names any claim of that namespace and name).
pub fn is_bound_to(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name != claim.metadata.name || r.namespace != claim.metadata.namespace {
        return false;
    }
    match r.uid.as_deref() {
        None | Some("") => true,
        Some(uid) => claim.metadata.uid.as_deref() == Some(uid),
    }
}

/// Why a volume the claim names in `spec.volumeName` cannot serve it (Kubernetes'
/// wording, shown in the `VolumeMismatch` event), or `Ok`.
pub fn check_satisfies(
    claim: &PersistentVolumeClaim,
    volume: &PersistentVolume,
) -> Result<(), String> {
    if volume.metadata.deletion_timestamp.is_some() {
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        return Err(format!("the volume is marked for deletion {name:?}"));
    }
    if volume_capacity(volume) < claim_request(claim) {
        return Err("requested PV is too small".to_string());
    }
    if volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".to_string());
    }
    if volume_mode_mismatch(claim, volume) {
        return Err("incompatible volumeMode".to_string());
    }
    if !access_modes_offered(claim, volume) {
        return Err("incompatible accessMode".to_string());
    }
    Ok(())
}

/// The node a claim is to be bound for: its name and labels.
pub type NodeTarget<'a> = nodeaffinity::NodeParts<'a>;

/// Whether the volume's required node affinity allows `node` (no affinity: any node),
/// matched as the scheduler matches node affinity (`kyb_component_helpers::nodeaffinity`).
pub fn node_affinity_allows(volume: &PersistentVolume, node: NodeTarget<'_>) -> bool {
    let Some(required) = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return true;
    };
    nodeaffinity::match_node_selector_terms(required, &node)
}

/// The volume for an unbound claim without `spec.volumeName`, if any.
///
/// `node` is the node to bind for; `delay_binding` says the claim's class waits for a
/// consumer and no node is chosen yet (then only a volume pre-bound to the claim is
/// returned).
pub fn find_best_match<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &'a [Arc<PersistentVolume>],
    node: Option<NodeTarget<'_>>,
    delay_binding: bool,
) -> Option<&'a Arc<PersistentVolume>> {
    let offers_modes = |v: &&'a Arc<PersistentVolume>| access_modes_offered(claim, v);
    // A volume pre-bound to this claim (or bound to it before a crash) wins.
    if let Some(prebound) = volumes
        .iter()
        .filter(offers_modes)
        .find(|v| is_bound_to(v, claim) && !volume_mode_mismatch(claim, v))
    {
        let allowed = node.is_none_or(|n| node_affinity_allows(prebound, n));
        return allowed.then_some(prebound);
    }
    if delay_binding && node.is_none() {
        return None;
    }
    // Group the candidates by their set of access modes, fewest modes first.
    let mut groups: BTreeMap<(usize, BTreeSet<&str>), Vec<&'a Arc<PersistentVolume>>> =
        BTreeMap::new();
    for volume in volumes.iter().filter(offers_modes) {
        let modes: BTreeSet<&str> = volume_modes(volume).iter().map(String::as_str).collect();
        groups.entry((modes.len(), modes)).or_default().push(volume);
    }
    let class = claim_class(claim);
    let request = claim_request(claim);
    let selector = claim.spec.as_ref().and_then(|s| s.selector.as_ref());
    groups.into_values().find_map(|group| {
        group
            .into_iter()
            .filter(|v| {
                !volume_mode_mismatch(claim, v)
                    && v.metadata.deletion_timestamp.is_none()
                    && v.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available")
                    && v.spec.as_ref().is_some_and(|s| s.claim_ref.is_none())
                    && selector.is_none_or(|s| selector::matches(s, v.metadata.labels.as_ref()))
                    && volume_class(v) == class
                    && node.is_none_or(|n| node_affinity_allows(v, n))
                    && volume_capacity(v) >= request
            })
            .min_by_key(|v| volume_capacity(v))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn pv(name: &str, size: &str, extra: serde_json::Value) -> Arc<PersistentVolume> {
        let mut object = json!({
            "metadata": {"name": name, "uid": format!("uid-{name}")},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/mnt/data"},
                "persistentVolumeReclaimPolicy": "Retain",
                "volumeMode": "Filesystem",
            },
            "status": {"phase": "Available"},
        });
        merge(&mut object, extra);
        Arc::new(serde_json::from_value(object).unwrap())
    }

    fn pvc(extra: serde_json::Value) -> PersistentVolumeClaim {
        let mut object = json!({
            "metadata": {"name": "data", "namespace": "default", "uid": "claim-uid"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "3Gi"}},
                "storageClassName": "",
                "volumeMode": "Filesystem",
            },
        });
        merge(&mut object, extra);
        serde_json::from_value(object).unwrap()
    }

    fn merge(base: &mut serde_json::Value, patch: serde_json::Value) {
        match (base, patch) {
            (serde_json::Value::Object(b), serde_json::Value::Object(p)) => {
                for (k, v) in p {
                    if v.is_null() {
                        b.remove(&k);
                    } else {
                        merge(b.entry(k).or_insert(serde_json::Value::Null), v);
                    }
                }
            }
            (b, p) => *b = p,
        }
    }

    fn pick(claim: &PersistentVolumeClaim, volumes: &[Arc<PersistentVolume>]) -> Option<String> {
        find_best_match(claim, volumes, None, false).map(|v| v.metadata.name.clone().unwrap())
    }

    #[test]
    fn quantities() {
        let gi = 1i128 << 30;
        let nano = 1_000_000_000i128;
        for (text, want) in [
            ("5Gi", Some(5 * gi * nano)),
            ("1G", Some(1_000_000_000 * nano)),
            ("1.5Gi", Some(3 * (gi / 2) * nano)),
            ("500Mi", Some(500 * (1 << 20) * nano)),
            ("1e3", Some(1000 * nano)),
            ("100m", Some(100_000_000)),
            ("1k", Some(1000 * nano)),
            ("-1", Some(-nano)),
            ("", None),
            ("Gi", None),
            ("5GB", None),
            ("1.2.3", None),
        ] {
            assert_eq!(parse_quantity(text), want, "{text}");
        }
        assert!(parse_quantity("1Gi") > parse_quantity("1G"));
        assert_eq!(parse_quantity("1024Mi"), parse_quantity("1Gi"));
    }

    #[test]
    fn the_smallest_adequate_volume_wins() {
        let volumes = [
            pv("pv-1g", "1Gi", json!({})),
            pv("pv-10g", "10Gi", json!({})),
            pv("pv-5g", "5Gi", json!({})),
        ];
        assert_eq!(pick(&pvc(json!({})), &volumes).as_deref(), Some("pv-5g"));
        let exact = pvc(json!({"spec": {"resources": {"requests": {"storage": "10Gi"}}}}));
        assert_eq!(pick(&exact, &volumes).as_deref(), Some("pv-10g"));
        let huge = pvc(json!({"spec": {"resources": {"requests": {"storage": "11Gi"}}}}));
        assert_eq!(pick(&huge, &volumes), None);
    }

    #[test]
    fn what_rules_a_volume_out() {
        let base = || pvc(json!({}));
        // (description, volume, claim, chosen?)
        let cases: Vec<(&str, Arc<PersistentVolume>, PersistentVolumeClaim, bool)> = vec![
            ("plain", pv("v", "5Gi", json!({})), base(), true),
            (
                "not Available yet",
                pv("v", "5Gi", json!({"status": {"phase": "Pending"}})),
                base(),
                false,
            ),
            (
                "Released",
                pv("v", "5Gi", json!({"status": {"phase": "Released"}})),
                base(),
                false,
            ),
            (
                "another class",
                pv("v", "5Gi", json!({"spec": {"storageClassName": "slow"}})),
                base(),
                false,
            ),
            (
                "the class asked for",
                pv("v", "5Gi", json!({"spec": {"storageClassName": "slow"}})),
                pvc(json!({"spec": {"storageClassName": "slow"}})),
                true,
            ),
            (
                "class by the beta annotation",
                pv(
                    "v",
                    "5Gi",
                    json!({"metadata": {"annotations": {ANN_STORAGE_CLASS: "slow"}}}),
                ),
                pvc(json!({"spec": {"storageClassName": "slow"}})),
                true,
            ),
            (
                "a class-less claim and a classed volume",
                pv("v", "5Gi", json!({"spec": {"storageClassName": "slow"}})),
                pvc(json!({"spec": {"storageClassName": null}})),
                false,
            ),
            (
                "missing access mode",
                pv("v", "5Gi", json!({})),
                pvc(json!({"spec": {"accessModes": ["ReadWriteMany"]}})),
                false,
            ),
            (
                "access modes a superset",
                pv(
                    "v",
                    "5Gi",
                    json!({"spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}}),
                ),
                pvc(json!({"spec": {"accessModes": ["ReadOnlyMany"]}})),
                true,
            ),
            (
                "block volume, filesystem claim",
                pv("v", "5Gi", json!({"spec": {"volumeMode": "Block"}})),
                base(),
                false,
            ),
            (
                "block both",
                pv("v", "5Gi", json!({"spec": {"volumeMode": "Block"}})),
                pvc(json!({"spec": {"volumeMode": "Block"}})),
                true,
            ),
            (
                "selector matches",
                pv("v", "5Gi", json!({"metadata": {"labels": {"tier": "db"}}})),
                pvc(json!({"spec": {"selector": {"matchLabels": {"tier": "db"}}}})),
                true,
            ),
            (
                "selector does not match",
                pv("v", "5Gi", json!({"metadata": {"labels": {"tier": "web"}}})),
                pvc(json!({"spec": {"selector": {"matchLabels": {"tier": "db"}}}})),
                false,
            ),
            (
                "selector expression",
                pv("v", "5Gi", json!({"metadata": {"labels": {"tier": "web"}}})),
                pvc(json!({"spec": {"selector": {"matchExpressions": [
                    {"key": "tier", "operator": "NotIn", "values": ["db"]}]}}})),
                true,
            ),
            (
                "pre-bound to another claim",
                pv(
                    "v",
                    "5Gi",
                    json!({"spec": {"claimRef": {"namespace": "default", "name": "other"}}}),
                ),
                base(),
                false,
            ),
            (
                "being deleted",
                pv(
                    "v",
                    "5Gi",
                    json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
                ),
                base(),
                false,
            ),
        ];
        for (what, volume, claim, chosen) in cases {
            assert_eq!(pick(&claim, &[volume]).is_some(), chosen, "{what}");
        }
    }

    #[test]
    fn a_volume_prebound_to_the_claim_wins() {
        let prebound = pv(
            "pre",
            "10Gi",
            json!({"spec": {"claimRef": {"namespace": "default", "name": "data"}}}),
        );
        let volumes = [pv("small", "5Gi", json!({})), prebound];
        assert_eq!(pick(&pvc(json!({})), &volumes).as_deref(), Some("pre"));
        // Even while the claim waits for a consumer.
        let claim = pvc(json!({}));
        assert!(find_best_match(&claim, &volumes, None, true).is_some());
        assert!(find_best_match(&claim, &volumes[..1], None, true).is_none());
        // A claimRef with another claim's UID names another claim.
        let stale = pv(
            "stale",
            "5Gi",
            json!({"spec": {"claimRef": {"namespace": "default", "name": "data", "uid": "old"}},
                   "status": {"phase": "Released"}}),
        );
        assert_eq!(pick(&pvc(json!({})), &[stale]), None);
        // Bound to this claim before (a crash between the binding steps): chosen again.
        let half = pv(
            "half",
            "5Gi",
            json!({"spec": {"claimRef": {"namespace": "default", "name": "data", "uid": "claim-uid"}},
                   "status": {"phase": "Bound"}}),
        );
        let volumes = [pv("other", "5Gi", json!({})), half];
        assert_eq!(pick(&pvc(json!({})), &volumes).as_deref(), Some("half"));
    }

    #[test]
    fn volumes_with_fewer_access_modes_are_preferred() {
        let volumes = [
            pv(
                "rwo-rwx-5g",
                "5Gi",
                json!({"spec": {"accessModes": ["ReadWriteOnce", "ReadWriteMany"]}}),
            ),
            pv("rwo-10g", "10Gi", json!({})),
        ];
        assert_eq!(pick(&pvc(json!({})), &volumes).as_deref(), Some("rwo-10g"));
        let big = pvc(json!({"spec": {"resources": {"requests": {"storage": "20Gi"}}}}));
        assert_eq!(pick(&big, &volumes), None);
    }

    #[test]
    fn node_affinity() {
        let local = pv(
            "local",
            "5Gi",
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}
            ]}}}}),
        );
        let labels =
            |host: &str| BTreeMap::from([("kubernetes.io/hostname".to_string(), host.to_string())]);
        let (l1, l2) = (labels("n1"), labels("n2"));
        let n1 = NodeTarget {
            name: "n1",
            labels: Some(&l1),
        };
        let n2 = NodeTarget {
            name: "n2",
            labels: Some(&l2),
        };
        assert!(node_affinity_allows(&local, n1));
        assert!(!node_affinity_allows(&local, n2));
        let claim = pvc(json!({}));
        let volumes = [local];
        assert!(find_best_match(&claim, &volumes, Some(n1), false).is_some());
        assert!(find_best_match(&claim, &volumes, Some(n2), false).is_none());
        let by_field = pv(
            "f",
            "5Gi",
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
            ]}}}}),
        );
        assert!(node_affinity_allows(&by_field, n2));
        assert!(!node_affinity_allows(&by_field, n1));
        let gt = pv(
            "gt",
            "5Gi",
            json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Gt", "values": ["1"]}]}
            ]}}}}),
        );
        assert!(!node_affinity_allows(&gt, n1));
        assert!(node_affinity_allows(&pv("any", "5Gi", json!({})), n1));
    }

    #[test]
    fn mismatch_messages() {
        let claim = pvc(json!({}));
        for (volume, want) in [
            (pv("v", "1Gi", json!({})), Err("requested PV is too small")),
            (
                pv("v", "5Gi", json!({"spec": {"storageClassName": "x"}})),
                Err("storageClassName does not match"),
            ),
            (
                pv("v", "5Gi", json!({"spec": {"volumeMode": "Block"}})),
                Err("incompatible volumeMode"),
            ),
            (
                pv(
                    "v",
                    "5Gi",
                    json!({"spec": {"accessModes": ["ReadOnlyMany"]}}),
                ),
                Err("incompatible accessMode"),
            ),
            (pv("v", "5Gi", json!({})), Ok(())),
        ] {
            assert_eq!(check_satisfies(&claim, &volume), want.map_err(String::from));
        }
    }
}
