//! The API objects a pod refers to (Kubernetes' `VisitPodSecretNames`,
//! `VisitPodConfigmapNames`, PVC and ResourceClaim names), read from its JSON without
//! copying it. Used by ServiceAccount, NodeRestriction and the Node authorizer.

use serde_json::Value;

use kyb_apimachinery::json;

/// The containers of a pod spec in Kubernetes' order (init, regular, ephemeral), skipping
/// entries that are not objects.
pub(crate) fn all_containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |key| json::items(spec, &[key]).iter())
        .filter(|c| c.is_object())
}

/// The volume source `key` of a volume, when it is set (an object).
fn source<'a>(volume: &'a Value, key: &str) -> Option<&'a Value> {
    volume.get(key).filter(|v| v.is_object())
}

/// The name inside the reference object `key` of `value` (`secretRef`, ...), when set.
fn reference_name<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    source(value, key).map(|r| json::str_at(r, &["name"]))
}

/// Calls `visit` with every secret name the pod spec refers to (image pull secrets,
/// container env and envFrom of all containers, volume sources), stopping when it returns
/// false. Returns false when stopped. Names are as written (possibly empty).
pub(crate) fn visit_secret_names<'a>(
    spec: &'a Value,
    visit: &mut dyn FnMut(&'a str) -> bool,
) -> bool {
    for reference in json::items(spec, &["imagePullSecrets"]) {
        if !visit(json::str_at(reference, &["name"])) {
            return false;
        }
    }
    for container in all_containers(spec) {
        for env_from in json::items(container, &["envFrom"]) {
            if let Some(name) = reference_name(env_from, "secretRef")
                && !visit(name)
            {
                return false;
            }
        }
        for env in json::items(container, &["env"]) {
            if let Some(value_from) = source(env, "valueFrom")
                && let Some(name) = reference_name(value_from, "secretKeyRef")
                && !visit(name)
            {
                return false;
            }
        }
    }
    for volume in json::items(spec, &["volumes"]) {
        for name in volume_secret(volume).unwrap_or_default() {
            if !visit(name) {
                return false;
            }
        }
    }
    true
}

/// The secret names of one volume's source (the first source set, in Kubernetes' order).
fn volume_secret(volume: &Value) -> Option<Vec<&str>> {
    if let Some(s) = source(volume, "azureFile") {
        let name = json::str_at(s, &["secretName"]);
        return Some(if name.is_empty() { vec![] } else { vec![name] });
    }
    for key in ["cephfs", "cinder", "flexVolume"] {
        if let Some(s) = source(volume, key) {
            return Some(reference_name(s, "secretRef").into_iter().collect());
        }
    }
    if let Some(s) = source(volume, "projected") {
        return Some(
            json::items(s, &["sources"])
                .iter()
                .filter_map(|p| reference_name(p, "secret"))
                .collect(),
        );
    }
    if let Some(s) = source(volume, "rbd") {
        return Some(reference_name(s, "secretRef").into_iter().collect());
    }
    if let Some(s) = source(volume, "secret") {
        return Some(vec![json::str_at(s, &["secretName"])]);
    }
    for key in ["scaleIO", "iscsi", "storageos"] {
        if let Some(s) = source(volume, key) {
            return Some(reference_name(s, "secretRef").into_iter().collect());
        }
    }
    if let Some(s) = source(volume, "csi") {
        return Some(
            reference_name(s, "nodePublishSecretRef")
                .into_iter()
                .collect(),
        );
    }
    None
}

/// Calls `visit` with every ConfigMap name the pod spec refers to (env and envFrom of all
/// containers, `configMap` volumes and projected `configMap` sources), stopping when it
/// returns false. Returns false when stopped.
pub(crate) fn visit_configmap_names<'a>(
    spec: &'a Value,
    visit: &mut dyn FnMut(&'a str) -> bool,
) -> bool {
    for container in all_containers(spec) {
        for env_from in json::items(container, &["envFrom"]) {
            if let Some(name) = reference_name(env_from, "configMapRef")
                && !visit(name)
            {
                return false;
            }
        }
        for env in json::items(container, &["env"]) {
            if let Some(value_from) = source(env, "valueFrom")
                && let Some(name) = reference_name(value_from, "configMapKeyRef")
                && !visit(name)
            {
                return false;
            }
        }
    }
    for volume in json::items(spec, &["volumes"]) {
        if let Some(projected) = source(volume, "projected") {
            for p in json::items(projected, &["sources"]) {
                if let Some(name) = reference_name(p, "configMap")
                    && !visit(name)
                {
                    return false;
                }
            }
        } else if let Some(name) = reference_name(volume, "configMap")
            && !visit(name)
        {
            return false;
        }
    }
    true
}

/// Whether the pod spec refers to any secret.
pub(crate) fn references_secrets(spec: &Value) -> bool {
    !visit_secret_names(spec, &mut |_| false)
}

