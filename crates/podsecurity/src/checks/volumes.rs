//! Volume types (restricted): only the core, non-host volume sources may be used inline;
//! everything else must go through a PersistentVolumeClaim.

use std::collections::BTreeSet;

use crate::checks::CheckFailure;
use crate::pod::{PodView, present, string};
use crate::text::{join_quote, pluralize};

/// Sources restricted pods may use (`image` since Kubernetes 1.33, at every policy
/// version).
const ALLOWED: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The other sources, in the order Kubernetes looks for them to name a volume's type.
const RESTRICTED: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// `restrictedVolumes` v1.0 (overrides baseline's `hostPathVolumes`).
pub(crate) fn restricted_volumes_1_0(pod: &PodView<'_>) -> Option<CheckFailure> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for volume in pod.volumes() {
        let volume = volume.as_object();
        if ALLOWED
            .iter()
            .any(|source| present(volume, source).is_some())
        {
            continue;
        }
        bad.push(string(volume, "name"));
        let kind = RESTRICTED
            .iter()
            .find(|source| present(volume, source).is_some())
            .copied()
            .unwrap_or("unknown");
        types.insert(kind);
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<&str> = types.into_iter().collect();
    Some(CheckFailure::new(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn allowed_sources() {
        let spec = json!({"volumes": [
            {"name": "a", "configMap": {}}, {"name": "b", "csi": {}}, {"name": "c", "downwardAPI": {}},
            {"name": "d", "emptyDir": {}}, {"name": "e", "ephemeral": {}}, {"name": "f", "image": {"reference": "x"}},
            {"name": "g", "persistentVolumeClaim": {}}, {"name": "h", "projected": {}}, {"name": "i", "secret": {}},
        ]});
        assert_eq!(restricted_volumes_1_0(&PodView::new(None, &spec)), None);
    }

    #[test]
    fn restricted_sources() {
        let spec = json!({"volumes": [
            {"name": "a", "hostPath": {"path": "/"}},
            {"name": "b", "emptyDir": {}},
            {"name": "c", "nfs": {}},
            {"name": "d"},
            {"name": "e", "hostPath": {}, "gitRepo": {}},
            {"name": "f", "emptyDir": null},
        ]});
        assert_eq!(
            restricted_volumes_1_0(&PodView::new(None, &spec)),
            Some(CheckFailure::new(
                "restricted volume types",
                r#"volumes "a", "c", "d", "e", "f" use restricted volume types "hostPath", "nfs", "unknown""#
            ))
        );
        let one = json!({"volumes": [{"name": "x", "cephfs": {}}]});
        assert_eq!(
            restricted_volumes_1_0(&PodView::new(None, &one)),
            Some(CheckFailure::new(
                "restricted volume types",
                r#"volume "x" uses restricted volume type "cephfs""#
            ))
        );
    }
}