/// Whether the pod spec refers to any ConfigMap.
pub(crate) fn references_configmaps(spec: &Value) -> bool {
    !visit_configmap_names(spec, &mut |_| false)
}

/// The PVC a volume uses: its `persistentVolumeClaim.claimName`, or for a generic ephemeral
/// volume the claim Kubernetes creates for it, `<pod name>-<volume name>`.
pub(crate) fn volume_claim_name(pod_name: &str, volume: &Value) -> Option<String> {
    if let Some(pvc) = source(volume, "persistentVolumeClaim") {
        return Some(json::str_at(pvc, &["claimName"]).to_string());
    }
    source(volume, "ephemeral").map(|_| format!("{pod_name}-{}", json::str_at(volume, &["name"])))
}

/// The ResourceClaims a pod uses (`spec.resourceClaims`): a claim named directly, or the
/// claim generated from a template as recorded in `status.resourceClaimStatuses` (none yet
/// when the status has no entry, or its entry names no claim).
pub(crate) fn resource_claim_names(pod: &Value) -> impl Iterator<Item = &str> {
    let statuses = json::items(pod, &["status", "resourceClaimStatuses"]);
    json::items(pod, &["spec", "resourceClaims"])
        .iter()
        .filter_map(move |claim| {
            if let Some(name) = json::opt_str(claim, &["resourceClaimName"]) {
                return Some(name);
            }
            json::opt_str(claim, &["resourceClaimTemplateName"])?;
            let claim_name = json::str_at(claim, &["name"]);
            statuses
                .iter()
                .find(|s| json::str_at(s, &["name"]) == claim_name)
                .and_then(|s| json::opt_str(s, &["resourceClaimName"]))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn collect_secrets(spec: &Value) -> Vec<&str> {
        let mut names = vec![];
        visit_secret_names(spec, &mut |n| {
            names.push(n);
            true
        });
        names
    }

    #[test]
    fn finds_secrets_everywhere() {
        let spec = json!({
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [{"envFrom": [{"secretRef": {"name": "init-from"}}]}],
            "containers": [{"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}]}],
            "ephemeralContainers": [{"envFrom": [{"secretRef": {"name": "eph"}}]}],
            "volumes": [
                {"name": "a", "secret": {"secretName": "vol"}},
                {"name": "b", "projected": {"sources": [{"secret": {"name": "proj"}}, {"configMap": {"name": "c"}}]}},
                {"name": "c", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
                {"name": "d", "azureFile": {"secretName": "", "shareName": "s"}},
                {"name": "e", "rbd": {"secretRef": {"name": "rbd"}}}
            ]
        });
        assert_eq!(
            collect_secrets(&spec),
            vec![
                "pull",
                "init-from",
                "env",
                "eph",
                "vol",
                "proj",
                "csi",
                "rbd"
            ]
        );
        assert!(references_secrets(&spec));
        assert!(references_configmaps(&spec));
    }

    #[test]
    fn finds_configmaps() {
        let spec = json!({
            "containers": [{"envFrom": [{"configMapRef": {"name": "a"}}],
                            "env": [{"valueFrom": {"configMapKeyRef": {"name": "b"}}}]}],
            "volumes": [{"configMap": {"name": "c"}}]
        });
        let mut names = vec![];
        visit_configmap_names(&spec, &mut |n| {
            names.push(n.to_string());
            true
        });
        assert_eq!(names, vec!["a", "b", "c"]);
        assert!(!references_secrets(&spec));
    }

    #[test]
    fn hostile_specs_have_no_references() {
        for spec in [
            json!(null),
            json!("x"),
            json!({"volumes": "x", "containers": [1, "a", null]}),
            json!({"volumes": [{"secret": "nope"}, 3], "imagePullSecrets": {}}),
        ] {
            assert!(!references_secrets(&spec));
            assert!(!references_configmaps(&spec));
        }
    }

    #[test]
    fn claim_names() {
        assert_eq!(
            volume_claim_name(
                "p",
                &json!({"name": "v", "ephemeral": {"volumeClaimTemplate": {}}})
            ),
            Some("p-v".to_string())
        );
        assert_eq!(
            volume_claim_name("p", &json!({"persistentVolumeClaim": {"claimName": "c"}})),
            Some("c".to_string())
        );
        assert_eq!(volume_claim_name("p", &json!({"emptyDir": {}})), None);
        let pod = json!({
            "spec": {"resourceClaims": [
                {"name": "a", "resourceClaimName": "direct"},
                {"name": "b", "resourceClaimTemplateName": "t"},
                {"name": "c", "resourceClaimTemplateName": "t"}
            ]},
            "status": {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "generated"}]}
        });
        assert_eq!(
            resource_claim_names(&pod).collect::<Vec<_>>(),
            vec!["direct", "generated"]
        );
    }
}
